package org.apache.spark.checkpointstorage

import org.apache.spark.{SparkConf, SparkEnv, SparkException}
import org.apache.spark.internal.plugin.PluginMessage
import org.apache.spark.util.RpcUtils

/**
 * The executor's way to the driver's plugin endpoint, looked up by this package rather than
 * through `PluginContext.ask` (Spark 3.5-4.3 alike).
 *
 * Spark's `PluginContextImpl` looks the endpoint up once, lazily, on the first `ask`, and
 * keeps the result for the executor's life, a failed lookup as `null`: an executor whose first
 * message met a driver that did not answer within `spark.rpc.lookupTimeout` answers every
 * later one with "Driver endpoint is not known." until it dies. The lookup and the message
 * below are the ones `PluginContextImpl` makes (`RpcUtils.makeDriverRef` with the lookup
 * timeout, `askSync` with the ask timeout, the same `PluginMessage` envelope), so the driver's
 * `PluginEndpoint` routes them to our `DriverPlugin.receive` unchanged; the caller decides
 * when to look up again.
 */
object PluginDriverEndpoint {
  /**
   * Looks the driver's plugin endpoint up (blocking up to `spark.rpc.lookupTimeout`) and
   * returns a round trip through it for plugin `pluginName`, each bounded by
   * `spark.rpc.askTimeout`. Needs the executor's `SparkEnv`.
   */
  def lookup(pluginName: String, conf: SparkConf): AnyRef => AnyRef = {
    val ref = RpcUtils.makeDriverRef(EndpointName, conf, SparkEnv.get.rpcEnv)
    message =>
      try ref.askSync[AnyRef](PluginMessage(pluginName, message))
      catch {
        // askSync wraps what failed on the way in "Exception thrown in awaitResult".
        case e: SparkException if e.getCause != null => throw e.getCause
      }
  }

  /**
   * The name the driver registers its plugin endpoint under: `PluginEndpoint`'s class name
   * (that class is package-private to Spark's plugin package, so it is spelled out here).
   */
  private val EndpointName = "org.apache.spark.internal.plugin.PluginEndpoint"

  /** `spark.rpc.lookupTimeout` as in force (`key=value`; Spark falls back to other keys). */
  def lookupTimeout(conf: SparkConf): String = describe(RpcUtils.lookupRpcTimeout(conf))

  /** `spark.rpc.askTimeout` as in force. */
  def askTimeout(conf: SparkConf): String = describe(RpcUtils.askRpcTimeout(conf))

  private def describe(t: org.apache.spark.rpc.RpcTimeout): String = s"${t.timeoutProp}=${t.duration.toSeconds}s"
}
