package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider

/** Spark 4.3 calls snapshot and cleanup maintenance separately. */
trait MaintenanceApi extends StateStoreProvider with ProviderOperations {
  override def doSnapshotMaintenance(): Unit = snapshotMaintenance()
  override def doCleanupMaintenance(): Unit = cleanupMaintenance()
}
