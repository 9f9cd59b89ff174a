// Spark 4.0-4.3: `StateStore` has column families, checkpoint info and `StateStoreIterator`.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * Spark 4's `StateStore` (column families, checkpoint info, `StateStoreIterator`) on
 * [[StoreOperations]]: only the default column family, one value per key.
 *
 * Members added after 4.0 (`putList`, `mergeList` in 4.1; the multi-value scans and
 * `allColumnFamilyNames` in 4.2) are declared without `override`: they implement the line's
 * abstract member where it exists and are plain methods where it does not.
 */
trait ColumnFamilyStateStoreShim extends StateStore with StoreOperations {
  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    checkFamily(colFamilyName)
    getRow(key)
  }

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    checkFamily(colFamilyName)
    putRow(key, value)
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    checkFamily(colFamilyName)
    removeRow(key)
  }

  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    checkFamily(colFamilyName)
    new StateStoreIterator(rowPairs())
  }

  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    checkFamily(colFamilyName)
    new StateStoreIterator(prefixRowPairs(prefixKey))
  }

  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] =
    throw unsupportedOperation("multiple values per key (valuesIterator)")

  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    throw unsupportedOperation("multiple values per key (merge)")

  def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    throw unsupportedOperation("multiple values per key (putList)")

  def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    throw unsupportedOperation("multiple values per key (mergeList)")

  def prefixScanWithMultiValues(prefixKey: UnsafeRow,
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    throw unsupportedOperation("multiple values per key (prefixScanWithMultiValues)")

  def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    throw unsupportedOperation("multiple values per key (iteratorWithMultiValues)")

  def allColumnFamilyNames: Set[String] = Set(StateStore.DEFAULT_COL_FAMILY_NAME)

  override def createColFamilyIfAbsent(colFamilyName: String, keySchema: StructType,
      valueSchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    throw unsupportedOperation("column families (createColFamilyIfAbsent)")

  override def removeColFamilyIfExists(colFamilyName: String): Boolean =
    throw unsupportedOperation("column families (removeColFamilyIfExists)")

  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo =
    StateStoreCheckpointInfo(id.partitionId, committedVersion, None, None)

  private def checkFamily(name: String): Unit = {
    if (name != StateStore.DEFAULT_COL_FAMILY_NAME) throw unsupportedOperation(s"column family '$name'")
  }
}
