// Spark 3.5: `init` takes a prefix column count, `getStore` a version alone.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * Spark 3.5's `StateStoreProvider`: `init` takes the number of prefix key columns (0: none),
 * `getStore` a version alone. Spark 3.5 has no fine-grained replay (`snapshotStartBatchId`,
 * change feed) for third-party providers.
 */
abstract class StateStoreProviderShim extends StateStoreProvider with ProviderOperations {
  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      numColsPrefixKey: Int,
      storeConfs: StateStoreConf,
      hadoopConf: Configuration): Unit =
    initialize(stateStoreId, keySchema, valueSchema,
      if (numColsPrefixKey > 0) Some(numColsPrefixKey) else None, storeConfs, hadoopConf)

  override def getStore(version: Long): StateStore =
    openStore(version, forceSnapshotOnCommit = false, loadEmpty = false)

  override def getReadStore(version: Long): ReadStateStore = openReadStore(version)
}
