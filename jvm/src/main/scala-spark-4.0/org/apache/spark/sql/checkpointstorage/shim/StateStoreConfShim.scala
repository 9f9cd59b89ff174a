// Spark 4.0: checkpoint ids exist, no commit validation, row format checked without the store id.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

/** Spark 4.0's store settings and checks: checkpoint ids exist, no commit validation. */
object StateStoreConfShim {
  def unsupportedCheckpointFormat(conf: StateStoreConf): Option[String] =
    if (conf.enableStateStoreCheckpointIds) {
      Some("state store checkpoint format version 2; set spark.sql.streaming.stateStore.checkpointFormatVersion=1")
    } else None

  def minVersionsToDelete(conf: StateStoreConf): Long = conf.minVersionsToDelete

  def reportCommit(conf: StateStoreConf, version: Long, id: StateStoreId, hadoopConf: Configuration): Unit = ()

  def validateRowFormat(key: UnsafeRow, keySchema: StructType, value: UnsafeRow, valueSchema: StructType,
      id: StateStoreId, conf: StateStoreConf): Unit =
    StateStoreProvider.validateStateRowFormat(key, keySchema, value, valueSchema, conf)
}
