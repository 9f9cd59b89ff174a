package io.sparkcheckpointstorage.repair

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.slf4j.LoggerFactory

import io.sparkcheckpointstorage.coordinator.DriverRuntime
import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.inspection.CheckpointInspector
import io.sparkcheckpointstorage.layout.{CheckpointPaths, StateFileNaming}
import io.sparkcheckpointstorage.packs.PackDirectory
import io.sparkcheckpointstorage.reader.CheckpointReader
import io.sparkcheckpointstorage.results.{RepairResult, ResultCodec}

/**
 * Brings a checkpoint whose commit log names batches with missing state back to its last
 * complete batch (Flink: restoring the latest completed checkpoint; Spark 4.1+: repairing a
 * snapshot from older files). The offset and commit log entries of every later batch go,
 * newest first, so the query runs those batches again from its source; so do the state
 * files of their versions: inline ones by a pack that records their deletion, files of their
 * own by deleting them. Nothing of the complete batches is touched.
 *
 * An exactly-once sink keeps the batches it committed: Spark skips them on the rerun, so their
 * state cannot be rebuilt, and the commit of such a batch is then refused again
 * (docs/operations.md, "Repairing a checkpoint").
 */
object CheckpointRepair {
  private val log = LoggerFactory.getLogger(getClass)

  /** Repairs (or with `dryRun` only says what a repair would do) the checkpoint at `location`; JSON of a [[RepairResult]]. */
  def repairJson(location: String, dryRun: Boolean, conf: Configuration): String =
    ResultCodec.toJson(repair(location, dryRun, conf))

  def repair(location: String, dryRun: Boolean, conf: Configuration): RepairResult = {
    val reader = new CheckpointReader(location, conf)
    val root = reader.root
    DriverRuntime.coordinator.foreach { c =>
      if (c.runningRoots.exists(r => new Path(r).toUri.getPath == new Path(root).toUri.getPath)) {
        throw new IllegalStateException(s"A streaming query runs on checkpoint $root in this driver: stop it " +
          "before repairing its checkpoint.")
      }
    }
    val inspected = CheckpointInspector.inspect(location, conf)
    val last = inspected.lastCommittedBatch
    val complete = inspected.lastCompleteBatch
    val keep = complete.getOrElse(-1L)
    val removed = (inspected.committedBatches ++ inspected.uncommittedBatches).filter(_ > keep).distinct.sorted
    if (last.isEmpty || (complete == last && inspected.uncommittedBatches.forall(_ <= keep))) {
      return RepairResult(root, last, complete, Nil, 0, dryRun)
    }
    // State of the removed batches' versions (batch b writes version b + 1).
    val stale = reader.entries().filter { e =>
      CheckpointPaths.storeOf(e.relPath).flatMap(s => StateFileNaming.versionOf(s._4)).exists(_.version > keep + 1)
    }
    if (!dryRun) {
      DriverRuntime.coordinator.foreach(_.discard(root))
      // Newest first, commits before offsets: a repair cut short leaves a log Spark reads.
      removed.reverse.foreach { b =>
        FileSystemOperations.delete(new Path(root, CheckpointPaths.commitEntry(b)), conf)
        FileSystemOperations.delete(new Path(root, CheckpointPaths.offsetEntry(b)), conf)
      }
      val (inline, own) = stale.partition(_.inline)
      own.foreach(e => FileSystemOperations.delete(new Path(root, e.relPath), conf))
      if (inline.nonEmpty) {
        val seq = (PackDirectory.sequences(root, conf) :+ 0L).max + 1
        PackDirectory.write(root, seq, keep, CheckpointPaths.readQueryId(root, conf), Nil, inline.map(_.relPath), conf)
      }
      log.warn(s"Repaired checkpoint $root: batches ${removed.mkString(", ")} removed (their state was incomplete), " +
        s"${stale.size} state files of their versions deleted; the query resumes after batch $keep")
    }
    RepairResult(root, last, complete, removed, stale.size, dryRun)
  }
}
