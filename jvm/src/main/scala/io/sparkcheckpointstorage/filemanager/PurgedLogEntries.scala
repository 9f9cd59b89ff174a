package io.sparkcheckpointstorage.filemanager

import java.io.IOException

import scala.collection.mutable

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.checkpointstorage.shim.FileDeleteShim
import org.slf4j.LoggerFactory

/**
 * The entries of one of Spark's logs (`offsets/` or `commits/`) that Spark purged and the file
 * system does not yet know are deleted. Once a query is past
 * `spark.sql.streaming.minBatchesToRetain` batches, Spark purges one entry of each log a batch:
 * a DELETE each on S3. Where the file system deletes many files in one request (S3A's
 * DeleteObjects, `pageSize` files at most), they are deleted together, one request per
 * [[PurgedLogEntries.GroupSize]].
 *
 * Until then they are gone for the file manager that purged them (its `exists`, `list` and
 * `open`); the rest go when the query stops. Another reader (`inspect`) may still see them
 * meanwhile, as after a purge a failure interrupted, and a driver that dies leaves them: they
 * are the log's oldest entries, the query never reads them again, and Spark's first purge
 * after a start deletes every entry below its threshold.
 */
final class PurgedLogEntries(fs: FileSystem, dir: Path, pageSize: Int) {
  import PurgedLogEntries._

  /** Entry name -> its path, until deleted on the file system. */
  private val pending = mutable.TreeMap[String, Path]()

  def contains(name: String): Boolean = synchronized(pending.contains(name))

  /** Spark purged the entry at `path`: deleted with the group it completes. */
  def purged(path: Path): Unit = {
    val full = synchronized {
      pending(path.getName) = path
      pending.size >= GroupSize
    }
    if (full) deleteNow()
  }

  /**
   * Deletes the entries purged so far. One the file system could not delete stays purged for
   * this file manager and is tried again with the next group: a purged entry is never read
   * again, so its failed delete fails nothing (a warning), where Spark's own purge would fail
   * the query.
   */
  def deleteNow(): Unit = synchronized {
    if (pending.nonEmpty) {
      val paths = pending.values.toSeq
      val failed = try {
        paths.grouped(math.max(1, pageSize)).flatMap(page => FileDeleteShim.deleteFiles(fs, dir, page)).toSeq
      } catch { case e: IOException => paths.map(_ -> e.toString) }
      val kept = failed.map(_._1.getName).toSet
      paths.map(_.getName).filterNot(kept.contains).foreach(pending.remove)
      failed.headOption.foreach { case (p, why) =>
        log.warn(s"Could not delete ${failed.size} purged entries of Spark's log $dir (first: $p: $why); " +
          "they are deleted with the next group, or by Spark's first purge after the query's next start")
      }
    }
  }
}

object PurgedLogEntries {
  /** Purged entries deleted in one request: one request every 10 batches for each log. */
  val GroupSize = 10

  private val log = LoggerFactory.getLogger(classOf[PurgedLogEntries])
}
