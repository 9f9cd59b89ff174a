// Spark 4.0-4.1: `getStore` takes a version and a checkpoint id, nothing more.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.sql.execution.streaming.state.StateStore

/** Spark 4.0 and 4.1's `getStore`: a version and a checkpoint id (format 2 is refused). */
abstract class StateStoreProviderShim extends ColumnFamilyProviderShim with MaintenanceShim {
  override def getStore(version: Long, stateStoreCkptId: Option[String]): StateStore =
    openStore(version, forceSnapshotOnCommit = false, loadEmpty = false)
}
