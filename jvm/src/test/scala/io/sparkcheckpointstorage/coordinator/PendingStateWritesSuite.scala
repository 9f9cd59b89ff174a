package io.sparkcheckpointstorage.coordinator

import java.util.concurrent.{CountDownLatch, TimeUnit}

import org.scalatest.funsuite.AnyFunSuite

/**
 * A batch's commit waits for the state files written in the background, and fails, naming
 * them, when one failed, its executor was lost, or it never ended; other roots are not held.
 */
class PendingStateWritesSuite extends AnyFunSuite {
  private val (a, b) = ("file:/cp/a", "file:/cp/b")

  /** Runs `commit` on another thread; returns a latch counted down when it returned, and its error. */
  private def commitInBackground(commit: => Unit): (CountDownLatch, () => Option[Throwable]) = {
    val done = new CountDownLatch(1)
    @volatile var error: Option[Throwable] = None
    val t = new Thread(() => try commit catch { case e: Throwable => error = Some(e) } finally done.countDown())
    t.setDaemon(true)
    t.start()
    (done, () => error)
  }

  test("a commit waits until every write of its root is written, and not for another root's") {
    val writes = new PendingStateWrites()
    writes.started(a, "state/0/0/2.heap-delta", "w1", "1")
    writes.started(a, "state/0/1/2.heap-delta", "w2", "2")
    writes.started(b, "state/0/0/5.heap-delta", "w3", "1")
    val (done, error) = commitInBackground(writes.awaitWritten(a, 1))
    writes.finished("w1", "")
    assert(!done.await(200, TimeUnit.MILLISECONDS), "committed with a write still running")
    writes.finished("w2", "")
    assert(done.await(10, TimeUnit.SECONDS) && error().isEmpty, error())
    assert(writes.inFlight(a) == 0 && writes.inFlight(b) == 1)
  }

  test("a failed write fails that batch's commit with the file and the cause, and only that commit") {
    val writes = new PendingStateWrites()
    writes.started(a, "state/0/3/2.heap-delta", "w1", "4")
    writes.finished("w1", "java.io.IOException: No space left on device")
    val e = intercept[StateNotDurableException](writes.awaitWritten(a, 1))
    Seq("Batch 1", a, "state/0/3/2.heap-delta", "executor 4", "No space left on device",
      "spark.sql.streaming.checkpointStorage.asyncStateWrites", "restart the query").foreach { s =>
      assert(e.getMessage.contains(s), e.getMessage)
    }
    writes.awaitWritten(a, 1) // the replayed batch starts clean
  }

  test("a lost executor's writes fail the waiting commit at once") {
    val writes = new PendingStateWrites()
    writes.started(a, "state/0/0/2.heap-delta", "w1", "1")
    writes.started(a, "state/0/1/2.heap-delta", "w2", "2")
    val (done, error) = commitInBackground(writes.awaitWritten(a, 1))
    writes.finished("w2", "")
    writes.executorLost("1", "Command exited with code 137")
    assert(done.await(10, TimeUnit.SECONDS))
    val message = error().map(_.getMessage).getOrElse(fail("the commit did not fail"))
    assert(message.contains("state/0/0/2.heap-delta: executor 1 was lost before writing it (Command exited with code 137)"),
      message)
    assert(!message.contains("state/0/1/2.heap-delta"), message)
  }

  test("a write never reported fails the commit after the timeout, naming it") {
    val writes = new PendingStateWrites(timeoutMs = 300)
    writes.started(a, "state/0/0/2.heap-delta", "w1", "3")
    val e = intercept[StateNotDurableException](writes.awaitWritten(a, 7))
    assert(e.getMessage.contains("state/0/0/2.heap-delta: not written by executor 3 within 0 s"), e.getMessage)
    assert(writes.inFlight(a) == 0)
  }

  test("a stopped query's writes are forgotten; a report of a forgotten write is ignored") {
    val writes = new PendingStateWrites()
    writes.started(a, "state/0/0/2.heap-delta", "w1", "1")
    writes.forget(a)
    assert(writes.inFlight(a) == 0)
    writes.finished("w1", "java.io.IOException: late")
    assert(writes.inFlight(a) == 0)
    // The late failure of a forgotten write fails no later commit of the checkpoint.
    writes.started(a, "state/0/0/3.heap-delta", "w2", "1")
    writes.finished("w2", "")
    writes.awaitWritten(a, 2)
    assert(writes.inFlight(a) == 0)
  }
}
