package io.sparkcheckpointstorage.inspection

import java.nio.charset.StandardCharsets
import scala.collection.mutable

import org.apache.hadoop.conf.Configuration

import io.sparkcheckpointstorage.layout.{CheckpointPaths, StateFileNaming, StorageMarker, VersionedName}
import io.sparkcheckpointstorage.reader.{CheckpointEntry, CheckpointReader}
import io.sparkcheckpointstorage.results.{InspectedBatch, InspectedPack, InspectedStore, InspectionResult, ResultCodec}

/**
 * What a checkpoint holds (Flink: the checkpoint statistics of the web UI, offline): committed
 * batches, per operator, partition and store the state files with their inline and file
 * bytes, the packs, the range of batches a query can still restart from, and per batch the
 * bytes written and when it committed.
 *
 * The result is an [[InspectionResult]], as JSON for Python (`spark_checkpoint_storage.inspection`) and the command line.
 */
object CheckpointInspector {

  /** Inspects the checkpoint at `location`; JSON of an [[InspectionResult]]. */
  def inspectJson(location: String, conf: Configuration): String = ResultCodec.toJson(inspect(location, conf))

  /** Inspects the checkpoint at `location`. */
  def inspect(location: String, conf: Configuration): InspectionResult = {
    val reader = new CheckpointReader(location, conf)
    if (!reader.exists) throw new java.io.FileNotFoundException(s"No checkpoint at $location")
    val entries = reader.entries()
    val byRel = entries.map(e => e.relPath -> e).toMap
    val committed = reader.batchIds(CheckpointPaths.Commits)
    val offsets = reader.batchIds(CheckpointPaths.Offsets)
    def text(rel: String): Option[String] = byRel.get(rel).flatMap(reader.read).map(new String(_, StandardCharsets.UTF_8))
    val marker = text(CheckpointPaths.Marker).map(StorageMarker.parse(_, s"$location/${CheckpointPaths.Marker}"))

    // Stores.
    val stores = mutable.TreeMap[(Int, Int, String), mutable.ArrayBuffer[(CheckpointEntry, VersionedName)]]()
    val otherStateFiles = mutable.ArrayBuffer[CheckpointEntry]()
    entries.filter(_.relPath.startsWith(CheckpointPaths.State + "/")).foreach { e =>
      CheckpointPaths.storeOf(e.relPath).flatMap { case (op, part, store, name) =>
        StateFileNaming.versionOf(name).map(v => (op, part, store, v))
      } match {
        case Some((op, part, store, v)) => stores.getOrElseUpdate((op, part, store), mutable.ArrayBuffer()) += e -> v
        case None => otherStateFiles += e
      }
    }
    var restorableFromBatch = Long.MinValue
    val storeRows = stores.toList.map { case ((op, part, store), files) =>
      val versions = files.map(_._2)
      val from = restorableFrom(versions.toSeq)
      from.foreach(v => restorableFromBatch = math.max(restorableFromBatch, v - 1))
      InspectedStore(op, part, store, files.size, files.count(_._1.inline),
        files.filter(_._1.inline).map(_._1.length).sum, files.filterNot(_._1.inline).map(_._1.length).sum,
        versions.map(_.version).min, versions.map(_.version).max,
        versions.filter(_.snapshot).map(_.version).reduceOption((a, b) => if (a >= b) a else b), from)
    }

    // Retained range: committed batches a query can restart from (state and commit present).
    val retained = committed.filter(b => stores.isEmpty || b >= restorableFromBatch)

    val packRows = reader.packs().map { case (name, index) =>
      InspectedPack(name, index.batchId, byRel.get(s"${CheckpointPaths.Packs}/$name").map(_.length).getOrElse(0L),
        index.entries.size, index.deleted.size, entries.count(_.pack.contains(name)))
    }

    val stateByVersion = stores.values.flatten.groupBy(_._2.version)
    val batchRows = (committed ++ offsets).distinct.sorted.map { b =>
      val started = byRel.get(s"${CheckpointPaths.Offsets}/$b").map(_.modificationTime)
      val done = byRel.get(s"${CheckpointPaths.Commits}/$b").map(_.modificationTime)
      val files = stateByVersion.getOrElse(b + 1, Nil).map(_._1)
      InspectedBatch(b, committed.contains(b), started, done, for (s <- started; d <- done) yield d - s, files.size,
        files.filter(_.inline).map(_.length).sum, files.filterNot(_.inline).map(_.length).sum)
    }

    val completeness = CheckpointCompleteness.of(committed, stores.map { case ((op, part, store), files) =>
      CheckpointPaths.storeDir(op, part, store) -> files.map(_._2).toSeq }.toMap)

    InspectionResult(reader.root, text(CheckpointPaths.Metadata).flatMap(CheckpointPaths.queryIdOf),
      marker.map(_.storage), marker.map(_.persistent), committed, offsets.filterNot(committed.toSet), committed.lastOption,
      storeRows, otherStateFiles.size, retained.headOption, retained.lastOption, packRows, batchRows,
      if (committed.isEmpty) None else Some(completeness.lastComplete.getOrElse(-1L)), completeness.missing)
  }

  /** The smallest version from which every version up to the latest can be rebuilt. */
  def restorableFrom(files: Seq[VersionedName]): Option[Long] = {
    if (files.isEmpty) return None
    val snapshots = files.filter(_.snapshot).map(_.version).toSet
    val deltas = files.filterNot(_.snapshot).map(_.version).toSet
    val versions = (snapshots ++ deltas).toSeq.sorted
    val restorable = mutable.HashSet[Long]()
    versions.foreach { v =>
      if (snapshots.contains(v) || (deltas.contains(v) && (v == 1 || restorable.contains(v - 1)))) restorable += v
    }
    val max = versions.last
    if (!restorable.contains(max)) return None
    var v = max
    while (restorable.contains(v - 1)) v -= 1
    Some(v)
  }
}
