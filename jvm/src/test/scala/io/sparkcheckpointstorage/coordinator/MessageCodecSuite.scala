package io.sparkcheckpointstorage.coordinator

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

/** The coordinator's wire format: every message round-trips, anything else is refused clearly. */
class MessageCodecSuite extends AnyFunSuite {
  private val put = PutInline("file:/tmp/cp-é", "state/0/1/2.heap-delta", Array[Byte](1, 2, 3),
    "FileSystemCheckpointStorage (...)", persistent = true, keepInHeap = false)

  private val requests: Seq[CoordinatorRequest] = Seq(put,
    put.copy(bytes = Array.emptyByteArray, persistent = false, keepInHeap = true),
    GetInline("r", "state/0/0/1.heap-delta"), ExistsInline("r", "x"), ListInline("r", "state/0/0"),
    DeleteInline("r", ""), WritePending("r", "state/0/1/3.heap-delta", "w-1", "7", 1L << 31),
    OwnFileWritten("r", "state/0/1/3.heap-delta", 20481L), FromMaintenance(OwnFileWritten("r", "state/0/1/2.heap-snapshot", 0L)),
    WriteDone("r", "state/0/1/3.heap-delta", "w-1", ""), WriteDone("r", "x", "w-2", "No space left on device"),
    FromMaintenance(put.copy(relPath = "state/0/1/4.heap-snapshot")), FromMaintenance(ListInline("r", "state/0/1")),
    FromMaintenance(DeleteInline("r", "state/0/1/1.heap-delta")), ListStore("r", "state/0/1"),
    FromMaintenance(ListStore("r", "state/0/1/left-keyToNumValues")),
    StageTaskDone("r", 1L << 40, 17, 3, 200), AwaitStageEnd("r", Long.MaxValue))

  private val replies: Seq[CoordinatorReply] = Seq(Done, NotInline, IsInline,
    InlineBytes(Array.tabulate[Byte](1000)(_.toByte)), InPack("file:/cp/state-packs/3.pack", 1L << 33, 77, -5),
    Listing(Nil), Listing(Seq("state/0/0/1.heap-delta" -> 10L, "state/0/0/2.heap-delta" -> 0L)),
    StoreListing(Nil, None), StoreListing(Seq("state/0/0/1.heap-delta" -> 10L), Some(Nil)),
    StoreListing(Nil, Some(Seq("7.heap-snapshot" -> (1L << 32), "_metadata" -> -1L))), StageEndPending(42L)) ++
    FailureKind.all.map(k => Failed(k, s"message of $k", "file:/cp/state-packs/1.pack"))

  /** Case classes holding arrays compare them by reference: compare their content. */
  private def same(a: Any, b: Any): Boolean = (a, b) match {
    case (x: PutInline, y: PutInline) => x.copy(bytes = null) == y.copy(bytes = null) && x.bytes.sameElements(y.bytes)
    case (FromMaintenance(x), FromMaintenance(y)) => same(x, y)
    case (InlineBytes(x), InlineBytes(y)) => x.sameElements(y)
    case _ => a == b
  }

  private def refused(bytes: Array[Byte], maxBytes: Int = MessageCodec.MaxMessageBytes): String = {
    val e = intercept[MalformedMessageException](MessageCodec.decodeRequest(bytes, maxBytes))
    assert(e.getMessage.startsWith("Refused"), e.getMessage)
    e.getMessage
  }

  test("every request and reply survives encoding and decoding") {
    requests.foreach(r => assert(same(MessageCodec.decodeRequest(MessageCodec.encode(r)), r), r))
    replies.foreach(r => assert(same(MessageCodec.decodeReply(MessageCodec.encode(r)), r), r))
  }

  test("a message cut anywhere is refused as malformed, never half-read") {
    (requests.map(MessageCodec.encode) ++ Seq(MessageCodec.encode(put))).foreach { whole =>
      (0 until whole.length).foreach(n => refused(whole.take(n)))
    }
    replies.map(MessageCodec.encode).foreach { whole =>
      (0 until whole.length).foreach { n =>
        intercept[MalformedMessageException](MessageCodec.decodeReply(whole.take(n)))
      }
    }
  }

  test("trailing bytes, another format version, an unknown tag or a foreign header are refused") {
    val whole = MessageCodec.encode(GetInline("r", "x"))
    assert(refused(whole :+ 0.toByte).contains("1 bytes after its last field"))
    val otherVersion = whole.clone(); otherVersion(3) = 1
    assert(refused(otherVersion).contains(s"format version 1, this jar speaks version ${MessageCodec.FormatVersion}"))
    val unknownTag = whole.clone(); unknownTag(4) = 99
    assert(refused(unknownTag).contains("unknown request tag 99"))
    assert(refused("not a message".getBytes(UTF_8)).contains("does not start with the message header"))
    // A Java-serialized object is not a message either: nothing is deserialized.
    val javaSerialized = {
      val out = new java.io.ByteArrayOutputStream()
      new java.io.ObjectOutputStream(out).writeObject(GetInline("r", "x").toString)
      out.toByteArray
    }
    assert(refused(javaSerialized).contains("does not start with the message header"))
    // A reply is not a request.
    assert(refused(MessageCodec.encode(Done)).contains("unknown request tag 16"))
    // Maintenance marks a task's request, never another mark, nor a batch.
    val twice = MessageCodec.encode(FromMaintenance(GetInline("r", "x")))
    val marked = twice.take(5) ++ ByteBuffer.allocate(4).putInt(twice.length).array() ++ twice
    assert(refused(marked).contains("a maintenance request inside another"))
    val batch = MessageCodec.encodeBatch(Seq(MessageCodec.encode(GetInline("r", "x"))))
    assert(refused(twice.take(5) ++ ByteBuffer.allocate(4).putInt(batch.length).array() ++ batch)
      .contains("unknown request tag 6"))
  }

  test("lengths are checked against what is left before anything is allocated") {
    val header = MessageCodec.encode(GetInline("", "")).take(5)
    def body(f: ByteBuffer => Unit): Array[Byte] = {
      val b = ByteBuffer.allocate(64); f(b)
      header ++ b.array().take(b.position())
    }
    assert(refused(body(_.putInt(-1))).contains("a string of length -1"))
    assert(refused(body(_.putInt(Int.MaxValue))).contains(s"a string of length ${Int.MaxValue} (at most 65536)"))
    assert(refused(body(_.putInt(40).put(Array.fill[Byte](8)(65)))).contains("a string needs 40 bytes, 8 are left"))
    assert(refused(body(_.putInt(2).put(Array[Byte](-1, -2)))).contains("not UTF-8"))
    // A put whose state bytes claim 2 GiB in a message of a few bytes.
    val putHeader = MessageCodec.encode(put).take(5)
    val lie = ByteBuffer.allocate(32).putInt(1).put(65.toByte).putInt(1).put(66.toByte).putInt(Int.MaxValue)
    assert(refused(putHeader ++ lie.array().take(lie.position())).contains(s"a byte array needs ${Int.MaxValue} bytes"))
    // A boolean that is neither 0 nor 1.
    val encoded = MessageCodec.encode(put)
    encoded(encoded.length - 1) = 7
    assert(refused(encoded).contains("a boolean of value 7"))
  }

  test("replies are checked the same way: a listing count that cannot fit, an unknown error kind") {
    val listing = MessageCodec.encode(Listing(Nil))
    val lie = listing.take(5) ++ ByteBuffer.allocate(4).putInt(1000000).array()
    assert(intercept[MalformedMessageException](MessageCodec.decodeReply(lie)).getMessage
      .contains("a count of 1000000 entries"))
    val failed = MessageCodec.encode(Failed(FailureKind.Io, "m"))
    failed(5) = 42
    assert(intercept[MalformedMessageException](MessageCodec.decodeReply(failed)).getMessage
      .contains("unknown error kind 42"))
  }

  test("a batch of requests and its replies survive encoding, in order; cut anywhere they are refused") {
    val batch = MessageCodec.encodeBatch(requests.map(MessageCodec.encode))
    assert(MessageCodec.isBatch(batch) && !MessageCodec.isBatch(MessageCodec.encode(put)))
    MessageCodec.decodeBatch(batch).zip(requests).foreach { case (a, b) => assert(same(a, b), b) }
    assert(MessageCodec.decodeBatch(batch).size == requests.size)
    val answers = MessageCodec.encodeReplies(replies)
    val decoded = MessageCodec.decodeReplies(answers, expected = replies.size)
    assert(decoded.size == replies.size && decoded.zip(replies).forall { case (a, b) => same(a, b) })
    (0 until batch.length).foreach { n =>
      intercept[MalformedMessageException](MessageCodec.decodeBatch(batch.take(n)))
    }
    (0 until answers.length).foreach { n =>
      intercept[MalformedMessageException](MessageCodec.decodeReplies(answers.take(n), replies.size))
    }
  }

  test("a batch inside a batch, a count that lies or replies that do not match their batch are refused") {
    val inner = MessageCodec.encodeBatch(Seq(MessageCodec.encode(put)))
    val nested = MessageCodec.encodeBatch(Seq(inner))
    assert(intercept[MalformedMessageException](MessageCodec.decodeBatch(nested)).getMessage
      .contains("a batch inside a request batch"))
    val lie = MessageCodec.encodeBatch(Nil)
    ByteBuffer.wrap(lie).putInt(5, 1 << 30)
    assert(intercept[MalformedMessageException](MessageCodec.decodeBatch(lie)).getMessage
      .contains(s"a count of ${1 << 30} entries"))
    val two = MessageCodec.encodeReplies(Seq(Done, Done))
    assert(intercept[MalformedMessageException](MessageCodec.decodeReplies(two, expected = 3)).getMessage
      .contains("2 replies to a batch of 3 requests"))
    assert(intercept[MalformedMessageException](MessageCodec.decodeBatch(MessageCodec.encode(put))).getMessage
      .contains("where a request batch was expected"))
    // A single refusal answers the whole batch: every request gets it.
    val refusal = Failed(FailureKind.MalformedMessage, "Refused")
    assert(MessageCodec.decodeReplies(MessageCodec.encode(refusal), expected = 3) == Seq.fill(3)(refusal))
  }

  test("an oversized message is refused naming the limit and what to use instead") {
    val message = refused(MessageCodec.encode(put.copy(bytes = new Array[Byte](2000))), maxBytes = 1024)
    assert(message.contains("at most 1024 are accepted") && message.contains("FileSystemCheckpointStorage"), message)
  }

  test("the endpoint answers garbage with a refusal of its kind and keeps serving") {
    val endpoint = new CoordinatorEndpoint(new CheckpointCoordinator(new Configuration(), Long.MaxValue), 4096)
    def ask(message: AnyRef): CoordinatorReply =
      MessageCodec.decodeReply(endpoint.receive(message).asInstanceOf[Array[Byte]])
    Seq[AnyRef]("a string", null, Array[Byte](1, 2, 3), MessageCodec.encode(put.copy(bytes = new Array[Byte](5000))))
      .foreach { garbage =>
        ask(garbage) match {
          case Failed(FailureKind.MalformedMessage, message, _) => assert(message.startsWith("Refused"), message)
          case other => fail(s"$garbage answered with $other")
        }
      }
    assert(ask(MessageCodec.encode(GetInline("file:/nowhere", "state/0/0/1.heap-delta"))) == NotInline)
  }

  test("an error keeps its kind across the RPC: the asking side raises the same exception class") {
    import io.sparkcheckpointstorage.packs.CorruptPackException
    import io.sparkcheckpointstorage.storage.{CorruptCheckpointException, StateSizeLimitException}
    val corrupt = CorruptPackException("file:/cp/state-packs/2.pack", "its index cannot be read")
    val across = CoordinatorFailures.toException(
      MessageCodec.decodeReply(MessageCodec.encode(CoordinatorFailures.toReply(corrupt))).asInstanceOf[Failed])
    across match {
      case c: CorruptPackException =>
        assert(c.getMessage == corrupt.getMessage && c.file == "file:/cp/state-packs/2.pack")
        assert(c.isInstanceOf[CorruptCheckpointException])
      case other => fail(s"a corrupt pack crossed the RPC as $other")
    }
    def kindOf(e: Exception): Class[_] = CoordinatorFailures.toException(CoordinatorFailures.toReply(e)).getClass
    assert(kindOf(new StateSizeLimitException("x")) == classOf[StateSizeLimitException])
    assert(kindOf(new IllegalStateException("x")) == classOf[IllegalStateException])
    assert(kindOf(new IllegalArgumentException("x")) == classOf[IllegalArgumentException])
    assert(kindOf(new java.io.IOException("x")) == classOf[java.io.IOException])
  }
}
