package io.sparkcheckpointstorage.reader

import java.io.FileNotFoundException

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import io.sparkcheckpointstorage.coordinator._
import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.layout.{CheckpointPaths, StorageMarker}
import io.sparkcheckpointstorage.packs.{CheckpointPacks, PackDirectory, PackIndex, StatePack}

/**
 * One file of a checkpoint as a state store provider sees it through our file manager.
 *
 * @param relPath path relative to the checkpoint root
 * @param inline  held by the checkpoint coordinator (in driver heap or in a pack), not a file of its own
 * @param pack    the pack holding an inline file's durable copy (name under `state-packs/`), if any
 */
final case class CheckpointEntry(relPath: String, length: Long, inline: Boolean, pack: Option[String],
    modificationTime: Long)

/**
 * Reads a checkpoint the way our file manager shows it to a provider: real files, plus the
 * inline state files the checkpoint coordinator holds (in driver heap, or in packs).
 *
 * Inline files are asked of the driver's coordinator when this JVM is a driver running the
 * plugin and serving this checkpoint (so a running query's files still in heap are seen);
 * elsewhere (a plain JVM, the command line) they are read from the packs, as a restarted
 * driver reads them. A checkpoint whose state lived in a previous driver's heap only fails
 * with the message saying the state is gone.
 */
final class CheckpointReader(location: String, conf: Configuration) {
  private def qualify(location: String): Path = {
    val p = new Path(location)
    p.getFileSystem(conf).makeQualified(p)
  }
  private val qualified: Path = qualify(location)
  /** The checkpoint's qualified location (`file:/...`). */
  val root: String = qualified.toString
  /** The raw file system: no Hadoop `.crc` sidecars of our own, byte-exact reads. */
  val fs: FileSystem = FileSystemOperations.raw(qualified.getFileSystem(conf))

  /**
   * The key the driver's coordinator holds this checkpoint under (the spelling of the path
   * the query used) when it serves it; else the inline files are read from the packs, so
   * that reading never adds state to the driver's.
   */
  private val driverKey: Option[String] =
    DriverRuntime.coordinator.flatMap(_.knownRoots.find(r => qualify(r) == qualified))

  /** The packs, when the checkpoint has inline state and the driver does not serve it. */
  private lazy val packed: Option[CheckpointPacks] = StorageMarker.read(root, conf) match {
    case None => None
    case Some(m) if !m.persistent => throw new CheckpointUnreadableException(CheckpointCoordinator.stateGone(root))
    case Some(_) => Some(CheckpointPacks.read(root, CheckpointPaths.readQueryId(root, conf), conf))
  }

  def exists: Boolean = fs.exists(qualified)

  /** The inline files directly in `dir`, with their lengths. */
  private def listInline(dir: String): Seq[(String, Long)] = driverKey match {
    case Some(key) => CoordinatorClient.ask(ListInline(key, dir), CheckpointReader.refusal) match {
      case Listing(files) => files
      case _ => Nil
    }
    case None => packed.map(_.list(dir)).getOrElse(Nil)
  }

  /** Where the inline file `rel` is: bytes in the driver's heap, a range of a pack, or not inline. */
  private def locate(rel: String): CoordinatorReply = driverKey match {
    case Some(key) => CoordinatorClient.ask(GetInline(key, rel), CheckpointReader.refusal)
    case None => packed.flatMap(_.files.get(rel))
      .map(f => InPack(f.pack.toString, f.offset, f.length, f.crc)).getOrElse(NotInline)
  }

  /** Every real file under the root, relative path -> status, hidden temp files excluded. */
  private def realFiles(): Seq[(String, org.apache.hadoop.fs.FileStatus)] = {
    val out = mutable.ArrayBuffer[(String, org.apache.hadoop.fs.FileStatus)]()
    def walk(dir: Path, rel: String): Unit = {
      val statuses = try fs.listStatus(dir) catch { case _: FileNotFoundException => Array.empty[org.apache.hadoop.fs.FileStatus] }
      statuses.sortBy(_.getPath.getName).foreach { s =>
        val name = s.getPath.getName
        val childRel = if (rel.isEmpty) name else s"$rel/$name"
        if (s.isDirectory) walk(s.getPath, childRel)
        else if (!FileSystemOperations.isTemp(name)) out += childRel -> s
      }
    }
    walk(qualified, "")
    out.toSeq
  }

  /** Relative directories that may hold inline state files: real state dirs and those named in packs. */
  private def stateDirs(real: Seq[String]): Seq[String] = {
    val dirs = mutable.TreeSet[String]()
    def addDirsOf(rel: String): Unit = {
      var i = rel.lastIndexOf('/')
      var d = if (i > 0) rel.substring(0, i) else ""
      while (d.startsWith(CheckpointPaths.State + "/")) {
        dirs += d
        i = d.lastIndexOf('/')
        d = if (i > 0) d.substring(0, i) else ""
      }
    }
    real.foreach(r => if (r.startsWith(CheckpointPaths.State + "/")) addDirsOf(r))
    val dirsOnDisk = mutable.ArrayBuffer[String]()
    def walkDirs(dir: Path, rel: String): Unit = {
      val statuses = try fs.listStatus(dir) catch { case _: FileNotFoundException => Array.empty[org.apache.hadoop.fs.FileStatus] }
      statuses.filter(_.isDirectory).foreach { s =>
        val r = s"$rel/${s.getPath.getName}"
        dirsOnDisk += r
        walkDirs(s.getPath, r)
      }
    }
    walkDirs(new Path(qualified, "state"), "state")
    dirs ++= dirsOnDisk
    packs().foreach { case (_, index) => index.entries.foreach(e => addDirsOf(e.relPath)) }
    dirs.toSeq
  }

  /** The packs of the checkpoint, oldest first: (file name, index). */
  def packs(): Seq[(String, PackIndex)] = {
    PackDirectory.sequences(root, conf).flatMap { seq =>
      val path = PackDirectory.path(root, seq)
      // A pack deleted since the listing (superseded by the running query) is no longer one.
      FileSystemOperations.readSmall(path, conf).map(bytes => path.getName -> StatePack.readIndex(bytes, path.toString))
    }
  }

  /** Every file of the checkpoint, real and inline, sorted by path. */
  def entries(): Seq[CheckpointEntry] = {
    val real = realFiles()
    val realEntries = real.map { case (rel, s) => rel -> CheckpointEntry(rel, s.getLen, inline = false, None, s.getModificationTime) }.toMap
    val inline = stateDirs(real.map(_._1)).flatMap { dir =>
      listInline(dir).map { case (rel, len) =>
        val pack = locate(rel) match {
          case InPack(p, _, _, _) => Some(new Path(p).getName)
          case _ => None
        }
        rel -> CheckpointEntry(rel, len, inline = true, pack, 0L)
      }
    }.toMap
    // An inline file shadows a real one of the same path, as in the file manager.
    (realEntries ++ inline).values.toSeq.sortBy(_.relPath)
  }

  /** The bytes of one file, inline or real; None when it no longer exists. */
  def read(entry: CheckpointEntry): Option[Array[Byte]] = {
    val path = new Path(qualified, entry.relPath)
    val inline = if (!entry.inline) None else driverKey match {
      case Some(key) => CoordinatorClient.read(key, entry.relPath, conf, CheckpointReader.refusal)
      case None => packed.flatMap(_.files.get(entry.relPath))
        .map(f => PackDirectory.readEntry(f.pack.toString, f.offset, f.length, f.crc, path.toString, conf))
    }
    inline.orElse(readReal(path))
  }

  private def readReal(path: Path): Option[Array[Byte]] =
    try {
      val in = fs.open(path)
      try Some(org.apache.commons.io.IOUtils.toByteArray(in)) finally in.close()
    } catch { case _: FileNotFoundException => None }

  /** The batch ids with a file in `<root>/<dir>/` (the commit and offset logs). */
  def batchIds(dir: String): Seq[Long] =
    FileSystemOperations.listNames(new Path(qualified, dir), conf).flatMap(CheckpointPaths.logEntryBatch).sorted

  /**
   * The committed batch `batchId` (-1: the last committed one), or why there is none; the
   * caller words the error for what it was about to do with the batch.
   */
  def committedBatch(batchId: Long): Either[NoCommittedBatch, CommittedBatch] = {
    val committed = batchIds("commits")
    if (committed.isEmpty) return Left(NoCommittedBatch.NothingCommitted)
    val batch = if (batchId < 0) committed.last else batchId
    if (committed.contains(batch)) Right(CommittedBatch(batch, committed.filter(_ <= batch)))
    else if (batchIds("offsets").contains(batch)) Left(NoCommittedBatch.InFlight(batch, committed.last))
    else Left(NoCommittedBatch.Unknown(batch, committed.head, committed.last))
  }
}

/** A committed batch of a checkpoint, with the committed batches up to it. */
final case class CommittedBatch(id: Long, committedUpTo: Seq[Long])

/** Why a checkpoint has no committed batch of the id asked for. */
sealed trait NoCommittedBatch {
  /**
   * The error's words for the checkpoint at `root`, about to `action` ("save", "migrate") the
   * state of that batch, which only committed state can be (`done`: "saved", "migrated").
   */
  def message(root: String, action: String, done: String): String = this match {
    case NoCommittedBatch.NothingCommitted =>
      s"The checkpoint $root has no committed batch yet: there is no state to $action. Let the " +
        "query complete a batch first (query.processAllAvailable())."
    case NoCommittedBatch.InFlight(b, last) =>
      s"Batch $b of the checkpoint $root is not committed (it is being processed, or failed): " +
        s"only the state of a committed batch can be $done. The last committed batch is $last; " +
        s"omit the batch to $action it."
    case NoCommittedBatch.Unknown(b, first, last) =>
      s"The checkpoint $root has no committed batch $b (committed: $first to $last)."
  }
}

object NoCommittedBatch {
  /** The query has not completed a batch yet. */
  case object NothingCommitted extends NoCommittedBatch
  /** The batch is planned (offset log) but not committed: running, or failed. */
  final case class InFlight(batch: Long, lastCommitted: Long) extends NoCommittedBatch
  /** No such batch in the commit log. */
  final case class Unknown(batch: Long, firstCommitted: Long, lastCommitted: Long) extends NoCommittedBatch
}

object CheckpointReader {
  /**
   * A refusal of the driver's coordinator as the reader raises it: state the coordinator
   * cannot give (gone with a previous driver, an unusable pack) makes the checkpoint
   * unreadable, with the coordinator's message; any other kind stays the error of its kind.
   */
  private def refusal(f: Failed): Exception = f.kind match {
    case FailureKind.IllegalState => new CheckpointUnreadableException(f.message)
    case _ => CoordinatorFailures.toException(f)
  }
}
