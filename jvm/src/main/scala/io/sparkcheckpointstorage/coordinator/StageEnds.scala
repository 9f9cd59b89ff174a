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
  private val ended = mutable.Map[(String, Int), mutable.BitSet]()

  /**
   * The task of partition `partitionId` of stage `stageId` (of `numPartitions`) ended after
   * writing state of `root`; returns whether every partition of the stage has.
   */
  def taskEnded(root: String, stageId: Int, partitionId: Int, numPartitions: Int): Boolean = synchronized {
    val done = ended.getOrElseUpdate((root, stageId), mutable.BitSet())
    done += partitionId
    done.size >= numPartitions
  }

  /** Forgets the stages of `root`: its batch committed, or its query stopped. */
  def forget(root: String): Unit = synchronized {
    ended.keys.filter(_._1 == root).toList.foreach(ended.remove)
  }
}
