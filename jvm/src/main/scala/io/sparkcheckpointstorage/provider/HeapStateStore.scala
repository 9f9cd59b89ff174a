package io.sparkcheckpointstorage.provider

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.checkpointstorage.shim.{StateStoreErrorsShim, StateStoreShim}
import org.apache.spark.sql.execution.streaming.state._

import io.sparkcheckpointstorage.coordinator.CoordinatorUnreachableException
import io.sparkcheckpointstorage.storage.StateSizeLimitException

/**
 * One version of one partition's state, used by one task: a read-only view, or a write
 * store whose changes are kept aside until `commit` and dropped by `abort`.
 *
 * Reads see the batch's own changes first, then the state the store was opened at.
 *
 * Iterators are live views, as over Spark's HDFS provider (whose iterators walk a
 * `ConcurrentHashMap`): a key's value is read when the iterator reaches it, so changes
 * made after the iterator was created show, keys added later are reached, keys removed
 * before they are reached are not, and no key is returned twice, whatever is put or
 * removed while iterating. Like a `ConcurrentHashMap` iterator, one created while the
 * store holds no key at all stays empty. Spark's `StateStoreSuiteBase` pins both
 * behaviours for providers other than RocksDB's (its SPARK-38320 test).
 */
private[provider] final class HeapStateStore(
    provider: HeapStateStoreProvider,
    base: LiveState,
    override val version: Long,
    writable: Boolean,
    forceSnapshotOnCommit: Boolean) extends StateStoreShim {
  import HeapStateStore._
  import HeapStateStoreProvider.{unsupported, CustomMetrics}

  /**
   * Key -> new value, or [[CompactRowMap.Removed]]: the batch's changes, packed. A removed
   * key stays in as [[CompactRowMap.Removed]] (even one the base does not hold), so keys
   * are never deleted from it while the store is open: iterators rely on that.
   */
  private val changes = new CompactRowMap(base.map.keyNumFields, base.map.valueNumFields,
    initialSeed = CompactRowMap.ChangesSeed)
  /**
   * The record addresses in `changes` of the keys this batch added that the base does not
   * hold, in the order they were first put: what iterators walk after the base. A key is
   * logged once, since it never leaves `changes`; its key bytes at the logged address stay
   * (a record is only ever superseded, never freed, until `changes` is cleared).
   */
  private var newKeys = new Array[Long](16)
  private var numNewKeys = 0
  /** Bumped when `changes` is cleared: iterators from before then stop. */
  private var changesGeneration = 0
  private val changedPrefixes: Option[PrefixIndex] = base.prefixIndex.map(_ => newPrefixIndex())
  private var numKeys = base.map.size.toLong
  private var state: State = Updating
  private var newVersion = -1L
  private var commitStats = CommitStats(0, 0, 0, 0)

  private def newPrefixIndex(): PrefixIndex = {
    val (schema, cols) = provider.prefixSpec
    new PrefixIndex(schema, cols)
  }

  override def id: StateStoreId = provider.stateStoreId

  override def getRow(key: UnsafeRow): UnsafeRow = {
    require(key != null, "Key cannot be null")
    val changed = changes.get(key)
    if (changed == null) base.map.get(key) else if (changed eq CompactRowMap.Removed) null else changed
  }

  override def putRow(key: UnsafeRow, value: UnsafeRow): Unit = {
    checkWritable("put")
    require(key != null, "Key cannot be null")
    require(value != null, "Cannot put a null value")
    val changed = changes.get(key)
    val inBase = changed == null && base.map.contains(key)
    val existed = if (changed == null) inBase else changed ne CompactRowMap.Removed
    if (!existed) {
      numKeys += 1
      changedPrefixes.foreach(_.add(key))
    }
    changes.put(key, value)
    if (changed == null && !inBase) logNewKey(key)
  }

  private def logNewKey(key: UnsafeRow): Unit = {
    if (numNewKeys == newKeys.length) newKeys = java.util.Arrays.copyOf(newKeys, numNewKeys * 2)
    newKeys(numNewKeys) = changes.recordAddress(key)
    numNewKeys += 1
  }

  override def removeRow(key: UnsafeRow): Unit = {
    checkWritable("remove")
    require(key != null, "Key cannot be null")
    if (exists(key)) {
      numKeys -= 1
      changedPrefixes.foreach(_.remove(key))
      changes.putRemoved(key)
    }
  }

  private def exists(key: UnsafeRow): Boolean = {
    val changed = changes.get(key)
    if (changed == null) base.map.contains(key) else changed ne CompactRowMap.Removed
  }

  override def rowPairs(): Iterator[UnsafeRowPair] = {
    if (numKeys == 0) return Iterator.empty
    val pair = new UnsafeRowPair()
    new LiveIterator().map { case (k, v) => pair.withRows(k, v) }
  }

  /**
   * The base's keys (the base does not change while the store is open) with their current
   * values, then the keys new to this batch from the log, each looked up when reached.
   */
  private final class LiveIterator extends Iterator[(UnsafeRow, UnsafeRow)] {
    private val generation = changesGeneration
    private val baseIter = base.map.iterator
    private var logged = 0
    private var nextPair: (UnsafeRow, UnsafeRow) = null

    private def advance(): Unit = {
      while (nextPair == null && baseIter.hasNext) {
        val (k, v) = baseIter.next()
        val changed = changes.get(k)
        if (changed == null) nextPair = (k, v)
        else if (changed ne CompactRowMap.Removed) nextPair = (k, changed)
      }
      while (nextPair == null && generation == changesGeneration && logged < numNewKeys) {
        val k = changes.keyAtAddress(newKeys(logged))
        logged += 1
        val v = changes.get(k)
        if (v != null && (v ne CompactRowMap.Removed)) nextPair = (k, v)
      }
    }

    override def hasNext: Boolean = { advance(); nextPair != null }

    override def next(): (UnsafeRow, UnsafeRow) = {
      if (!hasNext) throw new NoSuchElementException
      val p = nextPair
      nextPair = null
      p
    }
  }

  override def prefixRowPairs(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = {
    val index = base.prefixIndex.getOrElse(throw new UnsupportedOperationException(
      "prefixScan needs the state store to be created with PrefixKeyScanStateEncoderSpec"))
    val fromBase = index.keys(prefixKey).filter(k => !changes.contains(k)).map(k => (k, base.map.get(k)))
    val fromChanges = changedPrefixes.get.keys(prefixKey).flatMap { k =>
      val v = changes.get(k)
      if (v == null || (v eq CompactRowMap.Removed)) None else Some((k, v))
    }.toArray
    val pair = new UnsafeRowPair()
    (fromBase ++ fromChanges.iterator).map { case (k, v) => pair.withRows(k, v) }
  }

  override def unsupportedOperation(what: String): UnsupportedOperationException = unsupported(what)

  /**
   * Makes the changes durable; the provider applies them when its next store opens. A failure is Spark's
   * `CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT` naming this store, caused by what failed, whose
   * words follow Spark's in the message.
   */
  override def commit(): Long = {
    checkWritable("commit")
    commitStats = try provider.commit(this, changes, forceSnapshotOnCommit) catch {
      // A storage limit says which setting to raise, and a driver that did not answer says
      // which timeout and that the task is retried: the user sees them as they are, not as
      // the cause of a generic commit failure.
      case e: StateSizeLimitException => throw e
      case e: CoordinatorUnreachableException => throw e
      case NonFatal(e) => throw StateStoreErrorsShim.commitFailed(toString, e, HeapStateStore.reason(e))
    }
    newVersion = version + 1
    state = Committed
    // `changes` are now the provider's, the new version's until the next store applies them;
    // they stay this store's too, so that its reads see the version it committed (Spark 3.5
    // outputs a complete-mode aggregation by iterating the store after its commit).
    newVersion
  }

  override def abort(): Unit = {
    if (state == Updating) {
      clearChanges()
      state = Aborted
    }
  }

  private def clearChanges(): Unit = {
    changes.clear()
    changedPrefixes.foreach(_.clear())
    newKeys = new Array[Long](16)
    numNewKeys = 0
    changesGeneration += 1
  }

  override def releaseStore(): Unit = {
    if (state == Updating) state = Released
  }

  override def hasCommitted: Boolean = state == Committed

  override def metrics: StateStoreMetrics = {
    val custom: Map[StateStoreCustomMetric, Long] = Map(
      CustomMetrics.FilesWritten -> commitStats.filesWritten.toLong,
      CustomMetrics.BytesWritten -> commitStats.bytesWritten,
      CustomMetrics.SnapshotLag -> provider.snapshotLag,
      CustomMetrics.LoadTime -> provider.loadTimeMs,
      CustomMetrics.ForceSnapshot -> (if (forceSnapshotOnCommit) 1L else 0L),
      CustomMetrics.DeltaWriteTime -> commitStats.deltaWriteMs,
      CustomMetrics.ApplyTime -> commitStats.applyMs)
    // Once committed, `changes` are the provider's, counted in `base`.
    val ownChanges = if (state == Committed) 0L else changes.memoryBytes
    StateStoreMetrics(numKeys, base.memoryBytes + ownChanges +
      changedPrefixes.map(_.memoryBytes).getOrElse(0L), custom)
  }

  override def committedVersion: Long = {
    if (state != Committed) {
      throw new IllegalStateException(s"Cannot get checkpoint info of state store " +
        s"${provider.describe} version $version: it has not committed")
    }
    newVersion
  }

  override def toString: String =
    s"HeapStateStore[stateStoreId=$id, version=$version, ${if (writable) "write" else "read"}]"

  private def checkWritable(op: String): Unit = {
    if (!writable) throw new UnsupportedOperationException(s"Cannot $op: $this is read-only")
    if (state != Updating) {
      throw new IllegalStateException(s"Cannot $op: $this has already ${state.name}")
    }
  }
}

private[provider] object HeapStateStore {
  sealed abstract class State(val name: String)
  case object Updating extends State("updating")
  case object Committed extends State("committed")
  case object Aborted extends State("aborted")
  case object Released extends State("released")

  /**
   * What a failed commit's user should read: the words of the first error of this package in
   * the chain (they name the file or setting), else those of `e`.
   */
  def reason(e: Throwable): String = {
    val own = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20)
      .find(_.getClass.getName.startsWith("io.sparkcheckpointstorage."))
    val chosen = own.getOrElse(e)
    Option(chosen.getMessage).getOrElse(chosen.getClass.getName)
  }
}
