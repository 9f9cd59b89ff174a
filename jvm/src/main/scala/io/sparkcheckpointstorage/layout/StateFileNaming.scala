package io.sparkcheckpointstorage.layout

import org.apache.spark.sql.checkpointstorage.shim.RocksDbFilesShim


/** What a state file's name says: its store version and whether it holds changes or a whole state. */
final case class VersionedName(version: Long, snapshot: Boolean)

/**
 * The names of state files in a store directory, ours and those of Spark's built-in
 * providers: versions, kinds, and which provider wrote a file.
 *
 * {{{
 *   <version>.heap-delta, <version>.heap-snapshot          HeapStateStoreProvider (ours)
 *   <version>.delta, <version>.snapshot                    HDFSBackedStateStoreProvider
 *   <version>[_<uuid>].changelog, <version>[_<uuid>].zip   RocksDBStateStoreProvider
 *   <file>.crc                                             Spark 4.1+'s checksum of <file>
 *   .<file>.crc                                            Hadoop's checksum of <file>
 * }}}
 */
object StateFileNaming {
  val HeapDelta = "heap-delta"
  val HeapSnapshot = "heap-snapshot"
  private val Ours = Seq(HeapDelta, HeapSnapshot)
  private val HdfsBacked = Seq("delta", "snapshot")
  private val RocksDbChangelog = "changelog"
  private val RocksDbZip = "zip"
  private def any(suffixes: Seq[String]): String = suffixes.mkString("(", "|", ")")

  private val OurFile = s"""^(\\d+)\\.${any(Ours)}$$""".r
  private val Versioned = s"""^(\\d+)(?:_[^.]+)?\\.${any(Ours ++ HdfsBacked :+ RocksDbChangelog :+ RocksDbZip)}$$""".r
  private val ForeignFile = s"""^\\d+(_[0-9a-f-]+)?\\.${any(HdfsBacked :+ RocksDbChangelog :+ RocksDbZip)}$$""".r
  private val ForeignProviders = Seq(
    s"""^\\d+\\.${any(HdfsBacked)}$$""".r -> "HDFSBackedStateStoreProvider (Spark's default)",
    s"""^\\d+(_[0-9a-f-]+)?\\.${any(Seq(RocksDbChangelog, RocksDbZip))}$$""".r -> "RocksDBStateStoreProvider")

  /**
   * State files whose providers read them back through the checkpoint file manager: ours, the
   * deltas and snapshots of Spark's HDFSBacked provider, RocksDB's changelogs, and the checksum
   * sidecars Spark 4.1+ writes next to any of them. Only these may be held inline (in the
   * driver's heap or a pack). RocksDB opens its snapshot zips of format version 1 (and its SST
   * files) through Hadoop's FileSystem, past the file manager: such a zip held inline would be
   * listed but not found by the next provider instance, so it, and any file of a provider not
   * named here, stays a file of its own (zips with a checkpoint id: see below).
   */
  private val ReadThroughFileManager =
    s"""^\\d+(_[0-9a-f-]+)?\\.${any(Ours ++ HdfsBacked :+ RocksDbChangelog)}(\\.crc)?$$""".r

  /**
   * RocksDB's snapshots named by a checkpoint id (state checkpoint format version 2,
   * `<version>_<id>.zip`): from Spark 4.2 RocksDB writes, lists, opens and deletes them through
   * the checkpoint file manager (and decides from them which SST files a kept version needs),
   * so they may be held inline there; before 4.2 it opens them through Hadoop's FileSystem.
   * Snapshots without an id (format version 1) are opened through the FileSystem on every line.
   */
  private val RocksDbZipWithCheckpointId = s"""^\\d+_[0-9a-f-]+\\.$RocksDbZip(\\.crc)?$$""".r

  /**
   * State files a task may leave to a background writer (`asyncStateWrites`): those its
   * provider reads back only when loading a later batch's store, after the batch committed
   * (so after the write is durable). RocksDB's zips are left out: RocksDB reads what its
   * snapshots name while it cleans up, outside the order of commits.
   */
  def writableInBackground(relPath: String): Boolean =
    inlinable(relPath) && !relPath.contains(s".$RocksDbZip")

  /** (version, suffix) of one of our state files. */
  def ours(name: String): Option[(Long, String)] = name match {
    case OurFile(v, suffix) => Some((v.toLong, suffix))
    case _ => None
  }

  /** Whether `name` is a state file of one of Spark's built-in providers. */
  def isForeign(name: String): Boolean = ForeignFile.findFirstIn(name).isDefined

  /** The built-in provider that writes state files named like one of `names` (HDFSBacked first). */
  def foreignProvider(names: Seq[String]): Option[String] =
    ForeignProviders.collectFirst { case (re, p) if names.exists(re.pattern.matcher(_).matches()) => p }

  /** The version of a state file of any of the known providers (sidecars too); None for other files. */
  def versionOf(name: String): Option[VersionedName] = name.stripPrefix(".").stripSuffix(".crc") match {
    case Versioned(v, kind) => Some(VersionedName(v.toLong, kind.endsWith("snapshot") || kind == RocksDbZip))
    case _ => None
  }

  /** May the state file at `relPath` (from `CheckpointPaths.splitState`) be held inline? */
  def inlinable(relPath: String): Boolean = {
    val name = relPath.substring(relPath.lastIndexOf('/') + 1)
    !CheckpointPaths.isStoreMetadata(relPath) && (ReadThroughFileManager.pattern.matcher(name).matches() ||
      (RocksDbFilesShim.zipsWithCheckpointIdThroughFileManager && RocksDbZipWithCheckpointId.pattern.matcher(name).matches()))
  }
}
