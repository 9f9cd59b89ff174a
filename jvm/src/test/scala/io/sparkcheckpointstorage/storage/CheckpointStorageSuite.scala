package io.sparkcheckpointstorage.storage

import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions._

/** Flink's storage tests translated: constructors, defaults, limits, loader precedence. */
class CheckpointStorageSuite extends AnyFunSuite {
  private def load(conf: (String, String)*) = CheckpointStorageLoader.load(conf.toMap)

  test("driver storage: Flink's defaults, persistence follows the checkpoint path") {
    val s = new DriverCheckpointStorage()
    assert(s.maxStateSize == 5 * 1024 * 1024)
    assert(!s.isPersistent && s.checkpointPath.isEmpty && s.savepointPath.isEmpty)
    val p = new DriverCheckpointStorage("file:///cp", 1000)
    assert(p.isPersistent && p.maxStateSize == 1000)
    assert(p.savepointPath.contains("file:///cp/savepoints"))
    assert(p.toString.contains("maxStateSize: 1000"))
    intercept[IllegalArgumentException](new DriverCheckpointStorage(0))
  }

  test("driver storage: at the limit inline, one byte over fails naming size, limit and setting") {
    val s = new DriverCheckpointStorage(100)
    assert(s.placement(100) == Placement.Inline)
    val e = intercept[StateSizeLimitException](s.placement(101))
    assert(e.getMessage.contains("Size=101, maxSize=100"))
    assert(e.getMessage.contains(MaxStateSize))
    assert(e.getMessage.contains("FileSystemCheckpointStorage"))
  }

  test("file system storage: threshold bounds, -1 from configuration, buffer at least the threshold") {
    val s = new FileSystemCheckpointStorage("file:///cp")
    assert(s.minFileSizeThreshold == 20 * 1024 && s.writeBufferSize == 4 * 1024 * 5)
    assert(new FileSystemCheckpointStorage("file:///cp", 0).minFileSizeThreshold == 0)
    assert(new FileSystemCheckpointStorage("file:///cp", FileSystemCheckpointStorage.MaxFileStateThreshold)
      .minFileSizeThreshold == 1024 * 1024)
    val over = intercept[IllegalArgumentException](new FileSystemCheckpointStorage("file:///cp", 1024 * 1024 + 1))
    assert(over.getMessage.contains("[0, 1048576]"))
    intercept[IllegalArgumentException](new FileSystemCheckpointStorage("file:///cp", -2))
    val fromConf = new FileSystemCheckpointStorage("file:///cp", -1)
      .configure(Map(FileStateSizeThreshold -> "1k").get _)
    assert(fromConf.minFileSizeThreshold == 1024)
    assert(new FileSystemCheckpointStorage("file:///cp", 100, 10).writeBufferSize == 100)
    assert(new FileSystemCheckpointStorage("file:///cp", 100, 1000).writeBufferSize == 1000)
    intercept[IllegalArgumentException](new FileSystemCheckpointStorage(""))
  }

  test("file system storage: at the threshold inline, one byte over a file") {
    val s = new FileSystemCheckpointStorage("file:///cp", 100)
    assert(s.placement(100) == Placement.Inline)
    assert(s.placement(101) == Placement.OwnFile)
    assert(new FileSystemCheckpointStorage("file:///cp", 0).placement(1) == Placement.OwnFile)
  }

  test("values set in code win over configuration; unset ones come from it") {
    val s = new DriverCheckpointStorage(1000).configure(
      Map(MaxStateSize -> "2k", CheckpointPath -> "file:///conf").get _)
    assert(s.maxStateSize == 1000)
    assert(s.checkpointPath.contains("file:///conf"))
  }

  test("loader: storage set in code > configured name > default") {
    val inCode = DriverCheckpointStorage(maxStateSize = Some(123)).toConf
    val s = load((inCode ++ Map(Storage -> "filesystem", CheckpointPath -> "file:///cp")).toSeq: _*)
    assert(s == DriverCheckpointStorage(Some("file:///cp"), Some(123)))
    assert(load(Storage -> "filesystem", CheckpointPath -> "file:///cp").isInstanceOf[FileSystemCheckpointStorage])
    assert(load(Storage -> "driver", CheckpointPath -> "file:///cp") == new DriverCheckpointStorage("file:///cp"))
    assert(load(Storage -> "jobmanager").isInstanceOf[DriverCheckpointStorage])
  }

  test("loader default: file system when a checkpoint directory is known, else driver") {
    assert(load() == new DriverCheckpointStorage())
    assert(load(CheckpointPath -> "file:///cp") == new FileSystemCheckpointStorage("file:///cp"))
    assert(load(SparkSettingKeys.CheckpointLocation -> "file:///loc") == new FileSystemCheckpointStorage("file:///loc"))
    assert(CheckpointStorageLoader.load(Map.empty[String, String].get _, Some("file:///q")) ==
      new FileSystemCheckpointStorage("file:///q"))
  }

  test("loader: a user class, and clear errors for unknown names and bad sizes") {
    val s = load(Storage -> classOf[TinyStorageFactory].getName)
    assert(s == new DriverCheckpointStorage(7))
    val e = intercept[IllegalArgumentException](load(Storage -> "com.example.Missing"))
    assert(e.getMessage.contains("com.example.Missing") && e.getMessage.contains(Storage))
    val size = intercept[IllegalArgumentException](load(Storage -> "driver", MaxStateSize -> "lots"))
    assert(size.getMessage.contains(MaxStateSize) && size.getMessage.contains("lots"))
    val noDir = intercept[IllegalArgumentException](load(Storage -> "filesystem"))
    assert(noDir.getMessage.contains(CheckpointPath))
  }
}

class TinyStorageFactory extends CheckpointStorageFactory {
  override def createFromConfig(conf: String => Option[String]): CheckpointStorage = new DriverCheckpointStorage(7)
}
