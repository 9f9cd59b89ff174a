package io.sparkcheckpointstorage.fileio

import java.io.{EOFException, IOException}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => NioPath, Paths}

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileSystem, Path, RawLocalFileSystem}
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.fileio.FileSystemOperations._

class FileSystemOperationsSuite extends AnyFunSuite {
  private val conf = new Configuration()

  private def withDir(body: NioPath => Unit): Unit = {
    val dir = Files.createTempDirectory("scs-fs")
    try body(dir) finally FileUtils.deleteDirectory(dir.toFile)
  }

  private def hadoop(p: NioPath): Path = new Path(s"file:$p")
  private def names(dir: NioPath): Set[String] = dir.toFile.list().toSet
  private def text(p: NioPath): String = new String(Files.readAllBytes(p), UTF_8)

  test("a local atomic write appears whole only at close, its folder created, no temporary file left") {
    withDir { dir =>
      val target = dir.resolve("a/b/1.pack")
      val out = createAtomic(hadoop(target), overwrite = false, conf)
      assert(out.isInstanceOf[LocalAtomicOutputStream])
      out.write("hello".getBytes(UTF_8))
      out.flush()
      assert(!Files.exists(target))
      val temps = names(target.getParent)
      assert(temps.size == 1 && temps.forall(isTemp) && temps.forall(_.startsWith(".1.pack.")), temps)
      out.close()
      assert(text(target) == "hello")
      assert(names(target.getParent) == Set("1.pack"))
      // A second close neither fails nor writes again.
      out.close()
      assert(text(target) == "hello")
    }
  }

  test("without overwrite, close refuses an existing target and leaves the other writer's file intact") {
    withDir { dir =>
      val target = dir.resolve("commits/3")
      val first = createAtomic(hadoop(target), overwrite = false, conf)
      val second = createAtomic(hadoop(target), overwrite = false, conf)
      first.write("first".getBytes(UTF_8))
      second.write("second".getBytes(UTF_8))
      first.close()
      val e = intercept[FileAlreadyExistsException](second.close())
      assert(e.getMessage.contains(target.toString))
      assert(text(target) == "first")
      assert(names(target.getParent) == Set("3"))
      // A target that existed before the stream was opened is refused the same way, at close.
      val third = createAtomic(hadoop(target), overwrite = false, conf)
      third.write("third".getBytes(UTF_8))
      intercept[FileAlreadyExistsException](third.close())
      assert(text(target) == "first")
      assert(names(target.getParent) == Set("3"))
    }
  }

  test("with overwrite, close replaces the target whole") {
    withDir { dir =>
      val target = dir.resolve("checkpoint-storage")
      Files.write(target, "old content, longer".getBytes(UTF_8))
      writeAtomic(hadoop(target), overwrite = true, conf)(_.write("new".getBytes(UTF_8)))
      assert(text(target) == "new")
      assert(names(dir) == Set("checkpoint-storage"))
    }
  }

  test("cancel leaves nothing behind, and a close after it writes nothing") {
    withDir { dir =>
      val target = dir.resolve("1.pack")
      val out = createAtomic(hadoop(target), overwrite = false, conf)
      out.write("never".getBytes(UTF_8))
      out.cancel()
      out.close()
      assert(names(dir).isEmpty)
    }
  }

  test("writeAtomic: a failing write is rethrown, and neither its file nor a temporary one appears") {
    withDir { dir =>
      val fresh = dir.resolve("fresh")
      val existing = dir.resolve("existing")
      Files.write(existing, "kept".getBytes(UTF_8))
      Seq(fresh -> false, existing -> true).foreach { case (target, overwrite) =>
        val e = intercept[IOException](writeAtomic(hadoop(target), overwrite, conf) { out =>
          out.write("partial".getBytes(UTF_8))
          throw new IOException("disk full")
        })
        assert(e.getMessage == "disk full")
      }
      assert(names(dir) == Set("existing"))
      assert(text(existing) == "kept")
    }
  }

  test("local paths: no scheme or file:, and their JDK path; other schemes are not local") {
    assert(isLocal(new Path("/tmp/cp")))
    assert(isLocal(new Path("file:/tmp/cp")))
    assert(isLocal(new Path("file:///tmp/cp")))
    assert(!isLocal(new Path("hdfs://nn:8020/tmp/cp")))
    assert(!isLocal(new Path("s3a://bucket/cp")))
    assert(localPath(new Path("file:/tmp/cp/state/0")) == Paths.get("/tmp/cp/state/0"))
    // The URI's escaping is undone: the JDK path names the real file.
    assert(localPath(new Path("/tmp/my checkpoint/a%b")) == Paths.get("/tmp/my checkpoint/a%b"))
  }

  test("temporary files are the hidden .tmp ones, whoever wrote them") {
    assert(isTemp(".1.pack.0b1c2d3e-aaaa.tmp"))
    assert(isTemp(".3.0b1c2d3e-aaaa.tmp"))
    assert(!isTemp("1.pack"))
    assert(!isTemp("notes.tmp"))
    assert(!isTemp(".3.crc"))
  }

  test("raw: the local file system without its checksum layer; other file systems as they are") {
    val local = FileSystem.getLocal(conf)
    assert(raw(local).isInstanceOf[RawLocalFileSystem])
    assert(raw(local) eq local.getRaw)
    val alreadyRaw = local.getRaw
    assert(raw(alreadyRaw) eq alreadyRaw)
  }

  test("readSmall gives a whole file or None; readRange gives bytes at an offset, EOFException past the end") {
    withDir { dir =>
      val file = dir.resolve("f")
      Files.write(file, "0123456789".getBytes(UTF_8))
      assert(readSmall(hadoop(file), conf).map(new String(_, UTF_8)).contains("0123456789"))
      assert(readSmall(hadoop(dir.resolve("missing")), conf).isEmpty)
      assert(new String(readRange(hadoop(file), 3, 4, conf), UTF_8) == "3456")
      assert(readRange(hadoop(file), 10, 0, conf).isEmpty)
      intercept[EOFException](readRange(hadoop(file), 8, 4, conf))
    }
  }

  test("listNames: the names directly in a folder, none for a missing folder") {
    withDir { dir =>
      Files.createDirectories(dir.resolve("sub/deeper"))
      Files.write(dir.resolve("a"), Array[Byte](1))
      Files.write(dir.resolve("sub/b"), Array[Byte](1))
      assert(listNames(hadoop(dir), conf).toSet == Set("a", "sub"))
      assert(listNames(hadoop(dir.resolve("missing")), conf).isEmpty)
    }
  }

  test("delete removes a file and ignores a missing one; deleteRecursively removes a folder and its files") {
    withDir { dir =>
      Files.createDirectories(dir.resolve("sub/deeper"))
      Files.write(dir.resolve("sub/deeper/x"), Array[Byte](1))
      Files.write(dir.resolve("a"), Array[Byte](1))
      delete(hadoop(dir.resolve("a")), conf)
      delete(hadoop(dir.resolve("a")), conf)
      assert(names(dir) == Set("sub"))
      deleteRecursively(hadoop(dir.resolve("sub")), conf)
      assert(names(dir).isEmpty)
    }
  }
}
