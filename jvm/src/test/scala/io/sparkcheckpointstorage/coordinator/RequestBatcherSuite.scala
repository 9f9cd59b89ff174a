package io.sparkcheckpointstorage.coordinator

import java.io.IOException
import java.util.concurrent.{Callable, CountDownLatch, ExecutionException, Executors, Future, TimeUnit}

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.storage.StateSizeLimitException

/**
 * An executor's requests to the coordinator: those of concurrent tasks leave as one batch
 * while a message is on its way, each still gets its own reply, and a failed round trip or a
 * stopped executor fails exactly the requests it concerns.
 */
class RequestBatcherSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val pool = Executors.newCachedThreadPool()
  override def afterAll(): Unit = pool.shutdownNow()

  private val root = "file:/tmp/scs-batcher-never-written"

  /** A coordinator that keeps everything in heap (nothing is written), at most `maxHeld` bytes. */
  private def endpoint(maxHeld: Long = Long.MaxValue) =
    new CoordinatorEndpoint(new CheckpointCoordinator(new Configuration(), maxHeld))

  private def put(rel: String, bytes: Int): PutInline =
    PutInline(root, rel, Array.fill[Byte](bytes)(7), "test storage", persistent = false, keepInHeap = true)

  /**
   * A connection to `driver` that records every message and holds the first one until
   * `release` opens, so that requests asked meanwhile queue behind it.
   */
  private final class HeldConnection(driver: CoordinatorEndpoint, failSecond: Throwable = null) {
    val sent = mutable.ArrayBuffer[Array[Byte]]()
    private val firstOnItsWay = new CountDownLatch(1)
    val release = new CountDownLatch(1)
    val batcher = new RequestBatcher(message => {
      val n = synchronized { sent += message.asInstanceOf[Array[Byte]]; sent.size }
      if (n == 1) {
        firstOnItsWay.countDown()
        release.await()
      }
      if (n == 2 && failSecond != null) throw failSecond
      driver.receive(message)
    })

    def messages: Seq[Array[Byte]] = synchronized(sent.toList)

    /** Asks a first put, which the connection holds on its way. */
    def sendFirst(): Future[CoordinatorReply] = {
      val first = async(batcher.ask(put("state/0/0/1.heap-delta", 10)))
      assert(firstOnItsWay.await(1, TimeUnit.MINUTES))
      first
    }

    /** Asks `requests` from threads of their own and waits until they queue behind the held message. */
    def queueBehind(requests: Seq[CoordinatorRequest]): Seq[Future[CoordinatorReply]] = {
      val asked = requests.map(r => async(batcher.ask(r)))
      awaitQueued(requests.size)
      asked
    }

    /** Waits (a minute at most) until `n` requests queue behind the held message. */
    private def awaitQueued(n: Int): Unit = {
      val deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1)
      while (batcher.queued < n) {
        assert(System.nanoTime() < deadline, s"${batcher.queued} of $n requests queued")
        Thread.`yield`()
      }
    }
  }

  private def async[T](body: => T): Future[T] = pool.submit(new Callable[T] { def call(): T = body })

  private def result[T](f: Future[T]): T =
    try f.get(1, TimeUnit.MINUTES) catch { case e: ExecutionException => throw e.getCause }

  test("requests that arrive while a message is on its way leave together, each with its own reply") {
    val driver = endpoint()
    val c = new HeldConnection(driver)
    try {
      val first = c.sendFirst()
      val rest = c.queueBehind((1 to 5).map(p => put(s"state/0/$p/1.heap-delta", 10 + p)))
      c.release.countDown()
      assert(result(first) == Done)
      assert(rest.map(result) == Seq.fill(5)(Done))

      val Seq(alone, batch) = c.messages
      assert(!MessageCodec.isBatch(alone), "a lone request leaves as a plain message")
      assert(MessageCodec.decodeRequest(alone).asInstanceOf[PutInline].relPath == "state/0/0/1.heap-delta")
      val batched = MessageCodec.decodeBatch(batch).map(_.asInstanceOf[PutInline])
      assert(batched.map(_.relPath).sorted == (1 to 5).map(p => s"state/0/$p/1.heap-delta"))
      assert(batched.forall(p => p.bytes.length == 10 + p.relPath.split('/')(2).toInt))
      (0 to 5).foreach { p =>
        assert(c.batcher.ask(GetInline(root, s"state/0/$p/1.heap-delta")).asInstanceOf[InlineBytes].bytes.length ==
          10 + p)
      }
    } finally c.batcher.stop()
  }

  test("one request of a batch refused by the driver fails alone; the others are kept") {
    val c = new HeldConnection(endpoint(maxHeld = 100))
    try {
      val first = c.sendFirst()
      val small :+ tooBig = c.queueBehind((1 to 3).map(p => put(s"state/0/$p/1.heap-delta", 10)) :+
        put("state/0/9/1.heap-delta", 1000))
      c.release.countDown()
      assert((first +: small).map(result) == Seq.fill(4)(Done))
      result(tooBig) match {
        case Failed(FailureKind.StateSizeLimit, _, _) =>
        case other => fail(s"a put over the driver's limit answered $other")
      }
      assert(c.messages.size == 2 && MessageCodec.decodeBatch(c.messages(1)).size == 4)
      // Raised on the asking side as the exception of its kind.
      assert(CoordinatorFailures.toException(result(tooBig).asInstanceOf[Failed]).isInstanceOf[StateSizeLimitException])
    } finally c.batcher.stop()
  }

  test("a failed round trip fails every request it carried, with its error; the next ones go through") {
    val c = new HeldConnection(endpoint(), failSecond = new IOException("connection to the driver lost"))
    try {
      val first = c.sendFirst()
      val lost = c.queueBehind((1 to 3).map(p => put(s"state/0/$p/1.heap-delta", 10)))
      c.release.countDown()
      assert(result(first) == Done)
      lost.foreach(f => assert(intercept[IOException](result(f)).getMessage == "connection to the driver lost"))
      assert(c.batcher.ask(put("state/0/1/1.heap-delta", 10)) == Done)
      assert(c.batcher.ask(ExistsInline(root, "state/0/1/1.heap-delta")) == IsInline)
      assert(c.batcher.ask(ExistsInline(root, "state/0/2/1.heap-delta")) == NotInline)
    } finally c.batcher.stop()
  }

  test("a sending thread killed by a fatal error fails what it carried and every later request, never hangs") {
    val c = new HeldConnection(endpoint(), failSecond = new LinkageError("a class of the jar cannot be loaded"))
    try {
      val first = c.sendFirst()
      val lost = c.queueBehind(Seq(put("state/0/1/1.heap-delta", 10)))
      c.release.countDown()
      assert(result(first) == Done)
      assert(intercept[LinkageError](result(lost.head)).getMessage == "a class of the jar cannot be loaded")
      val later = intercept[IllegalStateException](result(async(c.batcher.ask(put("state/0/2/1.heap-delta", 10)))))
      assert(later.getMessage.contains("its sending thread failed") && later.getMessage.contains("not sent"),
        later.getMessage)
    } finally c.batcher.stop()
  }

  test("reads and large requests are sent at once from the asking thread, never held behind a batch") {
    val driver = endpoint()
    val c = new HeldConnection(driver)
    try {
      val first = c.sendFirst()
      // The held message is still on its way: these only complete if they do not queue behind it.
      assert(result(async(c.batcher.ask(GetInline(root, "state/0/0/2.heap-delta")))) == NotInline)
      val large = put("state/0/1/1.heap-delta", RequestBatcher.DefaultMaxBatchBytes + 1)
      assert(result(async(c.batcher.ask(large))) == Done)
      assert(c.batcher.queued == 0)
      c.release.countDown()
      assert(result(first) == Done)
      assert(c.messages.forall(m => !MessageCodec.isBatch(m)))
    } finally c.batcher.stop()
  }

  test("stopping the executor's connection fails the queued requests, saying they were not sent") {
    val c = new HeldConnection(endpoint())
    val first = c.sendFirst()
    val queued = c.queueBehind((1 to 2).map(p => put(s"state/0/$p/1.heap-delta", 10)))
    c.batcher.stop()
    queued.foreach { f =>
      val e = intercept[IllegalStateException](result(f))
      assert(e.getMessage.contains("was closed") && e.getMessage.contains("not sent"), e.getMessage)
    }
    intercept[IllegalStateException](c.batcher.ask(put("state/0/3/1.heap-delta", 10)))
    // The message on its way was interrupted with the sending thread.
    intercept[InterruptedException](result(first))
  }

  test("maxRequestBatchSize 0 sends every request on its own; a wrong value is refused naming the setting") {
    assert(RequestBatcher.maxBatchBytes(None) == RequestBatcher.DefaultMaxBatchBytes)
    assert(RequestBatcher.maxBatchBytes(Some("256k")) == 256 * 1024)
    val driver = endpoint()
    @volatile var sentBy: Thread = null
    def sendingThread(maxBatchBytes: Int): Thread = {
      val batcher = new RequestBatcher(m => { sentBy = Thread.currentThread(); driver.receive(m) }, maxBatchBytes)
      try assert(batcher.ask(put("state/0/0/1.heap-delta", 1)) == Done) finally batcher.stop()
      sentBy
    }
    assert(sendingThread(RequestBatcher.maxBatchBytes(Some("0"))) eq Thread.currentThread())
    assert(sendingThread(RequestBatcher.maxBatchBytes(None)).getName == "checkpoint-coordinator-requests")
    Seq("-1", "65m", "lots").foreach { wrong =>
      val e = intercept[IllegalArgumentException](RequestBatcher.maxBatchBytes(Some(wrong)))
      assert(e.getMessage.contains("spark.sql.streaming.checkpointStorage.executor.maxRequestBatchSize") &&
        e.getMessage.contains(wrong), e.getMessage)
    }
  }

  test("the endpoint answers each request of a batch, and refuses a malformed batch as a whole") {
    val driver = endpoint()
    val batch = MessageCodec.encodeBatch(Seq(put("state/0/0/1.heap-delta", 3), GetInline(root, "state/0/0/1.heap-delta"),
      DeleteInline(root, "state/0/0/1.heap-delta"), ExistsInline(root, "state/0/0/1.heap-delta")).map(MessageCodec.encode))
    val replies = MessageCodec.decodeReplies(driver.receive(batch).asInstanceOf[Array[Byte]], expected = 4)
    assert(replies(0) == Done && replies(1).asInstanceOf[InlineBytes].bytes.sameElements(Array[Byte](7, 7, 7)))
    assert(replies(2) == Done && replies(3) == NotInline)

    val cut = batch.take(batch.length - 1)
    val refused = MessageCodec.decodeReplies(driver.receive(cut).asInstanceOf[Array[Byte]], expected = 4)
    assert(refused.size == 4 && refused.forall {
      case Failed(FailureKind.MalformedMessage, message, _) => message.startsWith("Refused")
      case _ => false
    }, refused)
  }
}
