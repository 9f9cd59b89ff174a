// Spark 3.5: `StateStore` has no column families and plain iterators.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, UnsafeRowPair}

/** Spark 3.5's `StateStore`: no column families, plain iterators. */
abstract class StateStoreShim extends StateStore with StoreOperations {
  override def get(key: UnsafeRow): UnsafeRow = getRow(key)
  override def put(key: UnsafeRow, value: UnsafeRow): Unit = putRow(key, value)
  override def remove(key: UnsafeRow): Unit = removeRow(key)
  override def iterator(): Iterator[UnsafeRowPair] = rowPairs()
  override def prefixScan(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = prefixRowPairs(prefixKey)
}
