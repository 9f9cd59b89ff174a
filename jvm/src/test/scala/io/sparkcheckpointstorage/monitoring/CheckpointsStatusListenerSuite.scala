package io.sparkcheckpointstorage.monitoring

import java.util.UUID

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.streaming.QueryEventsForTests.{started => sparkStarted, terminated => sparkTerminated}
import org.apache.spark.util.kvstore.InMemoryStore
import org.scalatest.funsuite.AnyFunSuite

/**
 * The checkpoints tab's listener: a bounded history per query, its summary, restarts,
 * failures, queries without our file manager, and a bounded number of queries.
 */
class CheckpointsStatusListenerSuite extends AnyFunSuite {
  private val id = UUID.randomUUID()

  private def batch(b: Long, inline: Long, file: Long = 0L, files: Int = 2, durationMs: Long = 10L,
      queryId: String = id.toString) =
    CheckpointBatchCommitted(queryId, "file:/cp", CheckpointBatchRow(b, 1000L + b, durationMs, files, inline, file,
      inline + 100, s"$b.pack", Seq(OperatorCommit(0, files, inline, file))), 5L, 50L)

  private def started(restored: Long, queryId: String = id.toString) =
    CheckpointQueryStarted(queryId, "file:/cp", "FileSystemCheckpointStorage(...)", "p.Provider", 4, restored,
      if (restored < 0) -1L else 900L, 1000L, Seq(CheckpointSetting("k", "v", "session")))

  private def stored(store: InMemoryStore, queryId: String = id.toString): QueryCheckpoints =
    store.read(classOf[QueryCheckpoints], queryId)

  test("the history keeps the last N batches, in order, and the summary is over them") {
    val store = new InMemoryStore
    val l = new CheckpointsStatusListener(store, historySize = 5)
    l.onOtherEvent(started(-1))
    (0L until 7L).foreach(b => l.onOtherEvent(batch(b, inline = 10 * (b + 1), durationMs = b)))
    val q = stored(store)
    assert(q.ours)
    assert(q.history.map(_.batchId) == Seq(2L, 3L, 4L, 5L, 6L))
    assert(q.batchesCommitted == 7)
    assert(q.latest.map(_.batchId).contains(6L))
    val s = q.summary
    assert(s.batches == 5)
    assert(s.inlineBytes.contains(Stat(30, 50, 70)))
    assert(s.stateBytes.contains(Stat(30, 50, 70)))
    assert(s.offsetsToCommitMs.contains(Stat(2, 4, 6)))
    assert(s.stateFiles.contains(Stat(2, 2, 2)))
    assert(s.packBytes.contains(Stat(130, 150, 170)))
    assert(q.driverInlineBytesHeld == 5L && q.driverMaxTotalInlineSize == 50L)
  }

  test("a batch committed again replaces its row; an empty history has no summary values") {
    val store = new InMemoryStore
    val l = new CheckpointsStatusListener(store, historySize = 3)
    l.onOtherEvent(started(-1))
    assert(stored(store).summary.inlineBytes.isEmpty)
    l.onOtherEvent(batch(0, inline = 1))
    l.onOtherEvent(batch(0, inline = 2))
    assert(stored(store).history.map(r => r.batchId -> r.inlineBytes) == Seq(0L -> 2L))
  }

  test("a restart shows the restored batch and the new run; a failure stays counted") {
    val store = new InMemoryStore
    val l = new CheckpointsStatusListener(store, historySize = 10)
    val run1 = UUID.randomUUID()
    l.onOtherEvent(sparkStarted(id, run1, "q", "2026-01-01T00:00:00.000Z"))
    l.onOtherEvent(started(-1))
    l.onOtherEvent(batch(0, 1))
    l.onOtherEvent(CheckpointCommitFailed(id.toString, "file:/cp", 1, 2000L, "StateSizeLimit", "too big"))
    l.onOtherEvent(sparkTerminated(id, run1, Some("boom")))
    var q = stored(store)
    assert(q.status == CheckpointsStatusListener.Failed && q.exception == "boom")
    assert(q.failures == 1 && q.recentFailures.map(_.batchId) == Seq(1L))
    assert(q.restoredBatchId == -1L)
    val run2 = UUID.randomUUID()
    l.onOtherEvent(sparkStarted(id, run2, "q", "2026-01-01T00:01:00.000Z"))
    l.onOtherEvent(started(0))
    l.onOtherEvent(batch(1, 3))
    q = stored(store)
    assert(q.runId == run2.toString && q.status == CheckpointsStatusListener.Running && q.exception.isEmpty)
    assert(q.restoredBatchId == 0L && q.restoredBatchCommittedAtMs == 900L && q.restoredAtMs == 1000L)
    assert(q.history.map(_.batchId) == Seq(0L, 1L))
    assert(q.failures == 1)
  }

  test("failures are counted all, the last ones kept") {
    val store = new InMemoryStore
    val l = new CheckpointsStatusListener(store, historySize = 10)
    (1 to 25).foreach(i => l.onOtherEvent(CheckpointCommitFailed(id.toString, "file:/cp", i, i, "Pack", s"$i")))
    val q = stored(store)
    assert(q.failures == 25)
    assert(q.recentFailures.map(_.batchId) == (16L to 25L))
  }

  test("a query seen only through Spark's events has no entry of ours") {
    val store = new InMemoryStore
    val l = new CheckpointsStatusListener(store, historySize = 10)
    l.onOtherEvent(sparkStarted(id, UUID.randomUUID(), null, "2026-01-01T00:00:00.000Z"))
    val q = stored(store)
    assert(!q.ours && q.status == CheckpointsStatusListener.Running && q.history.isEmpty)
  }

  test("at most maxQueries queries: the oldest stopped go first, running ones stay") {
    val store = new InMemoryStore
    val removed = scala.collection.mutable.ArrayBuffer[String]()
    val l = new CheckpointsStatusListener(store, historySize = 2, maxQueries = 2, onRemove = q => removed += q.queryId)
    val ids = (1 to 4).map(_ => UUID.randomUUID())
    l.onOtherEvent(sparkStarted(ids(0), UUID.randomUUID(), "running", "2026-01-01T00:00:00.000Z"))
    ids.drop(1).foreach { q =>
      val run = UUID.randomUUID()
      l.onOtherEvent(sparkStarted(q, run, "stopped", "2026-01-01T00:00:00.000Z"))
      l.onOtherEvent(sparkTerminated(q, run, None))
    }
    val kept = store.view(classOf[QueryCheckpoints]).asScala.map(_.queryId).toSet
    assert(kept == Set(ids(0).toString, ids(3).toString))
    assert(removed == Seq(ids(1).toString, ids(2).toString))
  }

  test("settings say where each value came from") {
    val s = CheckpointMonitor.settingsOf(
      Seq("spark.sql.streaming.checkpointStorage" -> "filesystem",
        "spark.sql.streaming.checkpointStorage.maxStateSize" -> "1m", "other" -> "x"),
      Map("spark.sql.streaming.checkpointStorage" -> "filesystem",
        "spark.sql.streaming.checkpointStorage.externalizedCleanup" -> "DELETE_ON_CANCELLATION"))
      .map(c => c.key -> (c.value, c.source)).toMap
    assert(s("spark.sql.streaming.checkpointStorage") == ("filesystem", "Spark configuration"))
    assert(s("spark.sql.streaming.checkpointStorage.maxStateSize") == ("1m", "session"))
    assert(s("spark.sql.streaming.checkpointStorage.externalizedCleanup") == ("DELETE_ON_CANCELLATION", "Spark configuration"))
    assert(s("spark.sql.streaming.checkpointStorage.fileStateSizeThreshold") == ("20k", "default"))
    // An unset setting shows what its definition says it means (CheckpointStorageSettings).
    assert(s("spark.sql.streaming.checkpointStorage.checkpointPath") == ("none", "default"))
    assert(s("spark.sql.streaming.checkpointStorage.writeBufferSize") == ("4k", "default"))
    assert(s("spark.sql.streaming.checkpointStorage.driver.maxTotalInlineSize") ==
      ("a quarter of the driver heap", "default"))
    assert(!s.contains("other"))
  }
}
