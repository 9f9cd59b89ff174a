// Spark 4.1-4.3: `StateStoreSuiteBase` adds tests of a provider on a cloned conf and of an uninitialized one.
package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.execution.streaming.state.StateStoreId

/**
 * Spark 4.1+'s `StateStoreSuiteBase` on [[HeapStateStoreProvider]] (4.3 runs 4.2.0's): 4.1
 * added tests of a provider built on a cloned conf and of an uninitialized one.
 */
class HeapStateStoreSuite extends ColumnFamilyStoreSuiteSetup {

  override def newStoreProviderWithClonedConf(storeId: StateStoreId): HeapStateStoreProvider =
    newStoreProvider(storeId.operatorId, storeId.partitionId, dir = storeId.checkpointRootLocation,
      sqlConfOpt = Some(cloneSQLConf()))

  override def newStoreProviderNoInit(): HeapStateStoreProvider = new HeapStateStoreProvider
}
