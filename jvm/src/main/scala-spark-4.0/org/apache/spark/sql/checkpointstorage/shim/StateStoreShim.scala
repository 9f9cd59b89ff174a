// Spark 4.0: `StateStore` has column families but no `release`.
package org.apache.spark.sql.checkpointstorage.shim

/** Spark 4.0's `StateStore`: column families, no `release`. */
abstract class StateStoreShim extends ColumnFamilyStateStoreShim
