package io.sparkcheckpointstorage.coordinator

import java.util.{Collections, Map => JMap}

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}

import io.sparkcheckpointstorage.storage.CheckpointStorageOptions

/**
 * Puts the checkpoint coordinator on the driver and connects executors to it
 * (`spark.plugins=io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin`). What runs
 * on the driver is wired by [[DriverRuntime]].
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
    private var runtime: DriverRuntime = _

    override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
      runtime = DriverRuntime.start(sc, ctx)
      Collections.emptyMap()
    }

    override def registerMetrics(appId: String, ctx: PluginContext): Unit = runtime.registerMetrics()

    override def receive(message: AnyRef): AnyRef = runtime.receive(message)

    override def shutdown(): Unit = if (runtime != null) DriverRuntime.stop(runtime)
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
