package io.sparkcheckpointstorage.filemanager

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.util.{TaskCompletionListener, TaskFailureListener}

import io.sparkcheckpointstorage.coordinator.{AwaitStageEnd, CoordinatorClient, StageEndPending, StageTaskDone}
import io.sparkcheckpointstorage.layout.CheckpointPaths

/**
 * A task that writes state tells the driver's coordinator when it ends ([[StageTaskDone]]),
 * from a completion listener, i.e. after its stores committed and before Spark learns the
 * task ended; the stage's last task then waits until the coordinator made the stage's state
 * durable. So a stateful stage ends with its state durable, as with Spark's own providers
 * (whose tasks write it), and a sink that commits after it never depends on the driver that
 * held the state. A failed write fails that last task (the listener throws), so the job and
 * the batch fail before any sink commits, and the batch's rerun sends the state again.
 */
private[filemanager] object StageEndDurability {
  /** The longest pause between two polls of a running write: a pack takes milliseconds to seconds. */
  private val MaxPollPauseMs = 50L

  /** Per running task: the checkpoint roots it wrote state of, and the newest batch of each. */
  private val tasks = new java.util.concurrent.ConcurrentHashMap[Long, TaskState]()

  private final class TaskState {
    val batches = mutable.Map[String, Long]()
    @volatile var failed = false
  }

  /** Task `task` writes `rel` of checkpoint `root`: its end is reported to the coordinator. */
  def track(task: TaskContext, root: String, rel: String): Unit = {
    val id = task.taskAttemptId()
    var state = tasks.get(id)
    if (state == null) {
      state = new TaskState
      tasks.put(id, state)
      val mine = state
      task.addTaskFailureListener(new TaskFailureListener {
        override def onTaskFailure(context: TaskContext, error: Throwable): Unit = mine.failed = true
      })
      task.addTaskCompletionListener(new TaskCompletionListener {
        override def onTaskCompletion(context: TaskContext): Unit = {
          tasks.remove(id)
          // A failed task's state is not the batch's: its rerun's is.
          if (!mine.failed) mine.synchronized(mine.batches.toVector).foreach { case (r, batch) => ended(context, r, batch) }
        }
      })
    }
    // The version a batch writes is one more than the batch (-1: a file without a version).
    val batch = CheckpointPaths.stateVersionOf(rel).map(_ - 1).getOrElse(-1L)
    state.synchronized(state.batches(root) = math.max(batch, state.batches.getOrElse(root, -1L)))
  }

  private def ended(task: TaskContext, root: String, batchId: Long): Unit = {
    var reply = CoordinatorClient.ask(StageTaskDone(root, batchId, task.stageId(), task.partitionId(), task.numPartitions()))
    var pause = 1L
    while (reply.isInstanceOf[StageEndPending]) {
      Thread.sleep(pause)
      pause = math.min(pause * 2, MaxPollPauseMs)
      reply = CoordinatorClient.ask(AwaitStageEnd(root, reply.asInstanceOf[StageEndPending].id))
    }
  }
}
