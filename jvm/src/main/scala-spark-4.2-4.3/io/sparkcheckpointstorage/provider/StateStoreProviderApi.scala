package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.execution.streaming.state.StateStore

/**
 * Spark 4.2+'s `getStore`: a store told to snapshot on commit, or to start from empty state
 * at `version` (state repartitioning).
 */
abstract class StateStoreProviderApi extends ColumnFamilyProviderApi with MaintenanceApi {
  override def getStore(
      version: Long,
      stateStoreCkptId: Option[String],
      forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore =
    openStore(version, forceSnapshotOnCommit, loadEmpty)
}
