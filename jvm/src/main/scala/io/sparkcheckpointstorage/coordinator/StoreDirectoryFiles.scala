package io.sparkcheckpointstorage.coordinator

import java.io.FileNotFoundException
import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.layout.CheckpointPaths

/**
 * The files of their own (on the file system, not inline) under `state/` of each running
 * query's checkpoint, as the driver knows them: listed once when the query starts, then kept
 * up to date from what the file managers report (every write of theirs under `state/` once
 * it is on the file system, every delete before it happens).
 *
 * State store maintenance lists every store's directory to find its snapshots and the files
 * to clean: on an object store that is a LIST, a HEAD and a LIST again per store, at every
 * maintenance, for directories whose state is mostly inline and holds no object at all.
 * A provider whose every file goes through the file manager (ours) has its directory's
 * listing answered from here instead ([[ListStore]]). Another writer on the checkpoint is
 * not hidden: Spark refuses a second query's batch at `offsets/<N>` and `commits/<N>`
 * (created only if absent) before its state counts, and a restart lists again.
 */
private[coordinator] final class StoreDirectoryFiles(conf: Configuration) {
  private val byRoot = new ConcurrentHashMap[String, RootFiles]()

  /** Lists `root`'s `state/` tree (a query on it starts): every listing of its stores until [[forget]] comes from it. */
  def seed(root: String): Unit = {
    val state = new Path(root, CheckpointPaths.State)
    val files = new RootFiles
    try {
      // One listing of the whole tree: on S3 a LIST without delimiter, a thousand keys a page.
      val it = state.getFileSystem(conf).listFiles(state, true)
      val prefix = state.toUri.getPath.stripSuffix("/") + "/"
      while (it.hasNext) {
        val s = it.next()
        val path = s.getPath.toUri.getPath
        if (path.startsWith(prefix)) files.written(CheckpointPaths.State + "/" + path.substring(prefix.length), s.getLen)
      }
    } catch {
      case _: FileNotFoundException => // a new query: nothing under state/ yet
    }
    byRoot.put(root, files)
  }

  /** `rel` of `root` is on the file system, `bytes` long. */
  def written(root: String, rel: String, bytes: Long): Unit = Option(byRoot.get(root)).foreach(_.written(rel, bytes))

  /** `rel` of `root` (a file, or a directory and everything under it) is being deleted. */
  def deleted(root: String, rel: String): Unit = Option(byRoot.get(root)).foreach(_.deleted(rel))

  /** Executor `writeId` will write `rel` of `root`, `bytes` long, in the background: listed once written. */
  def pending(root: String, rel: String, writeId: String, bytes: Long): Unit =
    Option(byRoot.get(root)).foreach(_.pending(writeId, rel, bytes))

  /** Background write `writeId` ended, written or not. */
  def pendingDone(root: String, writeId: String, written: Boolean): Unit =
    Option(byRoot.get(root)).foreach(_.pendingDone(writeId, written))

  /**
   * The files and subdirectories (length -1) directly in store directory `relDir` of `root`;
   * None when not known (no query of `root` started in this driver, or not a store's directory).
   */
  def list(root: String, relDir: String): Option[Seq[(String, Long)]] = {
    val dir = relDir.stripSuffix("/")
    if (CheckpointPaths.storeOf(dir + "/x").isEmpty) None
    else Option(byRoot.get(root)).map(_.list(dir))
  }

  /** Forgets `root`: its query stopped (a restart lists again). */
  def forget(root: String): Unit = byRoot.remove(root)
}

/** The files of one root's `state/` tree, by directory (relative paths, names -> lengths). */
private final class RootFiles {
  private val byDir = mutable.HashMap[String, mutable.HashMap[String, Long]]()
  private val backgroundWrites = mutable.HashMap[String, (String, Long)]()

  def written(rel: String, bytes: Long): Unit = synchronized {
    byDir.getOrElseUpdate(CheckpointPaths.dirOf(rel), mutable.HashMap[String, Long]())(nameOf(rel)) = bytes
  }

  def deleted(rel: String): Unit = synchronized {
    val dir = CheckpointPaths.dirOf(rel)
    byDir.get(dir).foreach { names =>
      names -= nameOf(rel)
      if (names.isEmpty) byDir -= dir
    }
    // A directory's delete takes everything under it.
    byDir.keys.filter(d => d == rel || d.startsWith(rel + "/")).toVector.foreach(byDir -= _)
  }

  private def nameOf(rel: String): String = rel.substring(rel.lastIndexOf('/') + 1)

  def pending(writeId: String, rel: String, bytes: Long): Unit = synchronized { backgroundWrites(writeId) = (rel, bytes) }

  def pendingDone(writeId: String, ok: Boolean): Unit = synchronized {
    backgroundWrites.remove(writeId).foreach { case (rel, bytes) => if (ok) written(rel, bytes) }
  }

  def list(dir: String): Seq[(String, Long)] = synchronized {
    val files = byDir.get(dir).toSeq.flatten
    // Subdirectories holding files (an object store has no empty ones; the provider asking
    // reads only its files).
    val subdirs = byDir.keysIterator.filter(_.startsWith(dir + "/")).map { d =>
      val rest = d.substring(dir.length + 1)
      val slash = rest.indexOf('/')
      if (slash < 0) rest else rest.substring(0, slash)
    }.toSet
    files ++ subdirs.toSeq.map(_ -> -1L)
  }
}
