package io.sparkcheckpointstorage.provider

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType

/**
 * What [[HeapStateStoreProvider]] does, in terms every Spark line shares. Each line's
 * `StateStoreProviderShim` (in the `scala-spark-*` shim folders) maps that line's
 * `StateStoreProvider` signatures (`init`, `getStore`, the change feed, split maintenance)
 * onto these, so the provider itself is written once.
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

}

/** One change of a version: a put of `value`, or the removal of `key` when `value` is null. */
final case class StateChange(key: UnsafeRow, value: UnsafeRow, batchId: Long)
