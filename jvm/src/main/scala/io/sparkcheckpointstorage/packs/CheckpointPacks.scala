package io.sparkcheckpointstorage.packs

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.layout.CheckpointPaths

/** Where the durable copy of an inline file is: `length` bytes at `offset` of pack `seq`. */
final case class PackedFile(seq: Long, pack: Path, offset: Long, length: Int, crc: Int)

/** One pack of a checkpoint: its number, path and index. */
final case class Pack(seq: Long, path: Path, index: PackIndex)

/**
 * The packs of one checkpoint as read from its file system, oldest first, and checked:
 * numbered without gaps, and written for the checkpoint's query. Replaying them gives where
 * each inline file is; the coordinator replays them into its index after a driver restart,
 * and readers of a checkpoint (inspection, savepoints, migration) read its files from them.
 */
final class CheckpointPacks private (val root: String, val packs: Seq[Pack]) {

  /** Each inline file's durable copy: the packs' deletions, then their files, oldest pack first. */
  lazy val files: Map[String, PackedFile] = packs.foldLeft(Map.empty[String, PackedFile]) { (files, p) =>
    (files -- p.index.deleted) ++ p.index.entries.map(e => e.relPath -> PackedFile(p.seq, p.path, e.offset, e.length, e.crc))
  }

  /**
   * The inline files by directory: a reader lists every state directory, and a scan of every
   * file per listing would cost it directories times files.
   */
  private lazy val byDir: Map[String, Seq[(String, Long)]] =
    files.toSeq.groupBy { case (rel, _) => CheckpointPaths.dirOf(rel) }
      .map { case (dir, fs) => dir -> fs.map { case (rel, f) => (rel, f.length.toLong) } }

  /** The inline files directly in `relDir`, with their lengths. */
  def list(relDir: String): Seq[(String, Long)] = byDir.getOrElse(relDir.stripSuffix("/"), Nil)
}

object CheckpointPacks {
  private val MaxAttempts = 3

  /**
   * Reads the packs of `root`, whose query is `queryId` ("" when unknown). A pack that
   * vanishes while they are read was obsolete (a running query's cleaner deletes only those,
   * oldest first): the packs are listed and read again.
   */
  def read(root: String, queryId: String, conf: Configuration): CheckpointPacks = {
    var attempt = 1
    while (true) {
      readOnce(root, queryId, conf, lastAttempt = attempt == MaxAttempts).foreach(p => return p)
      attempt += 1
    }
    throw new IllegalStateException("unreachable")
  }

  private def readOnce(root: String, queryId: String, conf: Configuration,
      lastAttempt: Boolean): Option[CheckpointPacks] = {
    val seqs = PackDirectory.sequences(root, conf)
    // Packs are numbered without gaps and only the oldest are ever deleted: a gap is a lost
    // pack, and the state it held would silently be older than the commit log says.
    seqs.zip(seqs.drop(1)).find { case (a, b) => b != a + 1 }.foreach { case (a, b) =>
      throw CorruptPackException(PackDirectory.path(root, a + 1).toString,
        s"it is missing, while packs ${StatePack.fileName(a)} and ${StatePack.fileName(b)} exist")
    }
    val packs = seqs.map { seq =>
      val path = PackDirectory.path(root, seq)
      val index = PackDirectory.readIndex(path, conf).getOrElse {
        if (!lastAttempt) return None
        throw CorruptPackException(path.toString, "it disappeared while being read, again and again")
      }
      if (index.queryId.nonEmpty && queryId.nonEmpty && index.queryId != queryId) {
        throw CorruptPackException(path.toString, s"it belongs to query ${index.queryId}, but " +
          s"the checkpoint $root is of query $queryId (a pack copied from another checkpoint?)")
      }
      Pack(seq, path, index)
    }
    Some(new CheckpointPacks(root, packs))
  }
}
