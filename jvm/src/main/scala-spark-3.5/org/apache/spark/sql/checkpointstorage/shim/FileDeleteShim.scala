// Spark 3.5: Hadoop 3.3.4 has no bulk delete; a file's delete is FileSystem.delete.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.fs.{FileSystem, Path}

/** How a file is deleted with the Hadoop of this Spark line (see the 4.x version). */
object FileDeleteShim {
  /** Hadoop 3.3 offers no delete without probe: false, the caller uses `FileSystem.delete`. */
  def deleteFileWithoutProbe(fs: FileSystem, file: Path): Boolean = false

  /** One file a request: Hadoop 3.3 has no bulk delete. */
  def filesPerDeleteRequest(fs: FileSystem, dir: Path): Int = 1

  /** Each of `files` with `FileSystem.delete` (never called: a request deletes one file here). */
  def deleteFiles(fs: FileSystem, dir: Path, files: Seq[Path]): Seq[(Path, String)] =
    files.flatMap { f =>
      try { fs.delete(f, false); None } catch { case e: java.io.IOException => Some(f -> e.toString) }
    }
}
