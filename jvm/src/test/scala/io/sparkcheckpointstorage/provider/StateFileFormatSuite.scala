package io.sparkcheckpointstorage.provider

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataOutputStream}
import java.util.zip.CRC32

import scala.collection.mutable.ArrayBuffer

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf
import org.apache.spark.checkpointstorage.SparkInternals

import io.sparkcheckpointstorage.provider.StateRows._

class StateFileFormatSuite extends AnyFunSuite {
  private val conf = new SparkConf()
  private val file = "0/0/7.heap-delta"
  private val layout = CompactRowMap.Layout(seed = 12345, slots = 1024)

  private def write(codec: String)(body: StateFileFormat.Writer => Unit): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val w = new StateFileFormat.Writer(out, StateFileKind.Delta, 7, codec, conf, layout)
    body(w)
    w.finish()
    out.toByteArray
  }

  /** Every record of `bytes`, in order: (key, Some(value)) for a put, (key, None) for a removal. */
  private def read(bytes: Array[Byte], keyFields: Int = 2): Seq[(Seq[Byte], Option[Seq[Byte]])] = {
    val records = ArrayBuffer.empty[(Seq[Byte], Option[Seq[Byte]])]
    val n = StateFileFormat.read(new ByteArrayInputStream(bytes), file, StateFileKind.Delta, 7,
      keyFields, 1, conf)(
      (k, v) => records += ((k.getBytes.toSeq, Some(v.getBytes.toSeq))),
      k => records += ((k.getBytes.toSeq, None)))
    assert(n == records.size)
    records.toSeq
  }

  private def corruptMessage(bytes: Array[Byte]): String =
    intercept[CorruptStateFileException](read(bytes)).getMessage

  /** A file whose decompressed body is `raw` followed by a correct trailer for `records`. */
  private def handMade(raw: Array[Byte], records: Long, crcDelta: Long = 0,
      header: Array[Byte] = StateFileFormat.header(StateFileKind.Delta, 7, "lz4", layout)): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    out.write(header)
    val body = new DataOutputStream(SparkInternals.compressionCodec(conf, "lz4").compressedOutputStream(out))
    body.write(raw)
    val crc = new CRC32()
    crc.update(raw)
    body.writeLong(records)
    body.writeLong(crc.getValue + crcDelta)
    body.close()
    out.toByteArray
  }

  test("records of every size, across buffer boundaries and larger than the buffer, read back in order") {
    for (codec <- Seq("lz4", "zstd")) {
      val rnd = new scala.util.Random(7)
      val expected = (1 to 20000).map { i =>
        val k = key("k" * (1 + rnd.nextInt(40)) + i, i)
        // A few values far larger than the reader's 64 KiB buffer.
        val v = if (i % 5000 == 0) {
          key("v" * (300 * 1024 + i), i)
        } else value(i.toLong)
        (k, if (i % 7 == 0) None else Some(v))
      }
      val bytes = write(codec) { w =>
        expected.foreach {
          case (k, Some(v)) => w.put(k, v)
          case (k, None) => w.remove(k)
        }
      }
      val got = read(bytes)
      assert(got.size == expected.size, codec)
      expected.zip(got).foreach { case ((k, v), (gk, gv)) =>
        assert(gk == k.getBytes.toSeq && gv == v.map(_.getBytes.toSeq), codec)
      }
    }
  }

  test("an empty state file reads as no records") {
    assert(read(write("lz4")(_ => ())).isEmpty)
  }

  test("a truncated file fails naming the file") {
    val bytes = write("lz4") { w => (1 to 5000).foreach(i => w.put(key("k", i), value(i))) }
    val message = corruptMessage(java.util.Arrays.copyOf(bytes, bytes.length - 40))
    assert(message.contains(s"State file $file is corrupt or truncated"), message)
  }

  test("a key length beyond the end of the file fails as truncated, without allocating it") {
    val raw = new ByteArrayOutputStream()
    val d = new DataOutputStream(raw)
    d.writeInt(Int.MaxValue - 100) // claims a 2 GiB key
    d.write(new Array[Byte](100))
    val message = corruptMessage(handMade(raw.toByteArray, 1))
    assert(message.contains("it ends after 0 records, before its trailer"), message)
  }

  test("negative lengths, a wrong record count and a wrong checksum are each named") {
    def raw(f: DataOutputStream => Unit): Array[Byte] = {
      val b = new ByteArrayOutputStream()
      val d = new DataOutputStream(b)
      f(d)
      d.flush()
      b.toByteArray
    }
    val k = key("a", 1).getBytes
    val v = value(1).getBytes
    assert(corruptMessage(handMade(raw(_.writeInt(-5)), 0)).contains("record 1 has key length -5"))
    assert(corruptMessage(handMade(raw { d => d.writeInt(k.length); d.write(k); d.writeInt(-2) }, 0))
      .contains("record 1 has value length -2"))
    val good = raw { d => d.writeInt(k.length); d.write(k); d.writeInt(v.length); d.write(v); d.writeInt(-1) }
    assert(read(handMade(good, 1)).size == 1)
    assert(corruptMessage(handMade(good, 2)).contains("it says it holds 2 records but 1 were read"))
    assert(corruptMessage(handMade(good, 1, crcDelta = 1)).contains("its checksum does not match its content"))
  }

  test("bytes after the trailer are refused") {
    val k = key("a", 1).getBytes
    val raw = new ByteArrayOutputStream()
    val d = new DataOutputStream(raw)
    d.writeInt(k.length); d.write(k); d.writeInt(-1); d.writeInt(-1)
    d.flush()
    val body = raw.toByteArray
    // A correct trailer, then 3 more bytes inside the compressed stream.
    val out = new ByteArrayOutputStream()
    out.write(StateFileFormat.header(StateFileKind.Delta, 7, "lz4", layout))
    val c = new DataOutputStream(SparkInternals.compressionCodec(conf, "lz4").compressedOutputStream(out))
    c.write(body)
    val crc = new CRC32()
    crc.update(body)
    c.writeLong(1)
    c.writeLong(crc.getValue)
    c.write(Array[Byte](1, 2, 3))
    c.close()
    assert(corruptMessage(out.toByteArray).contains("it has data after its trailer"))
  }

  test("the writer's index layout is handed over before the first record") {
    val events = ArrayBuffer.empty[String]
    val bytes = write("lz4") { w => w.put(key("a", 1), value(1)); w.remove(key("b", 2)) }
    StateFileFormat.read(new ByteArrayInputStream(bytes), file, StateFileKind.Delta, 7, 2, 1, conf)(
      (k, _) => events += s"put ${keyOf(k)}",
      k => events += s"remove ${keyOf(k)}",
      l => events += s"layout $l")
    assert(events == Seq(s"layout $layout", "put (a,1)", "remove (b,2)"))
  }

  test("a damaged header is refused before its index size is used") {
    val bytes = write("lz4") { w => w.put(key("a", 1), value(1)) }
    val header = StateFileFormat.header(StateFileKind.Delta, 7, "lz4", layout)
    // Index slots 1024 -> 1 << 30: a size a reader must not allocate on the header's word.
    val damaged = bytes.clone()
    Seq(0x40, 0, 0, 0).zipWithIndex.foreach { case (b, i) => damaged(header.length - 8 + i) = b.toByte }
    var layouts = 0
    val message = intercept[CorruptStateFileException] {
      StateFileFormat.read(new ByteArrayInputStream(damaged), file, StateFileKind.Delta, 7, 2, 1, conf)(
        (_, _) => (), _ => (), _ => layouts += 1)
    }.getMessage
    assert(message.contains("its header checksum does not match its header") && layouts == 0, message)
    val invalid = handMade(Array[Byte](-1, -1, -1, -1), 0,
      header = StateFileFormat.header(StateFileKind.Delta, 7, "lz4", CompactRowMap.Layout(1, 1000)))
    assert(corruptMessage(invalid).contains("its header gives an invalid index size 1000"))
  }
}
