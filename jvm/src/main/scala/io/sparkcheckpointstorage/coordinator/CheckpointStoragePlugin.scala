package io.sparkcheckpointstorage.coordinator

import java.util.{Collections, Map => JMap}

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}

import io.sparkcheckpointstorage.storage.CheckpointStorageOptions

/**
 * Puts the checkpoint coordinator on the driver and connects executors to it
 * (`spark.plugins=io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin`).
 *
 * Why Spark's public plugin API rather than an `RpcEndpoint` of our own: it is a stable,
 * documented API that needs no code under `org.apache.spark`, and its single receiving thread
 * is enough because every request is a map operation on the driver; the one slow step,
 * writing a pack, runs on the query's own thread when Spark commits the batch.
 */
class CheckpointStoragePlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new DriverPlugin {
    private var coordinator: CheckpointCoordinator = _

    override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
      // A jar of another Spark line would fail at the first stateful batch with an
      // AbstractMethodError: fail at start instead, naming the right artifact.
      io.sparkcheckpointstorage.BuildInfo.checkSparkLine()
      val key = CheckpointStorageOptions.DriverMaxTotalInlineSize
      val maxHeld = sc.getConf.getOption(key).map(CheckpointStorageOptions.parseBytes(key, _))
        .getOrElse(Runtime.getRuntime.maxMemory / 4)
      coordinator = new CheckpointCoordinator(sc.hadoopConfiguration, maxHeld)
      CheckpointCoordinator.driverInstance = Some(coordinator)
      Collections.emptyMap()
    }

    override def receive(message: AnyRef): AnyRef = message match {
      case bytes: Array[Byte] =>
        MessageCodec.encode(MessageCodec.decode[AnyRef](bytes) match {
          case r: CoordinatorRequest => coordinator.handle(r)
          case other => Refused(s"Unknown request ${other.getClass.getName}")
        })
      case other => MessageCodec.encode(Refused(s"Unknown request ${other.getClass.getName}"))
    }

    override def shutdown(): Unit = {
      if (CheckpointCoordinator.driverInstance.contains(coordinator)) CheckpointCoordinator.driverInstance = None
    }
  }

  override def executorPlugin(): ExecutorPlugin = new ExecutorPlugin {
    private var context: PluginContext = _

    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
      context = ctx
      CoordinatorClient.executorContext = Some(ctx)
    }

    override def shutdown(): Unit = {
      if (CoordinatorClient.executorContext.contains(context)) CoordinatorClient.executorContext = None
    }
  }
}

object CheckpointStoragePlugin {
  val ClassName: String = classOf[CheckpointStoragePlugin].getName
}

/** How file managers reach the coordinator: directly on the driver, over RPC elsewhere. */
object CoordinatorClient {
  @volatile private[coordinator] var executorContext: Option[PluginContext] = None

  def ask(request: CoordinatorRequest): CoordinatorReply = {
    val reply = CheckpointCoordinator.driverInstance match {
      case Some(c) => c.handle(request)
      case None => executorContext match {
        case Some(ctx) => MessageCodec.decode[CoordinatorReply](ctx.ask(MessageCodec.encode(request)).asInstanceOf[Array[Byte]])
        case None => throw new IllegalStateException("The checkpoint storage needs its Spark " +
          s"plugin: start Spark with spark.plugins=${CheckpointStoragePlugin.ClassName} (the Python " +
          "helper configure_spark_with_checkpoint_storage sets it).")
      }
    }
    reply match {
      case Refused(message) => throw new java.io.IOException(message)
      case LimitExceeded(message) => throw new io.sparkcheckpointstorage.storage.StateSizeLimitException(message)
      case ok => ok
    }
  }
}
