// Spark 3.5-4.1: no `getStore(loadEmpty)`, so a migration opens our provider's store empty itself.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType

import io.sparkcheckpointstorage.provider.ProviderOperations

/** Our provider's way, on lines without Spark's, to open a migration's store empty at a version. */
trait EmptyStoreShim extends ProviderOperations {
  /**
   * A migration's store: initialized as `init` would, opened empty at `version`, its commit
   * writing a snapshot of version `version + 1` ([[OwnStoreWriterShim]]).
   */
  private[shim] def openEmptyForMigration(stateStoreId: StateStoreId, keySchema: StructType,
      valueSchema: StructType, prefixColumns: Option[Int], storeConfs: StateStoreConf, hadoopConf: Configuration,
      version: Long): StateStore = {
    initialize(stateStoreId, keySchema, valueSchema, prefixColumns, storeConfs, hadoopConf)
    openStore(version, forceSnapshotOnCommit = true, loadEmpty = true)
  }
}
