package io.sparkcheckpointstorage.savepoint

import java.io.{ByteArrayOutputStream, File}
import java.nio.charset.StandardCharsets.{ISO_8859_1, UTF_8}
import java.nio.file.{Files, Path => NioPath}

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf

import io.sparkcheckpointstorage.coordinator.PausingFileSystem
import io.sparkcheckpointstorage.packs.StatePack
import io.sparkcheckpointstorage.provider.{CompactRowMap, StateFileFormat, StateFileKind, StateRows}

class SavepointsSuite extends AnyFunSuite {
  private val conf = new Configuration()

  private def write(root: NioPath, rel: String, bytes: Array[Byte]): Unit = {
    val p = root.resolve(rel)
    Files.createDirectories(p.getParent)
    Files.write(p, bytes)
  }

  /** A real delta of version `version` holding key (`name`, 1) -> `version`. */
  private def delta(version: Long, name: String): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val w = new StateFileFormat.Writer(out, StateFileKind.Delta, version, "lz4", new SparkConf(false),
      CompactRowMap.Layout(1, 16))
    w.put(StateRows.key(name, 1), StateRows.value(version))
    w.finish()
    out.toByteArray
  }
  private val v1 = delta(1, "v1")
  private val v2 = delta(2, "v2 inline")

  /** Batches 0-1 committed, batch 2 planned only; state version 2 inline in a pack, 1 and 3 as files. */
  private def checkpoint(): NioPath = {
    val root = Files.createTempDirectory("scs-savepoint-src")
    write(root, "metadata", """{"id":"q-1"}""".getBytes(UTF_8))
    (0 to 2).foreach(b => write(root, s"offsets/$b", s"offsets $b".getBytes(UTF_8)))
    (0 to 1).foreach(b => write(root, s"commits/$b", s"commit $b".getBytes(UTF_8)))
    write(root, "sources/0/0", "source".getBytes(UTF_8))
    write(root, "state/0/_metadata/metadata", "operator".getBytes(UTF_8))
    write(root, "state/0/0/1.heap-delta", v1)
    write(root, "state/0/0/3.heap-delta", delta(3, "v3 uncommitted"))
    write(root, "checkpoint-storage", s"storage=FileSystemCheckpointStorage ($root)\npersistent=true\nkeepInHeap=false\n".getBytes(UTF_8))
    Files.createDirectories(root.resolve("state-packs"))
    val out = Files.newOutputStream(root.resolve("state-packs/1.pack"))
    try StatePack.write(out, 1L, "q-1", Seq("state/0/0/2.heap-delta" -> v2), Nil)
    finally out.close()
    root
  }

  private def files(root: NioPath): Map[String, String] =
    Files.walk(root).iterator().asScala.filter(Files.isRegularFile(_))
      .map(p => root.relativize(p).toString -> new String(Files.readAllBytes(p), ISO_8859_1)).toMap

  test("a savepoint holds the committed batches, inline state written out, nothing of the original") {
    val source = checkpoint()
    val target = Files.createTempDirectory("scs-savepoint-dst").resolve("sp")
    val json = Savepoints.create(source.toString, target.toString, -1, conf)
    assert(json.contains("\"batchId\":1"))
    val copied = files(target)
    assert(copied.keySet == Set("metadata", "offsets/0", "offsets/1", "commits/0", "commits/1",
      "sources/0/0", "state/0/_metadata/metadata", "state/0/0/1.heap-delta", "state/0/0/2.heap-delta",
      Savepoints.ManifestFile))
    assert(copied("state/0/0/2.heap-delta") == new String(v2, ISO_8859_1))
    assert(copied.values.forall(!_.contains(source.toString)))
  }

  test("refusals: target inside, target not empty, uncommitted or unknown batch") {
    val source = checkpoint()
    def refused(target: String, batch: Long): String =
      intercept[SavepointException](Savepoints.create(source.toString, target, batch, conf)).getMessage
    assert(refused(source.resolve("sp").toString, -1).contains("lies inside the checkpoint"))
    val occupied = Files.createTempDirectory("scs-occupied")
    Files.write(occupied.resolve("x"), Array[Byte](1))
    assert(refused(occupied.toString, -1).contains("already exists and is not empty"))
    val fresh = Files.createTempDirectory("scs-fresh").resolve("sp").toString
    assert(refused(fresh, 2).contains("Batch 2 of the checkpoint"))
    assert(refused(fresh, 2).contains("is not committed"))
    assert(refused(fresh, 2).contains("only the state of a committed batch can be saved"))
    assert(refused(fresh, 2).contains("omit the batch to save it"))
    assert(refused(fresh, 9).contains("has no committed batch 9"))
    assert(!Files.exists(java.nio.file.Paths.get(fresh)))
    // What an unfinished savepoint (or migration) left beside the target.
    val parent = Files.createTempDirectory("scs-left")
    Files.createDirectories(parent.resolve(".sp.saving-1234abcd"))
    val left = refused(parent.resolve("sp").toString, -1)
    assert(left.contains("An earlier savepoint to") && left.contains(".sp.saving-1234abcd") &&
      left.contains("was never written") && left.contains("take the savepoint again"), left)
    Files.createDirectories(parent.resolve(".mp.migrating-1234abcd"))
    assert(refused(parent.resolve("mp").toString, -1).contains("An earlier migration to"))
  }

  test("a state file deleted while it is copied fails the savepoint; nothing says it is complete") {
    val source = checkpoint()
    val root = PausingFileSystem.root(source.toFile)
    val c = new Configuration()
    PausingFileSystem.conf.foreach { case (k, v) => c.set(k, v) }
    val pause = new PausingFileSystem.Pause(_.toString.endsWith("state/0/0/1.heap-delta"))
    PausingFileSystem.pause = Some(pause)
    val parent = Files.createTempDirectory("scs-savepoint-dst")
    val target = parent.resolve("sp")
    @volatile var midway = Seq.empty[String]
    val running = new Thread(() => {
      assert(pause.awaitEntered(), "the savepoint never copied state/0/0/1.heap-delta")
      // Mid-write: only a hidden sibling, saying what it is; nothing at the target.
      midway = Files.list(parent).iterator().asScala.map(_.getFileName.toString).toSeq
      midway.headOption.foreach { n =>
        midway :+= new String(Files.readAllBytes(parent.resolve(n).resolve(Savepoints.InProgressFile)), UTF_8)
      }
      // The running query's cleanup deletes the file between the listing and the copy.
      Files.delete(source.resolve("state/0/0/1.heap-delta"))
      pause.release.countDown()
    })
    running.start()
    try {
      val e = intercept[SavepointException](Savepoints.create(root, target.toString, -1, c))
      assert(e.getMessage.contains("state/0/0/1.heap-delta of the checkpoint") &&
        e.getMessage.contains("disappeared while the savepoint was written"), e.getMessage)
    } finally {
      running.join()
      PausingFileSystem.pause = None
    }
    assert(!Files.exists(target.resolve(Savepoints.ManifestFile)))
    assert(midway.size == 2 && midway.head.startsWith(".sp" + Savepoints.Writer.marker), midway)
    assert(midway(1).contains("An unfinished savepoint of") && midway(1).contains("not a checkpoint to start a query from"))
    // A failed savepoint leaves nothing.
    assert(Files.list(parent).count() == 0)
  }

  test("a copy that cannot restore is refused before its _savepoint file is written") {
    val damaged = checkpoint()
    val bytes = v1.clone()
    bytes(bytes.length - 3) = (bytes(bytes.length - 3) ^ 0x5a).toByte
    write(damaged, "state/0/0/1.heap-delta", bytes)
    val target = Files.createTempDirectory("scs-savepoint-dst").resolve("sp")
    val e = intercept[SavepointException](Savepoints.create(damaged.toString, target.toString, -1, conf))
    assert(e.getMessage.contains("is not restorable") && e.getMessage.contains("1.heap-delta is corrupt"), e.getMessage)
    assert(!Files.exists(target.resolve(Savepoints.ManifestFile)))

    val gap = checkpoint()
    Files.delete(gap.resolve("state/0/0/1.heap-delta"))
    val target2 = Files.createTempDirectory("scs-savepoint-dst").resolve("sp")
    val e2 = intercept[SavepointException](Savepoints.create(gap.toString, target2.toString, -1, conf))
    assert(e2.getMessage.contains("cannot restore version 2 of the state store state/0/0") &&
      e2.getMessage.contains("state files copied: 2.heap-delta"), e2.getMessage)
    assert(!Files.exists(target2.resolve(Savepoints.ManifestFile)))
  }
}
