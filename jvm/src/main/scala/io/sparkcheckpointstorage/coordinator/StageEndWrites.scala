package io.sparkcheckpointstorage.coordinator

import java.util.concurrent.{CompletableFuture, ConcurrentHashMap, ExecutionException, Executors, ThreadFactory}
import java.util.concurrent.atomic.AtomicLong

import scala.jdk.CollectionConverters._

import com.codahale.metrics.Histogram

import io.sparkcheckpointstorage.monitoring.RecentDurations

/**
 * The writes that make a stage's state durable at its end (a pack, after the background
 * writes it waits for), each run on a thread of its own: the driver's one RPC thread answers
 * the stage's last task at once ([[StageEndPending]]) and then each of its polls
 * ([[AwaitStageEnd]]), so one query's slow pack write never stalls another query's requests.
 */
private[coordinator] final class StageEndWrites {
  /**
   * How long each of the last [[StageEndWrites.Recorded]] writes took, in milliseconds: from
   * the stage's last task ending to its state being durable, what that task waits (the
   * metric `coordinator.stageEndWaitMs`). A stage with nothing to write waits for nothing and
   * is not counted.
   */
  val recent = new RecentDurations(StageEndWrites.Recorded)
  val durations = new Histogram(recent)
  private val ids = new AtomicLong()
  private val writes = new ConcurrentHashMap[Long, (String, CompletableFuture[Void])]()
  private val threads = Executors.newCachedThreadPool(new ThreadFactory {
    private val count = new AtomicLong()
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"checkpoint-stage-end-${count.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  })

  /** Starts `write` for `root`; returns its id, for [[poll]]. */
  def start(root: String)(write: => Unit): Long = {
    val id = ids.incrementAndGet()
    val started = System.nanoTime()
    writes.put(id, (root, CompletableFuture.runAsync(() =>
      try write finally durations.update((System.nanoTime() - started) / 1000000L), threads)))
    id
  }

  /** Whether a write of `root` has not ended yet. */
  def running(root: String): Boolean = writes.values.asScala.exists { case (r, f) => r == root && !f.isDone }

  /** [[StageEndPending]] while write `id` runs, then [[Done]] or its failure (once: the write is forgotten). */
  def poll(id: Long): CoordinatorReply = writes.get(id) match {
    case null => Failed(FailureKind.IllegalState, s"The driver knows no write $id making a stage's state durable: " +
      "it restarted, or the checkpoint's query stopped meanwhile. The task fails, and Spark runs it again.")
    case (_, f) if !f.isDone => StageEndPending(id)
    case (_, f) =>
      writes.remove(id)
      try { f.get(); Done } catch {
        case e: ExecutionException => CoordinatorFailures.toReply(Option(e.getCause).getOrElse(e))
      }
  }

  /** Forgets the writes of `root` (its query stopped): a task still asking fails, and is run again. */
  def forget(root: String): Unit =
    writes.asScala.collect { case (id, (r, _)) if r == root => id }.toList.foreach(writes.remove)
}

private[coordinator] object StageEndWrites {
  /** The writes [[StageEndWrites.recent]] keeps: enough for a p99 of the recent ones. */
  val Recorded = 1024
}
