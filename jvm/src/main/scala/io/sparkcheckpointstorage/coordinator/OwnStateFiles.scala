package io.sparkcheckpointstorage.coordinator

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import io.sparkcheckpointstorage.layout.CheckpointPaths

/**
 * The state files of their own (not inline) that executors reported writing, with their sizes,
 * per checkpoint root, until the commit of their version takes them for the checkpoints tab.
 * The driver learns a batch's files from the writers instead of listing the checkpoint's
 * `state/` tree after each commit: on an object store that walk is two LISTs and a HEAD per
 * state partition, every batch.
 */
private[coordinator] final class OwnStateFiles {
  private val byRoot = new ConcurrentHashMap[String, ConcurrentHashMap[String, java.lang.Long]]()

  /** `rel` of `root` was written as a file of its own, `bytes` long (a retried task's write replaces it). */
  def written(root: String, rel: String, bytes: Long): Unit =
    if (CheckpointPaths.stateVersionOf(rel).isDefined) {
      byRoot.computeIfAbsent(root, _ => new ConcurrentHashMap[String, java.lang.Long]()).put(rel, bytes)
    }

  /**
   * The files of store version `version` of `root`, sorted by path; forgets them and every file
   * of an older version (a maintenance snapshot of a committed version, a failed batch's).
   */
  def take(root: String, version: Long): Seq[(String, Long)] = {
    val files = byRoot.get(root)
    if (files == null) return Nil
    val taken = Seq.newBuilder[(String, Long)]
    files.entrySet().asScala.toList.foreach { e =>
      val v = CheckpointPaths.stateVersionOf(e.getKey).getOrElse(-1L)
      if (v <= version && files.remove(e.getKey, e.getValue) && v == version) taken += e.getKey -> e.getValue.longValue
    }
    taken.result().sortBy(_._1)
  }

  /** Forgets `root` (its query stopped, or its checkpoint is being deleted). */
  def forget(root: String): Unit = byRoot.remove(root)
}
