package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * One version of one partition's state, used by one task: a read-only view, or a write
 * store whose changes are kept aside until `commit` and dropped by `abort`.
 *
 * Reads see the batch's own changes first, then the state the store was opened at.
 */
private[provider] final class HeapStateStore(
    provider: HeapStateStoreProvider,
    base: LiveState,
    override val version: Long,
    writable: Boolean,
    forceSnapshotOnCommit: Boolean) extends StateStore {
  import HeapStateStore._
  import HeapStateStoreProvider.{unsupported, CustomMetrics}

  /** Key -> new value, or [[CompactRowMap.Removed]]: the batch's changes, packed. */
  private val changes = new CompactRowMap(base.map.keyNumFields, base.map.valueNumFields)
  private val changedPrefixes: Option[PrefixIndex] = base.prefixIndex.map(_ => newPrefixIndex())
  private var numKeys = base.map.size.toLong
  private var state: State = Updating
  private var newVersion = -1L
  private var commitStats = CommitStats(0, 0, 0)

  private def newPrefixIndex(): PrefixIndex = {
    val (schema, cols) = provider.prefixSpec
    new PrefixIndex(schema, cols)
  }

  override def id: StateStoreId = provider.stateStoreId

  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    checkFamily(colFamilyName)
    require(key != null, "Key cannot be null")
    val changed = changes.get(key)
    if (changed == null) base.map.get(key) else if (changed eq CompactRowMap.Removed) null else changed
  }

  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] =
    throw unsupported("multiple values per key (valuesIterator)")

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("put")
    checkFamily(colFamilyName)
    require(key != null, "Key cannot be null")
    require(value != null, "Cannot put a null value")
    if (!exists(key)) {
      numKeys += 1
      changedPrefixes.foreach(_.add(key))
    }
    changes.put(key, value)
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("remove")
    checkFamily(colFamilyName)
    require(key != null, "Key cannot be null")
    if (exists(key)) {
      numKeys -= 1
      changedPrefixes.foreach(_.remove(key))
      if (base.map.contains(key)) changes.putRemoved(key) else changes.remove(key)
    }
  }

  private def exists(key: UnsafeRow): Boolean = {
    val changed = changes.get(key)
    if (changed == null) base.map.contains(key) else changed ne CompactRowMap.Removed
  }

  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    checkFamily(colFamilyName)
    // Snapshot the batch's changes so that removing while iterating (watermark eviction
    // does) neither skips nor repeats keys.
    val pending = changes.iterator.filter { case (_, v) => v ne CompactRowMap.Removed }.toArray
    val unchanged = base.map.iterator.filter { case (k, _) => !changes.contains(k) }
    val pair = new UnsafeRowPair()
    new StateStoreIterator((unchanged ++ pending.iterator).map { case (k, v) => pair.withRows(k, v) })
  }

  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    checkFamily(colFamilyName)
    val index = base.prefixIndex.getOrElse(throw new UnsupportedOperationException(
      "prefixScan needs the state store to be created with PrefixKeyScanStateEncoderSpec"))
    val fromBase = index.keys(prefixKey).filter(k => !changes.contains(k)).map(k => (k, base.map.get(k)))
    val fromChanges = changedPrefixes.get.keys(prefixKey).flatMap { k =>
      val v = changes.get(k)
      if (v == null || (v eq CompactRowMap.Removed)) None else Some((k, v))
    }.toArray
    val pair = new UnsafeRowPair()
    new StateStoreIterator((fromBase ++ fromChanges.iterator).map { case (k, v) => pair.withRows(k, v) })
  }

  override def prefixScanWithMultiValues(prefixKey: UnsafeRow,
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    throw unsupported("multiple values per key (prefixScanWithMultiValues)")

  override def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    throw unsupported("multiple values per key (iteratorWithMultiValues)")

  override def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    throw unsupported("multiple values per key (putList)")

  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    throw unsupported("multiple values per key (merge)")

  override def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    throw unsupported("multiple values per key (mergeList)")

  override def allColumnFamilyNames: Set[String] = Set(StateStore.DEFAULT_COL_FAMILY_NAME)

  override def createColFamilyIfAbsent(colFamilyName: String, keySchema: StructType,
      valueSchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    throw unsupported("column families (createColFamilyIfAbsent)")

  override def removeColFamilyIfExists(colFamilyName: String): Boolean =
    throw unsupported("column families (removeColFamilyIfExists)")

  override def commit(): Long = {
    checkWritable("commit")
    commitStats = provider.commit(this, changes, forceSnapshotOnCommit)
    newVersion = version + 1
    state = Committed
    changes.clear()
    changedPrefixes.foreach(_.clear())
    newVersion
  }

  override def abort(): Unit = {
    if (state == Updating) {
      changes.clear()
      changedPrefixes.foreach(_.clear())
      state = Aborted
    }
  }

  override def release(): Unit = {
    if (state == Updating) state = Released
  }

  override def hasCommitted: Boolean = state == Committed

  override def metrics: StateStoreMetrics = {
    val custom: Map[StateStoreCustomMetric, Long] = Map(
      CustomMetrics.FilesWritten -> commitStats.filesWritten.toLong,
      CustomMetrics.BytesWritten -> commitStats.bytesWritten,
      CustomMetrics.SnapshotLag -> provider.snapshotLag,
      CustomMetrics.LoadTime -> provider.loadTimeMs)
    StateStoreMetrics(numKeys, base.memoryBytes + changes.memoryBytes, custom)
  }

  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo = {
    if (state != Committed) {
      throw new IllegalStateException(s"Cannot get checkpoint info of state store " +
        s"${provider.describe} version $version: it has not committed")
    }
    StateStoreCheckpointInfo(id.partitionId, newVersion, None, None)
  }

  override def toString: String =
    s"HeapStateStore[${provider.describe}, version $version, ${if (writable) "write" else "read"}]"

  private def checkWritable(op: String): Unit = {
    if (!writable) throw new UnsupportedOperationException(s"Cannot $op: $this is read-only")
    if (state != Updating) {
      throw new IllegalStateException(s"Cannot $op: $this has already ${state.name}")
    }
  }

  private def checkFamily(name: String): Unit = {
    if (name != StateStore.DEFAULT_COL_FAMILY_NAME) throw unsupported(s"column family '$name'")
  }
}

private[provider] object HeapStateStore {
  sealed abstract class State(val name: String)
  case object Updating extends State("updating")
  case object Committed extends State("committed")
  case object Aborted extends State("aborted")
  case object Released extends State("released")
}
