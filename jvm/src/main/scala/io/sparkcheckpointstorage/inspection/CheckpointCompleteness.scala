package io.sparkcheckpointstorage.inspection

import scala.collection.mutable

import io.sparkcheckpointstorage.layout.VersionedName

/**
 * Which committed batches of a checkpoint have all their state: batch `b` is complete when
 * every store can load version `b + 1` (a snapshot at or before it and every delta or
 * changelog after the snapshot up to it).
 *
 * @param lastComplete the last committed batch whose state every store holds (None: none)
 * @param missing      what the last committed batch misses: `<store directory> version <v>`
 */
final case class CheckpointCompleteness(lastComplete: Option[Long], missing: Seq[String])

object CheckpointCompleteness {

  /** `committed`: the commit log's batches, ascending; `stores`: each store directory's state files. */
  def of(committed: Seq[Long], stores: Map[String, Seq[VersionedName]]): CheckpointCompleteness = {
    val loadable = stores.map { case (dir, files) => dir -> loadableVersions(files) }
    def complete(batch: Long): Boolean = loadable.values.forall(_.contains(batch + 1))
    val missing = committed.lastOption.toSeq.flatMap { last =>
      loadable.collect { case (dir, versions) if !versions.contains(last + 1) => s"$dir version ${last + 1}" }
    }.sorted
    CheckpointCompleteness(committed.reverseIterator.find(complete), missing)
  }

  /** The versions a store can load from `files`: from a snapshot (or the empty version 0) on, delta by delta. */
  def loadableVersions(files: Seq[VersionedName]): Set[Long] = {
    val snapshots = files.filter(_.snapshot).map(_.version).toSet + 0L
    val deltas = files.filterNot(_.snapshot).map(_.version).toSet
    val loadable = mutable.HashSet[Long]()
    (snapshots ++ deltas).toSeq.sorted.foreach { v =>
      if (snapshots.contains(v) || (deltas.contains(v) && loadable.contains(v - 1))) loadable += v
    }
    loadable.toSet
  }
}
