// Every Spark line: what our provider and its store do, in terms every line shares.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, StateStoreConf, StateStoreId, UnsafeRowPair}
import org.apache.spark.sql.types.StructType

/**
 * What our provider does, in terms every Spark line shares. Each line's
 * `StateStoreProviderShim` maps that line's `StateStoreProvider` signatures (`init`,
 * `getStore`, the change feed, split maintenance) onto these, so the provider itself is
 * written once.
 */
trait ProviderOperations {
  /** `init`, once the line's arguments are checked; `prefixColumns` for prefix-scan keys. */
  protected def initialize(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      prefixColumns: Option[Int], storeConfs: StateStoreConf, hadoopConf: Configuration): Unit
  protected def openStore(version: Long, forceSnapshotOnCommit: Boolean, loadEmpty: Boolean): StateStore
  protected def openReadStore(version: Long): ReadStateStore
  /** The state at `endVersion` rebuilt from the snapshot of `snapshotVersion` and later deltas. */
  protected def replay(snapshotVersion: Long, endVersion: Long, readOnly: Boolean): StateStore
  /** The changes of versions `startVersion` to `endVersion`, in order. */
  protected def changes(startVersion: Long, endVersion: Long): Iterator[StateChange]
  protected def snapshotMaintenance(): Unit
  protected def cleanupMaintenance(): Unit
  /** The error for a feature of Spark's API the provider does not offer (a line's `init` refuses some). */
  protected def unsupportedOperation(what: String): UnsupportedOperationException
}

/** One change of a version: a put of `value`, or the removal of `key` when `value` is null. */
final case class StateChange(key: UnsafeRow, value: UnsafeRow, batchId: Long)

/**
 * What our provider's store does, in terms every Spark line shares. Each line's
 * `StateStoreShim` maps that line's `StateStore` signatures (with or without column families,
 * its iterator type, which members exist) onto these, so the store itself is written once.
 */
trait StoreOperations {
  /** The key's value in this version with the batch's changes, or null. */
  def getRow(key: UnsafeRow): UnsafeRow
  def putRow(key: UnsafeRow, value: UnsafeRow): Unit
  def removeRow(key: UnsafeRow): Unit
  /** Every key and value, as live views (the store's own doc says what they show). */
  def rowPairs(): Iterator[UnsafeRowPair]
  /** The keys starting with `prefixKey` (prefix key encoding only). */
  def prefixRowPairs(prefixKey: UnsafeRow): Iterator[UnsafeRowPair]
  /** Ends a read-only use of the store without aborting it. */
  def releaseStore(): Unit
  /** The version this store committed; fails before its commit. */
  def committedVersion: Long
  /** The error for a feature of Spark's API this store does not offer. */
  def unsupportedOperation(what: String): UnsupportedOperationException
}
