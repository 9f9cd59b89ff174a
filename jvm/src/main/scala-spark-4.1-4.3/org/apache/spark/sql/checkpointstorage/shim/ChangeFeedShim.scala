// Spark 4.1-4.3: fine-grained replay with checkpoint ids; its `NextIterator` is `private[spark]`.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.checkpointstorage.IteratorAsNextIterator
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{RecordType, StateStore, SupportsFineGrainedReplay}

/**
 * Spark 4.1+'s `SupportsFineGrainedReplay` (with checkpoint ids, which format 1 never has)
 * over plain iterators: the change reader's type is `private[spark]`, so the override is
 * declared in this package.
 */
trait ChangeFeedShim extends SupportsFineGrainedReplay {
  /** (record type, key, value or null, batch id) of versions `startVersion` to `endVersion`. */
  protected def changeRecords(startVersion: Long, endVersion: Long,
      colFamilyNameOpt: Option[String]): Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)]

  /** The state at `endVersion` from the snapshot of `snapshotVersion` and later deltas. */
  protected def replayFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean): StateStore

  override def replayStateFromSnapshot(
      snapshotVersion: Long,
      endVersion: Long,
      readOnly: Boolean,
      snapshotVersionStateStoreCkptId: Option[String],
      endVersionStateStoreCkptId: Option[String]): StateStore =
    replayFromSnapshot(snapshotVersion, endVersion, readOnly)

  override def getStateStoreChangeDataReader(
      startVersion: Long,
      endVersion: Long,
      colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String])
    : org.apache.spark.util.NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] =
    new IteratorAsNextIterator(changeRecords(startVersion, endVersion, colFamilyNameOpt), () => ())
}
