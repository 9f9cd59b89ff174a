package io.sparkcheckpointstorage.filemanager

import org.apache.hadoop.fs.Path

/**
 * Reads a checkpoint path the way Spark lays checkpoints out:
 * `<root>/state/<operator>/<partition>[/<store>]/<file>` for state,
 * `<root>/commits/<batch>` for the commit log.
 */
object StatePaths {
  private val StateFile = """^(.+)/state/(\d+)/(\d+)(/.*)?$""".r
  private val CommitFile = """^(.+)/commits/(\d+)$""".r

  /** (checkpoint root, path relative to the root) of a path inside a state directory. */
  def splitState(path: Path): Option[(String, String)] = path.toString match {
    case StateFile(root, op, part, rest) => Some((root, s"state/$op/$part${Option(rest).getOrElse("")}"))
    case _ => None
  }

  /**
   * Spark's per-store metadata (`state/<op>/<part>/_metadata/schema`): written once and never
   * replaced, so it is written as a file of its own. Packed, it would keep the first pack
   * live forever, and packs are deleted strictly oldest first: no pack would ever go.
   */
  def isStoreMetadata(relPath: String): Boolean = relPath.contains("/_metadata/")

  /**
   * State files whose providers read them back through the checkpoint file manager: ours, the
   * deltas and snapshots of Spark's HDFSBacked provider, RocksDB's changelogs, and the checksum
   * sidecars Spark 4.1+ writes next to any of them. Only these may be held inline (in the
   * driver's heap or a pack). RocksDB opens its snapshot zips (and its SST files) through
   * Hadoop's FileSystem, past the file manager: a zip held inline would be listed but not
   * found by the next provider instance, so a zip, and any file of a provider not named here,
   * stays a file of its own.
   */
  private val ReadThroughFileManager =
    """^\d+(_[0-9a-f-]+)?\.(heap-delta|heap-snapshot|delta|snapshot|changelog)(\.crc)?$""".r

  /** May the state file at `relPath` (from `splitState`) be held inline? */
  def inlinable(relPath: String): Boolean =
    !isStoreMetadata(relPath) &&
      ReadThroughFileManager.pattern.matcher(relPath.substring(relPath.lastIndexOf('/') + 1)).matches()

  /** (checkpoint root, batch id) of a commit log entry. */
  def commit(path: Path): Option[(String, Long)] = path.toString match {
    case CommitFile(root, batch) => Some((root, batch.toLong))
    case _ => None
  }

  private val StateDir = """^(.+)/(state(?:/\d+(?:/\d+(?:/[^/]+)?)?)?)$""".r

  /** (root, relative dir) of a state directory: `<root>/state[/<op>[/<part>[/<store>]]]`. */
  def stateDirRoot(path: Path): Option[(String, String)] = path.toString match {
    case StateDir(root, rel) => Some((root, rel))
    case _ => None
  }

  private val LogDir = """^(.+)/(commits|offsets)/?$""".r

  /** The checkpoint root of its commit or offset log directory. */
  def logDirRoot(path: Path): Option[String] = path.toString match {
    case LogDir(root, _) => Some(root)
    case _ => None
  }
}
