package io.sparkcheckpointstorage.packs

import java.io.{DataInputStream, DataOutputStream, EOFException, IOException, OutputStream}
import java.nio.charset.StandardCharsets
import java.util.zip.CRC32

import io.sparkcheckpointstorage.formats.{FileFormat, UnsupportedFormatException}

/** One inline state file inside a pack. */
final case class PackEntry(relPath: String, offset: Long, length: Int, crc: Int)

/** What a pack records: the files it holds and the inline files deleted since the last pack. */
final case class PackIndex(batchId: Long, queryId: String, entries: Seq[PackEntry], deleted: Seq[String])

/**
 * The file that holds a batch's inline state files, written by the driver before the batch
 * commits (Flink: the `_metadata` file with `ByteStreamStateHandle`s inside).
 *
 * {{{
 *   "SCSPACK1" (the format version is its last character), batch id long, query id UTF
 *   the files' bytes, back to back
 *   index: count int, then per file: path relative to the checkpoint root UTF, offset long,
 *          length int, CRC-32 int; deleted count int, then paths UTF
 *   footer: index offset long, "SCSPACK1"
 * }}}
 *
 * Paths are relative to the checkpoint root, so a copied checkpoint (a savepoint) still reads.
 */
object StatePack {
  private val MagicPrefix = "SCSPACK"
  /**
   * `SCSPACK` and the format version ([[FileFormat.Pack]]) as one ASCII digit. A later version
   * writes the oldest release that reads it (UTF) right after, so this one can name it.
   */
  val Magic: Array[Byte] = s"$MagicPrefix${FileFormat.Pack.current}".getBytes(StandardCharsets.US_ASCII)
  private val FooterSize = 8 + Magic.length

  /**
   * A pack's file name: its sequence number in the checkpoint (1, 2, ...), not the batch it
   * was written in, which its index records.
   */
  def fileName(sequence: Long): String = s"$sequence.pack"

  private val Name = """^(\d+)\.pack$""".r
  /** The sequence number of a pack's file name; None for any other name. */
  def sequenceOf(fileName: String): Option[Long] = fileName match {
    case Name(n) => Some(n.toLong)
    case _ => None
  }

  private val Leftover = """^\.(\d+)\.pack\..+\.tmp$""".r

  /** The pack number of a temporary file a failed atomic write of a pack left behind. */
  def leftoverSeq(fileName: String): Option[Long] = fileName match {
    case Leftover(n) => Some(n.toLong)
    case _ => None
  }

  /** Writes a pack; returns its index (offsets in the written file). */
  def write(out: OutputStream, batchId: Long, queryId: String,
      files: Seq[(String, Array[Byte])], deleted: Seq[String]): PackIndex = {
    val data = new DataOutputStream(out)
    data.write(Magic)
    data.writeLong(batchId)
    data.writeUTF(queryId)
    var offset = data.size().toLong
    val entries = files.map { case (rel, bytes) =>
      data.write(bytes)
      val e = PackEntry(rel, offset, bytes.length, checksum(bytes))
      offset += bytes.length
      e
    }
    val indexOffset = offset
    data.writeInt(entries.size)
    entries.foreach { e =>
      data.writeUTF(e.relPath); data.writeLong(e.offset); data.writeInt(e.length); data.writeInt(e.crc)
    }
    data.writeInt(deleted.size)
    deleted.foreach(data.writeUTF)
    data.writeLong(indexOffset)
    data.write(Magic)
    data.flush()
    PackIndex(batchId, queryId, entries, deleted)
  }

  /** Reads a pack's index from its whole content (packs are small: inline files only). */
  def readIndex(bytes: Array[Byte], pack: String): PackIndex = {
    try {
      if (bytes.length >= Magic.length && new String(bytes, 0, MagicPrefix.length, StandardCharsets.US_ASCII) == MagicPrefix) {
        FileFormat.Pack.check(pack, bytes(MagicPrefix.length) - '0',
          Some(new DataInputStream(new java.io.ByteArrayInputStream(bytes, Magic.length, bytes.length)).readUTF()))
      }
      if (bytes.length < Magic.length + FooterSize ||
          !java.util.Arrays.equals(bytes.slice(0, Magic.length), Magic) ||
          !java.util.Arrays.equals(bytes.slice(bytes.length - Magic.length, bytes.length), Magic)) {
        throw CorruptPackException(pack, "it does not start and end with the pack header " +
          "(truncated, or not a pack)")
      }
      val head = new DataInputStream(new java.io.ByteArrayInputStream(bytes))
      head.skipBytes(Magic.length)
      val batchId = head.readLong()
      val queryId = head.readUTF()
      val indexOffset = java.nio.ByteBuffer.wrap(bytes, bytes.length - FooterSize, 8).getLong
      if (indexOffset < 0 || indexOffset > bytes.length - FooterSize) {
        throw CorruptPackException(pack, s"its index offset $indexOffset is out of range")
      }
      val in = new DataInputStream(new java.io.ByteArrayInputStream(bytes, indexOffset.toInt,
        bytes.length - FooterSize - indexOffset.toInt))
      val entries = (0 until in.readInt()).map { _ =>
        val e = PackEntry(in.readUTF(), in.readLong(), in.readInt(), in.readInt())
        if (e.offset < 0 || e.length < 0 || e.offset + e.length > indexOffset) {
          throw CorruptPackException(pack, s"entry ${e.relPath} lies outside the data section")
        }
        e
      }
      val deleted = (0 until in.readInt()).map(_ => in.readUTF())
      PackIndex(batchId, queryId, entries, deleted)
    } catch {
      case e @ (_: CorruptPackException | _: UnsupportedFormatException) => throw e
      case e @ (_: EOFException | _: IOException | _: RuntimeException) =>
        throw CorruptPackException(pack, s"its index cannot be read ($e)", e)
    }
  }

  /** The checksum an entry's bytes carry in a pack's index (CRC-32). */
  def checksum(bytes: Array[Byte]): Int = {
    val c = new CRC32()
    c.update(bytes)
    c.getValue.toInt
  }

  /** Checks and returns the bytes of one entry read from a pack. */
  def verify(bytes: Array[Byte], pack: String, relPath: String, crc: Int): Array[Byte] = {
    if (checksum(bytes) != crc) {
      throw CorruptPackException(pack, s"the bytes of $relPath do not match their checksum")
    }
    bytes
  }
}
