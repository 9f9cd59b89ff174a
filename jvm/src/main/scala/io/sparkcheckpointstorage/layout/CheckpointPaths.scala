package io.sparkcheckpointstorage.layout

import java.nio.charset.StandardCharsets

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.fileio.FileSystemOperations

/**
 * Spark's checkpoint layout, with what we add to it: the one place that knows where a
 * checkpoint keeps what (Flink: `AbstractFsCheckpointStorageAccess`), asked by the file
 * manager, the provider, inspection, savepoints and migration alike.
 *
 * {{{
 *   <root>/metadata                          the query id (Spark)
 *   <root>/offsets/<batch>                   the offset log: a batch planned (Spark)
 *   <root>/commits/<batch>                   the commit log: a batch done (Spark)
 *   <root>/sources/<source>/<n>[.compact]    each source's own log, numbered by that source's
 *                                            offsets, not by batch (Spark)
 *   <root>/state/<op>/<part>[/<store>]/<file>   the state stores (StateFileNaming)
 *   <root>/state/<op>/_metadata/...          operator metadata; <part>/_metadata/schema and
 *                                            <op>/_stateSchema/...: state schemas (Spark)
 *   <root>/state-packs/<n>.pack              our packs of inline state (packs.PackDirectory)
 *   <root>/checkpoint-storage                our marker (StorageMarker)
 *   <root>/_savepoint, _migration            the manifest of a savepoint, of a migration
 *   <root>/canonical-state/                  a canonical savepoint's state rows
 * }}}
 */
object CheckpointPaths {
  val Metadata = "metadata"
  val Offsets = "offsets"
  val Commits = "commits"
  val Sources = "sources"
  val State = "state"
  val Packs = "state-packs"
  val Marker = "checkpoint-storage"
  val SavepointManifest = "_savepoint"
  val MigrationManifest = "_migration"
  val CanonicalState = "canonical-state"

  private val QueryIdField = """"id"\s*:\s*"([^"]+)"""".r
  private val StateFile = """^(.+)/state/(\d+)/(\d+)(/.*)?$""".r
  private val CommitFile = """^(.+)/commits/(\d+)$""".r
  private val OffsetFile = """^(.+)/offsets/(\d+)$""".r
  private val StateDir = """^(.+)/(state(?:/\d+(?:/\d+(?:/[^/]+)?)?)?)$""".r
  private val LogDir = """^(.+)/(commits|offsets)/?$""".r
  private val StoreFileRel = """^state/(\d+)/(\d+)/(?:([^/]+)/)?([^/]+)$""".r
  private val LogEntryRel = """^(offsets|commits)/(\d+)$""".r
  private val OperatorMetadataRel = """^state/(\d+)/_metadata/metadata$""".r
  private val OperatorMetadataV2Rel = """^state/(\d+)/_metadata/v2/.*$""".r
  private val StateOperatorRel = """^state/(\d+)/.*$""".r
  private val StoreSchemaRel = """^state/(\d+)/(\d+)/(?:([^/]+)/)?_metadata/schema$""".r

  /** The query id recorded in `metadata` (its text). */
  def queryIdOf(metadata: String): Option[String] = QueryIdField.findFirstMatchIn(metadata).map(_.group(1))

  /** The query id `<root>/metadata` records; "" when there is none. */
  def readQueryId(root: String, conf: Configuration): String =
    FileSystemOperations.readSmall(new Path(root, Metadata), conf)
      .flatMap(b => queryIdOf(new String(b, StandardCharsets.UTF_8))).getOrElse("")

  /** (checkpoint root, path relative to the root) of a path inside a state directory. */
  def splitState(path: Path): Option[(String, String)] = path.toString match {
    case StateFile(root, op, part, rest) => Some((root, s"state/$op/$part${Option(rest).getOrElse("")}"))
    case _ => None
  }

  /** (checkpoint root, batch id) of a commit log entry. */
  def commit(path: Path): Option[(String, Long)] = path.toString match {
    case CommitFile(root, batch) => Some((root, batch.toLong))
    case _ => None
  }

  /** (checkpoint root, batch id) of an offset log entry. */
  def offset(path: Path): Option[(String, Long)] = path.toString match {
    case OffsetFile(root, batch) => Some((root, batch.toLong))
    case _ => None
  }

  /** (root, relative dir) of a state directory: `<root>/state[/<op>[/<part>[/<store>]]]`. */
  def stateDirRoot(path: Path): Option[(String, String)] = path.toString match {
    case StateDir(root, rel) => Some((root, rel))
    case _ => None
  }

  /** The checkpoint root of its commit or offset log directory. */
  def logDirRoot(path: Path): Option[String] = path.toString match {
    case LogDir(root, _) => Some(root)
    case _ => None
  }

  /**
   * Spark's per-store metadata (`state/<op>/<part>/_metadata/schema`): written once and never
   * replaced, so it is written as a file of its own. Packed, it would keep the first pack
   * live forever, and packs are deleted strictly oldest first: no pack would ever go.
   */
  def isStoreMetadata(relPath: String): Boolean = relPath.contains("/_metadata/")

  /** Spark's operator metadata and state schemas under `state/`: everything there but state data. */
  def isStateMetadata(relPath: String): Boolean =
    relPath.split('/').exists(p => p == "_metadata" || p == "_stateSchema")

  /** (operator, partition, store, file name) of a state file path relative to the root. */
  def storeOf(rel: String): Option[(Int, Int, String, String)] = rel match {
    case StoreFileRel(op, part, store, name) => Some((op.toInt, part.toInt, Option(store).getOrElse(DefaultStore), name))
    case _ => None
  }

  /** The directory of a store's state files, relative to the root (the default store's is its partition's). */
  def storeDir(op: Int, partition: Int, store: String): String =
    if (store == DefaultStore) s"$State/$op/$partition" else s"$State/$op/$partition/$store"

  /** The store version of a state file (any known provider's) at `rel`; None for other files. */
  def stateVersionOf(rel: String): Option[Long] =
    storeOf(rel).flatMap(s => StateFileNaming.versionOf(s._4)).map(_.version)

  /** The directory of a path relative to the root ("" for a file directly under it). */
  def dirOf(rel: String): String = {
    val slash = rel.lastIndexOf('/')
    if (slash < 0) "" else rel.substring(0, slash)
  }

  /**
   * Whether a file belongs in a copy of the checkpoint at committed batch `batch` (a
   * savepoint, a migration), relocatable and free of our storages:
   *  - the offset and commit logs up to the batch;
   *  - every source log entry: they are numbered by the source's own offsets, and on restart
   *    a source reads the entries from the batch's offset to its newest one (a file source's
   *    log past the batch lists input it then reads again); filtering them by batch number
   *    would drop a compacted log's `<n>.compact` past the batch, which holds the entries
   *    before it once Spark cleaned them up;
   *  - no Hadoop checksum sidecar (`.<name>.crc`): the copy's files are written without one,
   *    a migration rewrites the offset log, and Hadoop checks a sidecar when there is one;
   *  - none of our own files (marker, packs, manifests, a canonical savepoint's rows);
   *  - of the files under `state/`, those `stateFile` takes (a savepoint: the state up to the
   *    batch's version; a migration: Spark's metadata only, the state being the target's to write).
   */
  def inCopyAtBatch(rel: String, batch: Long, stateFile: String => Boolean): Boolean = {
    val name = rel.substring(rel.lastIndexOf('/') + 1)
    rel match {
      case _ if name.startsWith(".") => false
      case _ if rel.startsWith(State + "/") => stateFile(rel)
      case LogEntryRel(_, b) => b.toLong <= batch
      case Marker | SavepointManifest | MigrationManifest => false
      case _ if rel.startsWith(Packs + "/") || rel.startsWith(CanonicalState + "/") => false
      case _ => true
    }
  }

  /** The batch of an offset or commit log entry's file name (`<batch>`); None for any other name. */
  def logEntryBatch(name: String): Option[Long] =
    if (name.nonEmpty && name.forall(_.isDigit)) scala.util.Try(name.toLong).toOption else None

  /** The offset log entry of batch `batch`, relative to the root. */
  def offsetEntry(batch: Long): String = s"$Offsets/$batch"

  /** The commit log entry of batch `batch`, relative to the root. */
  def commitEntry(batch: Long): String = s"$Commits/$batch"

  /** Spark's operator metadata (version 1, 4.0+) of operator `op`, relative to the root. */
  def operatorMetadata(op: Long): String = s"$State/$op/_metadata/metadata"

  /** The folder of Spark's operator metadata of version 2 (transformWithState's) of operator `op`. */
  def operatorMetadataV2Dir(op: Long): String = s"$State/$op/_metadata/v2"

  /** The operator whose version-1 operator metadata is at `rel`. */
  def operatorMetadataOf(rel: String): Option[Long] = rel match {
    case OperatorMetadataRel(op) => Some(op.toLong)
    case _ => None
  }

  /** The operator whose version-2 operator metadata (transformWithState's) `rel` is part of. */
  def operatorMetadataV2Of(rel: String): Option[Long] = rel match {
    case OperatorMetadataV2Rel(op) => Some(op.toLong)
    case _ => None
  }

  /**
   * (operator, partition, store) of a store's state schema file,
   * `state/<op>/<part>[/<store>]/_metadata/schema`; the store is `default` when it has no folder.
   */
  def storeSchemaOf(rel: String): Option[(Long, Int, String)] = rel match {
    case StoreSchemaRel(op, part, store) => Some((op.toLong, part.toInt, Option(store).getOrElse(DefaultStore)))
    case _ => None
  }

  /** The state schema file of a store in a partition (`storeSchemaOf` parses it). */
  def storeSchema(op: Long, partition: Int, store: String): String =
    if (store == DefaultStore) s"$State/$op/$partition/_metadata/schema" else s"$State/$op/$partition/$store/_metadata/schema"

  /** The name of an operator's only store, which keeps its files in the partition folder itself. */
  val DefaultStore = "default"

  /** The operator whose folder under `state/` holds `rel`. */
  def stateOperatorOf(rel: String): Option[Long] = rel match {
    case StateOperatorRel(op) => Some(op.toLong)
    case _ => None
  }
}
