package io.sparkcheckpointstorage.coordinator

import java.io.FileNotFoundException

import org.apache.hadoop.conf.Configuration

import org.apache.spark.api.plugin.PluginContext
import org.apache.spark.checkpointstorage.PluginDriverEndpoint

import io.sparkcheckpointstorage.packs.PackDirectory

/** How file managers reach the coordinator: directly on the driver, over RPC elsewhere. */
object CoordinatorClient {
  /** This executor's plugin context and the batcher sending through it. */
  @volatile private var executorConnection: Option[(PluginContext, RequestBatcher)] = None

  /**
   * Sends this executor's requests to the driver plugin `pluginName` from now on, batched up
   * to `maxBatchBytes`. Not through `ctx.ask`: Spark's plugin context keeps a failed lookup
   * of the driver for the executor's life ([[PluginDriverEndpoint]]); a [[DriverConnection]]
   * looks the driver up again after a failure.
   */
  def connect(ctx: PluginContext, pluginName: String, maxBatchBytes: Int): Unit = {
    val conf = ctx.conf()
    val connection = new DriverConnection(() => PluginDriverEndpoint.lookup(pluginName, conf),
      PluginDriverEndpoint.lookupTimeout(conf), PluginDriverEndpoint.askTimeout(conf))
    connect(ctx, connection.send _, maxBatchBytes)
  }

  /** Sends this executor's requests through `send` (one round trip to the driver) from now on. */
  private[coordinator] def connect(ctx: PluginContext, send: Array[Byte] => AnyRef, maxBatchBytes: Int): Unit = synchronized {
    executorConnection.foreach(_._2.stop())
    executorConnection = Some((ctx, new RequestBatcher(send, maxBatchBytes)))
  }

  /** Stops sending through `ctx` (the executor is shutting down). */
  def disconnect(ctx: PluginContext): Unit = synchronized {
    executorConnection.filter(_._1 eq ctx).foreach { case (_, batcher) =>
      batcher.stop()
      executorConnection = None
    }
  }

  /**
   * The coordinator's reply; a [[Failed]] one is raised as `raise` makes it, by default the
   * exception of its kind.
   */
  def ask(request: CoordinatorRequest,
      raise: Failed => Exception = CoordinatorFailures.toException): CoordinatorReply = {
    val sent = if (StateMaintenanceScope.isActive) FromMaintenance(request) else request
    val reply = DriverRuntime.coordinator match {
      case Some(c) => c.handle(sent)
      case None => executorConnection match {
        case Some((_, batcher)) => batcher.ask(sent)
        case None => throw new IllegalStateException("The checkpoint storage needs its Spark " +
          s"plugin: start Spark with spark.plugins=${CheckpointStoragePlugin.ClassName} (the Python " +
          "helper configure_spark_with_checkpoint_storage sets it).")
      }
    }
    reply match {
      case f: Failed => throw raise(f)
      case ok => ok
    }
  }

  /**
   * The bytes of the inline file `rel` of checkpoint `root`, from the driver's heap or read
   * from its pack here (checked against its checksum); None when it is not inline. A
   * refusal is raised as in [[ask]].
   */
  def read(root: String, rel: String, conf: Configuration,
      raise: Failed => Exception = CoordinatorFailures.toException): Option[Array[Byte]] = {
    var attempt = 0
    while (true) {
      ask(GetInline(root, rel), raise) match {
        case InlineBytes(bytes) => return Some(bytes)
        case InPack(pack, offset, length, crc) =>
          try return Some(PackDirectory.readEntry(pack, offset, length, crc, s"${root.stripSuffix("/")}/$rel", conf))
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
