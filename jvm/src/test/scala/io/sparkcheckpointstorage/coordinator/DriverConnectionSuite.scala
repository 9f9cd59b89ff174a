package io.sparkcheckpointstorage.coordinator

import java.util.concurrent.{Callable, CountDownLatch, Executors, TimeUnit, TimeoutException}
import java.util.concurrent.atomic.AtomicInteger

import org.scalatest.funsuite.AnyFunSuite

/**
 * (Spark's RPC raises its `RpcTimeoutException`, a `TimeoutException`, which is `private[rpc]`.)
 *
 * An executor's connection to the driver: a failed lookup is never kept (the next message
 * looks the driver up again and goes through once it answers), a successful one is kept (no
 * lookup on a message's normal path), and every failure reaches the task in our words, naming
 * the timeout to raise.
 */
class DriverConnectionSuite extends AnyFunSuite {
  private val lookupTimeout = "spark.rpc.lookupTimeout=4s"
  private val askTimeout = "spark.rpc.askTimeout=4s"

  private def echo: AnyRef => AnyRef = m => s"reply to $m"

  test("a lookup that fails once is tried again on the next message, then kept") {
    val lookups = new AtomicInteger()
    val connection = new DriverConnection(() => {
      if (lookups.incrementAndGet() == 1) {
        throw new TimeoutException("Cannot receive any reply from driver:7077 in 4 seconds")
      }
      echo
    }, lookupTimeout, askTimeout)
    val e = intercept[CoordinatorUnreachableException](connection.send("first"))
    assert(e.getMessage.startsWith("The checkpoint coordinator on the driver could not be reached: " +
      "the driver did not answer this executor's lookup within spark.rpc.lookupTimeout=4s"), e.getMessage)
    assert(e.getMessage.contains("raise spark.rpc.lookupTimeout") && e.getMessage.contains("Spark retries it"), e.getMessage)
    assert(e.getCause.isInstanceOf[TimeoutException])
    assert(connection.send("second") == "reply to second")
    assert(connection.send("third") == "reply to third")
    assert(lookups.get == 2, "the endpoint found is kept: one lookup after the failed one")
  }

  test("a round trip that times out fails in our words, keeps the endpoint, and the next goes through") {
    val lookups = new AtomicInteger()
    val trips = new AtomicInteger()
    val connection = new DriverConnection(() => {
      lookups.incrementAndGet()
      (m: AnyRef) => {
        if (trips.incrementAndGet() == 2) throw new TimeoutException("Futures timed out after [4 seconds]")
        echo(m)
      }
    }, lookupTimeout, askTimeout)
    assert(connection.send("a") == "reply to a")
    val e = intercept[CoordinatorUnreachableException](connection.send("b"))
    assert(e.getMessage.startsWith("The checkpoint coordinator on the driver did not answer this executor's " +
      "message within spark.rpc.askTimeout=4s"), e.getMessage)
    assert(e.getMessage.contains("raise spark.rpc.askTimeout"), e.getMessage)
    assert(connection.send("c") == "reply to c")
    assert(lookups.get == 1)
  }

  test("a message lost on its way (not a timeout) is told apart from a driver too slow to answer") {
    val connection = new DriverConnection(() => (_: AnyRef) => throw new java.io.IOException("Connection reset by peer"),
      lookupTimeout, askTimeout)
    val e = intercept[CoordinatorUnreachableException](connection.send("x"))
    assert(e.getMessage.contains("could not be reached: this executor's message failed on its way " +
      "(java.io.IOException: Connection reset by peer)"), e.getMessage)
  }

  test("threads waiting for a lookup that fails share its failure instead of each waiting a timeout in turn") {
    val lookups = new AtomicInteger()
    val inLookup = new CountDownLatch(1)
    val release = new CountDownLatch(1)
    val connection = new DriverConnection(() => {
      if (lookups.incrementAndGet() == 1) {
        inLookup.countDown()
        release.await()
        throw new TimeoutException("Cannot receive any reply in 4 seconds")
      }
      echo
    }, lookupTimeout, askTimeout)
    val pool = Executors.newFixedThreadPool(4)
    try {
      val first = pool.submit(new Callable[AnyRef] { def call(): AnyRef = connection.send("first") })
      assert(inLookup.await(10, TimeUnit.SECONDS))
      val waiting = (1 to 3).map(i => pool.submit(new Callable[AnyRef] { def call(): AnyRef = connection.send(s"w$i") }))
      Thread.sleep(200) // the three are blocked behind the lookup on its way
      release.countDown()
      (first +: waiting).foreach { f =>
        val e = intercept[java.util.concurrent.ExecutionException](f.get(10, TimeUnit.SECONDS))
        assert(e.getCause.isInstanceOf[CoordinatorUnreachableException], e.getCause)
      }
      assert(lookups.get == 1, "the waiting threads did not look up again")
      assert(connection.send("later") == "reply to later", "a later message looks the driver up again")
      assert(lookups.get == 2)
    } finally pool.shutdownNow()
  }
}
