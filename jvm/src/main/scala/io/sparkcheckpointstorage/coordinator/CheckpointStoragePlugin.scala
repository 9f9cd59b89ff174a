package io.sparkcheckpointstorage.coordinator

import java.util.{Collections, Map => JMap}

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.apache.spark.scheduler.{SparkListener, SparkListenerExecutorRemoved}

import io.sparkcheckpointstorage.monitoring.{CheckpointMetrics, CheckpointMonitor, CheckpointsStatusListener}
import io.sparkcheckpointstorage.storage.{CheckpointStorageOptions, CheckpointStorageSettings}

/**
 * Puts the checkpoint coordinator on the driver and connects executors to it
 * (`spark.plugins=io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin`).
 *
 * Why Spark's public plugin API rather than an `RpcEndpoint` of our own: it is a stable,
 * documented API that needs no code under `org.apache.spark`, and its single receiving thread
 * is enough because every request is a map operation on the driver (its payload decoded by
 * [[MessageCodec]], never Java-deserialized; Spark's RPC Java-deserializes only the message's
 * envelope, under Spark's own authentication and encryption settings); the slow steps, writing a pack and reading the
 * packs of a restarted query, run on the query's own thread (see
 * [[CheckpointCoordinator#beforeCommit]] and [[CheckpointCoordinator#prepare]]).
 */
class CheckpointStoragePlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new DriverPlugin {
    private var coordinator: CheckpointCoordinator = _
    private var endpoint: CoordinatorEndpoint = _
    private var monitor: CheckpointMonitor = _
    private var metrics: CheckpointMetrics = _

    override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
      // A jar of another Spark line would fail at the first stateful batch with an
      // AbstractMethodError: fail at start instead, naming the right artifact.
      io.sparkcheckpointstorage.BuildInfo.checkSparkLine()
      // Every setting of ours is checked here, when the session starts, as Flink checks a
      // storage's configuration: a wrong value fails the start, naming the setting.
      CheckpointStorageSettings.validateAtStartup(sc.getConf.getAll)
      val maxHeld = sc.getConf.getOption(CheckpointStorageOptions.DriverMaxTotalInlineSize)
        .map(CheckpointStorageSettings.DriverMaxTotalInlineSizeSetting.parse)
        .getOrElse(Runtime.getRuntime.maxMemory / 4)
      coordinator = new CheckpointCoordinator(sc.hadoopConfiguration, maxHeld)
      endpoint = new CoordinatorEndpoint(coordinator)
      CheckpointCoordinator.driverInstance = Some(coordinator)
      // A lost executor's background state writes never finish: the commit waiting for them
      // fails at once instead of at its timeout.
      sc.addSparkListener(new SparkListener {
        override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit =
          coordinator.backgroundWrites.executorLost(removed.executorId, removed.reason)
      })
      // The checkpoints tab and metrics: facts gathered off the batches' path by the monitor,
      // posted on the listener bus (so into the event log), kept by the tab's listener.
      monitor = new CheckpointMonitor(e => org.apache.spark.checkpointstorage.ui.CheckpointsUi.post(sc, e),
        sc.hadoopConfiguration, sc.getConf.getAll.toMap, () => coordinator.heldInlineBytes, maxHeld)
      CheckpointMonitor.driverInstance = Some(monitor)
      metrics = new CheckpointMetrics(ctx.metricRegistry())
      org.apache.spark.checkpointstorage.ui.CheckpointsUi.attach(sc, store =>
        new CheckpointsStatusListener(store, CheckpointsStatusListener.historySize(sc.getConf),
          onUpdate = metrics.update, onRemove = metrics.remove),
        () => (coordinator.heldInlineBytes, coordinator.maxTotalInlineBytes))
      Collections.emptyMap()
    }

    override def registerMetrics(appId: String, ctx: PluginContext): Unit = {
      metrics.gauge("driver.inlineBytesHeld")(coordinator.heldInlineBytes)
      metrics.gauge("driver.maxTotalInlineSize")(coordinator.maxTotalInlineBytes)
      metrics.gauge("coordinator.messages")(endpoint.messages)
      metrics.gauge("coordinator.requests")(coordinator.requestsHandled)
      metrics.gauge("coordinator.refusals")(coordinator.refusals)
    }

    override def receive(message: AnyRef): AnyRef = endpoint.receive(message)

    override def shutdown(): Unit = {
      if (CheckpointCoordinator.driverInstance.contains(coordinator)) CheckpointCoordinator.driverInstance = None
      if (CheckpointMonitor.driverInstance.contains(monitor)) CheckpointMonitor.driverInstance = None
      if (monitor != null) monitor.stop()
    }
  }

  override def executorPlugin(): ExecutorPlugin = new ExecutorPlugin {
    private var context: PluginContext = _

    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
      context = ctx
      // Spark names a plugin's messages by the plugin's class, as the driver's endpoint routes them.
      CoordinatorClient.connect(ctx, CheckpointStoragePlugin.this.getClass.getName,
        RequestBatcher.maxBatchBytes(ctx.conf().getOption(CheckpointStorageOptions.ExecutorMaxRequestBatchSize)))
    }

    override def shutdown(): Unit = {
      // State files handed to the background writer are durable, or reported failed, before
      // the executor stops (a decommissioned executor's batch still commits).
      BackgroundStateWriter.awaitIdle(CheckpointStoragePlugin.ShutdownWaitMs)
      CoordinatorClient.disconnect(context)
    }
  }
}

object CheckpointStoragePlugin {
  val ClassName: String = classOf[CheckpointStoragePlugin].getName

  /** How long a stopping executor waits for its background state writes. */
  private[coordinator] val ShutdownWaitMs = 30 * 1000L
}
