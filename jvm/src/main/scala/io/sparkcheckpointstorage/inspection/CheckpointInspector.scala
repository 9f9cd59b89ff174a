package io.sparkcheckpointstorage.inspection

import java.nio.charset.StandardCharsets
import java.util.{ArrayList => JList, LinkedHashMap => JMap}

import scala.collection.mutable

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration

import io.sparkcheckpointstorage.layout.{CheckpointPaths, StateFileNames, StorageMarker, VersionedName}

/**
 * What a checkpoint holds (Flink: the checkpoint statistics of the web UI, offline): committed
 * batches, per operator, partition and store the state files with their inline and file
 * bytes, the packs, the range of batches a query can still restart from, and per batch the
 * bytes written and when it committed.
 *
 * The result is JSON, for Python (`spark_checkpoint_storage.inspection`) and the command line.
 */
object CheckpointInspector {

  /** Inspects the checkpoint at `location`; JSON (see the Python module for the fields). */
  def inspectJson(location: String, conf: Configuration): String = {
    val reader = new CheckpointReader(location, conf)
    if (!reader.exists) throw new java.io.FileNotFoundException(s"No checkpoint at $location")
    val entries = reader.entries()
    val byRel = entries.map(e => e.relPath -> e).toMap
    val committed = reader.batchIds(CheckpointPaths.Commits)
    val offsets = reader.batchIds(CheckpointPaths.Offsets)
    def text(rel: String): Option[String] = byRel.get(rel).flatMap(reader.read).map(new String(_, StandardCharsets.UTF_8))

    val out = new JMap[String, Any]()
    out.put("checkpoint", reader.root)
    out.put("queryId", text(CheckpointPaths.Metadata).flatMap(CheckpointPaths.queryIdOf).orNull)
    val marker = text(CheckpointPaths.Marker).map(StorageMarker.parse)
    out.put("storage", marker.map(_.storage).orNull)
    out.put("persistent", marker.map(m => Boolean.box(m.persistent)).orNull)
    out.put("committedBatches", toJava(committed.map(Long.box)))
    out.put("uncommittedBatches", toJava(offsets.filterNot(committed.toSet).map(Long.box)))
    out.put("lastCommittedBatch", committed.lastOption.map(Long.box).orNull)

    // Stores.
    val stores = mutable.TreeMap[(Int, Int, String), mutable.ArrayBuffer[(CheckpointEntry, VersionedName)]]()
    val otherStateFiles = mutable.ArrayBuffer[CheckpointEntry]()
    entries.filter(_.relPath.startsWith(CheckpointPaths.State + "/")).foreach { e =>
      CheckpointPaths.storeOf(e.relPath).flatMap { case (op, part, store, name) =>
        StateFileNames.versionOf(name).map(v => (op, part, store, v))
      } match {
        case Some((op, part, store, v)) => stores.getOrElseUpdate((op, part, store), mutable.ArrayBuffer()) += e -> v
        case None => otherStateFiles += e
      }
    }
    val storeRows = new JList[Any]()
    var restorableFromBatch = Long.MinValue
    stores.foreach { case ((op, part, store), files) =>
      val row = new JMap[String, Any]()
      row.put("operator", op); row.put("partition", part); row.put("store", store)
      row.put("files", files.size)
      row.put("inlineFiles", files.count(_._1.inline))
      row.put("inlineBytes", files.filter(_._1.inline).map(_._1.length).sum)
      row.put("fileBytes", files.filterNot(_._1.inline).map(_._1.length).sum)
      val versions = files.map(_._2)
      row.put("minVersion", versions.map(_.version).min)
      row.put("maxVersion", versions.map(_.version).max)
      row.put("latestSnapshotVersion", versions.filter(_.snapshot).map(v => Long.box(v.version)).reduceOption((a, b) => if (a >= b) a else b).orNull)
      val from = restorableFrom(versions.toSeq)
      row.put("restorableFromVersion", from.map(Long.box).orNull)
      from.foreach(v => restorableFromBatch = math.max(restorableFromBatch, v - 1))
      storeRows.add(row)
    }
    out.put("stores", storeRows)
    out.put("otherStateFiles", otherStateFiles.size)

    // Retained range: committed batches a query can restart from (state and commit present).
    val retained = committed.filter(b => stores.isEmpty || b >= restorableFromBatch)
    out.put("retainedFirstBatch", retained.headOption.map(Long.box).orNull)
    out.put("retainedLastBatch", retained.lastOption.map(Long.box).orNull)

    // Packs.
    val packRows = new JList[Any]()
    reader.packs().foreach { case (name, index) =>
      val row = new JMap[String, Any]()
      row.put("name", name)
      row.put("batchId", index.batchId)
      row.put("bytes", byRel.get(s"${CheckpointPaths.Packs}/$name").map(_.length).getOrElse(0L))
      row.put("entries", index.entries.size)
      row.put("deleted", index.deleted.size)
      row.put("liveEntries", entries.count(_.pack.contains(name)))
      packRows.add(row)
    }
    out.put("packs", packRows)

    // Batches.
    val stateByVersion = stores.values.flatten.groupBy(_._2.version)
    val batchRows = new JList[Any]()
    (committed ++ offsets).distinct.sorted.foreach { b =>
      val row = new JMap[String, Any]()
      row.put("batchId", b)
      row.put("committed", committed.contains(b))
      val started = byRel.get(s"${CheckpointPaths.Offsets}/$b").map(_.modificationTime)
      val done = byRel.get(s"${CheckpointPaths.Commits}/$b").map(_.modificationTime)
      row.put("startedAtMs", started.map(Long.box).orNull)
      row.put("committedAtMs", done.map(Long.box).orNull)
      row.put("durationMs", (for (s <- started; d <- done) yield Long.box(d - s)).orNull)
      val files = stateByVersion.getOrElse(b + 1, Nil).map(_._1)
      row.put("stateFiles", files.size)
      row.put("inlineBytes", files.filter(_.inline).map(_.length).sum)
      row.put("fileBytes", files.filterNot(_.inline).map(_.length).sum)
      batchRows.add(row)
    }
    out.put("batches", batchRows)
    new ObjectMapper().writeValueAsString(out)
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

  private def toJava(xs: Seq[AnyRef]): JList[Any] = {
    val l = new JList[Any]()
    xs.foreach(l.add)
    l
  }
}
