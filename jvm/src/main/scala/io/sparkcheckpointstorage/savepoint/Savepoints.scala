package io.sparkcheckpointstorage.savepoint

import java.nio.charset.StandardCharsets

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import io.sparkcheckpointstorage.coordinator.DriverRuntime
import io.sparkcheckpointstorage.fileio.{CheckpointPublication, PublicationWriter}
import io.sparkcheckpointstorage.formats.FileFormat
import io.sparkcheckpointstorage.layout.{CheckpointPaths, StateSchemaPaths}
import io.sparkcheckpointstorage.reader.{CheckpointEntry, CheckpointReader}
import io.sparkcheckpointstorage.results.{ResultCodec, SavepointManifest, SavepointResult}

/**
 * Savepoints: a self-contained, relocatable copy of a streaming query's checkpoint at a
 * committed batch (Flink: a savepoint, "canonical" format).
 *
 * The copy holds the query's metadata, its offset and commit logs up to the batch, its source
 * logs, and every state file up to the batch's state version as a plain file: state the
 * coordinator held inline (in driver heap or in packs) is written out, so the copy needs no
 * pack, no driver and no path of the original. Nothing inside names the original location,
 * so the copy can be moved anywhere; a query started on it resumes after the batch, with
 * whichever checkpoint storage its session uses. A `_savepoint` file (JSON, relative paths
 * only) describes the copy and is written last, once the copy has been read back and found
 * restorable ([[SavepointVerifier]]): a copy without it is incomplete. The copy is written
 * into a hidden sibling of the target (`.<name>.saving-<id>`) and renamed to the target last
 * ([[CheckpointPublication]]): a failed savepoint removes it, a killed one leaves it beside a
 * target that does not exist, and the next savepoint to that target refuses until it is deleted.
 */
object Savepoints {
  val ManifestFile: String = CheckpointPaths.SavepointManifest
  val InProgressFile = "_SAVEPOINT_INCOMPLETE"

  /** How a savepoint's target, native or canonical, is checked, written and published. */
  val Writer: PublicationWriter = PublicationWriter("savepoint", ".saving-", InProgressFile, "copies",
    "Choose a target outside the checkpoint (pass target=..., or set " +
      "spark.sql.streaming.checkpointStorage.savepointPath).", "take the savepoint again")(new SavepointException(_))

  /** The note in an unfinished savepoint's hidden sibling. */
  def unfinished(kind: String, root: String, batchId: Long, dst: Path): String =
    s"An unfinished $kind of $root (batch $batchId) to $dst: not a checkpoint to start a query from. " +
      "Delete this directory and take the savepoint again.\n"

  /**
   * Copies the checkpoint at `source` at batch `batchId` (-1: the last committed batch) to
   * `target`, which must not exist or be empty, and must not lie inside `source`.
   * Returns JSON of a [[SavepointResult]].
   */
  def create(source: String, target: String, batchId: Long, conf: Configuration): String = {
    val reader = new CheckpointReader(source, conf)
    if (!reader.exists) throw new SavepointException(s"No checkpoint at $source")
    val sourceRoot = reader.root.stripSuffix("/")
    val dst = CheckpointPublication.prepare(Writer, sourceRoot, target, conf)
    val targetStr = dst.path.toString.stripSuffix("/")

    val batch = reader.committedBatch(batchId) match {
      case Right(c) => c.id
      case Left(why) => throw new SavepointException(why.message(sourceRoot, "save", "saved"))
    }

    dst.begin(unfinished("savepoint", sourceRoot, batch, dst.path))
    val (copied, manifest) = try {
      val copied = copy(reader, batch, dst.fs, dst.temporary, dst.path)
      val manifest = SavepointManifest(batch, copied.queryId, copied.files, copied.bytes, copied.inlineFiles,
        System.currentTimeMillis())
      // Written last, once the copy restores: what says the copy is complete.
      dst.writeText(ManifestFile, ResultCodec.manifestJson(manifest, FileFormat.SavepointManifest))
      dst.publish()
      (copied, manifest)
    } catch {
      case NonFatal(e) =>
        dst.discard(e)
        throw e
    }
    DriverRuntime.coordinator
      .foreach(_.savepointTaken(sourceRoot, copied.queryId.getOrElse(""), batch, targetStr))
    ResultCodec.toJson(SavepointResult(manifest, targetStr))
  }

  /** What [[copy]] wrote. */
  private[sparkcheckpointstorage] final case class Copied(queryId: Option[String], files: Int, bytes: Long,
      inlineFiles: Int)

  /**
   * Writes the files of the checkpoint `reader` reads at `batch` into `dir` as plain files, its
   * operator metadata naming its schema files under `root` (where `dir` ends up), and checks that
   * the copy restores. Shared with the migration of transformWithState operators.
   */
  private[sparkcheckpointstorage] def copy(reader: CheckpointReader, batch: Long, fs: FileSystem, dir: Path,
      root: Path): Copied = {
    val sourceRoot = reader.root.stripSuffix("/")
    val entries = reader.entries().filter(keep(_, batch))
    var bytes = 0L
    var written = 0
    entries.foreach { e =>
      reader.read(e) match {
        case Some(content) =>
          val out = fs.create(new Path(dir, e.relPath), false)
          try out.write(content) finally out.close()
          bytes += content.length
          written += 1
        case None =>
          // A state file deleted while we copied (the running query's cleanup, say) may be
          // one the copy needs: a savepoint is never completed from what happened to remain.
          throw new SavepointException(s"${e.relPath} of the checkpoint $sourceRoot disappeared while " +
            "the savepoint was written (a running query deletes state files it no longer needs); " +
            "take the savepoint again.")
      }
    }
    // transformWithState's operator metadata names its schema files by absolute path.
    StateSchemaPaths.relocateAll(fs, dir, root)
    // The copy must restore before it says it is complete (its _savepoint file, written last).
    SavepointVerifier.verify(fs, dir, batch + 1, root)
    val queryId = entries.find(_.relPath == CheckpointPaths.Metadata).flatMap(reader.read)
      .map(new String(_, StandardCharsets.UTF_8)).flatMap(CheckpointPaths.queryIdOf)
    Copied(queryId, written, bytes, entries.count(_.inline))
  }

  /** Whether a file of the source belongs in a savepoint at `batch`. */
  private def keep(e: CheckpointEntry, batch: Long): Boolean =
    // Batch N writes store version N + 1; later versions belong to uncommitted batches.
    CheckpointPaths.inCopyAtBatch(e.relPath, batch, CheckpointPaths.stateVersionOf(_).forall(_ <= batch + 1))
}
