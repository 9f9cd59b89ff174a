package io.sparkcheckpointstorage.provider

import java.io.{DataInputStream, DataOutputStream, EOFException, IOException, InputStream, OutputStream}
import java.nio.charset.StandardCharsets
import java.util.zip.CRC32

import org.apache.spark.unsafe.Platform

import org.apache.spark.SparkConf
import org.apache.spark.checkpointstorage.SparkInternals
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

import io.sparkcheckpointstorage.formats.FileFormat
import io.sparkcheckpointstorage.layout.StateFileNaming

/** The kind of a state file: the changes of one version, or the whole state at a version. */
sealed abstract class StateFileKind(val tag: Byte, val suffix: String)

object StateFileKind {
  case object Delta extends StateFileKind('D', StateFileNaming.HeapDelta)
  case object Snapshot extends StateFileKind('S', StateFileNaming.HeapSnapshot)
  val all: Seq[StateFileKind] = Seq(Delta, Snapshot)
}

/**
 * The encoding of our state files, one per version and partition.
 *
 * {{{
 *   header (plain):  magic "SCSHEAP\u0002" (the format version is its last byte), kind byte, version long, codec name (UTF),
 *                    index seed int, index slots int, CRC-32 of the header before it (int)
 *   body (codec):    records, each  keyLen int, key bytes, valueLen int (-1 = removed), value
 *                    then  -1 int, record count long, CRC-32 of everything before it
 * }}}
 *
 * The header lets a reader tell our files from another provider's and from a file of the
 * wrong version; the trailer catches truncation and corruption with any codec, since not
 * every Spark codec checksums its blocks. Records are in the slot order of the map they
 * came from, whose index layout the header records: a map rebuilt with that layout takes
 * them in one pass over its index (see [[CompactRowMap#prepareFor]]). The header has its
 * own checksum because the slot count is allocated before the body is read.
 */
object StateFileFormat {
  private val BufferSize = 64 * 1024
  private val LittleEndian = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN
  private val MagicPrefix: Array[Byte] = "SCSHEAP".getBytes(StandardCharsets.ISO_8859_1)
  /**
   * `SCSHEAP` and the format version ([[FileFormat.StateFile]]) as one byte. A later version
   * writes the oldest release that reads it (UTF) right after, so this one can name it.
   */
  val Magic: Array[Byte] = MagicPrefix :+ FileFormat.StateFile.current.toByte

  /** The header, its checksum included. */
  def header(kind: StateFileKind, version: Long, codecName: String, layout: CompactRowMap.Layout): Array[Byte] = {
    val bytes = new java.io.ByteArrayOutputStream()
    val crc = new CRC32()
    val out = new DataOutputStream(new java.util.zip.CheckedOutputStream(bytes, crc))
    out.write(Magic)
    out.writeByte(kind.tag)
    out.writeLong(version)
    out.writeUTF(codecName)
    out.writeInt(layout.seed)
    out.writeInt(layout.slots)
    out.writeInt(crc.getValue.toInt)
    out.flush()
    bytes.toByteArray
  }

  /** Writes a state file whose records come in the slot order of a map laid out as `layout`. */
  final class Writer(out: OutputStream, kind: StateFileKind, version: Long,
      codecName: String, sparkConf: SparkConf, layout: CompactRowMap.Layout) {
    out.write(header(kind, version, codecName, layout))
    // Records are laid out in one array and handed to the checksum and the codec a whole
    // array at a time: per-int writes through DataOutputStream and a checksum update per
    // field made encoding most of a commit's time.
    private val crc = new CRC32()
    private val body = SparkInternals.compressionCodec(sparkConf, codecName).compressedOutputStream(out)
    private val buf = new Array[Byte](BufferSize)
    private var used = 0
    private var records = 0L

    private def flushBuffer(): Unit = {
      if (used > 0) {
        crc.update(buf, 0, used)
        body.write(buf, 0, used)
        used = 0
      }
    }

    private def putInt(n: Int): Unit = {
      if (used + 4 > buf.length) flushBuffer()
      Platform.putInt(buf, Platform.BYTE_ARRAY_OFFSET + used, if (LittleEndian) Integer.reverseBytes(n) else n)
      used += 4
    }

    private def writeRow(row: UnsafeRow): Unit = {
      val len = row.getSizeInBytes
      putInt(len)
      if (used + len > buf.length) flushBuffer()
      if (len <= buf.length) {
        Platform.copyMemory(row.getBaseObject, row.getBaseOffset, buf, Platform.BYTE_ARRAY_OFFSET + used, len)
        used += len
      } else {
        val bytes = row.getBytes
        crc.update(bytes)
        body.write(bytes)
      }
    }

    def put(key: UnsafeRow, value: UnsafeRow): Unit = {
      writeRow(key)
      writeRow(value)
      records += 1
    }

    def remove(key: UnsafeRow): Unit = {
      writeRow(key)
      putInt(-1)
      records += 1
    }

    def recordCount: Long = records

    /** Writes the trailer and flushes the codec; the caller closes the underlying stream. */
    def finish(): Unit = {
      putInt(-1)
      flushBuffer()
      val trailer = new DataOutputStream(body)
      trailer.writeLong(records)
      trailer.writeLong(crc.getValue)
      trailer.flush()
      body.close()
    }
  }

  /**
   * Reads a state file, calling `onLayout` with the index layout of the map the records
   * came from (files of format 1 do not say), then `onPut` / `onRemove` for each record
   * with rows that are valid only during the call. Fails with [[CorruptStateFileException]]
   * naming `file`.
   */
  def read(in: InputStream, file: String, expectedKind: StateFileKind, expectedVersion: Long,
      keyNumFields: Int, valueNumFields: Int, sparkConf: SparkConf)(
      onPut: (UnsafeRow, UnsafeRow) => Unit, onRemove: UnsafeRow => Unit,
      onLayout: CompactRowMap.Layout => Unit = _ => ()): Long = {
    val codecName = readHeader(in, file, expectedKind, expectedVersion, onLayout)
    readBody(in, file, codecName, keyNumFields, valueNumFields, sparkConf, onPut, onRemove)
  }

  /** Checks the header, hands over the index layout it records, returns the codec name. */
  private def readHeader(in: InputStream, file: String, expectedKind: StateFileKind,
      expectedVersion: Long, onLayout: CompactRowMap.Layout => Unit): String = {
    // The header is checksummed as it is read: its slot count must be trusted before the
    // body's checksum can be checked.
    val headerCrc = new java.util.zip.CheckedInputStream(in, new CRC32())
    val header = new DataInputStream(headerCrc)
    val magic = new Array[Byte](Magic.length)
    try {
      header.readFully(magic)
      if (!magic.take(MagicPrefix.length).sameElements(MagicPrefix)) {
        throw new CorruptStateFileException(file, "it does not start with the spark-checkpoint-storage " +
          "header (written by another program?)")
      }
      FileFormat.StateFile.check(file, magic(MagicPrefix.length) & 0xff, Some(header.readUTF()))
      val kind = header.readByte()
      if (kind != expectedKind.tag) {
        throw new CorruptStateFileException(file, s"it is of kind '${kind.toChar}', expected '${expectedKind.tag.toChar}'")
      }
      val version = header.readLong()
      if (version != expectedVersion) {
        throw new CorruptStateFileException(file, s"it holds version $version, expected $expectedVersion")
      }
      val codecName = header.readUTF()
      val layout = CompactRowMap.Layout(header.readInt(), header.readInt())
      val computed = headerCrc.getChecksum.getValue.toInt
      if (header.readInt() != computed) {
        throw new CorruptStateFileException(file, "its header checksum does not match its header")
      }
      if (!CompactRowMap.Layout.isValidSlots(layout.slots)) {
        throw new CorruptStateFileException(file, s"its header gives an invalid index size ${layout.slots}")
      }
      onLayout(layout)
      codecName
    } catch {
      case e: EOFException => throw new CorruptStateFileException(file, "it is empty or shorter than its header", e)
    }
  }

  private def readBody(in: InputStream, file: String, codecName: String, keyNumFields: Int,
      valueNumFields: Int, sparkConf: SparkConf, onPut: (UnsafeRow, UnsafeRow) => Unit,
      onRemove: UnsafeRow => Unit): Long = {
    val body = try {
      SparkInternals.compressionCodec(sparkConf, codecName).compressedInputStream(in)
    } catch {
      case e: IOException => throw new CorruptStateFileException(file, s"its $codecName stream cannot be opened: $e", e)
    }
    val reader = new BodyReader(body)
    var records = 0L
    val key = new UnsafeRow(keyNumFields)
    val value = new UnsafeRow(valueNumFields)
    try {
      reader.ensure(4)
      var keyLen = reader.intAt(0)
      while (keyLen != -1) {
        if (keyLen < 0) throw new CorruptStateFileException(file, s"record ${records + 1} has key length $keyLen")
        // The whole record is made contiguous in the buffer before the rows point into it.
        reader.ensure(8L + keyLen)
        val valueLen = reader.intAt(4 + keyLen)
        if (valueLen < -1) {
          throw new CorruptStateFileException(file, s"record ${records + 1} has value length $valueLen")
        }
        val recordLen = 8L + keyLen + math.max(valueLen, 0)
        reader.ensure(recordLen + 4) // and the next record's key length (or the end mark)
        key.pointTo(reader.buffer, reader.address(4), keyLen)
        if (valueLen == -1) {
          onRemove(key)
        } else {
          value.pointTo(reader.buffer, reader.address(8 + keyLen), valueLen)
          onPut(key, value)
        }
        reader.skip(recordLen.toInt)
        records += 1
        keyLen = reader.intAt(0)
      }
      reader.skip(4)
      val expectedCrc = reader.checksumOfConsumed()
      reader.ensure(16)
      val count = reader.longAt(0)
      val storedCrc = reader.longAt(8)
      reader.skip(16)
      if (count != records) {
        throw new CorruptStateFileException(file, s"it says it holds $count records but $records were read")
      }
      if (storedCrc != expectedCrc) {
        throw new CorruptStateFileException(file, "its checksum does not match its content")
      }
      // Reading to the end makes the codec check its end mark too.
      if (!reader.atEnd()) throw new CorruptStateFileException(file, "it has data after its trailer")
    } catch {
      case e: CorruptStateFileException => throw e
      case e: EOFException =>
        throw new CorruptStateFileException(file, s"it ends after $records records, before its trailer", e)
      case e: IOException =>
        throw new CorruptStateFileException(file, s"reading record ${records + 1} failed: $e", e)
      case e: RuntimeException =>
        // Codecs signal corrupt blocks with runtime exceptions (e.g. LZ4Exception).
        throw new CorruptStateFileException(file, s"reading record ${records + 1} failed: $e", e)
    } finally {
      body.close()
    }
    records
  }

  /**
   * The decompressed body of a state file, read a buffer at a time: records are parsed in
   * place and checksummed a whole buffer at a time. Reading through a `DataInputStream`
   * (a synchronized call per int and per row, a checksum update per field) made decoding
   * most of a restart's time. Offsets are relative to the first unconsumed byte.
   */
  private final class BodyReader(in: InputStream) {
    var buffer = new Array[Byte](BufferSize)
    private var pos = 0
    private var limit = 0
    private var checksummedTo = 0
    private val crc = new CRC32()

    /** Makes `n` bytes from the current position available; EOFException if the file ends first. */
    def ensure(n: Long): Unit = {
      if (limit - pos >= n) return
      if (n > Int.MaxValue - 64) throw new IOException(s"a record of $n bytes")
      crc.update(buffer, checksummedTo, pos - checksummedTo)
      val needed = n.toInt
      System.arraycopy(buffer, pos, buffer, 0, limit - pos)
      limit -= pos
      pos = 0
      checksummedTo = 0
      while (limit < needed) {
        if (limit == buffer.length) {
          // Grown as bytes arrive, so a corrupt length fails at the end of the file rather
          // than allocating what it claims.
          buffer = java.util.Arrays.copyOf(buffer, math.min(needed.toLong, buffer.length * 2L).toInt)
        }
        val read = in.read(buffer, limit, buffer.length - limit)
        if (read < 0) throw new EOFException()
        limit += read
      }
    }

    def address(offset: Int): Long = Platform.BYTE_ARRAY_OFFSET + pos + offset

    def intAt(offset: Int): Int = {
      val n = Platform.getInt(buffer, address(offset))
      if (LittleEndian) Integer.reverseBytes(n) else n
    }

    def longAt(offset: Int): Long = {
      val n = Platform.getLong(buffer, address(offset))
      if (LittleEndian) java.lang.Long.reverseBytes(n) else n
    }

    def skip(n: Int): Unit = pos += n

    /** The CRC-32 of every byte consumed so far. */
    def checksumOfConsumed(): Long = {
      crc.update(buffer, checksummedTo, pos - checksummedTo)
      checksummedTo = pos
      crc.getValue
    }

    def atEnd(): Boolean = pos == limit && in.read() == -1
  }
}
