package io.sparkcheckpointstorage.monitoring

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.spark.scheduler.SparkListenerEvent
import org.scalatest.funsuite.AnyFunSuite

/**
 * The monitor's file system requests: on an object store every one is billed and adds
 * latency, so a batch's row comes from what the commit already knows.
 */
class CheckpointMonitorSuite extends AnyFunSuite {

  test("a committed batch's row comes from the commit: no listing of the checkpoint, no probe of its pack or log entries") {
    val dir = Files.createTempDirectory("scs-monitor").toFile
    try {
      val work = new File(dir, "faults")
      work.mkdirs()
      // Every listing and status probe is recorded (a stall of 0 ms: nothing fails).
      Files.write(new File(work, "rules").toPath,
        "listStatus stall=0 .* *\ngetFileStatus stall=0 .* *\n".getBytes(UTF_8))
      val conf = new Configuration()
      conf.set("fs.faulty.impl", "io.sparkcheckpointstorage.faults.FaultInjectingFileSystem")
      conf.set("fs.faulty.impl.disable.cache", "true")
      conf.set("fs.faulty.rules.file", new File(work, "rules").getPath)
      conf.set("fs.faulty.log", new File(work, "ops.log").getPath)
      val cp = new File(dir, "cp")
      Seq("offsets", "commits", "state/0/0", "state/0/1", "state-packs").foreach(d => new File(cp, d).mkdirs())
      Files.write(new File(cp, "metadata").toPath, """{"id":"q-1"}""".getBytes(UTF_8))
      (0 to 1).foreach { b =>
        Seq(s"offsets/$b", s"commits/$b").foreach(f => Files.write(new File(cp, f).toPath, "v1".getBytes(UTF_8)))
      }
      // A state file of its own on disk that the commit does not name: a walk would count it.
      Files.write(new File(cp, "state/0/1/2.heap-delta").toPath, new Array[Byte](99))
      val root = "faulty://" + cp.getAbsolutePath

      val posted = mutable.ArrayBuffer[SparkListenerEvent]()
      val monitor = new CheckpointMonitor(e => posted.synchronized(posted += e), conf, Map.empty, () => 7L, 100L)
      // This driver wrote batch 0's offset log entry; batch 1's was written by an earlier run.
      val offsetsAt = System.currentTimeMillis()
      monitor.offsetsWritten(root, 0, offsetsAt)
      val before = System.currentTimeMillis()
      monitor.batchCommitting(root, 0, CommittedState(
        Some(PackedBatch(Seq("state/0/0/1.heap-delta" -> 40L, "state/0/1/1.heap-delta" -> 60L), "1.pack", 321L)), Nil))
      monitor.batchCommitting(root, 1, CommittedState(None,
        Seq("state/0/0/2.heap-delta" -> 30000L, "state/1/0/2.heap-delta" -> 25000L)))
      val after = System.currentTimeMillis()
      assert(monitor.awaitIdle(30000))

      val rows = posted.collect { case c: CheckpointBatchCommitted => c }.map(_.batch)
      assert(rows.map(r => (r.batchId, r.stateFiles, r.inlineBytes, r.fileBytes, r.packBytes, r.packName)) ==
        Seq((0L, 2, 100L, 0L, 321L, "1.pack"), (1L, 2, 0L, 55000L, 0L, "")))
      assert(rows(1).operators == Seq(OperatorCommit(0, 1, 0L, 30000L), OperatorCommit(1, 1, 0L, 25000L)))
      assert(posted.collect { case c: CheckpointBatchCommitted => c.queryId }.toSet == Set("q-1"))

      val ops = Files.readAllLines(new File(work, "ops.log").toPath).asScala.map(_.split("\t"))
        .map(f => f(0) -> f(2).stripPrefix(cp.getAbsolutePath + "/")).toSeq
      assert(!ops.exists(_._1 == "listStatus"), ops)
      // The times are the driver's, taken as it wrote the entries: only the offset entry it did
      // not write is asked of the file system.
      assert(ops == Seq("getFileStatus" -> "offsets/1"), ops)
      assert(rows.forall(r => r.committedAtMs >= before && r.committedAtMs <= after), rows)
      assert(rows(0).offsetsToCommitMs == rows(0).committedAtMs - offsetsAt, rows)
      val offsets1 = new File(cp, "offsets/1").lastModified()
      assert(rows(1).offsetsToCommitMs == math.max(0L, rows(1).committedAtMs - offsets1), rows)
      monitor.stop()
    } finally FileUtils.deleteQuietly(dir)
  }
}
