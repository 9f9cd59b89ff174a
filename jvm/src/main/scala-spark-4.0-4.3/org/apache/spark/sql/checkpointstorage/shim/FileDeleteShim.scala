// Spark 4.x: Hadoop 3.4.1+ has the bulk delete API (HADOOP-18679).
package org.apache.spark.sql.checkpointstorage.shim

import java.io.IOException

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{CommonPathCapabilities, FileSystem, Path}

/** How a file is deleted with the Hadoop of this Spark line. */
object FileDeleteShim {
  /**
   * Deletes `file` (a file, never a directory) through the file system's bulk delete, where it
   * offers one: on S3A a single DeleteObjects request, where `FileSystem.delete` first probes
   * the key (a HEAD, and a LIST when it is absent) and then deletes it. A missing file is no
   * error. False when the file system offers no bulk delete: the caller uses `FileSystem.delete`.
   */
  def deleteFileWithoutProbe(fs: FileSystem, file: Path): Boolean = {
    if (!fs.hasPathCapability(file, CommonPathCapabilities.BULK_DELETE)) return false
    deleteFiles(fs, file.getParent, Seq(file)).headOption.foreach { case (_, why) =>
      throw new IOException(s"Could not delete $file: $why")
    }
    true
  }

  /**
   * How many files under `dir` one request of the file system's bulk delete removes: S3A's
   * page (`fs.s3a.bulk.delete.page.size`, one DeleteObjects request); 1 where it has none.
   */
  def filesPerDeleteRequest(fs: FileSystem, dir: Path): Int =
    if (!fs.hasPathCapability(dir, CommonPathCapabilities.BULK_DELETE)) 1 else {
      val bulk = fs.createBulkDelete(dir)
      try bulk.pageSize() finally bulk.close()
    }

  /**
   * Deletes `files` (files directly under `dir`, at most [[filesPerDeleteRequest]]) in one
   * request of the bulk delete, with no probe; missing files are no error. Returns the files
   * it could not delete, with why (a multi-object delete fails per object).
   */
  def deleteFiles(fs: FileSystem, dir: Path, files: Seq[Path]): Seq[(Path, String)] = {
    val bulk = fs.createBulkDelete(dir)
    try bulk.bulkDelete(files.asJava).asScala.toSeq.map(e => e.getKey -> e.getValue)
    finally bulk.close()
  }
}
