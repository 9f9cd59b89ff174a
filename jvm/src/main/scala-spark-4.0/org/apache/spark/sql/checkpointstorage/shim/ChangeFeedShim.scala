// Spark 4.0: fine-grained replay without checkpoint ids; its `NextIterator` is `private[spark]`.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.checkpointstorage.IteratorAsNextIterator
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{RecordType, StateStore, SupportsFineGrainedReplay}

/**
 * Spark 4.0's `SupportsFineGrainedReplay` over plain iterators: the change reader's type is
 * `private[spark]`, so the override is declared in this package.
 */
trait ChangeFeedShim extends SupportsFineGrainedReplay {
  /** (record type, key, value or null, batch id) of versions `startVersion` to `endVersion`. */
  protected def changeRecords(startVersion: Long, endVersion: Long,
      colFamilyNameOpt: Option[String]): Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)]

  /** The state at `endVersion` from the snapshot of `snapshotVersion` and later deltas. */
  protected def replayFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean): StateStore

  override def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long): StateStore =
    replayFromSnapshot(snapshotVersion, endVersion, readOnly = false)

  override def getStateStoreChangeDataReader(
      startVersion: Long,
      endVersion: Long,
      colFamilyNameOpt: Option[String])
    : org.apache.spark.util.NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] =
    new IteratorAsNextIterator(changeRecords(startVersion, endVersion, colFamilyNameOpt), () => ())
}
