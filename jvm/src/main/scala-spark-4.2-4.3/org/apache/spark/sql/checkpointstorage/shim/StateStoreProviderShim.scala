// Spark 4.2-4.3: `getStore` may snapshot on commit or start from empty state (`loadEmpty`).
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.sql.execution.streaming.state.StateStore

/**
 * Spark 4.2+'s `getStore`: a store told to snapshot on commit, or to start from empty state
 * at `version` (state repartitioning).
 */
abstract class StateStoreProviderShim extends ColumnFamilyProviderShim with MaintenanceShim {
  override def getStore(
      version: Long,
      stateStoreCkptId: Option[String],
      forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore =
    openStore(version, forceSnapshotOnCommit, loadEmpty)
}
