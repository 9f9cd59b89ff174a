package io.sparkcheckpointstorage.provider

import java.util.concurrent.TimeUnit

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.slf4j.LoggerFactory

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.checkpointstorage.shim.{StateChange, StateStoreConfShim, StateStoreErrorsShim, StateStoreProviderShim}
import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.{closeFileManager, CheckpointFileManager}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import io.sparkcheckpointstorage.coordinator.{QueryNotRunningException, StateMaintenanceScope}
import io.sparkcheckpointstorage.storage.CorruptCheckpointException

/**
 * A `StateStoreProvider` that keeps a partition's state in executor heap in a compact form
 * and makes each new version by applying the batch's changes in place, when the next store
 * is opened (see [[LiveState]]).
 *
 * Per version it writes one delta file of the changed keys through the
 * `CheckpointFileManager` Spark hands it; maintenance writes snapshots off the commit path
 * and deletes files no longer needed to restore the retained versions.
 *
 * Set it with `spark.sql.streaming.stateStore.providerClass=` + [[HeapStateStoreProvider.ClassName]].
 */
class HeapStateStoreProvider extends StateStoreProviderShim {
  import HeapStateStoreProvider._

  private var _id: StateStoreId = _
  private var keySchema: StructType = _
  private var valueSchema: StructType = _
  private var storeConf: StateStoreConf = _
  private var hadoopConf: Configuration = _
  private var sparkConf: SparkConf = _
  private var fm: CheckpointFileManager = _
  private var files: StoreDirectory = _
  private var prefixCols: Option[Int] = None
  private var live: LiveState = _

  /** Highest version whose snapshot is on disk; 0 when none (version 0 is empty). */
  @volatile private var lastSnapshotVersion = 0L
  @volatile private var snapshotVersionKnown = false
  @volatile private var lastLoadTimeMs = 0L
  /**
   * Nanoseconds spent applying staged changes since the last commit: a batch's read store
   * (Spark 4's aggregation opens one before its write store) may be the one that applies.
   */
  private var applyNanosSinceCommit = 0L
  private var rowFormatValidated = false
  @volatile private var lastCleanupVersion = -1L

  override protected def initialize(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      prefixColumns: Option[Int],
      storeConfs: StateStoreConf,
      hadoopConf: Configuration): Unit = {
    StateStoreConfShim.unsupportedCheckpointFormat(storeConfs).foreach(what => throw unsupported(what))
    this.prefixCols = prefixColumns
    this._id = stateStoreId
    this.keySchema = keySchema
    this.valueSchema = valueSchema
    this.storeConf = storeConfs
    this.hadoopConf = hadoopConf
    this.sparkConf = Option(SparkEnv.get).map(_.conf).getOrElse(new SparkConf(false))
    val dir = stateStoreId.storeCheckpointLocation()
    this.fm = CheckpointFileManager.create(dir, hadoopConf)
    fm.mkdirs(dir)
    this.files = new StoreDirectory(dir, fm)
    this.live = new LiveState(keySchema, valueSchema, prefixCols)
  }

  override def stateStoreId: StateStoreId = _id

  override protected def unsupportedOperation(what: String): UnsupportedOperationException = unsupported(what)

  override def toString: String = s"HeapStateStoreProvider[id = (op=${_id.operatorId}, " +
    s"part=${_id.partitionId}, store=${_id.storeName}), dir = ${files.dir}]"

  override protected def openStore(
      version: Long,
      forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore = synchronized {
    checkVersion(version)
    if (loadEmpty) {
      live.reset(version)
    } else {
      moveLiveTo(version)
    }
    new HeapStateStore(this, live, version, writable = true, forceSnapshotOnCommit)
  }

  /**
   * A migration's store where Spark's API cannot open one empty (no `getStore(loadEmpty)`
   * before 4.2): initialized as `init` would, opened empty at `version`, its commit writing a
   * snapshot of version `version + 1`.
   */
  private[sparkcheckpointstorage] def openEmptyForMigration(stateStoreId: StateStoreId, keySchema: StructType,
      valueSchema: StructType, prefixColumns: Option[Int], storeConfs: StateStoreConf, hadoopConf: Configuration,
      version: Long): StateStore = {
    initialize(stateStoreId, keySchema, valueSchema, prefixColumns, storeConfs, hadoopConf)
    openStore(version, forceSnapshotOnCommit = true, loadEmpty = true)
  }

  override protected def openReadStore(version: Long): ReadStateStore = synchronized {
    checkVersion(version)
    if (live.version == version || live.version < version ||
        (live.version == version + 1 && live.canRollBack)) {
      moveLiveTo(version)
      new HeapStateStore(this, live, version, writable = false, forceSnapshotOnCommit = false)
    } else {
      // An older version than the one in memory (the state data source, say): load it aside.
      val aside = new LiveState(keySchema, valueSchema, prefixCols)
      load(aside, version)
      new HeapStateStore(this, aside, version, writable = false, forceSnapshotOnCommit = false)
    }
  }

  /** A negative version is Spark's `CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION`. */
  private def checkVersion(version: Long): Unit = {
    if (version < 0) throw StateStoreErrorsShim.unexpectedVersion(version)
  }

  /**
   * Brings the in-memory map to `version`: the last commit's changes applied, or dropped
   * (the version before them, for a retried task), then a forward replay or a full load if
   * that is not yet the version.
   */
  private def moveLiveTo(version: Long): Unit = {
    if (live.version == version + 1 && live.canRollBack) {
      live.rollBack()
    } else {
      val start = System.nanoTime()
      if (live.settle()) applyNanosSinceCommit += System.nanoTime() - start
      if (live.version != version) load(live, version)
    }
  }

  /**
   * Called by a write store's commit: the durable delta, then the changes set aside; the
   * next store opened applies them.
   */
  private[provider] def commit(store: HeapStateStore, changes: CompactRowMap,
      forceSnapshot: Boolean): CommitStats = synchronized {
    val newVersion = store.version + 1
    // A second attempt of the same version (task retry, speculation) starts from the same
    // base as the first: step back to it, then apply this attempt's changes instead.
    moveLiveTo(store.version)
    val start = System.nanoTime()
    val bytes = writeFile(newVersion, StateFileKind.Delta, changes.layout) { w =>
      changes.iterator.foreach { case (k, v) =>
        // A removal of a key the batch itself added leaves nothing to record.
        if (!(v eq CompactRowMap.Removed)) w.put(k, v) else if (live.map.contains(k)) w.remove(k)
      }
    }
    val written = System.nanoTime()
    live.stage(changes, newVersion)
    var filesWritten = 1
    var bytesWritten = bytes
    if (forceSnapshot) {
      live.settle()
      bytesWritten += writeSnapshot()
      filesWritten += 1
    }
    // Spark 4.1+ checks, before the batch commits, that every store of the batch committed.
    StateStoreConfShim.reportCommit(storeConf, newVersion, _id, hadoopConf)
    val applyMs = millis(applyNanosSinceCommit)
    applyNanosSinceCommit = 0L
    CommitStats(filesWritten, bytesWritten, deltaWriteMs = millis(written - start), applyMs = applyMs)
  }

  /** Snapshots the map as it is: the version before any staged changes. */
  private def writeSnapshot(): Long = {
    val version = live.mapVersion
    val bytes = writeFile(version, StateFileKind.Snapshot, live.map.layout) { w =>
      live.map.iterator.foreach { case (k, v) => w.put(k, v) }
    }
    lastSnapshotVersion = math.max(lastSnapshotVersion, version)
    bytes
  }

  /**
   * Writes one state file atomically, its records in the slot order of a map laid out as
   * `layout`; returns its size in bytes.
   */
  private def writeFile(version: Long, kind: StateFileKind, layout: CompactRowMap.Layout)(
      body: StateFileFormat.Writer => Unit): Long = {
    val path = files.path(version, kind)
    val out = fm.createAtomic(path, true)
    val counting = new CountingOutputStream(out)
    try {
      val w = new StateFileFormat.Writer(counting, kind, version, storeConf.compressionCodec, sparkConf, layout)
      body(w)
      w.finish()
      out.close()
    } catch {
      case NonFatal(e) =>
        try out.cancel() catch { case NonFatal(c) => e.addSuppressed(c) }
        throw e
    }
    counting.count
  }

  /** Loads `version` into `state`, replaying only the missing deltas when it is behind. */
  private def load(state: LiveState, version: Long): Unit = {
    val start = System.nanoTime()
    if (version == 0) {
      state.reset(0)
      return
    }
    val all = files.list()
    val deltas = all.filter(_.kind == StateFileKind.Delta).map(f => f.version -> f).toMap
    val snapshots = all.filter(_.kind == StateFileKind.Snapshot)
    noteSnapshots(snapshots)
    def deltasPresent(from: Long): Boolean = (from + 1 to version).forall(deltas.contains)
    val forward = state.version >= 0 && state.version < version && deltasPresent(state.version)
    val from = if (forward) state.version else {
      val snapshot = snapshots.filter(_.version <= version).lastOption
      restoreFromSnapshot(state, version, snapshots, deltasPresent).getOrElse {
          val missing = (snapshot.map(_.version).getOrElse(0L) + 1 to version).find(v => !deltas.contains(v)).get
          val missingFile = files.path(missing, StateFileKind.Delta)
          // Spark's error class for a missing state file (its message names the file), with
          // what else was looked for.
          throw StateStoreErrorsShim.stateFileMissing(missingFile,
            s"Cannot load version $version of state store ${describe}: " +
            s"the state file $missingFile is missing and no snapshot " +
            s"at or after version $missing exists. Files present: ${if (all.isEmpty) "none" else
              all.map(_.path.getName).mkString(", ")}. The checkpoint is incomplete; restore the " +
            "missing file or restart the query on a new checkpoint location.")
      }
    }
    var v = from + 1
    while (v <= version) {
      readFile(state, deltas(v))
      v += 1
    }
    state.loaded(version)
    lastLoadTimeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)
    log.info(s"Loaded version $version of $describe ${if (forward) s"forward from ${from}" else s"from version $from"} " +
      s"in $lastLoadTimeMs ms (${state.map.size} keys)")
  }

  /**
   * Reads into `state` the newest snapshot at or before `version` whose later deltas are all
   * present, falling back to older ones (down to the empty version 0) when a snapshot is
   * damaged, as Spark 4.1+ does for its own providers; returns the version it holds. None
   * when no base with complete deltas exists; a damaged snapshot nothing can replace fails
   * naming it.
   */
  private def restoreFromSnapshot(state: LiveState, version: Long, snapshots: Seq[StateFile],
      deltasPresent: Long => Boolean): Option[Long] = {
    val bases = snapshots.filter(s => s.version <= version && deltasPresent(s.version)).reverse
    var damaged: Option[CorruptCheckpointException] = None
    bases.foreach { s =>
      try {
        state.reset(-1)
        readFile(state, s)
        return Some(s.version)
      } catch {
        case e: CorruptCheckpointException =>
          log.warn(s"Snapshot ${s.path} of $describe is damaged (${e.getMessage}); rebuilding version " +
            s"$version from an older snapshot and the deltas after it instead")
          // The newest damaged snapshot is the one to name; older ones ride along.
          if (damaged.isEmpty) damaged = Some(e) else damaged.get.addSuppressed(e)
      }
    }
    if (deltasPresent(0)) {
      state.reset(-1)
      damaged.foreach(_ => log.warn(s"Rebuilding version $version of $describe from all its deltas"))
      Some(0L)
    } else {
      damaged.foreach(e => throw e)
      None
    }
  }

  private def readFile(state: LiveState, f: StateFile): Unit = {
    val in = fm.open(f.path)
    try {
      StateFileFormat.read(in, f.path.toString, f.kind, f.version, keySchema.length,
        valueSchema.length, sparkConf)(
        (k, v) => { validateRowFormat(k, v); state.loadPut(k, v) },
        k => state.loadRemove(k),
        layout => state.prepareLoad(layout))
    } finally {
      in.close()
    }
  }

  private def validateRowFormat(key: UnsafeRow, value: UnsafeRow): Unit = {
    if (!rowFormatValidated) {
      StateStoreConfShim.validateRowFormat(key, keySchema, value, valueSchema, _id, storeConf)
      rowFormatValidated = true
    }
  }

  private def noteSnapshots(snapshots: Seq[StateFile]): Unit = {
    lastSnapshotVersion = (lastSnapshotVersion +: snapshots.map(_.version)).max
    snapshotVersionKnown = true
  }

  /**
   * The state at `endVersion` rebuilt from the snapshot of `snapshotVersion` and the deltas
   * after it (the state data source's `snapshotStartBatchId`).
   */
  override protected def replay(
      snapshotVersion: Long,
      endVersion: Long,
      readOnly: Boolean): StateStore = synchronized {
    checkVersion(snapshotVersion)
    if (endVersion < snapshotVersion) {
      throw new IllegalArgumentException(s"End version $endVersion is before snapshot version $snapshotVersion")
    }
    val state = new LiveState(keySchema, valueSchema, prefixCols)
    state.reset(-1)
    if (snapshotVersion > 0) {
      val snapshot = files.path(snapshotVersion, StateFileKind.Snapshot)
      if (!fm.exists(snapshot)) {
        throw StateStoreErrorsShim.stateFileMissing(snapshot,
          s"No snapshot of version $snapshotVersion for state store " +
          s"$describe: $snapshot does not exist. Snapshots present: ${files.list()
            .filter(_.kind == StateFileKind.Snapshot).map(_.version).mkString(", ")}")
      }
      readFile(state, StateFile(snapshotVersion, StateFileKind.Snapshot, snapshot))
    }
    (snapshotVersion + 1 to endVersion).foreach { v =>
      val delta = files.path(v, StateFileKind.Delta)
      if (!fm.exists(delta)) {
        throw StateStoreErrorsShim.stateFileMissing(delta,
          s"Cannot replay state store $describe to version $endVersion: the state file $delta is missing")
      }
      readFile(state, StateFile(v, StateFileKind.Delta, delta))
    }
    state.loaded(endVersion)
    new HeapStateStore(this, state, endVersion, writable = !readOnly, forceSnapshotOnCommit = false)
  }

  /**
   * The changes of versions `startVersion` to `endVersion` as the state data source's change
   * feed reads them, each with its batch id (version - 1).
   */
  override protected def changes(startVersion: Long, endVersion: Long): Iterator[StateChange] = {
    if (startVersion < 1) throw new IllegalArgumentException(s"Start version $startVersion must be at least 1")
    val changes = (startVersion to endVersion).iterator.flatMap { v =>
      val delta = files.path(v, StateFileKind.Delta)
      if (!fm.exists(delta)) {
        throw StateStoreErrorsShim.stateFileMissing(delta,
          s"Cannot read the changes of version $v of state store $describe: the state file $delta is missing")
      }
      val records = ArrayBuffer[StateChange]()
      val in = fm.open(delta)
      try {
        StateFileFormat.read(in, delta.toString, StateFileKind.Delta, v, keySchema.length,
          valueSchema.length, sparkConf)(
          (k, value) => records += StateChange(k.copy(), value.copy(), v - 1),
          k => records += StateChange(k.copy(), null, v - 1))
      } finally {
        in.close()
      }
      records
    }
    changes
  }

  override def doMaintenance(): Unit = {
    snapshotMaintenance()
    cleanupMaintenance()
  }

  /**
   * Snapshots the in-memory version once enough deltas have piled up since the last.
   * Never throws: Spark unloads a provider whose maintenance fails, and a missed snapshot
   * only means a longer replay, retried at the next interval.
   */
  override protected def snapshotMaintenance(): Unit = synchronized {
    try StateMaintenanceScope.run(snapshotIfDue()) catch {
      // Spark maintains a stopped query's stores until the executor learns of the stop.
      case e: QueryNotRunningException => log.debug(s"Snapshot maintenance of $describe skipped: ${e.getMessage}")
      case NonFatal(e) => log.warn(s"Snapshot maintenance of $describe failed; will retry", e)
    }
  }

  private def snapshotIfDue(): Unit = {
    if (live == null || live.mapVersion <= 0) return
    if (!snapshotVersionKnown) noteSnapshots(files.list().filter(_.kind == StateFileKind.Snapshot))
    if (live.mapVersion - lastSnapshotVersion >= storeConf.minDeltasForSnapshot) {
      val start = System.nanoTime()
      val bytes = writeSnapshot()
      log.info(s"Wrote snapshot of version ${live.mapVersion} of $describe ($bytes bytes) in " +
        s"${TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)} ms")
    }
  }

  /** Deletes files not needed to restore the last `minBatchesToRetain` versions; never throws. */
  override protected def cleanupMaintenance(): Unit = {
    try StateMaintenanceScope.run(cleanup()) catch {
      case e: QueryNotRunningException => log.debug(s"Cleanup maintenance of $describe skipped: ${e.getMessage}")
      case NonFatal(e) => log.warn(s"Cleanup maintenance of $describe failed; will retry", e)
    }
  }

  private def cleanup(): Unit = {
    if (files == null || live == null) return
    // Listing a directory is not free (on Hadoop's local file system, a process per file
    // without its native library): look again only once enough versions have accumulated.
    val step = math.max(1L, StateStoreConfShim.minVersionsToDelete(storeConf))
    if (lastCleanupVersion >= 0 && live.version - lastCleanupVersion < step) return
    lastCleanupVersion = live.version
    val all = files.list()
    if (all.isEmpty) return
    val latest = all.map(_.version).max
    val earliestToRetain = latest - storeConf.minVersionsToRetain
    if (earliestToRetain <= 0) return
    val base = all.filter(f => f.kind == StateFileKind.Snapshot && f.version <= earliestToRetain)
      .lastOption.map(_.version)
    base.foreach { b =>
      val obsolete = all.filter(_.version < b)
      obsolete.foreach(f => fm.delete(f.path))
      if (obsolete.nonEmpty) log.info(s"Deleted ${obsolete.size} state files of $describe older than version $b")
    }
  }

  override def close(): Unit = synchronized {
    if (live != null) live.reset(-1)
    if (fm != null) closeFileManager(fm)
  }

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = CustomMetrics.all

  private[provider] def prefixSpec: (StructType, Int) = (keySchema, prefixCols.get)
  private[provider] def snapshotLag: Long = math.max(0L, live.version - lastSnapshotVersion)
  private[provider] def loadTimeMs: Long = lastLoadTimeMs
  /** Nanoseconds as milliseconds, rounded: a partition's step often takes a few milliseconds, and sums are shown. */
  private def millis(nanos: Long): Long = (nanos + 500000L) / 1000000L
  private[provider] def describe: String = s"(op=${_id.operatorId}, part=${_id.partitionId}, store=${_id.storeName})"
}

object HeapStateStoreProvider {
  val ClassName: String = classOf[HeapStateStoreProvider].getName
  private val log = LoggerFactory.getLogger(classOf[HeapStateStoreProvider])

  def unsupported(what: String): UnsupportedOperationException =
    new UnsupportedOperationException(s"HeapStateStoreProvider does not support $what. Use " +
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider for this query " +
      "(spark.sql.streaming.stateStore.providerClass).")

  object CustomMetrics {
    val FilesWritten = StateStoreCustomSumMetric("heapStateFilesWritten",
      "number of state files written by HeapStateStoreProvider")
    val BytesWritten = StateStoreCustomSizeMetric("heapStateBytesWritten",
      "bytes of state files written by HeapStateStoreProvider")
    val SnapshotLag = StateStoreCustomSumMetric("heapSnapshotLagVersions",
      "versions since the last snapshot, summed over partitions")
    val LoadTime = StateStoreCustomTimingMetric("heapStateLoadTimeMs",
      "time to load state from files")
    /** Spark's name (as the HDFS provider's): 1 for a store told to snapshot on commit. */
    val ForceSnapshot = StateStoreCustomSumMetric("forceSnapshotCount",
      "number of stores that had forced snapshot")
    /** The two steps of a commit, summed over partitions: what `commitTimeMs` is made of. */
    val DeltaWriteTime = StateStoreCustomTimingMetric("heapStateDeltaWriteTimeMs",
      "time to encode the batch's changes and write them (or hand them over) as a state file at commit")
    val ApplyTime = StateStoreCustomTimingMetric("heapStateApplyTimeMs",
      "time to apply the previous batch's changes to the in-memory state, when this batch opened its stores")
    val all: Seq[StateStoreCustomMetric] =
      Seq(FilesWritten, BytesWritten, SnapshotLag, LoadTime, ForceSnapshot, DeltaWriteTime, ApplyTime)
  }
}

/**
 * What one commit wrote, how long its delta's file took, and how long applying the previous
 * commit's changes took when this batch opened its stores.
 */
private[provider] final case class CommitStats(filesWritten: Int, bytesWritten: Long, deltaWriteMs: Long,
    applyMs: Long)

private[provider] final class CountingOutputStream(out: java.io.OutputStream) extends java.io.OutputStream {
  var count = 0L
  override def write(b: Int): Unit = { out.write(b); count += 1 }
  override def write(b: Array[Byte], off: Int, len: Int): Unit = { out.write(b, off, len); count += len }
  override def flush(): Unit = out.flush()
  // The owner closes the underlying atomic stream itself (close commits it).
  override def close(): Unit = flush()
}
