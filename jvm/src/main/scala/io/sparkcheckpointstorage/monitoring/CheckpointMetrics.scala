package io.sparkcheckpointstorage.monitoring

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicReference

import com.codahale.metrics.{Gauge, Histogram, MetricRegistry}

/**
 * The plugin's metrics in Spark's metrics system (the plugin API's registry: every sink Spark
 * is configured with carries them, under
 * `<app id>.driver.plugin.io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin.<name>`):
 *
 *  - `driver.inlineBytesHeld`, `driver.maxTotalInlineSize`: the driver's inline state and its bound;
 *  - `coordinator.messages` (RPC messages from executors), `coordinator.requests` (requests
 *    answered, the driver's own included), `coordinator.refusals`;
 *  - `coordinator.stageEndWaitMs`, a histogram: how long a stateful stage's last task waited
 *    for the stage's state to be made durable (its pack written), over the last 1,024 stages
 *    that had state to write;
 *  - per query on our file manager, `query.<name>.<measure>` (`<name>`: the query's name, else
 *    its id; dots and spaces become `_`): the last committed batch's `lastBatchId`,
 *    `commitDurationMs` (offsets to commit), `stateInlineBytes`, `stateFileBytes`,
 *    `stateFilesWritten`, `packBytes`, and the query's `commitFailures`. They stay after the
 *    query stops, until the tab forgets the query.
 */
final class CheckpointMetrics(registry: MetricRegistry) {
  import CheckpointMetrics._

  /** Query id -> (metric prefix, its latest facts). */
  private val queries = new ConcurrentHashMap[String, (String, AtomicReference[QueryCheckpoints])]()

  def gauge(name: String)(value: => Long): Unit = {
    registry.remove(name)
    registry.register(name, new Gauge[Long] { override def getValue: Long = value })
  }

  def histogram(name: String, histogram: Histogram): Unit = {
    registry.remove(name)
    registry.register(name, histogram)
  }

  /** The query's facts changed: its gauges read them from now on. */
  def update(q: QueryCheckpoints): Unit = if (q.ours) {
    val prefix = "query." + sanitize(if (q.name.nonEmpty) q.name else q.queryId)
    val known = queries.get(q.queryId)
    if (known != null && known._1 == prefix) known._2.set(q)
    else {
      if (known != null) unregister(known._1)
      val ref = new AtomicReference(q)
      queries.put(q.queryId, prefix -> ref)
      def last(f: CheckpointBatchRow => Long): Long = ref.get.latest.map(f).getOrElse(-1L)
      gauge(s"$prefix.lastBatchId")(last(_.batchId))
      gauge(s"$prefix.commitDurationMs")(last(_.offsetsToCommitMs))
      gauge(s"$prefix.stateInlineBytes")(last(_.inlineBytes))
      gauge(s"$prefix.stateFileBytes")(last(_.fileBytes))
      gauge(s"$prefix.stateFilesWritten")(last(_.stateFiles.toLong))
      gauge(s"$prefix.packBytes")(last(_.packBytes))
      gauge(s"$prefix.commitFailures")(ref.get.failures)
    }
  }

  /** The tab forgot the query: so do the metrics. */
  def remove(q: QueryCheckpoints): Unit = {
    val known = queries.remove(q.queryId)
    if (known != null) unregister(known._1)
  }

  private def unregister(prefix: String): Unit = QueryMeasures.foreach(m => registry.remove(s"$prefix.$m"))
}

object CheckpointMetrics {
  val QueryMeasures: Seq[String] = Seq("lastBatchId", "commitDurationMs", "stateInlineBytes", "stateFileBytes",
    "stateFilesWritten", "packBytes", "commitFailures")

  def sanitize(name: String): String = name.replaceAll("[.\\s]", "_")
}
