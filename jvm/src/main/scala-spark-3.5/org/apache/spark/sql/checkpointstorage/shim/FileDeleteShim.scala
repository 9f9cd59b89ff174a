// Spark 3.5: Hadoop 3.3.4 has no bulk delete; a file's delete is FileSystem.delete.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.fs.{FileSystem, Path}

/** How a file is deleted with the Hadoop of this Spark line (see the 4.x version). */
object FileDeleteShim {
  /** Hadoop 3.3 offers no delete without probe: false, the caller uses `FileSystem.delete`. */
  def deleteFileWithoutProbe(fs: FileSystem, file: Path): Boolean = false
}
