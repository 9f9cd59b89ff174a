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
/** The driver cannot hold more inline state: a limit the user raises by a setting it names. */
final case class LimitExceeded(message: String) extends CoordinatorReply

/**
 * Requests and replies travel as plain byte arrays: Spark deserializes RPC messages with its
 * own class loader, which on executors does not see jars added with `spark.jars`. Decoding
 * here uses the class loader that loaded this jar.
 */
object MessageCodec {
  import java.io._

  def encode(message: Serializable): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeObject(message)
    out.close()
    bytes.toByteArray
  }

  def decode[T](bytes: Array[Byte]): T = {
    val loader = classOf[CoordinatorRequest].getClassLoader
    val in = new ObjectInputStream(new ByteArrayInputStream(bytes)) {
      override def resolveClass(desc: ObjectStreamClass): Class[_] =
        try Class.forName(desc.getName, false, loader) catch {
          case _: ClassNotFoundException => super.resolveClass(desc)
        }
    }
    try in.readObject().asInstanceOf[T] finally in.close()
  }
}
