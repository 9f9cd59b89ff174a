package io.sparkcheckpointstorage.coordinator

import java.nio.ByteBuffer
import java.nio.charset.{CharacterCodingException, StandardCharsets}

/**
 * The binary encoding of coordinator messages. Requests and replies travel as plain byte
 * arrays through Spark's plugin RPC; this codec, not Java serialization, turns them into
 * messages: nothing from the network is ever deserialized into arbitrary classes, and a
 * message costs one array and a few field copies.
 *
 * {{{
 *   magic "SCM", format version byte, tag byte, then the message's fields:
 *     string   int length, UTF-8 bytes (at most MaxStringBytes)
 *     bytes    int length, bytes
 *     boolean  byte 0 or 1
 *   nothing after the last field
 * }}}
 *
 * Decoding checks every length against what is left and refuses anything malformed,
 * oversized, of another format version or with trailing bytes with a
 * [[MalformedMessageException]] that says what is wrong.
 */
object MessageCodec {
  private val Magic0 = 'S'.toByte
  private val Magic1 = 'C'.toByte
  private val Magic2 = 'M'.toByte
  /** Bump on any change of the layout below; a peer of another version is refused clearly. */
  val FormatVersion: Byte = 1
  private val HeaderSize = 5
  /** The longest path or message a message carries. */
  val MaxStringBytes: Int = 64 * 1024
  /** The largest message: a state file of up to 1 GiB plus its paths. */
  val MaxMessageBytes: Int = (1 << 30) + 4 * MaxStringBytes

  private object Tag {
    val Put: Byte = 1; val Get: Byte = 2; val Exists: Byte = 3; val List: Byte = 4; val Delete: Byte = 5
    val Done: Byte = 16; val NotInline: Byte = 17; val IsInline: Byte = 18; val Bytes: Byte = 19
    val InPack: Byte = 20; val Listing: Byte = 21; val Failed: Byte = 22
  }

  def encode(request: CoordinatorRequest): Array[Byte] = request match {
    case PutInline(root, rel, bytes, storage, persistent, keepInHeap) =>
      val (r, p, s) = (utf8(root), utf8(rel), utf8(storage))
      val w = new Writer(Tag.Put, 4 * 4 + r.length + p.length + s.length + bytes.length + 2)
      w.string(r); w.string(p); w.bytes(bytes); w.string(s); w.bool(persistent); w.bool(keepInHeap)
      w.done()
    case GetInline(root, rel) => pathRequest(Tag.Get, root, rel)
    case ExistsInline(root, rel) => pathRequest(Tag.Exists, root, rel)
    case ListInline(root, dir) => pathRequest(Tag.List, root, dir)
    case DeleteInline(root, rel) => pathRequest(Tag.Delete, root, rel)
  }

  def encode(reply: CoordinatorReply): Array[Byte] = reply match {
    case Done => new Writer(Tag.Done, 0).done()
    case NotInline => new Writer(Tag.NotInline, 0).done()
    case IsInline => new Writer(Tag.IsInline, 0).done()
    case InlineBytes(bytes) =>
      val w = new Writer(Tag.Bytes, 4 + bytes.length)
      w.bytes(bytes)
      w.done()
    case InPack(pack, offset, length, crc) =>
      val p = utf8(pack)
      val w = new Writer(Tag.InPack, 4 + p.length + 16)
      w.string(p); w.long(offset); w.int(length); w.int(crc)
      w.done()
    case Listing(files) =>
      val names = files.map { case (rel, _) => utf8(rel) }
      val w = new Writer(Tag.Listing, 4 + names.map(_.length + 12).sum)
      w.int(files.size)
      names.zip(files).foreach { case (n, (_, len)) => w.string(n); w.long(len) }
      w.done()
    case Failed(kind, message, file) =>
      val (m, f) = (utf8(truncate(message)), utf8(file))
      val w = new Writer(Tag.Failed, 1 + 8 + m.length + f.length)
      w.byte(kind.code); w.string(m); w.string(f)
      w.done()
  }

  /** A request, or a [[MalformedMessageException]] saying why the bytes are not one. */
  def decodeRequest(bytes: Array[Byte], maxBytes: Int = MaxMessageBytes): CoordinatorRequest = {
    val r = new Reader(bytes, maxBytes)
    val request = r.tag match {
      case Tag.Put =>
        PutInline(root = r.string(), relPath = r.string(), bytes = r.bytes(), storage = r.string(),
          persistent = r.bool(), keepInHeap = r.bool())
      case Tag.Get => GetInline(r.string(), r.string())
      case Tag.Exists => ExistsInline(r.string(), r.string())
      case Tag.List => ListInline(r.string(), r.string())
      case Tag.Delete => DeleteInline(r.string(), r.string())
      case other => throw r.malformed(s"unknown request tag $other")
    }
    r.end()
    request
  }

  /** A reply, or a [[MalformedMessageException]] saying why the bytes are not one. */
  def decodeReply(bytes: Array[Byte], maxBytes: Int = MaxMessageBytes): CoordinatorReply = {
    val r = new Reader(bytes, maxBytes)
    val reply = r.tag match {
      case Tag.Done => Done
      case Tag.NotInline => NotInline
      case Tag.IsInline => IsInline
      case Tag.Bytes => InlineBytes(r.bytes())
      case Tag.InPack => InPack(r.string(), r.long(), r.int(), r.int())
      case Tag.Listing =>
        // Each entry takes at least 12 bytes: a count beyond that is a lie, not an allocation.
        val n = r.count(minEntryBytes = 12)
        Listing(Vector.fill(n)((r.string(), r.long())))
      case Tag.Failed =>
        val code = r.byte()
        val kind = FailureKind.all.find(_.code == code).getOrElse(throw r.malformed(s"unknown error kind $code"))
        Failed(kind, r.string(), r.string())
      case other => throw r.malformed(s"unknown reply tag $other")
    }
    r.end()
    reply
  }

  private def pathRequest(tag: Byte, root: String, rel: String): Array[Byte] = {
    val (r, p) = (utf8(root), utf8(rel))
    val w = new Writer(tag, 8 + r.length + p.length)
    w.string(r); w.string(p)
    w.done()
  }

  private def utf8(s: String): Array[Byte] = {
    val b = s.getBytes(StandardCharsets.UTF_8)
    if (b.length > MaxStringBytes) {
      throw new MalformedMessageException(s"A checkpoint coordinator message cannot carry a string of " +
        s"${b.length} bytes (at most $MaxStringBytes): ${s.take(200)}...")
    }
    b
  }

  /** Error messages are for people: keep them within a string's limit. */
  private def truncate(message: String): String =
    if (message.length <= MaxStringBytes / 4) message else message.take(MaxStringBytes / 4) + "..."

  /** Writes one message into an array of exactly its size. */
  private final class Writer(tag: Byte, bodySize: Int) {
    private val buf = ByteBuffer.allocate(HeaderSize + bodySize)
    buf.put(Magic0).put(Magic1).put(Magic2).put(FormatVersion).put(tag)

    def byte(b: Byte): Unit = buf.put(b)
    def bool(b: Boolean): Unit = buf.put(if (b) 1.toByte else 0.toByte)
    def int(n: Int): Unit = buf.putInt(n)
    def long(n: Long): Unit = buf.putLong(n)
    def string(utf8: Array[Byte]): Unit = bytes(utf8)
    def bytes(b: Array[Byte]): Unit = { buf.putInt(b.length); buf.put(b) }
    def done(): Array[Byte] = {
      assert(!buf.hasRemaining, s"message sized ${buf.capacity()}, written ${buf.position()}")
      buf.array()
    }
  }

  /** Reads one message, checking each length against what is left before trusting it. */
  private final class Reader(message: Array[Byte], maxBytes: Int) {
    private val buf = ByteBuffer.wrap(message)

    def malformed(what: String): MalformedMessageException = new MalformedMessageException(
      s"Refused a malformed checkpoint coordinator message (${message.length} bytes): $what. The " +
        "executors and the driver must run the same spark-checkpoint-storage jar (spark.jars).")

    val tag: Byte = {
      if (message.length > maxBytes) {
        throw new MalformedMessageException(s"Refused a checkpoint coordinator message of " +
          s"${message.length} bytes: at most $maxBytes are accepted. A state file that large " +
          "does not belong in the driver: use the FileSystemCheckpointStorage (or lower " +
          "spark.sql.streaming.checkpointStorage.maxStateSize).")
      }
      if (message.length < HeaderSize || message(0) != Magic0 || message(1) != Magic1 || message(2) != Magic2) {
        throw malformed("it does not start with the message header")
      }
      if (message(3) != FormatVersion) {
        throw malformed(s"format version ${message(3)}, this jar speaks version $FormatVersion")
      }
      buf.position(HeaderSize)
      message(4)
    }

    private def need(n: Int, what: String): Unit =
      if (buf.remaining < n) throw malformed(s"$what needs $n bytes, ${buf.remaining} are left")

    def byte(): Byte = { need(1, "a byte"); buf.get() }
    def bool(): Boolean = byte() match {
      case 0 => false
      case 1 => true
      case b => throw malformed(s"a boolean of value $b")
    }
    def int(): Int = { need(4, "an int"); buf.getInt() }
    def long(): Long = { need(8, "a long"); buf.getLong() }

    private def length(max: Int, what: String): Int = {
      val n = int()
      if (n < 0 || n > max) throw malformed(s"$what of length $n (at most $max)")
      need(n, what)
      n
    }

    def bytes(): Array[Byte] = {
      val out = new Array[Byte](length(Int.MaxValue, "a byte array"))
      buf.get(out)
      out
    }

    def string(): String = {
      val n = length(MaxStringBytes, "a string")
      val slice = buf.slice()
      slice.limit(n)
      buf.position(buf.position() + n)
      try StandardCharsets.UTF_8.newDecoder().decode(slice).toString catch {
        case e: CharacterCodingException => throw malformed(s"a string that is not UTF-8 ($e)")
      }
    }

    def count(minEntryBytes: Int): Int = {
      val n = int()
      if (n < 0 || n.toLong * minEntryBytes > buf.remaining) throw malformed(s"a count of $n entries")
      n
    }

    def end(): Unit = if (buf.hasRemaining) throw malformed(s"${buf.remaining} bytes after its last field")
  }
}
