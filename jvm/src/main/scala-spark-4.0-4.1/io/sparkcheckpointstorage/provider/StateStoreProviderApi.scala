package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.execution.streaming.state.StateStore

/** Spark 4.0 and 4.1's `getStore`: a version and a checkpoint id (format 2 is refused). */
abstract class StateStoreProviderApi extends ColumnFamilyProviderApi with MaintenanceApi {
  override def getStore(version: Long, stateStoreCkptId: Option[String]): StateStore =
    openStore(version, forceSnapshotOnCommit = false, loadEmpty = false)
}
