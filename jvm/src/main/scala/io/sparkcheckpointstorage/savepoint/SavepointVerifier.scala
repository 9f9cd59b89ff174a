package io.sparkcheckpointstorage.savepoint

import java.io.FileNotFoundException

import scala.collection.mutable

import org.apache.hadoop.fs.{FileSystem, Path}

import org.apache.spark.SparkConf

import io.sparkcheckpointstorage.layout.{CheckpointPaths, StateFileNaming}
import io.sparkcheckpointstorage.provider.{StateFileFormat, StateFileKind}
import io.sparkcheckpointstorage.storage.CorruptCheckpointException

/**
 * Checks that a savepoint's copy restores: every store of HeapStateStoreProvider in it has
 * a snapshot and the deltas after it (or every delta) up to the saved state version, and
 * each of those files reads back whole (header, records, checksums). Run on the copy, before
 * its `_savepoint` file is written: a savepoint that says it is complete is one.
 */
private[savepoint] object SavepointVerifier {

  /**
   * Fails with a [[SavepointException]] naming the store or file when the copy in `dir` cannot
   * restore `stateVersion`; the message names the copy `target` (where `dir` is published).
   */
  def verify(fs: FileSystem, dir: Path, stateVersion: Long, target: Path): Int = {
    val stores = mutable.TreeMap[String, mutable.Map[(Long, StateFileKind), Path]]()
    walk(fs, new Path(dir, "state"), "state").foreach { case (rel, path) =>
      val name = rel.substring(rel.lastIndexOf('/') + 1)
      for ((v, suffix) <- StateFileNaming.ours(name); k <- StateFileKind.all.find(_.suffix == suffix);
           _ <- CheckpointPaths.storeOf(rel)) {
        stores.getOrElseUpdate(rel.substring(0, rel.lastIndexOf('/')), mutable.Map())((v, k)) = path
      }
    }
    val conf = new SparkConf(false)
    stores.foreach { case (store, files) =>
      val needed = chain(files.keySet.toSet, stateVersion).getOrElse {
        throw new SavepointException(s"The savepoint at $target cannot restore version $stateVersion " +
          s"of the state store $store: it has no snapshot with every later delta, nor every delta " +
          s"(state files copied: ${files.keys.toSeq.sortBy(_._1).map { case (v, k) => s"$v.${k.suffix}" }
            .mkString(", ")}). Take the savepoint again.")
      }
      needed.foreach { case (version, kind) =>
        val path = files((version, kind))
        val in = try fs.open(path) catch {
          case e: FileNotFoundException => throw new SavepointException(s"$path of the savepoint disappeared " +
            "while it was verified; take the savepoint again.", e)
        }
        try StateFileFormat.read(in, path.toString, kind, version, 0, 0, conf)((_, _) => (), _ => ())
        catch {
          case e: CorruptCheckpointException => throw new SavepointException(s"The savepoint at $target " +
            s"is not restorable: ${e.getMessage}", e)
        } finally in.close()
      }
    }
    stores.size
  }

  /** The files restoring `version`: the newest snapshot with every later delta, else every delta. */
  private def chain(files: Set[(Long, StateFileKind)], version: Long): Option[Seq[(Long, StateFileKind)]] = {
    def deltasAfter(from: Long) = (from + 1 to version).map(v => (v, StateFileKind.Delta: StateFileKind))
    val snapshots = files.collect { case (v, StateFileKind.Snapshot) if v <= version => v }.toSeq.sorted.reverse
    (snapshots :+ 0L).iterator.map { base =>
      val deltas = deltasAfter(base)
      if (deltas.forall(files.contains)) Some((if (base > 0) Seq((base, StateFileKind.Snapshot: StateFileKind)) else Nil) ++ deltas)
      else None
    }.collectFirst { case Some(c) => c }
  }

  private def walk(fs: FileSystem, dir: Path, rel: String): Seq[(String, Path)] = {
    val statuses = try fs.listStatus(dir) catch { case _: FileNotFoundException => Array.empty[org.apache.hadoop.fs.FileStatus] }
    statuses.toSeq.flatMap { s =>
      val childRel = s"$rel/${s.getPath.getName}"
      if (s.isDirectory) walk(fs, s.getPath, childRel) else Seq(childRel -> s.getPath)
    }
  }
}
