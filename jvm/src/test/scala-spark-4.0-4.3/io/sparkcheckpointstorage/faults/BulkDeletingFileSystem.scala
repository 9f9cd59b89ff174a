// Spark 4.x: Hadoop 3.4.1+ has the bulk delete API (HADOOP-18679) that S3A implements.
package io.sparkcheckpointstorage.faults

import java.util.{AbstractMap, Collection => JCollection, List => JList}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{BulkDelete, CommonPathCapabilities, Path}

/**
 * The fault file system with a bulk delete of S3A's kind: up to 250 files in one request, each
 * failing on its own. Every request is recorded ([[BulkDeletingFileSystem.requests]]), and the
 * files named in [[BulkDeletingFileSystem.failOnce]] fail once, as a DeleteObjects request's
 * per-object errors do.
 */
class BulkDeletingFileSystem extends FaultInjectingFileSystem {
  override def hasPathCapability(path: Path, capability: String): Boolean =
    capability == CommonPathCapabilities.BULK_DELETE || super.hasPathCapability(path, capability)

  override def createBulkDelete(base: Path): BulkDelete = {
    val fs = this
    new BulkDelete {
      override def pageSize(): Int = BulkDeletingFileSystem.PageSize
      override def basePath(): Path = base
      override def bulkDelete(paths: JCollection[Path]): JList[java.util.Map.Entry[Path, String]] = {
        val all = paths.asScala.toSeq
        require(all.size <= pageSize(), s"${all.size} files in one request, more than the page of ${pageSize()}")
        BulkDeletingFileSystem.synchronized(BulkDeletingFileSystem.requests += all.map(_.getName))
        all.flatMap { p =>
          if (BulkDeletingFileSystem.synchronized(BulkDeletingFileSystem.failOnce.remove(p.getName))) {
            Some(new AbstractMap.SimpleImmutableEntry(p, "AccessDenied (injected)"): java.util.Map.Entry[Path, String])
          } else { fs.delete(p, false); None }
        }.asJava
      }
      override def close(): Unit = ()
    }
  }
}

object BulkDeletingFileSystem {
  val PageSize = 250
  /** The file names of each bulk delete request, in order. */
  val requests: mutable.ArrayBuffer[Seq[String]] = mutable.ArrayBuffer()
  /** File names whose next delete fails. */
  val failOnce: mutable.Set[String] = mutable.Set()
}
