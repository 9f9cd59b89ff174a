package io.sparkcheckpointstorage.coordinator

import java.io.FileNotFoundException
import java.util.{Collections, Map => JMap}

import org.apache.hadoop.conf.Configuration

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}

import io.sparkcheckpointstorage.packs.PackFiles
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
      Collections.emptyMap()
    }

    override def receive(message: AnyRef): AnyRef = endpoint.receive(message)

    override def shutdown(): Unit = {
      if (CheckpointCoordinator.driverInstance.contains(coordinator)) CheckpointCoordinator.driverInstance = None
    }
  }

  override def executorPlugin(): ExecutorPlugin = new ExecutorPlugin {
    private var context: PluginContext = _

    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
      context = ctx
      CoordinatorClient.connect(ctx,
        RequestBatcher.maxBatchBytes(ctx.conf().getOption(CheckpointStorageOptions.ExecutorMaxRequestBatchSize)))
    }

    override def shutdown(): Unit = CoordinatorClient.disconnect(context)
  }
}

object CheckpointStoragePlugin {
  val ClassName: String = classOf[CheckpointStoragePlugin].getName
}

/** How file managers reach the coordinator: directly on the driver, over RPC elsewhere. */
object CoordinatorClient {
  /** This executor's plugin context and the batcher sending through it. */
  @volatile private var executorConnection: Option[(PluginContext, RequestBatcher)] = None

  /** Sends this executor's requests through `ctx` from now on, batched up to `maxBatchBytes`. */
  def connect(ctx: PluginContext, maxBatchBytes: Int = RequestBatcher.DefaultMaxBatchBytes): Unit = synchronized {
    executorConnection.foreach(_._2.stop())
    executorConnection = Some((ctx, new RequestBatcher(ctx.ask, maxBatchBytes)))
  }

  /** Stops sending through `ctx` (the executor is shutting down). */
  def disconnect(ctx: PluginContext): Unit = synchronized {
    executorConnection.filter(_._1 eq ctx).foreach { case (_, batcher) =>
      batcher.stop()
      executorConnection = None
    }
  }

  /** The coordinator's reply; a [[Failed]] one is raised as the exception of its kind. */
  def ask(request: CoordinatorRequest): CoordinatorReply = {
    val reply = CheckpointCoordinator.driverInstance match {
      case Some(c) => c.handle(request)
      case None => executorConnection match {
        case Some((_, batcher)) => batcher.ask(request)
        case None => throw new IllegalStateException("The checkpoint storage needs its Spark " +
          s"plugin: start Spark with spark.plugins=${CheckpointStoragePlugin.ClassName} (the Python " +
          "helper configure_spark_with_checkpoint_storage sets it).")
      }
    }
    reply match {
      case f: Failed => throw CoordinatorFailures.toException(f)
      case ok => ok
    }
  }

  /**
   * The bytes of the inline file `rel` of checkpoint `root`, from the driver's heap or read
   * from its pack here (checked against its checksum); None when it is not inline.
   */
  def read(root: String, rel: String, conf: Configuration): Option[Array[Byte]] = {
    var attempt = 0
    while (true) {
      ask(GetInline(root, rel)) match {
        case InlineBytes(bytes) => return Some(bytes)
        case InPack(pack, offset, length, crc) =>
          try return Some(PackFiles.readEntry(pack, offset, length, crc, s"${root.stripSuffix("/")}/$rel", conf))
          catch {
            // The running query superseded the pack while we read: ask again where the file is.
            case e: FileNotFoundException if attempt < MaxPackRereads => attempt += 1
          }
        case _ => return None
      }
    }
    None
  }

  private val MaxPackRereads = 3
}
