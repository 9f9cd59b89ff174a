package io.sparkcheckpointstorage.coordinator

import java.util.concurrent.{CompletableFuture, ExecutionException, LinkedBlockingQueue}

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import io.sparkcheckpointstorage.storage.CheckpointStorageSettings

/**
 * Carries one executor's coordinator requests to the driver, the requests of concurrent tasks
 * together: while one message is on its way, the requests that arrive meanwhile wait and then
 * leave as one batch (group commit). With 32 tasks committing at once an executor sends a few
 * messages instead of 32, so the driver pays Spark's per-message cost (Netty, the plugin
 * envelope's Java serialization, dispatch, the reply) once per batch: with many small
 * commits that cost, not the bytes, is most of the driver's CPU (docs/benchmarks.md, W5). A
 * lone request leaves at once, as a plain message: no timer, no added latency when idle.
 *
 * Requests whose reply may be a whole state file ([[GetInline]]) and requests larger than
 * `maxBatchBytes` are sent on their own, from the asking thread, so that no batch waits for
 * a large transfer and no reply outgrows a message.
 *
 * @param send         one round trip to the driver's [[CoordinatorEndpoint]]
 * @param maxBatchBytes the most request bytes one batch carries
 */
final class RequestBatcher(send: Array[Byte] => AnyRef, maxBatchBytes: Int = RequestBatcher.DefaultMaxBatchBytes) {
  private final class Pending(val request: Array[Byte]) {
    val reply = new CompletableFuture[CoordinatorReply]()
  }

  private val queue = new LinkedBlockingQueue[Pending]()
  @volatile private var stopped = false
  private val sender = new Thread(() => sendBatches(), "checkpoint-coordinator-requests")
  sender.setDaemon(true)
  sender.start()

  /** The driver's reply to `request` (a [[Failed]] one is returned, not raised). */
  def ask(request: CoordinatorRequest): CoordinatorReply = {
    val encoded = MessageCodec.encode(request)
    if (encoded.length > maxBatchBytes || request.isInstanceOf[GetInline]) return decode(send(encoded))
    val pending = new Pending(encoded)
    queue.put(pending)
    // A request queued after stop() began draining: nobody will send it.
    if (stopped && queue.remove(pending)) throw stoppedError()
    try pending.reply.get() catch {
      case e: ExecutionException => throw e.getCause
    }
  }

  /** Requests waiting for the message on its way. */
  private[coordinator] def queued: Int = queue.size

  /** Stops sending; requests still queued fail. */
  def stop(): Unit = {
    stopped = true
    sender.interrupt()
    failQueued()
  }

  private def failQueued(): Unit = {
    var p = queue.poll()
    while (p != null) {
      p.reply.completeExceptionally(stoppedError())
      p = queue.poll()
    }
  }

  private def sendBatches(): Unit = {
    try {
      while (!stopped) {
        val batch = ArrayBuffer(queue.take())
        var bytes = batch.head.request.length
        // Only this thread takes from the queue: what peek sees, poll returns.
        while (queue.peek() != null && bytes + queue.peek().request.length <= maxBatchBytes) {
          val next = queue.poll()
          batch += next
          bytes += next.request.length
        }
        try {
          val replies =
            if (batch.size == 1) Seq(decode(send(batch.head.request)))
            else decode(send(MessageCodec.encodeBatch(batch.map(_.request).toSeq)), batch.size)
          batch.zip(replies).foreach { case (p, r) => p.reply.complete(r) }
        } catch {
          // The round trip itself failed (driver gone, RPC timeout): every request of it did.
          case e: Throwable =>
            batch.foreach(_.reply.completeExceptionally(e))
            if (!NonFatal(e)) throw e
        }
      }
    } catch {
      case _: InterruptedException => // stop()
    } finally {
      // Whatever ended this thread (stop, or an error no request could be failed with), nobody
      // sends what is queued or comes later: fail it rather than leave tasks waiting.
      stopped = true
      failQueued()
    }
  }

  private def decode(reply: AnyRef): CoordinatorReply = MessageCodec.decodeReply(bytesOf(reply))

  private def decode(reply: AnyRef, expected: Int): Seq[CoordinatorReply] =
    MessageCodec.decodeReplies(bytesOf(reply), expected)

  private def bytesOf(reply: AnyRef): Array[Byte] = reply match {
    case bytes: Array[Byte] => bytes
    case other => throw new MalformedMessageException("The checkpoint coordinator answered with " +
      s"${Option(other).map(_.getClass.getName).orNull} instead of a byte array.")
  }

  private def stoppedError() = new IllegalStateException("The checkpoint storage's connection to the " +
    "driver was closed (the executor is shutting down, or its sending thread failed: see the " +
    "executor's log): the request was not sent.")
}

object RequestBatcher {
  /** About 64 average state files: large enough to carry every task of an executor at once. */
  val DefaultMaxBatchBytes: Int = 1 << 20

  /** The batch size set by `...checkpointStorage.executor.maxRequestBatchSize`, checked. */
  def maxBatchBytes(setting: Option[String]): Int =
    setting.map(CheckpointStorageSettings.ExecutorMaxRequestBatchSizeSetting.parseInt).getOrElse(DefaultMaxBatchBytes)
}
