package io.sparkcheckpointstorage.coordinator

import java.nio.ByteBuffer
import java.nio.charset.{CharacterCodingException, StandardCharsets}

/**
 * The binary encoding of coordinator messages. Requests and replies travel as plain byte
 * arrays through Spark's plugin RPC; this codec, not Java serialization, turns them into
 * messages: the payload bytes are never Java-deserialized, and a message costs one array and
 * a few field copies. (Spark's RPC layer Java-deserializes the envelope carrying the array,
 * as it does every RPC message, under Spark's own `spark.authenticate` and
 * `spark.network.crypto.*` settings.)
 *
 * {{{
 *   magic "SCM", format version byte, tag byte, then the message's fields:
 *     string   int length, UTF-8 bytes (at most MaxStringBytes)
 *     bytes    int length, bytes
 *     boolean  byte 0 or 1
 *   nothing after the last field
 *
 *   a batch (tag Batch for requests, Replies for their replies): int count, then count
 *   whole messages, each as bytes; a batch inside a batch is refused
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
  val FormatVersion: Byte = 7
  private val HeaderSize = 5
  /** The longest path or message a message carries. */
  val MaxStringBytes: Int = 64 * 1024
  /** The largest message: a state file of up to 1 GiB plus its paths. */
  val MaxMessageBytes: Int = (1 << 30) + 4 * MaxStringBytes

  private object Tag {
    val Put: Byte = 1; val Get: Byte = 2; val Exists: Byte = 3; val List: Byte = 4; val Delete: Byte = 5
    val Batch: Byte = 6; val WritePending: Byte = 7; val WriteDone: Byte = 8; val Maintenance: Byte = 9
    val OwnFile: Byte = 10; val ListStore: Byte = 11; val StageTaskDone: Byte = 12; val AwaitStageEnd: Byte = 13
    val Done: Byte = 16; val NotInline: Byte = 17; val IsInline: Byte = 18; val Bytes: Byte = 19
    val InPack: Byte = 20; val Listing: Byte = 21; val Failed: Byte = 22; val Replies: Byte = 23
    val StoreListing: Byte = 24; val StageEndPending: Byte = 25
  }

  /** Several encoded requests as one message, answered by one [[encodeReplies]] message. */
  def encodeBatch(requests: Seq[Array[Byte]]): Array[Byte] = wrap(Tag.Batch, requests)

  /** The replies to a batch, in the order of its requests. */
  def encodeReplies(replies: Seq[CoordinatorReply]): Array[Byte] = wrap(Tag.Replies, replies.map(encode))

  /** Whether `bytes` claim to be a batch (decoding says whether they really are). */
  def isBatch(bytes: Array[Byte]): Boolean = claimedTag(bytes, 0, bytes.length) == Tag.Batch

  /** The tag byte of the `length` bytes from `from`, unchecked; 0 (no tag) when too short to hold one. */
  private def claimedTag(bytes: Array[Byte], from: Int, length: Int): Byte =
    if (length >= HeaderSize) bytes(from + 4) else 0

  /** The requests of a batch, or a [[MalformedMessageException]] saying why the bytes are not one. */
  def decodeBatch(bytes: Array[Byte], maxBytes: Int = MaxMessageBytes): Seq[CoordinatorRequest] =
    unwrap(bytes, maxBytes, Tag.Batch, "request batch")(readRequest)

  /**
   * The `expected` replies to a batch. A single [[Failed]] reply is the driver refusing the
   * whole batch: every request gets it.
   */
  def decodeReplies(bytes: Array[Byte], expected: Int, maxBytes: Int = MaxMessageBytes): Seq[CoordinatorReply] = {
    if (claimedTag(bytes, 0, bytes.length) == Tag.Failed) Seq.fill(expected)(decodeReply(bytes, maxBytes))
    else {
      val replies = unwrap(bytes, maxBytes, Tag.Replies, "reply batch")(readReply)
      if (replies.size != expected) {
        throw malformed(bytes.length, s"${replies.size} replies to a batch of $expected requests")
      }
      replies
    }
  }

  private def wrap(tag: Byte, messages: Seq[Array[Byte]]): Array[Byte] = {
    val size = 4 + messages.map(4L + _.length).sum
    if (size > MaxMessageBytes) {
      throw new IllegalArgumentException(s"A batch of ${messages.size} coordinator messages would take $size " +
        s"bytes, more than a message may ($MaxMessageBytes): send them in smaller batches.")
    }
    val w = new Writer(tag, size.toInt)
    w.int(messages.size)
    messages.foreach(w.bytes)
    w.done()
  }

  /** The messages of a batch, each read where it lies in `bytes` (no copy of the batch). */
  private def unwrap[T](bytes: Array[Byte], maxBytes: Int, tag: Byte, what: String)(read: Reader => T): Seq[T] = {
    val r = new Reader(bytes, 0, bytes.length, maxBytes)
    if (r.tag != tag) throw r.malformed(s"tag ${r.tag} where a $what was expected")
    val n = r.count(minEntryBytes = 4 + HeaderSize)
    val out = Vector.fill(n) {
      val (from, length) = r.skip("a message of the batch")
      val nested = claimedTag(bytes, from, length)
      if (nested == Tag.Batch || nested == Tag.Replies) {
        throw r.malformed(s"a batch inside a $what")
      }
      read(new Reader(bytes, from, length, maxBytes))
    }
    r.end()
    out
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
    case ListStore(root, dir) => pathRequest(Tag.ListStore, root, dir)
    case DeleteInline(root, rel) => pathRequest(Tag.Delete, root, rel)
    case OwnFileWritten(root, rel, bytes) =>
      val (r, p) = (utf8(root), utf8(rel))
      val w = new Writer(Tag.OwnFile, 4 + r.length + 4 + p.length + 8)
      w.string(r); w.string(p); w.long(bytes)
      w.done()
    case WritePending(root, rel, id, executor, bytes) =>
      val encoded = Seq(root, rel, id, executor).map(utf8)
      val w = new Writer(Tag.WritePending, encoded.map(4 + _.length).sum + 8)
      encoded.foreach(w.string); w.long(bytes)
      w.done()
    case WriteDone(root, rel, id, error) => strings(Tag.WriteDone, root, rel, id, truncate(error))
    case StageTaskDone(root, batchId, stageId, partitionId, numPartitions) =>
      val r = utf8(root)
      val w = new Writer(Tag.StageTaskDone, 4 + r.length + 8 + 12)
      w.string(r); w.long(batchId); w.int(stageId); w.int(partitionId); w.int(numPartitions)
      w.done()
    case AwaitStageEnd(root, id) =>
      val r = utf8(root)
      val w = new Writer(Tag.AwaitStageEnd, 4 + r.length + 8)
      w.string(r); w.long(id)
      w.done()
    case FromMaintenance(inner) =>
      val nested = encode(inner)
      val w = new Writer(Tag.Maintenance, 4 + nested.length)
      w.bytes(nested)
      w.done()
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
      w.files(names, files)
      w.done()
    case StoreListing(inline, onFileSystem) =>
      val inlineNames = inline.map { case (rel, _) => utf8(rel) }
      val ownNames = onFileSystem.toSeq.flatten.map { case (name, _) => utf8(name) }
      val w = new Writer(Tag.StoreListing, 4 + inlineNames.map(_.length + 12).sum + 1 +
        (if (onFileSystem.isDefined) 4 + ownNames.map(_.length + 12).sum else 0))
      w.files(inlineNames, inline)
      w.bool(onFileSystem.isDefined)
      onFileSystem.foreach(w.files(ownNames, _))
      w.done()
    case StageEndPending(id) =>
      val w = new Writer(Tag.StageEndPending, 8)
      w.long(id)
      w.done()
    case Failed(kind, message, file) =>
      val (m, f) = (utf8(truncate(message)), utf8(file))
      val w = new Writer(Tag.Failed, 1 + 8 + m.length + f.length)
      w.byte(kind.code); w.string(m); w.string(f)
      w.done()
  }

  /** A request, or a [[MalformedMessageException]] saying why the bytes are not one. */
  def decodeRequest(bytes: Array[Byte], maxBytes: Int = MaxMessageBytes): CoordinatorRequest =
    readRequest(new Reader(bytes, 0, bytes.length, maxBytes))

  private def readRequest(r: Reader): CoordinatorRequest = {
    val request = r.tag match {
      case Tag.Put =>
        PutInline(root = r.string(), relPath = r.string(), bytes = r.bytes(), storage = r.string(),
          persistent = r.bool(), keepInHeap = r.bool())
      case Tag.Get => GetInline(r.string(), r.string())
      case Tag.Exists => ExistsInline(r.string(), r.string())
      case Tag.List => ListInline(r.string(), r.string())
      case Tag.ListStore => ListStore(r.string(), r.string())
      case Tag.Delete => DeleteInline(r.string(), r.string())
      case Tag.OwnFile => OwnFileWritten(r.string(), r.string(), r.long())
      case Tag.WritePending => WritePending(r.string(), r.string(), r.string(), r.string(), r.long())
      case Tag.WriteDone => WriteDone(r.string(), r.string(), r.string(), r.string())
      case Tag.StageTaskDone => StageTaskDone(r.string(), r.long(), r.int(), r.int(), r.int())
      case Tag.AwaitStageEnd => AwaitStageEnd(r.string(), r.long())
      case Tag.Maintenance =>
        val inner = r.nested("the maintenance request")
        if (inner.tag == Tag.Maintenance) throw r.malformed("a maintenance request inside another")
        FromMaintenance(readRequest(inner))
      case other => throw r.malformed(s"unknown request tag $other")
    }
    r.end()
    request
  }

  /** A reply, or a [[MalformedMessageException]] saying why the bytes are not one. */
  def decodeReply(bytes: Array[Byte], maxBytes: Int = MaxMessageBytes): CoordinatorReply =
    readReply(new Reader(bytes, 0, bytes.length, maxBytes))

  private def readReply(r: Reader): CoordinatorReply = {
    val reply = r.tag match {
      case Tag.Done => Done
      case Tag.NotInline => NotInline
      case Tag.IsInline => IsInline
      case Tag.Bytes => InlineBytes(r.bytes())
      case Tag.InPack => InPack(r.string(), r.long(), r.int(), r.int())
      case Tag.StageEndPending => StageEndPending(r.long())
      case Tag.Listing => Listing(r.files())
      case Tag.StoreListing =>
        val inline = r.files()
        StoreListing(inline, if (r.bool()) Some(r.files()) else None)
      case Tag.Failed =>
        val code = r.byte()
        val kind = FailureKind.all.find(_.code == code).getOrElse(throw r.malformed(s"unknown error kind $code"))
        Failed(kind, r.string(), r.string())
      case other => throw r.malformed(s"unknown reply tag $other")
    }
    r.end()
    reply
  }

  private def pathRequest(tag: Byte, root: String, rel: String): Array[Byte] = strings(tag, root, rel)

  private def strings(tag: Byte, values: String*): Array[Byte] = {
    val encoded = values.map(utf8)
    val w = new Writer(tag, encoded.map(4 + _.length).sum)
    encoded.foreach(w.string)
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

  private def malformed(length: Int, what: String): MalformedMessageException = new MalformedMessageException(
    s"Refused a malformed checkpoint coordinator message ($length bytes): $what. The " +
      "executors and the driver must run the same spark-checkpoint-storage jar (spark.jars).")

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
    /** A listing: count, then each name (already UTF-8) and its length. */
    def files(names: Seq[Array[Byte]], files: Seq[(String, Long)]): Unit = {
      int(files.size)
      names.zip(files).foreach { case (n, (_, len)) => string(n); long(len) }
    }
    def done(): Array[Byte] = {
      assert(!buf.hasRemaining, s"message sized ${buf.capacity()}, written ${buf.position()}")
      buf.array()
    }
  }

  /**
   * Reads one message, the `size` bytes of `message` from `from`, checking each length
   * against what is left before trusting it.
   */
  private final class Reader(message: Array[Byte], from: Int, size: Int, maxBytes: Int) {
    private val buf = ByteBuffer.wrap(message, from, size).slice()

    def malformed(what: String): MalformedMessageException = MessageCodec.malformed(size, what)

    val tag: Byte = {
      if (size > maxBytes) {
        throw new MalformedMessageException(s"Refused a checkpoint coordinator message of " +
          s"$size bytes: at most $maxBytes are accepted. A state file that large " +
          "does not belong in the driver: use the FileSystemCheckpointStorage (or lower " +
          "spark.sql.streaming.checkpointStorage.maxStateSize).")
      }
      if (size < HeaderSize || message(from) != Magic0 || message(from + 1) != Magic1 ||
          message(from + 2) != Magic2) {
        throw malformed("it does not start with the message header")
      }
      if (message(from + 3) != FormatVersion) {
        throw malformed(s"format version ${message(from + 3)}, this jar speaks version $FormatVersion")
      }
      buf.position(HeaderSize)
      message(from + 4)
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

    /** Steps over a byte array: where it starts in the message's array, and its length. */
    def skip(what: String): (Int, Int) = {
      val n = length(Int.MaxValue, what)
      val at = from + buf.position()
      buf.position(buf.position() + n)
      (at, n)
    }

    /** The message held in a byte array field, read in place. */
    def nested(what: String): Reader = {
      val (at, n) = skip(what)
      new Reader(message, at, n, maxBytes)
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

    /** A listing's (name, length) entries. */
    def files(): Vector[(String, Long)] = {
      // Each entry takes at least 12 bytes: a count beyond that is a lie, not an allocation.
      val n = count(minEntryBytes = 12)
      Vector.fill(n)((string(), long()))
    }

    def end(): Unit = if (buf.hasRemaining) throw malformed(s"${buf.remaining} bytes after its last field")
  }
}
