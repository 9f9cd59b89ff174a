// Spark 4.1: a read-only `StateStore` use ends with `release`.
package org.apache.spark.sql.checkpointstorage.shim

/** Spark 4.1's `StateStore`: a read-only use ends with `release`. */
abstract class StateStoreShim extends ColumnFamilyStateStoreShim {
  override def release(): Unit = releaseStore()
}
