// Spark 4.2-4.3: `release`, and `multiGet` whose default throws.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * Spark 4.2+'s `StateStore`: a read-only use ends with `release`; `multiGet` (whose default
 * throws) answers each key in order.
 */
abstract class StateStoreShim extends ColumnFamilyStateStoreShim {
  override def release(): Unit = releaseStore()

  /** The values of `keys`, in order, null for an absent key; each read when reached. */
  override def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] =
    keys.iterator.map(get(_, colFamilyName))
}
