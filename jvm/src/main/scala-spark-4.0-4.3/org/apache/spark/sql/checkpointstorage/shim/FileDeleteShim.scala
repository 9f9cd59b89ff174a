// Spark 4.x: Hadoop 3.4.1+ has the bulk delete API (HADOOP-18679).
package org.apache.spark.sql.checkpointstorage.shim

import java.io.IOException
import java.util.Collections

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
    val bulk = fs.createBulkDelete(file.getParent)
    try {
      val failures = bulk.bulkDelete(Collections.singletonList(file))
      if (!failures.isEmpty) throw new IOException(s"Could not delete $file: ${failures.get(0).getValue}")
    } finally bulk.close()
    true
  }
}
