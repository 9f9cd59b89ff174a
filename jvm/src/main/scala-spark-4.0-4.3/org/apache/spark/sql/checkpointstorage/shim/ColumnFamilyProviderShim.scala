// Spark 4.0-4.3: `init` takes a key encoder spec, column families and multiple values; a change feed exists.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * Spark 4's `StateStoreProvider` `init` (key encoder spec, column families, multiple values
 * per key), read stores and change feed: the default column family, one value per key,
 * plain or prefix-scan keys.
 */
trait ColumnFamilyProviderShim extends StateStoreProvider
    with ProviderOperations with ChangeFeedShim {
  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConfs: StateStoreConf,
      hadoopConf: Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    if (useColumnFamilies) throw unsupportedOperation("column families (used by transformWithState)")
    if (useMultipleValuesPerKey) throw unsupportedOperation("multiple values per key (used by transformWithState)")
    val prefixColumns = keyStateEncoderSpec match {
      case _: NoPrefixKeyStateEncoderSpec => None
      case p: PrefixKeyScanStateEncoderSpec => Some(p.numColsPrefixKey)
      case other => throw unsupportedOperation(s"key encoding $other")
    }
    initialize(stateStoreId, keySchema, valueSchema, prefixColumns, storeConfs, hadoopConf)
  }

  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore =
    openReadStore(version)

  override protected def replayFromSnapshot(snapshotVersion: Long, endVersion: Long,
      readOnly: Boolean): StateStore = replay(snapshotVersion, endVersion, readOnly)

  override protected def changeRecords(startVersion: Long, endVersion: Long,
      colFamilyNameOpt: Option[String]): Iterator[(RecordType.Value, org.apache.spark.sql.catalyst.expressions.UnsafeRow, org.apache.spark.sql.catalyst.expressions.UnsafeRow, Long)] = {
    colFamilyNameOpt.filter(_ != StateStore.DEFAULT_COL_FAMILY_NAME)
      .foreach(cf => throw unsupportedOperation(s"column family '$cf'"))
    changes(startVersion, endVersion).map { c =>
      (if (c.value == null) RecordType.DELETE_RECORD else RecordType.PUT_RECORD, c.key, c.value, c.batchId)
    }
  }
}
