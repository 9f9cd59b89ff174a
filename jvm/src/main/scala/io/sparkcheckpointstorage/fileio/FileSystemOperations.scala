package io.sparkcheckpointstorage.fileio

import java.io.{FileNotFoundException, IOException, OutputStream}
import java.nio.file.{Files, NoSuchFileException, Paths}
import java.util.UUID

// FileSystem.createFile's builder has a recursive, existential type.
import scala.language.existentials
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataOutputStream, FileAlreadyExistsException, FileSystem, LocalFileSystem, Path}
import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.CheckpointFileManager.{CancellableFSDataOutputStream,
  RenameBasedFSDataOutputStream}
import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.FileContextBasedCheckpointFileManager
import org.apache.spark.sql.checkpointstorage.shim.FileDeleteShim

/**
 * File operations of the checkpoint storages on any Hadoop file system, with the local file
 * system served by the JDK (see [[LocalAtomicOutputStream]] for why).
 */
object FileSystemOperations {
  /** File systems without an atomic rename: write the final path directly (visible on close). */
  val NoAtomicRename: Set[String] = Set("s3", "s3a", "s3n", "gs", "oss", "cos", "cosn", "obs")

  /** The raw file system: no Hadoop `.crc` sidecars of our own, byte-exact reads. */
  def raw(fs: FileSystem): FileSystem = fs match {
    case l: LocalFileSystem => l.getRaw
    case other => other
  }

  /** Temp files of atomic writes (ours: `.<name>.<uuid>.tmp`; Hadoop's: `.<name>.<uuid>.tmp` too). */
  def isTemp(name: String): Boolean = name.startsWith(".") && name.endsWith(".tmp")

  def isLocal(path: Path): Boolean = {
    val scheme = path.toUri.getScheme
    scheme == null || scheme == "file"
  }

  def localPath(path: Path): java.nio.file.Path = Paths.get(path.toUri.getPath)

  /** An atomic output stream for `path`: renamed into place on close, dropped on cancel. */
  def createAtomic(path: Path, overwrite: Boolean, conf: Configuration): CancellableFSDataOutputStream = {
    if (isLocal(path)) {
      LocalAtomicOutputStream(localPath(path), overwrite)
    } else if (NoAtomicRename.contains(path.toUri.getScheme)) {
      new DirectOutputStream(path, overwrite, conf)
    } else {
      // Spark's rename-based stream (temp file, rename) creates no parent folder, and HDFS
      // refuses a file in a missing one (the first pack of a checkpoint, for one).
      val manager = new FileContextBasedCheckpointFileManager(path.getParent, conf)
      manager.mkdirs(path.getParent)
      val temp = new Path(path.getParent, s".${path.getName}.${UUID.randomUUID()}.tmp")
      new TempDroppingStream(new RenameBasedFSDataOutputStream(manager, path, temp, overwrite), temp, conf)
    }
  }

  /**
   * Spark's rename-based stream, whose temp file goes when its close throws. Spark's stream
   * is done once its close threw, before or after its rename (its cancel then does nothing):
   * the temp file, never renamed, would stay beside the target for good. In a new query's
   * `offsets/` it makes Spark 4.1+ refuse every later start of the query
   * (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY: the log must be empty on batch 0). The delete
   * is best-effort: a log's listing hides a temp file left anyway (StorageCheckpointFileManager.list).
   */
  private final class TempDroppingStream(inner: CancellableFSDataOutputStream, temp: Path, conf: Configuration)
    extends CancellableFSDataOutputStream(inner) {
    override def close(): Unit = try super.close() catch {
      case NonFatal(e) =>
        try delete(temp, conf) catch { case NonFatal(d) => e.addSuppressed(d) }
        throw e
    }
    override def cancel(): Unit = inner.cancel()
  }

  def writeAtomic(path: Path, overwrite: Boolean, conf: Configuration)(body: OutputStream => Unit): Unit = {
    val out = createAtomic(path, overwrite, conf)
    try {
      body(out)
      out.close()
    } catch {
      case NonFatal(e) =>
        try out.cancel() catch { case NonFatal(c) => e.addSuppressed(c) }
        throw e
    }
  }

  /** The whole content of a small file, None when it does not exist. */
  def readSmall(path: Path, conf: Configuration): Option[Array[Byte]] = {
    if (isLocal(path)) {
      try Some(Files.readAllBytes(localPath(path))) catch { case _: NoSuchFileException => None }
    } else {
      val fs = path.getFileSystem(conf)
      try {
        val in = fs.open(path)
        try Some(org.apache.commons.io.IOUtils.toByteArray(in)) finally in.close()
      } catch { case _: FileNotFoundException => None }
    }
  }

  /** `length` bytes at `offset` of `path`. */
  def readRange(path: Path, offset: Long, length: Int, conf: Configuration): Array[Byte] = {
    val bytes = new Array[Byte](length)
    val in = path.getFileSystem(conf).open(path)
    try in.readFully(offset, bytes) finally in.close()
    bytes
  }

  def listNames(dir: Path, conf: Configuration): Seq[String] = {
    val fs = dir.getFileSystem(conf)
    try fs.listStatus(dir).toSeq.map(_.getPath.getName) catch { case _: FileNotFoundException => Nil }
  }

  def deleteRecursively(path: Path, conf: Configuration): Unit = path.getFileSystem(conf).delete(path, true)

  /** Deletes the file `path` (never a directory); a missing file is no error. */
  def delete(path: Path, conf: Configuration): Unit = {
    if (isLocal(path)) Files.deleteIfExists(localPath(path))
    else {
      val fs = path.getFileSystem(conf)
      if (!FileDeleteShim.deleteFileWithoutProbe(fs, path)) fs.delete(path, false)
    }
  }

  /**
   * An object store's output stream for `path`: one PUT (or a multipart upload) made visible,
   * whole, on close. S3A is asked (Hadoop 3.4+ create-file options) to skip its existence
   * probes before the upload (a HEAD and a LIST per file otherwise) and, without overwrite,
   * to create the object only if it is absent (`If-None-Match: *`, checked by the store when
   * the object is published): atomic where a probe then a PUT would race. A store or an
   * S3A without conditional create gets the plain `create`, which probes first.
   */
  private def objectStoreCreate(path: Path, overwrite: Boolean, conf: Configuration): FSDataOutputStream = {
    val fs = path.getFileSystem(conf)
    try {
      val builder = fs.createFile(path)
      builder.overwrite(overwrite)
      builder.opt("fs.s3a.create.performance", "true")
      if (!overwrite) builder.must("fs.option.create.conditional.overwrite", "true")
      builder.build()
    } catch {
      case _: IllegalArgumentException | _: UnsupportedOperationException => fs.create(path, overwrite)
    }
  }

  /** For object stores: the object appears complete on close, nothing appears on cancel. */
  private final class DirectOutputStream(path: Path, overwrite: Boolean, conf: Configuration)
    extends CancellableFSDataOutputStream(objectStoreCreate(path, overwrite, conf)) {
    private var cancelled = false
    override def cancel(): Unit = {
      cancelled = true
      // S3A publishes the object on close: abort the upload where supported, else delete.
      try underlyingStream match {
        case a: org.apache.hadoop.fs.Abortable => a.abort()
        case _ => super.close(); path.getFileSystem(conf).delete(path, false)
      } catch { case NonFatal(_) => }
    }
    override def close(): Unit = if (!cancelled) {
      try super.close() catch {
        // S3 refused the conditional PUT (412, If-None-Match): another writer created the
        // object first. Said the way Hadoop says it for every other store, so that Spark
        // reports two queries writing one checkpoint, as it does on HDFS or a local disk.
        case e: IOException if !overwrite && !e.isInstanceOf[FileAlreadyExistsException] && preconditionFailed(e) =>
          throw new FileAlreadyExistsException(s"$path already exists: another writer created it first").initCause(e)
      }
    }
  }

  /**
   * An object store's refusal of a conditional write (HTTP 412): S3A raises it as a
   * `RemoteFileChangedException`; the AWS SDK's own error names the status and its code. Not a
   * bare "412", which a path or a request id may hold.
   */
  private def preconditionFailed(e: Throwable): Boolean =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(8).exists { t =>
      t.getClass.getSimpleName == "RemoteFileChangedException" ||
        Option(t.getMessage).exists(m => m.contains("Status Code: 412") || m.contains("PreconditionFailed"))
    }
}
