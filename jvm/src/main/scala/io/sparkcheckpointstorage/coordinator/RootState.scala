package io.sparkcheckpointstorage.coordinator


import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.layout.CheckpointPaths
import io.sparkcheckpointstorage.monitoring.PackedBatch
import io.sparkcheckpointstorage.packs.{CheckpointPacks, PackIndex, StatePack}

/** An inline file: bytes in heap (null once released to its pack), and its pack once packed. */
private[coordinator] final class InlineFile(var bytes: Array[Byte], val length: Int) {
  var packSeq: Long = -1L
  var pack: Path = null
  var offset: Long = 0L
  var crc: Int = 0

  def heapBytes: Long = if (bytes == null) 0L else bytes.length.toLong
}

/** The files and deletions a pack is being written from, as they were when it started. */
private[coordinator] final case class PendingPack(puts: Seq[PendingPut], deletes: Seq[String]) {
  def isEmpty: Boolean = puts.isEmpty && deletes.isEmpty
}
private[coordinator] final case class PendingPut(relPath: String, file: InlineFile, bytes: Array[Byte])

/**
 * The inline files of one checkpoint root and the packs holding their durable copies.
 *
 * Every method is a short map operation under this object's lock; the pack I/O around them
 * ([[takePending]], write, [[packed]]) happens outside it, so requests go on while a pack is
 * written. A put or delete that arrives meanwhile belongs to the next pack: [[packed]] only
 * records the pack for files that are still the ones it was written from.
 */
private[coordinator] final class RootState(val root: String, val persistent: Boolean,
    val keepInHeap: Boolean, val storage: String) {

  private val files = mutable.HashMap[String, InlineFile]()
  /**
   * The names of `files` by directory: a store lists its own directory (loads, snapshots,
   * cleanup), and a scan of every file of the checkpoint would cost each listing time in the
   * number of partitions times retained versions, with this root's lock held.
   */
  private val byDir = mutable.HashMap[String, mutable.HashSet[String]]()
  /**
   * The newest store version of the inline files of each directory: a batch's commit checks
   * that every store holding the version before it wrote the batch's ([[storesBehind]]),
   * without a scan of every file.
   */
  private val newestByDir = mutable.HashMap[String, Long]()
  /** What packs written before the batch's commit ([[packedEarly]]) took, for the commit to report. */
  private var earlyPacked: Option[PackedBatch] = None
  private val pendingPuts = mutable.LinkedHashSet[String]()
  private val pendingDeletes = mutable.LinkedHashSet[String]()
  /** Pack sequence number -> (path, relPaths whose durable copy it holds). */
  private val packs = mutable.TreeMap[Long, (Path, mutable.Set[String])]()
  private var released = false

  /** Serializes this root's pack writes (held during their I/O, never by a request). */
  val commitLock = new Object
  /**
   * Whether a failed pack write (of this driver, or of one before it: set on restore) may have
   * left a temporary file under the packs; the next pack written has them deleted.
   */
  @volatile var mayHaveLeftovers = false
  /** Whether the last pack write failed: its changes are pending again, for the next commit to pack. */
  @volatile var packFailed = false
  /** Whether the checkpoint marker is on disk (written before the first commit). */
  @volatile var markerWritten = false

  @volatile private var cachedQueryId: String = null
  /** The query id Spark records in `<root>/metadata`; packs carry it to catch misplaced packs. */
  def queryId(conf: Configuration): String = {
    if (cachedQueryId == null) cachedQueryId = CheckpointPaths.readQueryId(root, conf)
    cachedQueryId
  }

  def heapBytes: Long = synchronized(files.valuesIterator.map(_.heapBytes).sum)

  /**
   * Keeps `bytes` as `rel` if `reserve` accepts the growth of the driver's heap bytes.
   * None when this root was released (the caller looks it up again), else whether accepted.
   */
  def put(rel: String, bytes: Array[Byte], reserve: Long => Boolean): Option[Boolean] = synchronized {
    if (released) return None
    val previous = files.get(rel)
    // A task run again (a retry, a stage resubmitted) writes the same bytes: already durable.
    if (previous.exists(f => f.packSeq >= 0 && sameBytes(f, bytes))) return Some(true)
    if (!reserve(bytes.length - previous.map(_.heapBytes).getOrElse(0L))) return Some(false)
    previous.foreach(unlinkFromPack(rel, _))
    store(rel, new InlineFile(bytes, bytes.length))
    pendingPuts += rel
    pendingDeletes -= rel
    Some(true)
  }

  private def sameBytes(f: InlineFile, bytes: Array[Byte]): Boolean =
    f.length == bytes.length &&
      (if (f.bytes != null) java.util.Arrays.equals(f.bytes, bytes) else StatePack.checksum(bytes) == f.crc)

  /** Forgets `rel`; returns the heap bytes freed (none once released: [[release]] freed them all). */
  def delete(rel: String): Long = synchronized {
    if (released) return 0L
    files.remove(rel) match {
      case Some(f) =>
        val dir = CheckpointPaths.dirOf(rel)
        byDir.get(dir).foreach { names =>
          names -= rel
          if (names.isEmpty) byDir.remove(dir)
        }
        if (CheckpointPaths.stateVersionOf(rel).exists(v => newestByDir.get(dir).contains(v))) renewNewest(dir)
        unlinkFromPack(rel, f)
        pendingPuts -= rel
        if (persistent) pendingDeletes += rel
        f.heapBytes
      case None => 0L
    }
  }

  def contains(rel: String): Boolean = synchronized(files.contains(rel))

  /** Where `rel` is: its bytes, a range of a pack, or not inline. */
  def locate(rel: String): CoordinatorReply = synchronized {
    files.get(rel) match {
      case Some(f) if f.bytes != null => InlineBytes(f.bytes)
      case Some(f) => InPack(f.pack.toString, f.offset, f.length, f.crc)
      case None => NotInline
    }
  }

  def list(relDir: String): Seq[(String, Long)] = synchronized {
    byDir.get(relDir.stripSuffix("/")) match {
      case Some(names) => names.iterator.map(rel => (rel, files(rel).length.toLong)).toVector
      case None => Vector.empty
    }
  }

  private def store(rel: String, f: InlineFile): Unit = {
    val dir = CheckpointPaths.dirOf(rel)
    if (files.put(rel, f).isEmpty) byDir.getOrElseUpdate(dir, mutable.HashSet[String]()) += rel
    CheckpointPaths.stateVersionOf(rel).foreach { v =>
      if (newestByDir.get(dir).forall(_ < v)) newestByDir(dir) = v
    }
  }

  /** The newest version of `dir`'s inline files again, after one of them went. */
  private def renewNewest(dir: String): Unit = {
    val versions = byDir.get(dir).iterator.flatten.flatMap(CheckpointPaths.stateVersionOf)
    if (versions.hasNext) newestByDir(dir) = versions.max else newestByDir.remove(dir)
  }

  /**
   * The store directories whose newest inline file is of `version - 1`: a batch committing
   * `version` wrote a file of it in each, inline (then it would be the newest) or as a file of
   * its own.
   */
  def storesBehind(version: Long): Seq[String] = synchronized {
    newestByDir.iterator.collect { case (dir, v) if v == version - 1 => dir }.toVector
  }

  /** The store directories whose newest inline file is older than `version`. */
  def storesOlderThan(version: Long): Seq[String] = synchronized {
    newestByDir.iterator.collect { case (dir, v) if v < version => dir }.toVector
  }

  /** Whether this root holds changes no pack holds yet. */
  def hasUnpacked: Boolean = synchronized(pendingPuts.nonEmpty || pendingDeletes.nonEmpty)

  /** A pack written before its batch's commit took `packed`; the commit reports it ([[takeEarlyPacked]]). */
  def packedEarly(packed: Option[PackedBatch]): Unit = synchronized {
    earlyPacked = withEarlyPacked(packed)
  }

  /** What the batch's packs took: those written before its commit, then `packed`, the commit's own. */
  def takeEarlyPacked(packed: Option[PackedBatch]): Option[PackedBatch] = synchronized {
    val all = withEarlyPacked(packed)
    earlyPacked = None
    all
  }

  /** The early packs' files and then `packed`'s, under the newest pack's name. */
  private def withEarlyPacked(packed: Option[PackedBatch]): Option[PackedBatch] =
    (earlyPacked ++ packed).reduceOption((a, b) => PackedBatch(a.files ++ b.files,
      if (b.packName.nonEmpty) b.packName else a.packName, if (b.packName.nonEmpty) b.packBytes else a.packBytes))

  /** Marks the root released (its query stopped); returns the heap bytes it held. */
  def release(): Long = synchronized {
    released = true
    files.valuesIterator.map(_.heapBytes).sum
  }

  private def unlinkFromPack(rel: String, f: InlineFile): Unit =
    if (f.packSeq >= 0) packs.get(f.packSeq).foreach(_._2 -= rel)

  def lastPackSeq: Option[Long] = synchronized(packs.lastOption.map(_._1))

  /**
   * Packs on disk this root did not know it wrote (a write whose answer was lost): every file
   * they hold is written again by the next pack, so they hold nothing live and are deleted in
   * their turn, oldest first, like any obsolete pack.
   */
  def supersededPacks(found: Seq[(Long, Path)]): Unit = synchronized {
    found.foreach { case (seq, path) => if (!packs.contains(seq)) packs(seq) = (path, mutable.HashSet[String]()) }
  }

  /** The changes since the last pack, to be written as the next one; they stop being pending. */
  def takePending(): PendingPack = synchronized {
    val puts = pendingPuts.toVector.map { rel => val f = files(rel); PendingPut(rel, f, f.bytes) }
    val deletes = pendingDeletes.toVector
    pendingPuts.clear()
    pendingDeletes.clear()
    PendingPack(puts, deletes)
  }

  /** The pack of `pending` failed: its changes are pending again (unless superseded meanwhile). */
  def unpacked(pending: PendingPack): Unit = synchronized {
    pending.puts.foreach(p => if (files.get(p.relPath).exists(_ eq p.file)) pendingPuts += p.relPath)
    pending.deletes.foreach(d => if (!files.contains(d)) pendingDeletes += d)
  }

  /**
   * Pack `seq` at `path` holds `pending`: its files that are still current are served from
   * it from now on. Returns the heap bytes released (none when the root keeps them in heap).
   */
  def packed(seq: Long, path: Path, index: PackIndex, pending: PendingPack): Long = synchronized {
    var releasedBytes = 0L
    val heldByPack = mutable.HashSet[String]()
    pending.puts.zip(index.entries).foreach { case (p, e) =>
      if (files.get(p.relPath).exists(_ eq p.file)) {
        val f = p.file
        f.packSeq = seq; f.pack = path; f.offset = e.offset; f.crc = e.crc
        heldByPack += p.relPath
        if (!keepInHeap && !released) {
          releasedBytes += f.heapBytes
          f.bytes = null
        }
      }
    }
    packs(seq) = (path, heldByPack)
    releasedBytes
  }

  /**
   * Removes from the index the oldest packs whose files are all superseded or deleted, and
   * returns them, oldest first, for deletion (the newest pack always stays: it carries the
   * sequence on).
   */
  def takeObsoletePacks(): Seq[Path] = synchronized {
    val obsolete = mutable.ArrayBuffer[Path]()
    while (packs.size > 1 && packs.head._2._2.isEmpty) {
      val (seq, (path, _)) = packs.head
      obsolete += path
      packs.remove(seq)
    }
    obsolete.toVector
  }

  /** Replays one pack read from disk (restore): its deletions, then its files, served from it. */
  private def replay(seq: Long, path: Path, index: PackIndex): Unit = synchronized {
    index.deleted.foreach(delete)
    val held = mutable.HashSet[String]()
    index.entries.foreach { e =>
      files.get(e.relPath).foreach(unlinkFromPack(e.relPath, _))
      // Served from the pack: a state reader (or a restarted query) should not pin the
      // whole checkpoint in driver heap; new batches' files are kept per the storage.
      val f = new InlineFile(null, e.length)
      f.packSeq = seq; f.pack = path; f.offset = e.offset; f.crc = e.crc
      store(e.relPath, f)
      held += e.relPath
    }
    packs(seq) = (path, held)
    // Deletions replayed from packs are already durable.
    pendingDeletes.clear()
  }

  def fileCount: Int = synchronized(files.size)
}

private[coordinator] object RootState {
  /** Rebuilds a root's inline files from its packs, oldest first. */
  def load(root: String, keepInHeap: Boolean, storage: String, conf: Configuration): RootState = {
    val state = new RootState(root, persistent = true, keepInHeap, storage)
    state.markerWritten = true
    state.mayHaveLeftovers = true
    val packs = CheckpointPacks.read(root, state.queryId(conf), conf).packs
    packs.foreach(p => state.replay(p.seq, p.path, p.index))
    CheckpointCoordinator.log.info(s"Restored ${state.fileCount} inline state files of $root from ${packs.size} packs")
    state
  }
}
