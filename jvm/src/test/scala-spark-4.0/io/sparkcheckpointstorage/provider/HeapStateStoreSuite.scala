// Spark 4.0: `StateStoreSuiteBase` as 4.x, without 4.1's cloned-conf and uninitialized-provider tests.
package io.sparkcheckpointstorage.provider

/** Spark 4.0's `StateStoreSuiteBase` on [[HeapStateStoreProvider]]. */
class HeapStateStoreSuite extends ColumnFamilyStoreSuiteSetup
