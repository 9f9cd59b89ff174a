// Spark 3.5: `init` takes a prefix column count; no checkpoint info, no state store error classes.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * Spark 3.5's provider API for the line-neutral provider tests: no checkpoint info, and no
 * error classes for state stores (the messages, which the tests check too, carry the words).
 */
object ProviderTestShim {
  def init(p: StateStoreProvider, id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      prefixCols: Option[Int], storeConf: StateStoreConf, hadoopConf: Configuration): Unit =
    p.init(id, keySchema, valueSchema, prefixCols.getOrElse(0), storeConf, hadoopConf)

  def checkpointInfoVersion(store: StateStore): Option[Long] = None

  def assertCondition(e: Throwable, condition: String, params: (String, String => Boolean)*): Unit = ()
}
