package io.sparkcheckpointstorage.filemanager

import java.io.{ByteArrayInputStream, FileNotFoundException}
import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FSDataInputStream, Path, PathFilter, PositionedReadable, Seekable}
import org.apache.spark.TaskContext
import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.CheckpointFileManager
import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.CheckpointFileManager.CancellableFSDataOutputStream
import org.apache.spark.sql.checkpointstorage.shim.FileDeleteShim

import io.sparkcheckpointstorage.coordinator._
import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.inspection.CheckpointInspector
import io.sparkcheckpointstorage.layout.{CheckpointPaths, SparkSettingKeys, StateFileNaming}
import io.sparkcheckpointstorage.storage.{CheckpointStorage, CheckpointStorageLoader, CheckpointStorageOptions,
  CheckpointStorageSettings, CorruptCheckpointException, IllegalCheckpointStorageArgumentException}

/**
 * The raw-bytes storage of checkpoints (Flink: `CheckpointStreamFactory`), set with
 * `spark.sql.streaming.checkpointFileManagerClass=io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager`.
 *
 * State files (`<checkpoint>/state/...`) go where the checkpoint storage places them:
 * inline to the driver's coordinator, or to files of their own. Every other checkpoint file
 * (offsets, commits, metadata) is written as a file. A stage that wrote state ends only once
 * the coordinator made that state durable ([[StageEndDurability]]), as Spark's own providers
 * have it durable when their tasks end; creating `commits/<N>` checks the batch's state is
 * all durable, so a commit is never visible without its state. Reads,
 * listings and deletes see inline and real files alike, so a state store provider cannot
 * tell the difference.
 */
class StorageCheckpointFileManager(path: Path, hadoopConf: Configuration) extends CheckpointFileManager {

  /** The storage serving the query whose checkpoint is `root`. */
  private def storageFor(root: String): CheckpointStorage = {
    if (cachedStorage == null || cachedRoot != root) {
      cachedStorage = CheckpointStorageLoader.load(k => Option(hadoopConf.get(k)), Some(root))
      cachedRoot = root
    }
    cachedStorage
  }
  private var cachedStorage: CheckpointStorage = _
  private var cachedRoot: String = _
  private lazy val fs = path.getFileSystem(hadoopConf)
  /**
   * The newest entry of the log this file manager serves (Spark's offset or commit log: one
   * file manager per log), known on disk from this driver's listing and its own writes since;
   * -1 for none, None until listed. Spark asks whether the next entry exists before writing
   * it, every batch: a HEAD and a LIST on an object store, answered here from memory. Another
   * writer of the log cannot hide behind it: the entry is then created only if absent
   * (atomically: a hard link, a rename that never replaces, a conditional PUT), and Spark
   * reports a second query on the checkpoint as it always did.
   */
  @volatile private var newestLogEntry: Option[Long] = None
  /**
   * The state directory this file manager listed last, and the files of it held inline only
   * (none on the file system): the provider's cleanup deletes what it just listed, and such a
   * file's delete needs no request to the file system (on S3 a HEAD and a LIST for nothing).
   */
  @volatile private var inlineOnly: (Path, Set[String]) = (null, Set.empty)
  /**
   * The entries of the log this file manager serves that Spark purged, deleted in groups where
   * the file system deletes many files in one request (S3A); None: each is deleted at once.
   */
  private lazy val purgedEntries: Option[PurgedLogEntries] = {
    val dir = qualified(path)
    CheckpointPaths.logDirRoot(dir).filterNot(_ => FileSystemOperations.isLocal(path)).flatMap { root =>
      val pageSize = FileDeleteShim.filesPerDeleteRequest(fs, dir)
      if (pageSize < PurgedLogEntries.GroupSize) None else {
        val entries = new PurgedLogEntries(fs, dir, pageSize)
        // A stopped query leaves none of its purged entries behind.
        DriverRuntime.coordinator.foreach(_.whenQueryStops(root)(() => entries.deleteNow()))
        Some(entries)
      }
    }
  }

  /** Whether Spark purged `p`, an entry of this file manager's log, and its delete is pending. */
  private def purgedPending(p: Path): Boolean =
    ownLogEntry(p).isDefined && purgedEntries.exists(_.contains(p.getName))
  private lazy val asyncStateWrites =
    Option(hadoopConf.get(CheckpointStorageOptions.AsyncStateWrites)).exists(CheckpointStorageSettings.AsyncStateWritesSetting.parse)

  /**
   * `p` with scheme and authority: Spark hands out `/tmp/x/...` and Hadoop's listings
   * `file:/tmp/x/...` for one checkpoint, and the coordinator keys state by its root's text.
   */
  private def qualified(p: Path): Path =
    if (p.toUri.getScheme != null) p else p.makeQualified(fs.getUri, fs.getWorkingDirectory)

  override def createAtomic(p: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream = {
    // Written again: a file of its own, maybe, from now on.
    takeInlineOnly(qualified(p))
    // A purged entry written again (a repair, a rewind): the old one goes first.
    if (purgedPending(p)) purgedEntries.foreach(_.deleteNow())
    createFile(p, overwriteIfPossible)
  }

  /**
   * Whether `q` was inline only in the last listing of its directory; forgets it either way.
   * A task and the store's maintenance share this file manager: one lock, no lost update.
   */
  private def takeInlineOnly(q: Path): Boolean = synchronized {
    val (listedDir, names) = inlineOnly
    val listed = q.getParent == listedDir && names.contains(q.getName)
    if (listed) inlineOnly = (listedDir, names - q.getName)
    listed
  }

  private def createFile(p: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream = {
    val state = CheckpointPaths.splitState(qualified(p))
    // A task writing state its storage persists: its stage's end waits until the state is
    // durable (a driver storage without a path has nothing to wait for, nor to ask about).
    for ((root, rel) <- state; task <- Option(TaskContext.get()) if storageFor(root).isPersistent) {
      StageEndDurability.track(task, root, rel)
    }
    state match {
      case Some((root, rel)) if StateFileNaming.inlinable(rel) =>
        if (!overwriteIfPossible && exists(p)) {
          throw new org.apache.hadoop.fs.FileAlreadyExistsException(s"$p already exists")
        }
        new InlineOrFileOutputStream(storageFor(root), root, rel, p, overwriteIfPossible, hadoopConf,
          background = asyncStateWrites && TaskContext.get() != null && StateFileNaming.writableInBackground(rel))
      case Some((root, rel)) =>
        // A file of a store no storage holds inline (RocksDB's snapshot zips of format version
        // 1, Spark's schema under `_metadata`): written here; the coordinator learns of it for
        // the checkpoints tab and for the listings of the store's directory it answers
        // (listStoreDirectory).
        new OnWrittenStream(FileSystemOperations.createAtomic(p, overwriteIfPossible, hadoopConf),
          bytes => CoordinatorClient.ask(OwnFileWritten(root, rel, bytes)))
      case _ =>
        ownLogEntry(p) match {
          case Some(entry) => new OnWrittenStream(createLogFile(p, overwriteIfPossible), _ => {
            logEntryWritten(entry)
            // The tab's batch times are the driver's, taken as each entry is written: a HEAD of
            // the entry a batch (on S3, whose times have 1 s resolution, less exact) otherwise.
            CheckpointPaths.offset(qualified(p)).foreach { case (root, batch) =>
              DriverRuntime.coordinator.foreach(_.offsetsWritten(root, batch, System.currentTimeMillis()))
            }
          })
          case None => createLogFile(p, overwriteIfPossible)
        }
    }
  }

  private def createLogFile(p: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream =
    (CheckpointPaths.commit(qualified(p)), DriverRuntime.coordinator) match {
      case (Some((root, batch)), Some(coordinator)) =>
        val packed = coordinator.beforeCommit(root, batch)
        // The tab learns of the batch once commits/<batch> is closed, i.e. written.
        new OnWrittenStream(FileSystemOperations.createAtomic(p, overwriteIfPossible, hadoopConf),
          _ => coordinator.batchCommitted(root, batch, packed))
      case _ => FileSystemOperations.createAtomic(p, overwriteIfPossible, hadoopConf)
    }

  /** The entry number of `p` when it is an entry of the log this file manager serves. */
  private def ownLogEntry(p: Path): Option[Long] = {
    val q = qualified(p)
    if (q.getParent == qualified(path) && CheckpointPaths.logDirRoot(q.getParent).isDefined) {
      CheckpointPaths.logEntryBatch(q.getName)
    } else None
  }

  private def logEntryWritten(entry: Long): Unit = synchronized {
    newestLogEntry = newestLogEntry.map(math.max(_, entry))
  }

  private def logEntriesListed(listed: Array[FileStatus]): Unit = synchronized {
    newestLogEntry = Some((listed.flatMap(s => CheckpointPaths.logEntryBatch(s.getPath.getName)) :+ -1L).max)
  }

  override def open(p: Path): FSDataInputStream = {
    if (purgedPending(p)) throw new FileNotFoundException(s"$p was purged")
    val inline = CheckpointPaths.splitState(qualified(p)).flatMap { case (root, rel) =>
      CoordinatorClient.read(root, rel, hadoopConf)
    }
    inline match {
      case Some(bytes) => new FSDataInputStream(new BytesInputStream(bytes))
      case None => fs.open(p)
    }
  }

  override def list(dir: Path, filter: PathFilter): Array[FileStatus] = {
    // Spark lists the commit and offset logs on the driver before a query's first batch: the
    // moment to read a restarted query's packs, on the query's thread rather than the RPC's.
    CheckpointPaths.logDirRoot(qualified(dir)).foreach(root => DriverRuntime.coordinator.foreach(_.prepare(root)))
    // One listing, no existence probe first: on an object store a probe is a HEAD and a
    // LIST of its own, on HDFS a namenode RPC.
    val real = {
      val all = try fs.listStatus(dir, filter) catch { case _: FileNotFoundException => Array.empty[FileStatus] }
      // A log's temp file is a write that failed or is under way, never an entry: Spark 4.1+
      // lists a new query's logs unfiltered, and one left by a failed write of `offsets/0`
      // (its delete failed too) would fail every start (the log must be empty on batch 0).
      val listed = if (CheckpointPaths.logDirRoot(qualified(dir)).isEmpty) all
        else all.filterNot(s => FileSystemOperations.isTemp(s.getPath.getName))
      if (qualified(dir) != qualified(path)) listed
      else listed.filterNot(s => purgedPending(new Path(dir, s.getPath.getName)))
    }
    // Spark lists a log with its filter of batch files: every entry is in the listing.
    if (qualified(dir) == qualified(path) && CheckpointPaths.logDirRoot(qualified(dir)).isDefined &&
        filter.accept(new Path(dir, "0"))) logEntriesListed(real)
    val inline = CheckpointPaths.stateDirRoot(qualified(dir)).toSeq.flatMap { case (root, relDir) =>
      CoordinatorClient.ask(ListInline(root, relDir)) match {
        case Listing(files) => inlineStatuses(dir, files).filter(s => filter.accept(s.getPath))
        case _ => Nil
      }
    }
    if (dir.getName == CheckpointPaths.Commits) CheckpointPaths.logDirRoot(qualified(dir)).foreach(checkLastCommit(_, real))
    val inlineNames = inline.map(_.getPath.getName).toSet
    if (CheckpointPaths.stateDirRoot(qualified(dir)).isDefined) synchronized {
      inlineOnly = (qualified(dir), inlineNames -- real.map(_.getPath.getName))
    }
    // The first listing of the logs after a start tells the batch the query restores from:
    // the commit log's last entry; none when the offset log is empty or absent (a new query,
    // whose commit log Spark does not list before its first batch; see exists).
    CheckpointPaths.logDirRoot(qualified(dir)).foreach { root =>
      if (dir.getName == CheckpointPaths.Commits) DriverRuntime.coordinator.foreach(_.commitLogListed(root, real))
      else if (real.isEmpty) DriverRuntime.coordinator.foreach(_.commitLogListed(root, real))
    }
    real.filterNot(s => inlineNames.contains(s.getPath.getName)) ++ inline
  }

  /** The statuses, in `dir`, of the coordinator's inline files `files` (relative paths, lengths). */
  private def inlineStatuses(dir: Path, files: Seq[(String, Long)]): Seq[FileStatus] = files.map { case (rel, len) =>
    new FileStatus(len, false, 1, 0L, 0L, new Path(dir, rel.substring(rel.lastIndexOf('/') + 1)))
  }

  /**
   * The files of store directory `dir` (`state/<op>/<partition>[/<store>]`), for a state store
   * provider whose every file is written and deleted through this file manager (ours): the
   * driver answers from the files it knows there (listed when the query started, and each
   * write and delete reported since) without a listing of the file system, which on an object
   * store costs a LIST, a HEAD and a LIST again per store at every maintenance. A directory the
   * driver does not know (no query of the checkpoint started in it) is listed as by [[list]].
   * Another provider must use [[list]]: RocksDB uploads its SST files past the file manager.
   */
  def listStoreDirectory(dir: Path): Array[FileStatus] = {
    val q = qualified(dir)
    CheckpointPaths.stateDirRoot(q) match {
      case Some((root, relDir)) => CoordinatorClient.ask(ListStore(root, relDir)) match {
        case StoreListing(inlineFiles, Some(onFileSystem)) =>
          val inline = inlineStatuses(dir, inlineFiles)
          val inlineNames = inline.map(_.getPath.getName).toSet
          synchronized { inlineOnly = (q, inlineNames -- onFileSystem.map(_._1)) }
          (onFileSystem.filterNot(f => inlineNames.contains(f._1)).map { case (name, len) =>
            if (len < 0) new FileStatus(0L, true, 1, 0L, 0L, new Path(dir, name))
            else new FileStatus(len, false, 1, 0L, 0L, new Path(dir, name))
          } ++ inline).toArray
        case _ => list(dir)
      }
      case None => list(dir)
    }
  }

  /**
   * The first listing of a query's commit log after it starts (on the driver) checks that the
   * last committed batch's state is there: a checkpoint damaged by a fault nothing foresaw (a
   * pack deleted, a lost write) fails the start naming the batch, the missing state, the last
   * complete batch and the repair, instead of a task's missing-file error later.
   */
  private def checkLastCommit(root: String, listed: Array[FileStatus]): Unit =
    if (TaskContext.get() == null && StorageCheckpointFileManager.startingRoots.remove(root)) {
      val last = listed.flatMap(s => CheckpointPaths.logEntryBatch(s.getPath.getName))
      if (last.nonEmpty) DriverRuntime.coordinator.foreach { c =>
        val batch = last.max
        // A checkpoint whose state was in a previous driver's heap only fails as before, in its tasks.
        val missing = try c.storesWithout(root, batch + 1) catch { case _: IllegalStateException => Nil }
        if (missing.nonEmpty) {
          val complete = CheckpointInspector.inspect(root, hadoopConf).lastCompleteBatch.getOrElse(-1L)
          throw new CorruptCheckpointException(s"$root/${CheckpointPaths.commitEntry(batch)}",
            StorageCheckpointFileManager.incomplete(root, batch, missing, complete))
        }
      }
    }

  override def mkdirs(p: Path): Unit = {
    if (FileSystemOperations.isLocal(p)) Files.createDirectories(FileSystemOperations.localPath(p))
    else fs.mkdirs(p)
  }

  override def exists(p: Path): Boolean = ownLogEntry(p) match {
    case Some(entry) =>
      if (newestLogEntry.isEmpty) {
        // Listed once, on the first question (a new query's commit log, which Spark does not list).
        logEntriesListed(try fs.listStatus(qualified(path)) catch { case _: FileNotFoundException => Array.empty[FileStatus] })
      }
      entry <= newestLogEntry.getOrElse(Long.MaxValue) && !purgedPending(p) && fs.exists(p)
    case None => existsAnywhere(p)
  }

  private def existsAnywhere(p: Path): Boolean = {
    val inline = CheckpointPaths.splitState(qualified(p)).exists { case (root, rel) =>
      CoordinatorClient.ask(ExistsInline(root, rel)) == IsInline
    }
    val found = inline || fs.exists(p)
    // Spark looks for the offset log of a query first: none means a new query (nothing restored).
    if (!found && p.getName == CheckpointPaths.Offsets) CheckpointPaths.logDirRoot(qualified(p)).foreach { root =>
      DriverRuntime.coordinator.foreach(_.commitLogListed(root, Array.empty))
    }
    found
  }

  override def delete(p: Path): Unit = {
    val q = qualified(p)
    // Spark purges an entry of each log a batch: deleted with others (one request for ten).
    val grouped = if (ownLogEntry(p).isDefined) purgedEntries else None
    grouped.foreach(_.purged(q))
    CheckpointPaths.splitState(q).foreach { case (root, rel) => CoordinatorClient.ask(DeleteInline(root, rel)) }
    // A file inline only has nothing on the file system to delete.
    if (grouped.isEmpty && !takeInlineOnly(q)) {
      if (FileSystemOperations.isLocal(p)) {
        val local = FileSystemOperations.localPath(p)
        if (Files.isDirectory(local)) fs.delete(p, true) else Files.deleteIfExists(local)
      } else if (knownFile(q)) {
        // Spark purges a log entry and the provider's cleanup a state file every batch: on
        // S3 a delete without the probe before it halves their requests.
        FileSystemOperations.delete(p, hadoopConf)
      } else {
        fs.delete(p, true)
      }
    }
  }

  /** Whether `q` is a file by its name alone: an entry of Spark's logs, or a store's state file. */
  private def knownFile(q: Path): Boolean =
    (CheckpointPaths.logDirRoot(q.getParent).isDefined && CheckpointPaths.logEntryBatch(q.getName).isDefined) ||
      CheckpointPaths.splitState(q).exists { case (_, rel) => CheckpointPaths.stateVersionOf(rel).isDefined }

  override def isLocal: Boolean = FileSystemOperations.isLocal(path)

  /**
   * Spark asks the file manager of a query's checkpoint root for its directory when the query
   * starts, on the thread that starts it and before the first batch is planned: the moment to
   * check the session's settings of this package, so that a wrong one fails `start()` naming
   * the setting instead of the first batch's commit on an executor.
   */
  override def createCheckpointDirectory(): Path = {
    val root = qualified(path).toString
    // Executors never ask for a checkpoint directory; a driver without the coordinator
    // would fail the first batch's commit instead, on an executor.
    if (TaskContext.get() == null && DriverRuntime.coordinator.isEmpty) {
      throw new IllegalCheckpointStorageArgumentException(s"The checkpoint file manager of " +
        s"spark-checkpoint-storage (${SparkSettingKeys.FileManagerClass}=${getClass.getName}) runs without its " +
        s"coordinator: spark.plugins does not name ${CheckpointStoragePlugin.ClassName}. Start " +
        s"Spark with spark.plugins=${CheckpointStoragePlugin.ClassName} (a static setting; the " +
        "Python helper configure_spark_with_checkpoint_storage sets it), or unset " +
        s"${SparkSettingKeys.FileManagerClass} to use Spark's own file manager.")
    }
    val settings = hadoopConf.iterator().asScala.map(e => e.getKey -> e.getValue).toSeq
    cachedStorage = CheckpointStorageSettings.validateForQuery(settings, root)
    StorageCheckpointFileManager.startingRoots.add(root)
    cachedRoot = root
    DriverRuntime.coordinator.foreach(_.queryStarting(root, settings, cachedStorage.toString))
    mkdirs(path)
    path
  }
}

object StorageCheckpointFileManager {
  /** Checkpoint roots of queries starting on this driver whose commit log is not yet checked. */
  private val startingRoots = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** Why the query of `root` cannot start: batch `batch` committed, but `stores` lack its state. */
  def incomplete(root: String, batch: Long, stores: Seq[String], lastComplete: Long): String = {
    val version = batch + 1
    s"The checkpoint $root is incomplete: its commit log records batch $batch, but the state of that batch " +
      s"is missing: the state stores ${CheckpointCoordinator.someOf(stores)} hold no state of version $version, neither in a pack nor as a " +
      s"file of their own. The last complete batch is ${if (lastComplete < 0) "none" else lastComplete.toString}. " +
      s"Run `python -m spark_checkpoint_storage repair $root` to bring the checkpoint back to it: the query " +
      "then runs the later batches again from its source (an exactly-once sink skips those it committed; " +
      "see \"Repairing a checkpoint\" in the operations guide)."
  }
}

/**
 * A file's stream that runs `written` with the file's size once the file is closed, i.e.
 * written (not on cancel).
 */
private final class OnWrittenStream(inner: CancellableFSDataOutputStream, written: Long => Unit)
  extends CancellableFSDataOutputStream(inner) {
  private var done = false
  override def cancel(): Unit = if (!done) {
    done = true
    inner.cancel()
  }
  override def close(): Unit = if (!done) {
    // Every byte went through this stream, which counts them.
    val bytes = getPos
    super.close()
    done = true
    written(bytes)
  }
}

/** An in-memory file, readable where Hadoop expects a seekable stream. */
private final class BytesInputStream(bytes: Array[Byte])
  extends ByteArrayInputStream(bytes) with Seekable with PositionedReadable {
  override def seek(pos: Long): Unit = {
    if (pos < 0 || pos > bytes.length) throw new java.io.EOFException(s"Cannot seek to $pos of ${bytes.length}")
    this.pos = pos.toInt
  }
  override def getPos: Long = pos
  override def seekToNewSource(targetPos: Long): Boolean = false
  override def read(position: Long, buffer: Array[Byte], offset: Int, length: Int): Int = {
    if (position >= bytes.length) return -1
    val n = math.min(length, bytes.length - position.toInt)
    System.arraycopy(bytes, position.toInt, buffer, offset, n)
    n
  }
  override def readFully(position: Long, buffer: Array[Byte], offset: Int, length: Int): Unit = {
    if (position + length > bytes.length) throw new java.io.EOFException("Read past the end")
    System.arraycopy(bytes, position.toInt, buffer, offset, length)
  }
  override def readFully(position: Long, buffer: Array[Byte]): Unit = readFully(position, buffer, 0, buffer.length)
}
