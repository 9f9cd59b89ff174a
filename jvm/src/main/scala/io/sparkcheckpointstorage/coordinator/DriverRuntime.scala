package io.sparkcheckpointstorage.coordinator

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.PluginContext
import org.apache.spark.checkpointstorage.ui.CheckpointsUi
import org.apache.spark.scheduler.{SparkListener, SparkListenerExecutorRemoved}

import io.sparkcheckpointstorage.BuildInfo
import io.sparkcheckpointstorage.monitoring.{CheckpointMetrics, CheckpointMonitor, CheckpointsStatusListener}
import io.sparkcheckpointstorage.storage.{CheckpointStorageOptions, CheckpointStorageSettings}

/**
 * The driver side of the plugin, wired in this one place (Flink: the JobMaster creating its
 * `CheckpointCoordinator` with a `CheckpointStatsTracker`): the coordinator, the monitor it
 * reports to, the endpoint executors reach it through, the Checkpoints tab and the metrics.
 * [[CheckpointStoragePlugin]] starts it when Spark starts the driver, and stops it.
 */
final class DriverRuntime private (sc: SparkContext, ctx: PluginContext) {
  private val maxHeld: Long = sc.getConf.getOption(CheckpointStorageOptions.DriverMaxTotalInlineSize)
    .map(CheckpointStorageSettings.DriverMaxTotalInlineSizeSetting.parse)
    .getOrElse(Runtime.getRuntime.maxMemory / 4)

  // The tab and metrics: facts gathered off the batches' path by the monitor, posted on the
  // listener bus (so into the event log), kept by the tab's listener.
  private val monitor = new CheckpointMonitor(e => CheckpointsUi.post(sc, e), sc.hadoopConfiguration,
    sc.getConf.getAll.toMap, () => coordinator.heldInlineBytes, maxHeld)
  val coordinator: CheckpointCoordinator = new CheckpointCoordinator(sc.hadoopConfiguration, maxHeld, Some(monitor))
  private val endpoint = new CoordinatorEndpoint(coordinator)
  private val metrics = new CheckpointMetrics(ctx.metricRegistry())

  // A lost executor's background state writes never finish: the commit waiting for them
  // fails at once instead of at its timeout.
  sc.addSparkListener(new SparkListener {
    override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit =
      coordinator.backgroundWrites.executorLost(removed.executorId, removed.reason)
  })
  CheckpointsUi.attach(sc, store =>
    new CheckpointsStatusListener(store, CheckpointsStatusListener.historySize(sc.getConf),
      onUpdate = metrics.update, onRemove = metrics.remove),
    () => (coordinator.heldInlineBytes, coordinator.maxTotalInlineBytes))

  /** The driver's gauges, once Spark's metrics system takes them. */
  def registerMetrics(): Unit = {
    metrics.gauge("driver.inlineBytesHeld")(coordinator.heldInlineBytes)
    metrics.gauge("driver.maxTotalInlineSize")(coordinator.maxTotalInlineBytes)
    metrics.gauge("coordinator.messages")(endpoint.messages)
    metrics.gauge("coordinator.requests")(coordinator.requestsHandled)
    metrics.gauge("coordinator.refusals")(coordinator.refusals)
    metrics.histogram("coordinator.stageEndWaitMs", coordinator.stageEndWaits)
  }

  /** An executor's message to the coordinator. */
  def receive(message: AnyRef): AnyRef = endpoint.receive(message)

  private def stop(): Unit = monitor.stop()
}

/**
 * The one static entry point to the driver's coordinator. Spark creates a checkpoint file
 * manager and a query listener by class name, and Python reaches the JVM through py4j's
 * statics: none of them can be handed the coordinator, so they ask [[coordinator]].
 * Everything else is given what it needs by [[DriverRuntime]].
 */
object DriverRuntime {
  @volatile private var running: Option[CheckpointCoordinator] = None

  /** The coordinator of this JVM when it is a driver running the plugin; None on executors. */
  def coordinator: Option[CheckpointCoordinator] = running

  /** The driver's coordinator, null outside the driver (for Python). */
  def currentCoordinator(): CheckpointCoordinator = running.orNull

  /** Wires the driver side and makes its coordinator the JVM's; called by the plugin's `init`. */
  private[coordinator] def start(sc: SparkContext, ctx: PluginContext): DriverRuntime = {
    // A jar of another Spark line would fail at the first stateful batch with an
    // AbstractMethodError: fail at start instead, naming the right artifact.
    BuildInfo.checkSparkLine()
    // Every setting of ours is checked here, when the session starts, as Flink checks a
    // storage's configuration: a wrong value fails the start, naming the setting.
    CheckpointStorageSettings.validateAtStartup(sc.getConf.getAll)
    val runtime = new DriverRuntime(sc, ctx)
    running = Some(runtime.coordinator)
    runtime
  }

  /** Stops `runtime`'s monitor; its coordinator is no longer the JVM's. */
  private[coordinator] def stop(runtime: DriverRuntime): Unit = {
    if (running.exists(_ eq runtime.coordinator)) running = None
    runtime.stop()
  }

  /** Makes `c` the JVM's coordinator without Spark's plugin: suites that drive one directly. */
  private[sparkcheckpointstorage] def useForTests(c: Option[CheckpointCoordinator]): Unit = running = c
}
