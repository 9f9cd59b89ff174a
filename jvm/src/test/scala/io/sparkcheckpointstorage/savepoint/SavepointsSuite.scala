package io.sparkcheckpointstorage.savepoint

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => NioPath}

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.packs.StatePack

class SavepointsSuite extends AnyFunSuite {
  private val conf = new Configuration()

  private def write(root: NioPath, rel: String, bytes: Array[Byte]): Unit = {
    val p = root.resolve(rel)
    Files.createDirectories(p.getParent)
    Files.write(p, bytes)
  }

  /** Batches 0-1 committed, batch 2 planned only; state version 2 inline in a pack, 1 and 3 as files. */
  private def checkpoint(): NioPath = {
    val root = Files.createTempDirectory("scs-savepoint-src")
    write(root, "metadata", """{"id":"q-1"}""".getBytes(UTF_8))
    (0 to 2).foreach(b => write(root, s"offsets/$b", s"offsets $b".getBytes(UTF_8)))
    (0 to 1).foreach(b => write(root, s"commits/$b", s"commit $b".getBytes(UTF_8)))
    write(root, "sources/0/0", "source".getBytes(UTF_8))
    write(root, "state/0/_metadata/metadata", "operator".getBytes(UTF_8))
    write(root, "state/0/0/1.heap-delta", "v1".getBytes(UTF_8))
    write(root, "state/0/0/3.heap-delta", "v3 uncommitted".getBytes(UTF_8))
    write(root, "checkpoint-storage", s"storage=FileSystemCheckpointStorage ($root)\npersistent=true\nkeepInHeap=false\n".getBytes(UTF_8))
    Files.createDirectories(root.resolve("state-packs"))
    val out = Files.newOutputStream(root.resolve("state-packs/1.pack"))
    try StatePack.write(out, 1L, "q-1", Seq("state/0/0/2.heap-delta" -> "v2 inline".getBytes(UTF_8)), Nil)
    finally out.close()
    root
  }

  private def files(root: NioPath): Map[String, String] =
    Files.walk(root).iterator().asScala.filter(Files.isRegularFile(_))
      .map(p => root.relativize(p).toString -> new String(Files.readAllBytes(p), UTF_8)).toMap

  test("a savepoint holds the committed batches, inline state written out, nothing of the original") {
    val source = checkpoint()
    val target = Files.createTempDirectory("scs-savepoint-dst").resolve("sp")
    val json = Savepoints.create(source.toString, target.toString, -1, conf)
    assert(json.contains("\"batchId\":1"))
    val copied = files(target)
    assert(copied.keySet == Set("metadata", "offsets/0", "offsets/1", "commits/0", "commits/1",
      "sources/0/0", "state/0/_metadata/metadata", "state/0/0/1.heap-delta", "state/0/0/2.heap-delta",
      Savepoints.ManifestFile))
    assert(copied("state/0/0/2.heap-delta") == "v2 inline")
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
    assert(refused(fresh, 9).contains("has no committed batch 9"))
    assert(!Files.exists(java.nio.file.Paths.get(fresh)))
  }
}
