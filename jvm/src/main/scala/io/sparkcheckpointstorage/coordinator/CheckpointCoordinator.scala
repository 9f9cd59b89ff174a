package io.sparkcheckpointstorage.coordinator

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.slf4j.LoggerFactory

import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.layout.{CheckpointPaths, StateFileNaming, StorageMarker}
import io.sparkcheckpointstorage.monitoring.{CheckpointMonitor, CommittedState, PackedBatch}
import io.sparkcheckpointstorage.packs.{PackCleaner, PackDirectory}
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions

/**
 * The driver's checkpoint coordinator (Flink: the JobManager's checkpoint coordinator).
 *
 * It holds the inline state files executors send, bounded by
 * `spark.sql.streaming.checkpointStorage.driver.maxTotalInlineSize`; before a persistent
 * query's stateful stage ends it writes the files the stage sent as one pack under
 * `<checkpoint>/state-packs/` (and, before a batch commits, any received since); it serves them back for restores (from heap, or as a
 * range of a pack), rebuilding its index from the packs after a driver restart; and it
 * deletes packs no longer needed. Deleting a whole checkpoint is the query listener's
 * ([[CheckpointStorageQueryListener]]).
 *
 * One per driver JVM, shared by every query: state is keyed by checkpoint root, so queries
 * never see each other's files. There is no coordinator-wide lock: each root's state has its
 * own (held for map operations only), and the file I/O of a root (reading its packs on
 * restore, writing a pack, the checkpoint marker) runs without it, so one query's slow
 * pack write or restore never stalls the requests of another query. Callers: the plugin's
 * RPC endpoint (one thread), and the driver's file managers (the query threads, and tasks
 * of `local` mode).
 *
 * It reports each query's start, restore, commits and failures to the `monitor` it was given
 * (the Checkpoints tab and metrics), as Flink's coordinator reports to its
 * `CheckpointStatsTracker`; [[DriverRuntime]] wires the two.
 */
final class CheckpointCoordinator(val hadoopConf: Configuration, maxHeldBytes: Long,
    monitor: Option[CheckpointMonitor] = None) {
  import CheckpointCoordinator._

  private val roots = new ConcurrentHashMap[String, RootSlot]()
  /**
   * Every checkpoint root that committed a batch in this driver and whose query has not
   * terminated -> its query id ("" until read): the roots state maintenance may touch.
   */
  private val committedRoots = new ConcurrentHashMap[String, String]()
  /**
   * Held by maintenance requests while they are answered, and by a terminated query's
   * release: so a maintenance request never brings back a root once its query terminated.
   */
  private val lifecycle = new Object
  private val held = new HeldBytes(maxHeldBytes)
  private val cleaner = new PackCleaner(hadoopConf)
  /** State files executors are writing in the background (`asyncStateWrites`). */
  val backgroundWrites = new PendingStateWrites()
  private val ownFiles = new OwnStateFiles()
  private val storeFiles = new StoreDirectoryFiles(hadoopConf)
  private val stageEnds = new StageEnds()
  private val stageEndWrites = new StageEndWrites()

  def heldInlineBytes: Long = held.current

  /** The bound on [[heldInlineBytes]] (`driver.maxTotalInlineSize`). */
  def maxTotalInlineBytes: Long = maxHeldBytes

  private val requestCount = new java.util.concurrent.atomic.AtomicLong()
  private val refusalCount = new java.util.concurrent.atomic.AtomicLong()

  /** Requests answered so far (the RPC's and the driver's own file managers'). */
  def requestsHandled: Long = requestCount.get
  /** Requests and messages refused so far (a limit, a malformed message, any failure reply). */
  def refusals: Long = refusalCount.get
  private[coordinator] def noteRefusal(): Unit = refusalCount.incrementAndGet()

  /**
   * How long the last stateful stages' last tasks waited for their stage's state to be made
   * durable, in milliseconds (only stages that had state to write).
   */
  def stageEndWaits: com.codahale.metrics.Histogram = stageEndWrites.durations

  /** The newest `n` of [[stageEndWaits]]' durations (at most 1,024), oldest first (benchmarks read their window's). */
  def recentStageEndWaitsMs(n: Int): Array[Long] = stageEndWrites.recent.latest(n)

  /** Answers one request; every failure becomes a [[Failed]] reply of its kind, never a throw. */
  def handle(request: CoordinatorRequest): CoordinatorReply = {
    requestCount.incrementAndGet()
    val reply = answer(request)
    if (reply.isInstanceOf[Failed]) refusalCount.incrementAndGet()
    reply
  }

  private def answer(request: CoordinatorRequest): CoordinatorReply =
    try {
      request match {
        case FromMaintenance(inner) => lifecycle.synchronized {
          if (!committedRoots.containsKey(inner.root)) throw notRunning(inner)
          answer(inner)
        }
        case p: PutInline => put(p)
        case GetInline(root, rel) => stateOf(root).map(_.locate(rel)).getOrElse(NotInline)
        case ExistsInline(root, rel) => if (stateOf(root).exists(_.contains(rel))) IsInline else NotInline
        case ListInline(root, dir) => Listing(stateOf(root).map(_.list(dir)).getOrElse(Nil))
        case ListStore(root, dir) =>
          StoreListing(stateOf(root).map(_.list(dir)).getOrElse(Nil), storeFiles.list(root, dir))
        case DeleteInline(root, rel) =>
          storeFiles.deleted(root, rel)
          dropInline(root, rel)
          Done
        case OwnFileWritten(root, rel, bytes) =>
          storeFiles.written(root, rel, bytes)
          ownFiles.written(root, rel, bytes)
          dropInline(root, rel)
          Done
        case WritePending(root, rel, id, executor, bytes) =>
          backgroundWrites.started(root, rel, id, executor)
          storeFiles.pending(root, rel, id, bytes)
          ownFiles.written(root, rel, bytes)
          dropInline(root, rel)
          Done
        case WriteDone(root, _, id, error) =>
          backgroundWrites.finished(id, error)
          storeFiles.pendingDone(root, id, written = error.isEmpty)
          Done
        case t: StageTaskDone => stageTaskDone(t)
        case AwaitStageEnd(_, id) => stageEndWrites.poll(id)
      }
    } catch {
      case NonFatal(e) => CoordinatorFailures.toReply(e)
    }

  private def put(p: PutInline): CoordinatorReply = {
    var reply: CoordinatorReply = null
    while (reply == null) {
      val state = stateOf(p.root).getOrElse(slot(p.root).create(
        // Nothing but the driver's heap holds a non-persistent root's files: keep them there.
        new RootState(p.root, p.persistent, p.keepInHeap || !p.persistent, p.storage)))
      // A root released meanwhile (its query stopped) is looked up again.
      state.put(p.relPath, p.bytes, held.tryReserve).foreach { accepted =>
        reply = if (accepted) Done else {
          val message = limitMessage(p)
          monitor.foreach(_.commitFailed(p.root,
            CheckpointPaths.stateVersionOf(p.relPath).map(_ - 1).getOrElse(-1L), "StateSizeLimit", message))
          Failed(FailureKind.StateSizeLimit, message)
        }
      }
    }
    reply
  }

  private def limitMessage(p: PutInline): String =
    s"The driver holds ${held.current} bytes of inline checkpoint state, and ${p.relPath} " +
      s"(${p.bytes.length} bytes) of checkpoint ${p.root} would exceed the limit of $maxHeldBytes " +
      s"bytes. Raise ${CheckpointStorageOptions.DriverMaxTotalInlineSize} (and the driver heap, " +
      "spark.driver.memory), or use the FileSystemCheckpointStorage, which keeps packed state on " +
      "the file system instead of the driver heap."

  /**
   * Makes the inline state of checkpoint `root` durable before batch `batchId` commits: the
   * files received since the last pack go into a new pack. Called by the driver's file
   * manager when Spark creates `commits/<batchId>`, on the query's thread; returns once the
   * pack is on the file system. Requests keep being served while the pack is written.
   * Before the pack, it waits for the state files executors write in the background
   * (`asyncStateWrites`), and fails if one was not written: the batch does not commit.
   * It fails too when a store of the checkpoint holds no state of the batch's version at all
   * ([[checkDurable]]): a commit log entry is never written for state that is nowhere.
   * Returns the batch's state for the checkpoints tab: what its packs hold, and the files of
   * their own the executors reported.
   */
  def beforeCommit(root: String, batchId: Long): CommittedState = reportingFailure(root, batchId)(packForCommit(root, batchId))

  /** `body`, whose failure is reported to the monitor as batch `batchId`'s failed commit, and rethrown. */
  private def reportingFailure[T](root: String, batchId: Long)(body: => T): T =
    try body catch {
      case e: Exception =>
        val kind = if (e.isInstanceOf[StateNotDurableException]) "StateWrite" else "Pack"
        monitor.foreach(_.commitFailed(root, batchId, kind, String.valueOf(e.getMessage)))
        throw e
    }

  private def packForCommit(root: String, batchId: Long): CommittedState = {
    committedRoots.putIfAbsent(root, "")
    backgroundWrites.awaitWritten(root, batchId)
    // Loaded, not only looked up: a root whose state is on disk but not in this driver's heap
    // (a restart whose tasks sent nothing) is still checked, never skipped.
    val packed = stateOf(root).flatMap { state =>
      // Commits of one root are serialized (pack numbers follow each other); other roots'
      // commits and every request go on meanwhile.
      state.commitLock.synchronized {
        writeMarker(state)
        if (state.persistent) checkDurable(state, batchId)
        val packed = if (state.persistent) writePack(state, batchId)
          else Some(PackedBatch(state.takePending().puts.map(p => p.relPath -> p.bytes.length.toLong), "", 0L))
        state.takeEarlyPacked(packed)
      }
    }
    // The batch's stages all ended: their tasks are not asked about again.
    stageEnds.forget(root, upTo = batchId)
    CommittedState(packed, ownFiles.take(root, batchId + 1))
  }

  /**
   * A task that wrote state of `t.root` ended. Once every task of its stage has, the state the
   * stage sent is made durable before the last one may end (Spark's own providers have it
   * durable then: their tasks write it), whatever follows the stage: a sink that skips a batch
   * it already wrote (`foreachBatch` keyed by batch id, Delta) never runs the batch's tasks
   * again, so nothing may depend on the driver that holds the state. The answer is
   * [[StageEndPending]] while its pack is written, and waits for the state files executors
   * write in the background (`asyncStateWrites`); a failed write fails the last task, so the
   * job, so the batch, before any sink commits, and the batch's rerun sends the state again.
   * The pack is reported with the batch's commit.
   */
  private def stageTaskDone(t: StageTaskDone): CoordinatorReply =
    if (!stageEnds.taskEnded(t.root, t.batchId, t.stageId, t.partitionId, t.numPartitions)) Done
    else {
      val unpacked = loadedPersistent(t.root).exists(_.hasUnpacked)
      // A copy of the last task (speculative, or run again) that ends while the stage's pack is
      // written waits for it too: a new write queues behind it on the root's commit lock.
      if (!unpacked && backgroundWrites.settled(t.root) && !stageEndWrites.running(t.root)) Done
      else StageEndPending(stageEndWrites.start(t.root)(makeStageDurable(t.root, t.batchId)))
    }

  private def makeStageDurable(root: String, batchId: Long): Unit = reportingFailure(root, batchId) {
    backgroundWrites.awaitWritten(root, batchId, forget = false)
    loadedPersistent(root).foreach { state =>
      state.commitLock.synchronized {
        writeMarker(state)
        state.packedEarly(writePack(state, batchId))
      }
    }
  }

  /** `root`'s state when this driver holds it and packs it (looked up only: never loaded from disk). */
  private def loadedPersistent(root: String): Option[RootState] =
    Option(roots.get(root)).flatMap(_.loaded).filter(_.persistent)

  private def writePack(state: RootState, batchId: Long): Option[PackedBatch] = {
    val pending = state.takePending()
    if (pending.isEmpty) return None
    val packed = try {
      // After a failed write, the pack may be on disk all the same (a rename whose answer was
      // lost): the next number is the one after those on disk.
      val seq = (if (state.mayHaveLeftovers) None else state.lastPackSeq).getOrElse {
        val onDisk = PackDirectory.sequences(state.root, hadoopConf)
        // Such a pack holds only files this pack writes again: it goes, in order, with the old ones.
        state.supersededPacks(onDisk.filter(_ > state.lastPackSeq.getOrElse(Long.MaxValue))
          .map(n => n -> PackDirectory.path(state.root, n)))
        (onDisk ++ state.lastPackSeq :+ 0L).max
      } + 1
      val (path, index, packBytes) = PackDirectory.write(state.root, seq, batchId, state.queryId(hadoopConf),
        pending.puts.map(p => p.relPath -> p.bytes), pending.deletes, hadoopConf)
      held.release(state.packed(seq, path, index, pending))
      state.packFailed = false
      if (state.mayHaveLeftovers) {
        cleaner.removeLeftovers(state.root, seq)
        state.mayHaveLeftovers = false
      }
      PackedBatch(pending.puts.map(p => p.relPath -> p.bytes.length.toLong), path.getName, packBytes)
    } catch {
      case NonFatal(e) =>
        state.mayHaveLeftovers = true
        state.packFailed = true
        state.unpacked(pending)
        throw e
    }
    val obsolete = state.takeObsoletePacks()
    if (obsolete.nonEmpty) cleaner.schedule(state.root, obsolete)
    Some(packed)
  }

  private def writeMarker(state: RootState): Unit =
    if (!state.markerWritten) {
      StorageMarker.write(state.root, StorageMarker(state.storage, state.persistent, state.keepInHeap), hadoopConf)
      state.markerWritten = true
    }

  /**
   * Fails the commit of `batchId` when a store of `state` holds no state of the version the
   * batch commits (`batchId + 1`), neither inline nor as a file of its own, while it held the
   * version before inline. Every store of a stateful operator writes one file of each version
   * it commits, so that store's state of the batch was lost before it was durable: its tasks
   * did not run again (an exactly-once sink skips a batch it already committed) after the
   * state of an earlier attempt went with a driver. Committing would make the checkpoint a
   * dead end; refusing keeps its last complete batch restorable.
   */
  private def checkDurable(state: RootState, batchId: Long): Unit = {
    val version = batchId + 1
    val missing = state.storesBehind(version).filterNot(dir => ownFileOf(state.root, dir, version))
    if (missing.nonEmpty) throw new StateNotDurableException(notDurable(state.root, batchId, missing))
  }

  /** Whether store directory `dir` of `root` holds a file of its own of `version` (looked up only when not inline). */
  private def ownFileOf(root: String, dir: String, version: Long): Boolean =
    FileSystemOperations.listNames(new org.apache.hadoop.fs.Path(root, dir), hadoopConf)
      .exists(n => StateFileNaming.versionOf(n).exists(_.version == version))

  /**
   * Forgets a stopped query's inline state (it stays in its packs when persistent); state
   * maintenance no longer touches the root. State whose pack write failed (the query failed
   * with it) stays: Spark may not run that batch's tasks again (an exactly-once sink
   * that committed it skips it), so the next run's commit of the batch packs it from here.
   */
  def release(root: String): Unit = lifecycle.synchronized {
    forgetQuery(root)
    val s = roots.get(root)
    if (s != null) s.loaded match {
      case Some(state) if state.persistent && state.packFailed && state.hasUnpacked =>
        log.warn(s"The query of checkpoint $root stopped before its state of the last batch was packed: " +
          "it is kept in the driver until the query's next commit packs it")
      case loaded =>
        roots.remove(root, s)
        loaded.foreach(state => held.release(state.release()))
    }
  }

  /** Forgets what `root`'s running query needed: maintenance, background writes, its state files' listings. */
  private def forgetQuery(root: String): Unit = {
    committedRoots.remove(root)
    stageEnds.forget(root)
    stageEndWrites.forget(root)
    backgroundWrites.forget(root)
    ownFiles.forget(root)
    storeFiles.forget(root)
  }

  /** Forgets everything of `root` held in heap, packed or not: its checkpoint is being deleted. */
  def discard(root: String): Unit = lifecycle.synchronized {
    forgetQuery(root)
    atQueryStop.remove(root)
    val s = roots.remove(root)
    if (s != null) s.loaded.foreach(state => held.release(state.release()))
  }

  private def notRunning(request: CoordinatorRequest): QueryNotRunningException =
    new QueryNotRunningException(s"No streaming query runs on checkpoint ${request.root} in this driver " +
      "(it stopped, or has not committed a batch since the driver started): state store maintenance " +
      s"leaves its state alone (${request.getClass.getSimpleName} refused).")

  /** The checkpoint roots of queries that committed a batch in this driver and have not terminated. */
  def runningRoots: Seq[String] = committedRoots.keySet.asScala.toSeq

  /**
   * The state directories of `root` that hold no state of `version`, the version the last
   * committed batch wrote: neither inline (a pack, the driver) nor as a file of their own.
   * Only stores with inline state are looked at, and only those whose newest inline file is
   * older are listed on the file system: a query's start checks its commit log's last batch.
   */
  def storesWithout(root: String, version: Long): Seq[String] = stateOf(root).filter(_.persistent).toSeq.flatMap { state =>
    state.storesOlderThan(version).filterNot(dir => ownFileOf(root, dir, version))
  }

  /** The checkpoint roots whose inline state this coordinator holds. */
  def knownRoots: Seq[String] = roots.asScala.collect { case (root, s) if s.loaded.isDefined => root }.toSeq

  /**
   * A query on `root` is starting with these session settings, on `storage`: its state files
   * on the file system are listed, once, for its stores' listings ([[ListStore]]).
   */
  def queryStarting(root: String, sessionSettings: Iterable[(String, String)], storage: String): Unit = {
    storeFiles.forget(root)
    // Without the listing, the stores list the file system themselves: slower, never wrong.
    try storeFiles.seed(root) catch {
      case NonFatal(e) => log.warn(s"Could not list the state files of $root; its stores list them themselves: $e")
    }
    monitor.foreach(_.queryStarting(root, sessionSettings, storage))
  }

  /** Spark listed `root`'s commit log (`listing`; empty for a new query): what a start restores from. */
  def commitLogListed(root: String, listing: Array[FileStatus]): Unit =
    monitor.foreach(_.commitLogListed(root, listing))

  /** `offsets/<batchId>` of `root` was written at `atMs` (the driver's clock). */
  def offsetsWritten(root: String, batchId: Long, atMs: Long): Unit =
    monitor.foreach(_.offsetsWritten(root, batchId, atMs))

  /** `commits/<batchId>` of `root` is written, with the `state` [[beforeCommit]] returned. */
  def batchCommitted(root: String, batchId: Long, state: CommittedState): Unit =
    monitor.foreach(_.batchCommitting(root, batchId, state))

  /** A savepoint of `root` at `batchId` was written to `path`. */
  def savepointTaken(root: String, queryId: String, batchId: Long, path: String): Unit =
    monitor.foreach(_.savepointTaken(root, queryId, batchId, path))

  /**
   * Loads `root`'s inline state from its packs now, on the calling (query) thread, so that
   * the executors' first requests after a driver restart find it in memory instead of
   * waiting on the RPC thread while it is read. A failure is left for those requests to
   * report (they try again, and fail with the error of its kind).
   */
  def prepare(root: String): Unit =
    try stateOf(root) catch {
      case NonFatal(e) => log.debug(s"Could not load the inline state of $root ahead of its tasks: $e")
    }

  /** Waits for the background deletion of obsolete packs scheduled so far (tests, shutdown). */
  def awaitPackCleanup(timeoutMs: Long): Boolean = cleaner.awaitIdle(timeoutMs)

  /**
   * Runs `action` once the query of `root` stops in this driver (after [[queryTerminated]]
   * released it): what a file manager of the query's logs left to do (Spark's purged entries
   * it deletes in groups). Forgotten, not run, when the checkpoint is discarded.
   */
  def whenQueryStops(root: String)(action: () => Unit): Unit =
    atQueryStop.computeIfAbsent(root, _ => new java.util.concurrent.CopyOnWriteArrayList[() => Unit]()).add(action)

  private val atQueryStop = new ConcurrentHashMap[String, java.util.List[() => Unit]]()

  /** A query stopped or failed: frees its driver memory. Returns the checkpoint roots of the query. */
  def queryTerminated(queryId: String): Seq[String] = {
    val candidates = (committedRoots.keySet.asScala ++ roots.keySet.asScala).toSeq
    val mine = candidates.filter { root =>
      val known = Option(committedRoots.get(root)).filter(_.nonEmpty)
      val id = known.getOrElse {
        val read = CheckpointPaths.readQueryId(root, hadoopConf)
        committedRoots.replace(root, read)
        read
      }
      id == queryId
    }
    mine.foreach(release)
    // Outside the lifecycle's lock: an action may make a request to the file system.
    mine.flatMap(root => Option(atQueryStop.remove(root)).toSeq.flatMap(_.asScala)).foreach { action =>
      try action() catch { case NonFatal(e) => log.warn(s"An action at the stop of query $queryId failed: $e") }
    }
    mine
  }

  /** Cancels the pack deletions pending for `root`: its whole checkpoint is about to be deleted. */
  def cancelPackCleanup(root: String): Unit = cleaner.forget(root)

  private def slot(root: String): RootSlot = {
    val existing = roots.get(root)
    if (existing != null) existing else {
      val fresh = new RootSlot
      val raced = roots.putIfAbsent(root, fresh)
      if (raced != null) raced else fresh
    }
  }

  /**
   * The state of `root`, loaded from its packs on first use after a driver restart; fails
   * when the root's state lived in a previous driver's heap only. Only requests for this
   * root wait while it loads.
   */
  private def stateOf(root: String): Option[RootState] = slot(root).getOrLoad(loadFromDisk(root))

  /** Forgets the inline copy of a file, if any: a delete, or a write now done on disk. */
  private def dropInline(root: String, rel: String): Unit =
    stateOf(root).foreach(s => held.release(s.delete(rel)))

  private def loadFromDisk(root: String): Option[RootState] = {
    StorageMarker.read(root, hadoopConf) match {
      case None => None
      case Some(m) if !m.persistent => throw new IllegalStateException(stateGone(root))
      case Some(m) => Some(RootState.load(root, m.keepInHeap, m.storage, hadoopConf))
    }
  }
}

object CheckpointCoordinator {
  private[coordinator] val log = LoggerFactory.getLogger(classOf[CheckpointCoordinator])

  /** The first three of `stores`, sorted, and how many more there are: for messages. */
  def someOf(stores: Seq[String]): String =
    stores.sorted.take(3).mkString(", ") + (if (stores.size > 3) s" and ${stores.size - 3} more" else "")

  /** Why batch `batchId` of `root` cannot commit: `stores` hold no state of its version. */
  def notDurable(root: String, batchId: Long, stores: Seq[String]): String = {
    val version = batchId + 1
    s"Batch $batchId of the streaming query with checkpoint $root cannot commit: its state is not durable. " +
      s"The state stores ${someOf(stores)} hold no state of version $version (the batch's), neither inline in the " +
      s"driver or a pack nor as a file of their own, while they hold version ${version - 1}. Their tasks " +
      "did not run again after the batch's state was lost before it was durable (the driver that held it " +
      "stopped or died, and an exactly-once sink such as the file sink skips a batch it already committed). " +
      s"Committing would lose that state for good; the checkpoint's last complete batch stays ${batchId - 1}. " +
      "Restart the query from a savepoint, or on a new checkpoint location."
  }

  /** Why the state of checkpoint `root`, whose marker says it did not persist, cannot be read. */
  def stateGone(root: String): String =
    s"The state of the streaming query with checkpoint $root " +
      "was kept in the heap of the driver only (DriverCheckpointStorage without a checkpoint " +
      "path) and is gone: the driver restarted or the query was stopped. It cannot resume " +
      "from this checkpoint. Start it on a new checkpoint location; to make its state " +
      "survive, give the storage a checkpoint path (DriverCheckpointStorage(checkpoint_path=...), " +
      s"${CheckpointStorageOptions.CheckpointPath}) or use FileSystemCheckpointStorage."
}

/**
 * Where one checkpoint root's state lives in the coordinator: absent, being loaded (only
 * this root's requests wait, on this slot), or loaded.
 */
private final class RootSlot {
  @volatile private var state: RootState = null
  /** No marker on disk when last looked: nothing to load until a put creates the state. */
  @volatile private var absent = false

  def loaded: Option[RootState] = Option(state)

  def getOrLoad(load: => Option[RootState]): Option[RootState] = {
    val s = state
    if (s != null || absent) return Option(s)
    synchronized {
      if (state == null && !absent) load match {
        case Some(l) => state = l
        case None => absent = true
      }
      Option(state)
    }
  }

  def create(make: => RootState): RootState = synchronized {
    if (state == null) state = make
    state
  }
}

/** The driver heap bytes of inline state over all roots, bounded by `limit`. */
private final class HeldBytes(limit: Long) {
  private val bytes = new java.util.concurrent.atomic.AtomicLong()

  def current: Long = bytes.get

  /** Adds `n` (negative: frees) unless that would cross the limit. */
  def tryReserve(n: Long): Boolean = {
    if (n <= 0) { bytes.addAndGet(n); return true }
    while (true) {
      val now = bytes.get
      if (now + n > limit) return false
      if (bytes.compareAndSet(now, now + n)) return true
    }
    false
  }

  def release(n: Long): Unit = if (n != 0) bytes.addAndGet(-n)
}
