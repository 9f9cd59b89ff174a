package io.sparkcheckpointstorage.coordinator

/** What executors ask the checkpoint coordinator (Java-serialized over Spark's RPC). */
sealed trait CoordinatorRequest extends Serializable

/**
 * Keep `bytes` as the content of `relPath` under checkpoint `root`.
 *
 * @param storage the storage's description, recorded with the checkpoint
 * @param persistent whether the root's inline files go into packs
 * @param keepInHeap whether the driver keeps the bytes in heap after packing them
 */
final case class PutInline(root: String, relPath: String, bytes: Array[Byte], storage: String,
    persistent: Boolean, keepInHeap: Boolean) extends CoordinatorRequest

final case class GetInline(root: String, relPath: String) extends CoordinatorRequest

final case class ExistsInline(root: String, relPath: String) extends CoordinatorRequest

/** Inline files directly inside directory `relDir`. */
final case class ListInline(root: String, relDir: String) extends CoordinatorRequest

final case class DeleteInline(root: String, relPath: String) extends CoordinatorRequest

/** The coordinator's answers. */
sealed trait CoordinatorReply extends Serializable
case object Done extends CoordinatorReply
case object NotInline extends CoordinatorReply
case object IsInline extends CoordinatorReply
final case class InlineBytes(bytes: Array[Byte]) extends CoordinatorReply
/** The file is in a pack on the checkpoint file system: read `length` bytes at `offset`. */
final case class InPack(pack: String, offset: Long, length: Int, crc: Int) extends CoordinatorReply
final case class Listing(files: Seq[(String, Long)]) extends CoordinatorReply
/** The request failed on the driver; `message` is for the user. */
final case class Refused(message: String) extends CoordinatorReply
