package io.sparkcheckpointstorage.packs

import java.io.{BufferedOutputStream, EOFException, FileNotFoundException}

import org.apache.commons.io.output.CountingOutputStream
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.layout.CheckpointPaths

/**
 * The packs of a checkpoint on its file system: where they live, and writing, reading and
 * verifying them. Packs are numbered from 1 without gaps under `<checkpoint>/state-packs/`;
 * only the oldest are ever deleted (by [[PackCleaner]]).
 */
object PackDirectory {
  val DirName: String = CheckpointPaths.Packs
  private val WriteBufferSize = 256 * 1024

  def dir(root: String): Path = new Path(root, DirName)

  def path(root: String, seq: Long): Path = new Path(dir(root), StatePack.fileName(seq))

  /** The sequence numbers of the packs of `root` on disk, ascending. */
  def sequences(root: String, conf: Configuration): Seq[Long] =
    FileSystemOperations.listNames(dir(root), conf).flatMap(StatePack.sequenceOf).sorted

  /**
   * Writes pack `seq` of `root` atomically, never over an existing pack (a second writer of
   * the same number fails instead of replacing durable state). Returns its path, index and size in bytes.
   */
  def write(root: String, seq: Long, batchId: Long, queryId: String,
      files: Seq[(String, Array[Byte])], deleted: Seq[String], conf: Configuration): (Path, PackIndex, Long) = {
    val target = path(root, seq)
    var index: PackIndex = null
    var length = 0L
    FileSystemOperations.writeAtomic(target, overwrite = false, conf) { out =>
      // Counted as written: the checkpoints tab shows the pack's size without asking the file
      // system for it (a HEAD per batch on an object store).
      val counted = new CountingOutputStream(out)
      // The index is many small fields: buffered, a pack is a few large writes, not a system
      // call per field.
      val buffered = new BufferedOutputStream(counted, WriteBufferSize)
      index = StatePack.write(buffered, batchId, queryId, files, deleted)
      buffered.flush()
      length = counted.getByteCount
    }
    (target, index, length)
  }

  /** The index of the pack at `path`, None when it is gone; fails naming it when unreadable. */
  def readIndex(path: Path, conf: Configuration): Option[PackIndex] =
    FileSystemOperations.readSmall(path, conf).map(StatePack.readIndex(_, path.toString))

  /**
   * The bytes of `relPath`, `length` bytes at `offset` of `pack`, checked against `crc`.
   * A pack deleted meanwhile (superseded by a running query) is a `FileNotFoundException`,
   * for the caller to ask again where the file is now; a short pack is corrupt.
   */
  def readEntry(pack: String, offset: Long, length: Int, crc: Int, relPath: String,
      conf: Configuration): Array[Byte] = {
    val bytes = try FileSystemOperations.readRange(new Path(pack), offset, length, conf) catch {
      case e: FileNotFoundException => throw e
      case e: EOFException => throw CorruptPackException(pack, s"it is truncated: $relPath " +
        s"($length bytes at offset $offset) lies past its end", e)
    }
    StatePack.verify(bytes, pack, relPath, crc)
  }
}
