package io.sparkcheckpointstorage.coordinator

import scala.collection.mutable

import io.sparkcheckpointstorage.storage.CheckpointStorageOptions

/**
 * The state files executors write in the background (`asyncStateWrites`), as the driver
 * knows them: announced by a task before it returns ([[WritePending]]), then reported
 * written or failed by the executor's writer ([[WriteDone]]). A batch's commit waits here
 * until every file announced for its checkpoint is written (Flink: a checkpoint completes
 * once every task's asynchronous part has acknowledged), and fails if one was not: a failed
 * or lost write fails that batch's commit, never a later one.
 *
 * A commit of batch N waits for every write of its root, not only version N+1's: files of
 * an earlier batch are all written by then (its commit waited for them), so the only others
 * are a zombie speculative attempt's, which must not be left behind a commit either.
 */
final class PendingStateWrites(timeoutMs: Long = PendingStateWrites.DefaultTimeoutMs) {
  import PendingStateWrites.Write

  private val pending = mutable.Map[String, Write]()
  /** Root -> why its writes failed since its last commit; the next commit of the root fails with it. */
  private val failures = mutable.Map[String, Vector[String]]()

  /** The executor `executorId` will write `relPath` of `root` in the background, as `writeId`. */
  def started(root: String, relPath: String, writeId: String, executorId: String): Unit = synchronized {
    pending(writeId) = Write(root, relPath, executorId)
  }

  /** The write `writeId` ended: written when `error` is empty, else failed with it. */
  def finished(writeId: String, error: String): Unit = synchronized {
    pending.remove(writeId).foreach { w =>
      if (error.nonEmpty) fail(w, s"the write failed on executor ${w.executorId}: $error")
    }
    notifyAll()
  }

  /** An executor is gone: the writes it had not finished never will. */
  def executorLost(executorId: String, reason: String): Unit = synchronized {
    val lost = pending.filter(_._2.executorId == executorId).toList
    lost.foreach { case (id, w) =>
      pending.remove(id)
      fail(w, s"executor $executorId was lost before writing it ($reason)")
    }
    if (lost.nonEmpty) notifyAll()
  }

  private def fail(w: Write, why: String): Unit =
    failures(w.root) = failures.getOrElse(w.root, Vector.empty) :+ s"${w.relPath}: $why"

  /** Whether every write of `root` is finished and none failed since its last commit. */
  def settled(root: String): Boolean = synchronized(inFlight(root) == 0 && !failures.contains(root))

  /** How many writes of `root` are not finished yet. */
  def inFlight(root: String): Int = synchronized(pending.values.count(_.root == root))

  /**
   * Returns once every write announced for `root` is written; throws a [[StateNotDurableException]]
   * naming the files and why when one failed, was lost, or did not end within the timeout.
   * A failure is reported once (`forget` = true, the batch's commit): the batch replayed after
   * a restart starts clean. A stage's end keeps it (`forget` = false): a retry of the stage's
   * last task, which rewrites only its own files, fails again, and so does the batch's commit.
   */
  def awaitWritten(root: String, batchId: Long, forget: Boolean = true): Unit = synchronized {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    def waiting = pending.values.filter(_.root == root)
    while (waiting.nonEmpty && failures.get(root).isEmpty && System.nanoTime() < deadline) {
      wait(math.max(1L, (deadline - System.nanoTime()) / 1000000L))
    }
    val failed = (if (forget) failures.remove(root) else failures.get(root)).getOrElse(Vector.empty)
    val late = if (failed.isEmpty) waiting.map(w => s"${w.relPath}: not written by executor " +
      s"${w.executorId} within ${timeoutMs / 1000} s").toVector else Vector.empty
    if (failed.nonEmpty || late.nonEmpty) {
      if (forget) dropPending(root)
      val files = failed ++ late
      throw new StateNotDurableException(s"Batch $batchId of the streaming query with checkpoint $root cannot " +
        s"commit: ${files.size} state file(s) written in the background " +
        s"(${CheckpointStorageOptions.AsyncStateWrites}=true) are not durable: " +
        s"${files.take(5).mkString("; ")}${if (files.size > 5) "; ..." else ""}. Nothing of this batch " +
        "is committed: restart the query and it runs this batch again from the state of the " +
        "previous one.")
    }
  }

  private def dropPending(root: String): Unit =
    pending.collect { case (id, w) if w.root == root => id }.toList.foreach(pending.remove)

  /** Forgets `root` (its query stopped). */
  def forget(root: String): Unit = synchronized {
    dropPending(root)
    failures.remove(root)
    notifyAll()
  }
}

object PendingStateWrites {
  /**
   * How long a commit waits for its background writes. A writer that cannot reach its file
   * system fails on the file system client's own timeouts well before; this bounds only a
   * report that never arrives (an executor cut off from the driver but not declared lost).
   */
  val DefaultTimeoutMs: Long = 10 * 60 * 1000L

  private final case class Write(root: String, relPath: String, executorId: String)
}

