package io.sparkcheckpointstorage.coordinator

import scala.collection.mutable

/**
 * Which tasks have ended, of each stage that wrote state of a checkpoint: the driver learns
 * from it when a stateful stage's last task ends, the moment Spark's own providers have the
 * stage's state durable (their tasks write it), and ours must too. A task run again (a retry,
 * a speculative copy, a stage resubmitted) counts once. Stage ids are unique within an
 * application, so a root's stages are forgotten once its batch commits or its query stops.
 */
private[coordinator] final class StageEnds {
  /** (root, stage) -> the newest batch its tasks wrote state of, and the partitions ended. */
  private val ended = mutable.Map[(String, Int), (Long, mutable.BitSet)]()

  /**
   * The task of partition `partitionId` of stage `stageId` (of `numPartitions`) ended after
   * writing state of `root` for batch `batchId`; returns whether every partition of the stage has.
   */
  def taskEnded(root: String, batchId: Long, stageId: Int, partitionId: Int, numPartitions: Int): Boolean =
    synchronized {
      val (batch, done) = ended.getOrElse((root, stageId), (batchId, mutable.BitSet()))
      done += partitionId
      ended((root, stageId)) = (math.max(batch, batchId), done)
      done.size >= numPartitions
    }

  /**
   * Forgets the stages of `root` up to batch `upTo`: that batch committed (a later batch's
   * stage may already run, with asynchronous progress tracking), or, with the default, the
   * query stopped.
   */
  def forget(root: String, upTo: Long = Long.MaxValue): Unit = synchronized {
    ended.collect { case (key @ (r, _), (batch, _)) if r == root && batch <= upTo => key }.toList.foreach(ended.remove)
  }
}
