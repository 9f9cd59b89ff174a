// Spark 4.1-4.3: checkpoint ids, commit validation, row format checked with the store id.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

/** Spark 4.1+'s store settings and checks: checkpoint ids, commit validation. */
object StateStoreConfShim {
  def unsupportedCheckpointFormat(conf: StateStoreConf): Option[String] =
    if (conf.enableStateStoreCheckpointIds) {
      Some(s"state store checkpoint format version ${conf.stateStoreCheckpointFormatVersion}; " +
        "set spark.sql.streaming.stateStore.checkpointFormatVersion=1")
    } else None

  def minVersionsToDelete(conf: StateStoreConf): Long = conf.minVersionsToDelete

  /** Spark checks, before the batch commits, that every store of the batch committed. */
  def reportCommit(conf: StateStoreConf, version: Long, id: StateStoreId, hadoopConf: Configuration): Unit =
    if (conf.commitValidationEnabled) StateStore.reportCommitToCoordinator(version, id, hadoopConf)

  def validateRowFormat(key: UnsafeRow, keySchema: StructType, value: UnsafeRow, valueSchema: StructType,
      id: StateStoreId, conf: StateStoreConf): Unit =
    StateStoreProvider.validateStateRowFormat(key, keySchema, value, valueSchema, id, conf)
}
