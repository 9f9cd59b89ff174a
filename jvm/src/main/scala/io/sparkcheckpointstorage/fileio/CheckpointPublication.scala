package io.sparkcheckpointstorage.fileio

import java.io.IOException
import java.nio.charset.StandardCharsets
import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * What writes a new checkpoint or savepoint, as its refusals and its unfinished output name it:
 * `noun` ("migration"), the `marker` of its hidden sibling (`.<name><marker><id>`), the
 * `noteFile` that sibling holds while it is written, what it does to its source (`verb`), how
 * to choose another target (`outside`), and how to try again (`again`). `refuse` makes its
 * exception.
 */
final case class PublicationWriter(noun: String, marker: String, noteFile: String, verb: String,
    outside: String, again: String)(val refuse: String => IOException)

/**
 * One new checkpoint or savepoint on its way to its target: every writer of one (migration,
 * rescale, transformWithState migration, savepoints, canonical savepoints) goes through it.
 *
 * [[CheckpointPublication.prepare]] checks the target: outside the source, not holding
 * anything, and not left behind by an unfinished writer. [[begin]] creates the hidden
 * sibling the output is written into, with a note saying what it is; [[publish]] moves it to
 * the target by one rename; [[discard]] deletes it. A writer killed before the rename leaves
 * only the hidden sibling, beside a target that does not exist: nothing a query starts from,
 * and the next writer to that target refuses, naming it, until it is deleted.
 */
final class CheckpointPublication private (val writer: PublicationWriter, val fs: FileSystem,
    val path: Path, val temporary: Path) {

  /** Creates the hidden sibling, holding `note` (what it is, what to do with it) in the writer's note file. */
  def begin(note: String): Unit = {
    fs.mkdirs(temporary)
    writeText(writer.noteFile, note)
  }

  /** Writes `text` to `rel` in the hidden sibling. */
  def writeText(rel: String, text: String): Unit = {
    val out = fs.create(new Path(temporary, rel), true)
    try out.write(text.getBytes(StandardCharsets.UTF_8)) finally out.close()
  }

  /**
   * Moves the finished output to the target by one rename. A step whose answer is lost (it
   * acted, then failed, as an object store's or a NameNode's reply can) counts as done when the
   * file system shows it done: a publication whose rename happened is published, never
   * discarded, and asking for it again is not refused for the target it wrote.
   */
  def publish(): Unit = {
    val note = new Path(temporary, writer.noteFile)
    actedDespite(fs.delete(note, false), !fs.exists(note))
    if (fs.exists(path)) fs.delete(path, false) // an empty directory (checked), or the rename would nest
    if (!actedDespite(fs.rename(temporary, path), !fs.exists(temporary) && fs.exists(path))) {
      throw writer.refuse(s"Could not rename the ${writer.noun}'s output $temporary to $path.")
    }
  }

  /** `op`'s answer; when it fails, true if `done` shows it acted all the same, else its failure. */
  private def actedDespite(op: => Boolean, done: => Boolean): Boolean =
    try op catch {
      case NonFatal(e) if (try done catch { case NonFatal(_) => false }) => true
    }

  /** Deletes the unfinished output; a failure to is added to `failure`. */
  def discard(failure: Throwable): Unit =
    try fs.delete(temporary, true) catch { case NonFatal(d) => failure.addSuppressed(d) }
}

object CheckpointPublication {
  /** The markers of every writer's hidden sibling, with what the writer is. */
  val Markers: Seq[(String, String)] = Seq(".migrating-" -> "migration", ".saving-" -> "savepoint")

  /**
   * Where `writer` writes the output of the checkpoint at `sourceRoot` (qualified, no trailing
   * slash) that is published at `target`; refused, by `writer`'s exception, for a target inside
   * or around the source, one that holds anything, or one an unfinished writer left a hidden sibling of.
   */
  def prepare(writer: PublicationWriter, sourceRoot: String, target: String, conf: Configuration): CheckpointPublication = {
    require(Markers.exists(_._1 == writer.marker), s"unknown marker ${writer.marker}")
    val raw = new Path(target)
    val path = raw.getFileSystem(conf).makeQualified(raw)
    val fs = FileSystemOperations.raw(path.getFileSystem(conf))
    val dst = path.toString.stripSuffix("/")
    val noun = writer.noun
    if (dst == sourceRoot || dst.startsWith(sourceRoot + "/")) {
      throw writer.refuse(s"The $noun target $dst lies inside the checkpoint $sourceRoot it ${writer.verb}. " +
        writer.outside)
    }
    if (sourceRoot.startsWith(dst + "/")) {
      throw writer.refuse(s"The $noun target $dst contains the checkpoint $sourceRoot. ${writer.outside}")
    }
    if (fs.exists(path) && (!fs.getFileStatus(path).isDirectory || fs.listStatus(path).nonEmpty)) {
      throw writer.refuse(s"The $noun target $dst already exists and is not empty. A $noun never writes " +
        "over existing files: choose a new target, or delete that one.")
    }
    val parent = path.getParent
    if (fs.exists(parent)) {
      val names = fs.listStatus(parent).map(_.getPath)
      for ((marker, earlier) <- Markers; left <- names.find(_.getName.startsWith(s".${path.getName}$marker"))) {
        throw writer.refuse(s"An earlier $earlier to $dst did not finish (it was killed, or its clean-up " +
          s"failed): $left holds its partial output, and $dst was never written. Delete $left and ${writer.again}.")
      }
    }
    new CheckpointPublication(writer, fs, path,
      new Path(parent, s".${path.getName}${writer.marker}" + UUID.randomUUID().toString.take(8)))
  }
}
