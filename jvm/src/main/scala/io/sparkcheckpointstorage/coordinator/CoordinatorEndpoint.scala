package io.sparkcheckpointstorage.coordinator

import scala.util.control.NonFatal

/**
 * The coordinator's side of the plugin RPC: bytes in, bytes out. A request, or a batch of
 * them ([[RequestBatcher]]), is decoded by [[MessageCodec]]; anything else, malformed or
 * oversized is answered with a refusal of its kind (the asking task fails with it). Each
 * request of a batch is answered on its own: one failing does not fail the others. Never
 * throws: it runs on the plugin's only RPC thread, shared by every query of the application.
 *
 * @param maxMessageBytes the largest request (or batch) accepted
 */
final class CoordinatorEndpoint(coordinator: CheckpointCoordinator,
    maxMessageBytes: Int = MessageCodec.MaxMessageBytes) {

  private val messageCount = new java.util.concurrent.atomic.AtomicLong()

  /** Messages received so far (a batch of requests is one message). */
  def messages: Long = messageCount.get

  def receive(message: AnyRef): AnyRef = {
    messageCount.incrementAndGet()
    val reply = try {
      message match {
        case bytes: Array[Byte] if MessageCodec.isBatch(bytes) =>
          return MessageCodec.encodeReplies(MessageCodec.decodeBatch(bytes, maxMessageBytes)
            .map(coordinator.handle))
        case bytes: Array[Byte] => coordinator.handle(MessageCodec.decodeRequest(bytes, maxMessageBytes))
        case other => throw new MalformedMessageException("Refused a checkpoint coordinator " +
          s"message of type ${Option(other).map(_.getClass.getName).orNull}: requests are byte arrays.")
      }
    } catch {
      case NonFatal(e) =>
        coordinator.noteRefusal()
        CoordinatorFailures.toReply(e)
    }
    MessageCodec.encode(reply)
  }
}
