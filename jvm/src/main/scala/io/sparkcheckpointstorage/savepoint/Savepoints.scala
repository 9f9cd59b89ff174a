package io.sparkcheckpointstorage.savepoint

import java.io.IOException
import java.nio.charset.StandardCharsets
import java.util.{LinkedHashMap => JMap}

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.inspection.{CheckpointEntry, CheckpointReader}
import io.sparkcheckpointstorage.layout.{CheckpointPaths, StateSchemaPaths}

/** A savepoint cannot be taken; the message says why and what to do. */
class SavepointException(message: String, cause: Throwable = null) extends IOException(message, cause)

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
 * restorable ([[SavepointVerifier]]): a copy without it is incomplete.
 */
object Savepoints {
  val ManifestFile: String = CheckpointPaths.SavepointManifest

  /**
   * Copies the checkpoint at `source` at batch `batchId` (-1: the last committed batch) to
   * `target`, which must not exist or be empty, and must not lie inside `source`.
   * Returns JSON: `path`, `batchId`, `queryId`, `files`, `bytes`, `inlineFiles`.
   */
  def create(source: String, target: String, batchId: Long, conf: Configuration): String = {
    val reader = new CheckpointReader(source, conf)
    if (!reader.exists) throw new SavepointException(s"No checkpoint at $source")
    val targetPath = {
      val p = new Path(target)
      p.getFileSystem(conf).makeQualified(p)
    }
    val sourceRoot = reader.root.stripSuffix("/")
    val targetStr = targetPath.toString.stripSuffix("/")
    if (targetStr == sourceRoot || targetStr.startsWith(sourceRoot + "/")) {
      throw new SavepointException(s"The savepoint target $targetStr lies inside the checkpoint " +
        s"$sourceRoot it copies. Choose a target outside the checkpoint (pass target=..., or set " +
        "spark.sql.streaming.checkpointStorage.savepointPath).")
    }
    if (sourceRoot.startsWith(targetStr + "/")) {
      throw new SavepointException(s"The savepoint target $targetStr contains the checkpoint $sourceRoot. " +
        "Choose a target outside the checkpoint.")
    }
    val targetFs = CheckpointReader.raw(targetPath.getFileSystem(conf))
    if (targetFs.exists(targetPath) &&
        (!targetFs.getFileStatus(targetPath).isDirectory || targetFs.listStatus(targetPath).nonEmpty)) {
      throw new SavepointException(s"The savepoint target $targetStr already exists and is not empty. " +
        "A savepoint is never written over existing files: choose a new target, or delete that one.")
    }

    val batch = reader.committedBatch(batchId) match {
      case Right(c) => c.id
      case Left(why) => throw new SavepointException(why.message(sourceRoot, "save", "saved"))
    }

    val entries = reader.entries().filter(keep(_, batch))
    var bytes = 0L
    var written = 0
    entries.foreach { e =>
      reader.read(e) match {
        case Some(content) =>
          val out = targetFs.create(new Path(targetPath, e.relPath), false)
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
    StateSchemaPaths.relocateAll(targetFs, targetPath, targetPath)
    // The copy must restore before it says it is complete (its _savepoint file, written last).
    SavepointVerifier.verify(targetFs, targetPath, batch + 1)
    val queryId = entries.find(_.relPath == CheckpointPaths.Metadata).flatMap(reader.read)
      .map(new String(_, StandardCharsets.UTF_8)).flatMap(CheckpointPaths.queryIdOf)
    val manifest = new JMap[String, Any]()
    manifest.put("batchId", batch)
    manifest.put("queryId", queryId.orNull)
    manifest.put("files", written)
    manifest.put("bytes", bytes)
    manifest.put("inlineFiles", entries.count(_.inline))
    manifest.put("createdAtMs", System.currentTimeMillis())
    val json = new ObjectMapper().writeValueAsString(manifest)
    val out = targetFs.create(new Path(targetPath, ManifestFile), false)
    try out.write(json.getBytes(StandardCharsets.UTF_8)) finally out.close()
    manifest.put("path", targetStr)
    io.sparkcheckpointstorage.monitoring.CheckpointMonitor.driverInstance
      .foreach(_.savepointTaken(sourceRoot, queryId.getOrElse(""), batch, targetStr))
    new ObjectMapper().writeValueAsString(manifest)
  }

  /** Whether a file of the source belongs in a savepoint at `batch`. */
  private def keep(e: CheckpointEntry, batch: Long): Boolean =
    // Batch N writes store version N + 1; later versions belong to uncommitted batches.
    CheckpointPaths.inCopyAtBatch(e.relPath, batch, CheckpointPaths.stateVersionOf(_).forall(_ <= batch + 1))
}
