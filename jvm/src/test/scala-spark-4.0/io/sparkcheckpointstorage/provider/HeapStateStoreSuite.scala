package io.sparkcheckpointstorage.provider

/** Spark 4.0's `StateStoreSuiteBase` on [[HeapStateStoreProvider]]. */
class HeapStateStoreSuite extends ColumnFamilyStoreSuiteSetup
