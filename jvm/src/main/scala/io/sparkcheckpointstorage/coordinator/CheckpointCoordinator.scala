package io.sparkcheckpointstorage.coordinator

import java.nio.charset.StandardCharsets

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.slf4j.LoggerFactory

import io.sparkcheckpointstorage.filemanager.{CheckpointFiles, StatePaths}
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions

/**
 * The driver's checkpoint coordinator (Flink: the JobManager's checkpoint coordinator).
 *
 * It holds the inline state files executors send, bounded by
 * `spark.sql.streaming.checkpointStorage.driver.maxTotalInlineSize`; before a persistent
 * query's batch commits it writes the files received since the last commit as one pack
 * under `<checkpoint>/state-packs/`; it serves them back for restores (from heap, or as a
 * range of a pack), rebuilding its index from the packs after a driver restart; and it
 * deletes packs no longer needed.
 *
 * One per driver JVM, shared by every query: state is keyed by checkpoint root, so queries
 * never see each other's files. All methods are synchronized: the plugin's RPC endpoint
 * calls it from one thread, the driver's file managers from the query threads.
 */
final class CheckpointCoordinator(hadoopConf: Configuration, maxHeldBytes: Long) {
  import CheckpointCoordinator._

  private val roots = mutable.HashMap[String, RootState]()
  /** Every checkpoint root that committed a batch in this driver -> its query id (lazily read). */
  private val committedRoots = mutable.HashMap[String, Option[String]]()
  private var heldBytes = 0L
  private val cleaner = new PackCleaner(hadoopConf)

  def heldInlineBytes: Long = synchronized(heldBytes)

  def handle(request: CoordinatorRequest): CoordinatorReply = synchronized {
    try {
      request match {
        case p: PutInline => put(p)
        case GetInline(root, rel) => get(root, rel)
        case ExistsInline(root, rel) =>
          if (rootState(root).exists(_.files.contains(rel))) IsInline else NotInline
        case ListInline(root, dir) => Listing(rootState(root).map(_.list(dir)).getOrElse(Nil))
        case DeleteInline(root, rel) =>
          rootState(root).foreach(_.delete(rel))
          Done
      }
    } catch {
      case NonFatal(e) => Refused(Option(e.getMessage).getOrElse(e.toString))
    }
  }

  private def put(p: PutInline): CoordinatorReply = {
    val state = rootState(p.root).getOrElse {
      val s = new RootState(p.root, p.persistent, p.keepInHeap)
      writeMarker(s, p.storage)
      roots(p.root) = s
      s
    }
    val previous = state.heapBytesOf(p.relPath)
    if (heldBytes - previous + p.bytes.length > maxHeldBytes) {
      return LimitExceeded(s"The driver holds $heldBytes bytes of inline checkpoint state, and " +
        s"${p.relPath} (${p.bytes.length} bytes) of checkpoint ${p.root} would exceed the limit of " +
        s"$maxHeldBytes bytes. Raise ${CheckpointStorageOptions.DriverMaxTotalInlineSize} (and the " +
        "driver heap, spark.driver.memory), or use the FileSystemCheckpointStorage, which keeps " +
        "packed state on the file system instead of the driver heap.")
    }
    heldBytes += p.bytes.length - previous
    state.put(p.relPath, p.bytes)
    Done
  }

  private def get(root: String, rel: String): CoordinatorReply =
    rootState(root).flatMap(_.files.get(rel)) match {
      case Some(f) if f.bytes != null => InlineBytes(f.bytes)
      case Some(f) => InPack(f.pack.get.toString, f.offset, f.length, f.crc)
      case None => NotInline
    }

  /**
   * Makes the inline state of checkpoint `root` durable before batch `batchId` commits: the
   * files received since the last pack go into a new pack. Called by the driver's file
   * manager when Spark creates `commits/<batchId>`.
   */
  def beforeCommit(root: String, batchId: Long): Unit = synchronized {
    committedRoots.getOrElseUpdate(root, None)
    roots.get(root).filter(_.persistent).foreach { state =>
      val released = state.writePack(batchId, hadoopConf)
      heldBytes -= released
      val obsolete = state.takeObsoletePacks()
      if (obsolete.nonEmpty) cleaner.schedule(root, obsolete)
    }
  }

  /** Forgets a stopped query's inline state (it stays in its packs when persistent). */
  def release(root: String): Unit = synchronized {
    roots.remove(root).foreach(s => heldBytes -= s.heapBytes)
  }

  def knownRoots: Seq[String] = synchronized(roots.keys.toSeq)

  /** Waits for the background deletion of obsolete packs scheduled so far (tests, shutdown). */
  def awaitPackCleanup(timeoutMs: Long): Boolean = cleaner.awaitIdle(timeoutMs)

  /**
   * A query stopped or failed: free its driver memory and, when it was stopped by the user
   * and cleanup is `DELETE_ON_CANCELLATION`, delete its checkpoint (Flink's externalized
   * checkpoint cleanup). Returns the checkpoint roots of the query.
   */
  def queryTerminated(queryId: String, stoppedByUser: Boolean, deleteOnCancellation: Boolean): Seq[String] =
    synchronized {
      val mine = (committedRoots.keySet ++ roots.keySet).toSeq.filter { root =>
        val id = committedRoots.get(root).flatten.getOrElse {
          val read = RootState.readQueryId(root, hadoopConf)
          committedRoots(root) = Some(read)
          read
        }
        id == queryId
      }
      mine.foreach { root =>
        release(root)
        committedRoots.remove(root)
        if (stoppedByUser && deleteOnCancellation) {
          cleaner.forget(root)
          CheckpointFiles.deleteRecursively(new Path(root), hadoopConf)
          log.info(s"Deleted the checkpoint $root of stopped query $queryId (DELETE_ON_CANCELLATION)")
        }
      }
      mine
    }

  /**
   * The state of `root`, loaded from its packs on first use after a driver restart; fails
   * when the root's state lived in a previous driver's heap only.
   */
  private def rootState(root: String): Option[RootState] = roots.get(root).orElse {
    val marker = CheckpointFiles.readSmall(new Path(root, MarkerFile), hadoopConf)
      .map(b => new String(b, StandardCharsets.UTF_8))
    marker match {
      case None => None
      case Some(m) if m.linesIterator.contains("persistent=false") =>
        throw new IllegalStateException(s"The state of the streaming query with checkpoint $root " +
          "was kept in the heap of the driver only (DriverCheckpointStorage without a checkpoint " +
          "path) and is gone: the driver restarted or the query was stopped. It cannot resume " +
          "from this checkpoint. Start it on a new checkpoint location; to make its state " +
          "survive, give the storage a checkpoint path (DriverCheckpointStorage(checkpoint_path=...), " +
          s"${CheckpointStorageOptions.CheckpointPath}) or use FileSystemCheckpointStorage.")
      case Some(m) =>
        val keepInHeap = m.linesIterator.contains("keepInHeap=true")
        val s = RootState.load(root, keepInHeap, hadoopConf)
        heldBytes += s.heapBytes
        roots(root) = s
        Some(s)
    }
  }

  private def writeMarker(state: RootState, storage: String): Unit = {
    val text = s"storage=$storage\npersistent=${state.persistent}\nkeepInHeap=${state.keepInHeap}\n"
    CheckpointFiles.writeAtomic(new Path(state.root, MarkerFile), overwrite = true, hadoopConf)(
      _.write(text.getBytes(StandardCharsets.UTF_8)))
  }
}

object CheckpointCoordinator {
  /** Written once per checkpoint: which storage keeps its state, and whether it persists. */
  val MarkerFile = "checkpoint-storage"
  private[coordinator] val log = LoggerFactory.getLogger(classOf[CheckpointCoordinator])

  /** The coordinator of this JVM when it is the driver (set by the plugin). */
  @volatile private[sparkcheckpointstorage] var driverInstance: Option[CheckpointCoordinator] = None

  /** The driver's coordinator, null outside the driver (for Python and inspection). */
  def current(): CheckpointCoordinator = driverInstance.orNull
}

/** An inline file: bytes in heap, and where its durable copy is once packed. */
private[coordinator] final class InlineFile(var bytes: Array[Byte], var pack: Option[Path],
    var offset: Long, var length: Int, var crc: Int)

/** The inline files of one checkpoint root. */
private[coordinator] final class RootState(val root: String, val persistent: Boolean, val keepInHeap: Boolean) {
  import CheckpointCoordinator.log

  val files = mutable.HashMap[String, InlineFile]()
  private val pendingPuts = mutable.LinkedHashSet[String]()
  private val pendingDeletes = mutable.LinkedHashSet[String]()
  /** Pack sequence number -> (path, relPaths whose durable copy it holds). */
  private val packs = mutable.TreeMap[Long, (Path, mutable.Set[String])]()

  def heapBytesOf(rel: String): Long = files.get(rel).map(f => if (f.bytes == null) 0L else f.bytes.length.toLong).getOrElse(0L)
  def heapBytes: Long = files.valuesIterator.map(f => if (f.bytes == null) 0L else f.bytes.length.toLong).sum

  def put(rel: String, bytes: Array[Byte]): Unit = {
    files.get(rel).flatMap(_.pack).foreach(p => packOf(p).foreach(_._2 -= rel))
    files(rel) = new InlineFile(bytes, None, 0, bytes.length, 0)
    pendingPuts += rel
    pendingDeletes -= rel
  }

  def delete(rel: String): Unit = {
    files.remove(rel).foreach { f =>
      f.pack.foreach(p => packOf(p).foreach(_._2 -= rel))
      pendingPuts -= rel
      if (persistent) pendingDeletes += rel
    }
  }

  def list(relDir: String): Seq[(String, Long)] = {
    val prefix = relDir.stripSuffix("/") + "/"
    files.iterator.collect {
      case (rel, f) if rel.startsWith(prefix) && rel.indexOf('/', prefix.length) < 0 => (rel, f.length.toLong)
    }.toSeq
  }

  private def packOf(p: Path) = packs.valuesIterator.find(_._1 == p)

  private var cachedQueryId: String = null
  /** The query id Spark records in `<root>/metadata`; packs carry it to catch misplaced packs. */
  def queryId(conf: Configuration): String = {
    if (cachedQueryId == null) cachedQueryId = RootState.readQueryId(root, conf)
    cachedQueryId
  }

  /** Deletions replayed from packs are already durable. */
  def pendingDeletesClear(): Unit = pendingDeletes.clear()

  /** Writes the pending changes as the next pack; returns the heap bytes it released. */
  def writePack(batchId: Long, conf: Configuration): Long = {
    if (pendingPuts.isEmpty && pendingDeletes.isEmpty) return 0L
    val seq = if (packs.isEmpty) nextSeqOnDisk(conf) else packs.lastKey + 1
    val path = new Path(StatePaths.packDir(root), StatePack.fileName(seq))
    val puts = pendingPuts.toSeq.map(rel => rel -> files(rel).bytes)
    var index: PackIndex = null
    CheckpointFiles.writeAtomic(path, overwrite = false, conf) { out =>
      index = StatePack.write(out, batchId, queryId(conf), puts, pendingDeletes.toSeq)
    }
    var released = 0L
    index.entries.foreach { e =>
      val f = files(e.relPath)
      f.pack = Some(path); f.offset = e.offset; f.length = e.length; f.crc = e.crc
      if (!keepInHeap) { released += f.bytes.length; f.bytes = null }
    }
    packs(seq) = (path, mutable.HashSet(index.entries.map(_.relPath): _*))
    pendingPuts.clear()
    pendingDeletes.clear()
    released
  }

  /**
   * Removes from the index the oldest packs whose files are all superseded or deleted, and
   * returns them, oldest first, for deletion (the newest pack always stays: it carries the
   * sequence on).
   */
  def takeObsoletePacks(): Seq[Path] = {
    val obsolete = mutable.ArrayBuffer[Path]()
    while (packs.size > 1 && packs.head._2._2.isEmpty) {
      val (seq, (path, _)) = packs.head
      obsolete += path
      packs.remove(seq)
    }
    obsolete.toSeq
  }

  private def nextSeqOnDisk(conf: Configuration): Long =
    (CheckpointFiles.listNames(StatePaths.packDir(root), conf).flatMap(StatePack.batchOf) :+ 0L).max + 1
}

private[coordinator] object RootState {
  private val QueryId = """"id"\s*:\s*"([^"]+)"""".r

  def readQueryId(root: String, conf: Configuration): String =
    CheckpointFiles.readSmall(new Path(root, "metadata"), conf)
      .flatMap(b => QueryId.findFirstMatchIn(new String(b, StandardCharsets.UTF_8)).map(_.group(1)))
      .getOrElse("")

  /** Rebuilds a root's inline files from its packs, oldest first. */
  def load(root: String, keepInHeap: Boolean, conf: Configuration): RootState = {
    val state = new RootState(root, persistent = true, keepInHeap)
    val dir = StatePaths.packDir(root)
    val seqs = CheckpointFiles.listNames(dir, conf).flatMap(n => StatePack.batchOf(n)).sorted
    // Packs are numbered without gaps and only the oldest are ever deleted: a gap is a lost
    // pack, and the state it held would silently be older than the commit log says.
    seqs.zip(seqs.drop(1)).find { case (a, b) => b != a + 1 }.foreach { case (a, b) =>
      throw new CorruptPackException(new Path(dir, StatePack.fileName(a + 1)).toString,
        s"it is missing, while packs ${StatePack.fileName(a)} and ${StatePack.fileName(b)} exist")
    }
    seqs.foreach { seq =>
      val path = new Path(dir, StatePack.fileName(seq))
      val bytes = CheckpointFiles.readSmall(path, conf).getOrElse(
        throw new CorruptPackException(path.toString, "it disappeared while being read"))
      val index = StatePack.readIndex(bytes, path.toString)
      val expected = state.queryId(conf)
      if (index.queryId.nonEmpty && expected.nonEmpty && index.queryId != expected) {
        throw new CorruptPackException(path.toString, s"it belongs to query ${index.queryId}, but " +
          s"the checkpoint $root is of query $expected (a pack copied from another checkpoint?)")
      }
      index.deleted.foreach(state.delete)
      val held = mutable.HashSet[String]()
      index.entries.foreach { e =>
        state.files.get(e.relPath).flatMap(_.pack).foreach(p => state.packs.valuesIterator.find(_._1 == p).foreach(_._2 -= e.relPath))
        // Served from the pack: a state reader (or a restarted query) should not pin the
        // whole checkpoint in driver heap; new batches' files are kept per the storage.
        state.files(e.relPath) = new InlineFile(null, Some(path), e.offset, e.length, e.crc)
        held += e.relPath
      }
      state.packs(seq) = (path, held)
    }
    state.pendingDeletesClear()
    CheckpointCoordinator.log.info(s"Restored ${state.files.size} inline state files of $root from ${seqs.size} packs")
    state
  }
}
