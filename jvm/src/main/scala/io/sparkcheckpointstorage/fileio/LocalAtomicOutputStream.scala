package io.sparkcheckpointstorage.fileio

import java.io.{FileOutputStream, IOException}
import java.nio.file.{FileAlreadyExistsException, Files, Path => NioPath, StandardCopyOption}
import java.util.UUID

import org.apache.hadoop.fs.{FileAlreadyExistsException => HadoopFileAlreadyExists}
import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.CheckpointFileManager.CancellableFSDataOutputStream

/**
 * Writes a local file atomically with plain JDK calls: a hidden temp file, fsync, then a
 * rename (or, without overwrite, a hard link that fails if the target exists).
 *
 * Why not Hadoop's local file system: without Hadoop's native library (the pip PySpark has
 * none) it forks `chmod` for every file it creates, which costs tens of milliseconds per file
 * and is most of Spark's per-batch commit time with many partitions.
 */
final class LocalAtomicOutputStream private (target: NioPath, temp: NioPath, overwrite: Boolean,
    out: FileOutputStream) extends CancellableFSDataOutputStream(out) {
  @volatile private var finished = false

  override def close(): Unit = synchronized {
    if (finished) return
    finished = true
    try {
      flush()
      out.getFD.sync()
      out.close()
      if (overwrite) {
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
      } else {
        try Files.createLink(target, temp) catch {
          case _: FileAlreadyExistsException => throw new HadoopFileAlreadyExists(s"$target already exists")
        } finally Files.deleteIfExists(temp)
      }
    } catch {
      case e: Throwable =>
        Files.deleteIfExists(temp)
        throw e
    }
  }

  override def cancel(): Unit = synchronized {
    if (finished) return
    finished = true
    try out.close() catch { case _: IOException => }
    Files.deleteIfExists(temp)
  }
}

object LocalAtomicOutputStream {
  def apply(target: NioPath, overwrite: Boolean): LocalAtomicOutputStream = {
    // An existing target is refused on close, by the hard link, and only there: where Spark
    // expects it (a metadata log's write turns it into its error for two queries on one
    // checkpoint), as on every other file system.
    Files.createDirectories(target.getParent)
    val temp = target.resolveSibling(s".${target.getFileName}.${UUID.randomUUID()}.tmp")
    new LocalAtomicOutputStream(target, temp, overwrite, new FileOutputStream(temp.toFile))
  }
}
