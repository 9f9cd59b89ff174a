package io.sparkcheckpointstorage.monitoring

import scala.annotation.meta.getter
import scala.collection.mutable

import com.fasterxml.jackson.annotation.JsonIgnore
import org.apache.spark.SparkConf
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.util.kvstore.{KVIndex, KVStore}

/**
 * One committed batch in a query's history (the tab's row).
 *
 * @param offsetsToCommitMs time from its offset log entry to its commit log entry; -1 if unknown
 * @param packBytes         the pack written when it committed; 0 when it had no inline changes
 */
final case class CheckpointBatchRow(
    batchId: Long,
    committedAtMs: Long,
    offsetsToCommitMs: Long,
    stateFiles: Int,
    inlineBytes: Long,
    fileBytes: Long,
    packBytes: Long,
    packName: String,
    operators: Seq[OperatorCommit])

/** One failed state commit. */
final case class CheckpointFailureRow(batchId: Long, timeMs: Long, kind: String, message: String)

/**
 * What the checkpoints tab shows of one streaming query, as kept in Spark's status store (the
 * live UI's, or the History Server's rebuilt from the event log). Numbers of -1 mean "none".
 *
 * @param ours      whether the query's checkpoint goes through our file manager; a query seen
 *                  only through Spark's own events has no entry of ours
 * @param history   the last committed batches, oldest first, at most the listener's bound
 */
final case class QueryCheckpoints(
    @(KVIndex @getter) queryId: String,
    name: String,
    runId: String,
    ours: Boolean,
    status: String,
    exception: String,
    startedAtMs: Long,
    checkpoint: String,
    storage: String,
    provider: String,
    statePartitions: Int,
    batchesCommitted: Long,
    restoredBatchId: Long,
    restoredBatchCommittedAtMs: Long,
    restoredAtMs: Long,
    savepointBatchId: Long,
    savepointPath: String,
    savepointAtMs: Long,
    failures: Long,
    recentFailures: Seq[CheckpointFailureRow],
    history: Seq[CheckpointBatchRow],
    settings: Seq[CheckpointSetting],
    driverInlineBytesHeld: Long,
    driverMaxTotalInlineSize: Long) {

  @JsonIgnore def latest: Option[CheckpointBatchRow] = history.lastOption
  @JsonIgnore def summary: HistorySummary = HistorySummary.of(history)
}

/** Min / average / max of one measure over a history. */
final case class Stat(min: Long, avg: Long, max: Long)

/** The summary over a query's history (Flink's checkpoint summary). */
final case class HistorySummary(batches: Int, offsetsToCommitMs: Option[Stat], stateBytes: Option[Stat],
    inlineBytes: Option[Stat], fileBytes: Option[Stat], stateFiles: Option[Stat], packBytes: Option[Stat])

object HistorySummary {
  def stat(values: Seq[Long]): Option[Stat] =
    if (values.isEmpty) None else Some(Stat(values.min, Math.round(values.sum.toDouble / values.size), values.max))

  def of(history: Seq[CheckpointBatchRow]): HistorySummary = HistorySummary(
    history.size,
    stat(history.map(_.offsetsToCommitMs).filter(_ >= 0)),
    stat(history.map(r => r.inlineBytes + r.fileBytes)),
    stat(history.map(_.inlineBytes)),
    stat(history.map(_.fileBytes)),
    stat(history.map(_.stateFiles.toLong)),
    stat(history.map(_.packBytes)))
}

/**
 * Keeps the checkpoints tab's facts per query (Spark's `AppStatusListener` for this tab): our
 * events ([[CheckpointQueryStarted]], [[CheckpointBatchCommitted]], ...) and Spark's own
 * streaming query events, folded into one [[QueryCheckpoints]] per query id written to
 * `store`. Runs on Spark's listener bus in the live driver and in the History Server's replay
 * alike, never on a batch's path.
 *
 * Bounded: `historySize` batches and `maxFailures` failures per query, and `maxQueries`
 * queries (the oldest stopped ones go first; running queries always stay).
 */
class CheckpointsStatusListener(store: KVStore, historySize: Int, maxQueries: Int = 100,
    onUpdate: QueryCheckpoints => Unit = _ => (), onRemove: QueryCheckpoints => Unit = _ => ())
  extends SparkListener {
  import CheckpointsStatusListener._

  require(historySize > 0, s"historySize must be positive, not $historySize")

  private val queries = mutable.LinkedHashMap[String, QueryCheckpoints]()

  def this(store: KVStore, conf: SparkConf) = this(store, CheckpointsStatusListener.historySize(conf))

  /** The facts of every query, in order of first appearance (tests and the metrics). */
  def snapshot: Seq[QueryCheckpoints] = synchronized(queries.values.toVector)

  override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
    case e: CheckpointQueryStarted => update(e.queryId) { q =>
      q.copy(ours = true, checkpoint = e.checkpoint, storage = e.storage, provider = e.provider,
        statePartitions = e.statePartitions, restoredBatchId = e.restoredBatchId,
        restoredBatchCommittedAtMs = e.restoredBatchCommittedAtMs,
        restoredAtMs = if (e.restoredBatchId >= 0) e.startedAtMs else -1L,
        settings = e.settings, status = if (q.status == Unknown) Running else q.status,
        startedAtMs = if (q.startedAtMs < 0) e.startedAtMs else q.startedAtMs)
    }
    case e: CheckpointBatchCommitted => update(e.queryId) { q =>
      // A batch committed again (re-run after a failure) replaces its row.
      val history = (q.history.filterNot(_.batchId == e.batch.batchId) :+ e.batch).sortBy(_.batchId).takeRight(historySize)
      q.copy(ours = true, checkpoint = e.checkpoint, batchesCommitted = q.batchesCommitted + 1, history = history,
        driverInlineBytesHeld = e.driverInlineBytesHeld, driverMaxTotalInlineSize = e.driverMaxTotalInlineSize)
    }
    case e: CheckpointCommitFailed => update(e.queryId) { q =>
      q.copy(ours = true, failures = q.failures + 1,
        recentFailures = (q.recentFailures :+ CheckpointFailureRow(e.batchId, e.timeMs, e.kind, e.message))
          .takeRight(MaxRecentFailures))
    }
    case e: CheckpointSavepointTaken => update(e.queryId) { q =>
      q.copy(savepointBatchId = e.batchId, savepointPath = e.path, savepointAtMs = e.timeMs)
    }
    case e: StreamingQueryListener.QueryStartedEvent => update(e.id.toString) { q =>
      // A restart is a new run: its state of the previous run's failure is history.
      q.copy(name = Option(e.name).getOrElse(""), runId = e.runId.toString, status = Running, exception = "",
        startedAtMs = parseTime(e.timestamp).getOrElse(q.startedAtMs))
    }
    case e: StreamingQueryListener.QueryTerminatedEvent => update(e.id.toString) { q =>
      q.copy(runId = e.runId.toString, status = if (e.exception.isDefined) Failed else Stopped,
        exception = e.exception.getOrElse(""))
    }
    case _ =>
  }

  private def update(queryId: String)(f: QueryCheckpoints => QueryCheckpoints): Unit = {
    val removed = mutable.ArrayBuffer[QueryCheckpoints]()
    val updated = synchronized {
      val q = f(queries.getOrElse(queryId, empty(queryId)))
      queries(queryId) = q
      while (queries.size > maxQueries && queries.valuesIterator.exists(_.status != Running)) {
        val oldest = queries.valuesIterator.find(_.status != Running).get
        queries.remove(oldest.queryId)
        removed += oldest
      }
      q
    }
    removed.foreach { r =>
      store.delete(classOf[QueryCheckpoints], r.queryId)
      onRemove(r)
    }
    store.write(updated)
    onUpdate(updated)
  }
}

object CheckpointsStatusListener {
  val Unknown = "unknown"
  val Running = "running"
  val Stopped = "stopped"
  val Failed = "failed"
  val MaxRecentFailures = 10

  /** Spark's bound on the progress updates a query keeps: the tab keeps as many batches. */
  val HistorySizeKey = "spark.sql.streaming.numRecentProgressUpdates"

  def historySize(conf: SparkConf): Int = math.max(1, conf.getInt(HistorySizeKey, 100))

  def empty(queryId: String): QueryCheckpoints = QueryCheckpoints(queryId, "", "", ours = false, Unknown, "", -1L,
    "", "", "", -1, 0L, -1L, -1L, -1L, -1L, "", -1L, 0L, Nil, Nil, Nil, -1L, -1L)

  /** Spark's event timestamps are ISO-8601 UTC texts. */
  private def parseTime(ts: String): Option[Long] =
    try Option(ts).map(t => java.time.Instant.parse(t).toEpochMilli) catch { case _: Exception => None }
}
