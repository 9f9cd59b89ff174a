package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.CheckpointFileManager

import org.apache.hadoop.fs.{FileStatus, Path}

import io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager
import io.sparkcheckpointstorage.layout.StateFileNaming

/** One of our state files: `<version>.heap-delta` or `<version>.heap-snapshot`. */
final case class StateFile(version: Long, kind: StateFileKind, path: Path)

/**
 * The state files of one store directory: naming, listing, and recognising directories
 * written by Spark's built-in providers so that they are refused rather than misread.
 */
final class StoreDirectory(val dir: Path, fm: CheckpointFileManager) {
  def path(version: Long, kind: StateFileKind): Path = new Path(dir, s"$version.${kind.suffix}")

  /** Our files in the directory, sorted by version, a snapshot after the delta of its version. */
  def list(): Seq[StateFile] = {
    // One listing, no existence probe first (on an object store a probe costs a HEAD and a
    // LIST, for every store at every maintenance); a missing directory lists as empty.
    val statuses: Array[FileStatus] = try fm match {
      // Every file of ours goes through the file manager: the driver knows the directory.
      case ours: StorageCheckpointFileManager => ours.listStoreDirectory(dir)
      case other => other.list(dir)
    } catch { case _: java.io.FileNotFoundException => Array.empty[FileStatus] }
    val ours = statuses.flatMap(s => parse(s.getPath))
    if (ours.isEmpty) {
      val foreign = statuses.map(_.getPath.getName).filter(StateFileNaming.isForeign)
      if (foreign.nonEmpty) {
        throw new IllegalStateException(s"The state directory $dir holds files of another state " +
          s"store provider (${foreign.sorted.take(3).mkString(", ")}): " +
          s"${StateFileNaming.foreignProvider(foreign.toSeq).get}. " +
          "A checkpoint keeps the provider it was created with: restart this query with that " +
          "provider (spark.sql.streaming.stateStore.providerClass), or start it on a new " +
          "checkpoint location to use HeapStateStoreProvider.")
      }
    }
    ours.sortBy(f => (f.version, f.kind == StateFileKind.Snapshot)).toSeq
  }

  private def parse(p: Path): Option[StateFile] = StateFileNaming.ours(p.getName).flatMap { case (v, suffix) =>
    StateFileKind.all.find(_.suffix == suffix).map(StateFile(v, _, p))
  }
}
