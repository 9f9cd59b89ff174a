// Spark 4.3: snapshot and cleanup maintenance are called separately.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider

/** Spark 4.3 calls snapshot and cleanup maintenance separately. */
trait MaintenanceShim extends StateStoreProvider with ProviderOperations {
  override def doSnapshotMaintenance(): Unit = snapshotMaintenance()
  override def doCleanupMaintenance(): Unit = cleanupMaintenance()
}
