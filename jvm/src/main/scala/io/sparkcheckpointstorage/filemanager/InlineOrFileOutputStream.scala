package io.sparkcheckpointstorage.filemanager

import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.CheckpointFileManager.CancellableFSDataOutputStream

import java.io.{BufferedOutputStream, ByteArrayOutputStream, OutputStream}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.coordinator.{BackgroundStateWriter, CoordinatorClient, OwnFileWritten, PutInline}
import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.storage.{CheckpointStorage, Placement, StateSizeLimitException}

/**
 * The stream a state file is written through (Flink: `FsCheckpointStateOutputStream`). It
 * buffers in memory; on close the storage decides where the bytes go: inline to the driver,
 * or into a file of their own. Once the buffer outgrows what may go inline, the stream
 * switches to writing the file, through a buffer of the storage's write buffer size.
 *
 * With `background` (`asyncStateWrites`, on a task's thread), a file of its own is held in
 * memory up to [[BackgroundStateWriter.MaxFileBytes]] and handed on close to the executor's
 * [[BackgroundStateWriter]]: the task does not wait for the file system.
 */
final class InlineOrFileOutputStream(storage: CheckpointStorage, root: String, relPath: String,
    path: Path, overwrite: Boolean, conf: Configuration, background: Boolean = false)
  extends CancellableFSDataOutputStream(new InlineOrFileOutputStream.Sink(storage, path, overwrite, conf,
    holdUpTo = if (background) BackgroundStateWriter.MaxFileBytes else 0L)) {

  private val sink = underlyingStream.asInstanceOf[InlineOrFileOutputStream.Sink]
  @volatile private var finished = false

  override def close(): Unit = synchronized {
    if (finished) return
    finished = true
    flush()
    if (sink.overLimit) {
      storage.placement(sink.size) // throws the storage's limit error with the exact size
    }
    sink.file match {
      case Some(out) =>
        out.close()
        // A retry may have left a smaller, inline version of this file behind: it goes.
        CoordinatorClient.ask(OwnFileWritten(root, relPath, sink.size))
      case None =>
        val bytes = sink.buffer.toByteArray
        storage.placement(bytes.length) match {
          case Placement.Inline =>
            CoordinatorClient.ask(PutInline(root, relPath, bytes, storage.toString,
              storage.isPersistent, storage.keepsInlineStateInHeap))
          case Placement.OwnFile if background =>
            BackgroundStateWriter.write(root, relPath, path, overwrite, conf, bytes)
          case Placement.OwnFile =>
            FileSystemOperations.writeAtomic(path, overwrite, conf)(_.write(bytes))
            CoordinatorClient.ask(OwnFileWritten(root, relPath, bytes.length.toLong))
        }
    }
  }

  override def cancel(): Unit = synchronized {
    if (finished) return
    finished = true
    sink.file.foreach(_.cancel())
  }
}

private object InlineOrFileOutputStream {
  /** Holds up to `holdUpTo` bytes of a file of its own before writing it (more than the inline threshold). */
  final class Sink(storage: CheckpointStorage, path: Path, overwrite: Boolean, conf: Configuration, holdUpTo: Long)
    extends OutputStream {
    val buffer = new ByteArrayOutputStream(256)
    var file: Option[CancellableFSDataOutputStream] = None
    private var fileBuffered: OutputStream = _
    var size = 0L
    /** Over what the storage accepts at all: keep counting (for the error), stop buffering. */
    var overLimit = false

    private def spillIfNeeded(extra: Int): Unit = {
      if (file.isEmpty && !overLimit && (try storage.placement(size + extra) catch {
          case _: StateSizeLimitException =>
            overLimit = true
            buffer.reset()
            Placement.Inline
        }) == Placement.OwnFile && size + extra > holdUpTo) {
        val target = FileSystemOperations.createAtomic(path, overwrite, conf)
        fileBuffered = new BufferedOutputStream(target, storage.writeBufferSize)
        buffer.writeTo(fileBuffered)
        buffer.reset()
        file = Some(new CancellableFSDataOutputStream(fileBuffered) {
          override def cancel(): Unit = target.cancel()
          override def close(): Unit = { fileBuffered.flush(); target.close() }
        })
      }
    }

    override def write(b: Int): Unit = {
      spillIfNeeded(1)
      if (file.isDefined) fileBuffered.write(b) else if (!overLimit) buffer.write(b)
      size += 1
    }

    override def write(b: Array[Byte], off: Int, len: Int): Unit = {
      spillIfNeeded(len)
      if (file.isDefined) fileBuffered.write(b, off, len) else if (!overLimit) buffer.write(b, off, len)
      size += len
    }

    override def flush(): Unit = if (file.isDefined) fileBuffered.flush()
    // The owning stream decides what closing means.
    override def close(): Unit = ()
  }
}
