// Spark 3.5: one checkpoint format, no `minVersionsToDelete`, no commit validation.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

/** Spark 3.5's store settings and checks: one checkpoint format, no commit validation. */
object StateStoreConfShim {
  def unsupportedCheckpointFormat(conf: StateStoreConf): Option[String] = None

  /** 3.5 has no `minVersionsToDelete`: every maintenance run may clean up. */
  def minVersionsToDelete(conf: StateStoreConf): Long = 1L

  def reportCommit(conf: StateStoreConf, version: Long, id: StateStoreId, hadoopConf: Configuration): Unit = ()

  def validateRowFormat(key: UnsafeRow, keySchema: StructType, value: UnsafeRow, valueSchema: StructType,
      id: StateStoreId, conf: StateStoreConf): Unit =
    StateStoreProvider.validateStateRowFormat(key, keySchema, value, valueSchema, conf)
}
