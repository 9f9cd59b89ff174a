package io.sparkcheckpointstorage.layout

import java.nio.charset.StandardCharsets

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.formats.FileFormat

/**
 * The `checkpoint-storage` file, written before a checkpoint's first commit: which storage
 * keeps its state, whether that state persists, and whether the driver keeps a copy in heap.
 * A checkpoint without it never held inline state.
 *
 * {{{
 *   formatVersion=<this file's format version>
 *   minReaderVersion=<the oldest release that reads every file of the checkpoint>
 *   storage=<storage name>
 *   persistent=true|false
 *   keepInHeap=true|false
 * }}}
 *
 * It is read before any state of the checkpoint: a release that writes a newer format of any
 * file writes its own release as `minReaderVersion`, so that an older one refuses the whole
 * checkpoint at the start, naming the release to upgrade to. A marker without `formatVersion`
 * (written before it had one) is version 1.
 */
final case class StorageMarker(storage: String, persistent: Boolean, keepInHeap: Boolean) {
  def text: String = s"${FileFormat.VersionField}=${FileFormat.Marker.current}\n" +
    s"${FileFormat.MinReaderField}=${FileFormat.MinReaderVersion}\n" +
    s"storage=$storage\npersistent=$persistent\nkeepInHeap=$keepInHeap\n"
}

object StorageMarker {
  def path(root: String): Path = new Path(root, CheckpointPaths.Marker)

  /** The marker in `text`, read from `file`; a format this release does not read is refused. */
  def parse(text: String, file: String): StorageMarker = {
    val fields = text.linesIterator.map(_.split("=", 2)).collect { case Array(k, v) => k -> v.trim }.toMap
    FileFormat.Marker.check(file, FileFormat.Marker.versionIn(file, fields.get(FileFormat.VersionField)),
      fields.get(FileFormat.MinReaderField))
    StorageMarker(fields.getOrElse("storage", ""), fields.get("persistent").contains("true"),
      fields.get("keepInHeap").contains("true"))
  }

  /** The marker of checkpoint `root`; None when it has none. */
  def read(root: String, conf: Configuration): Option[StorageMarker] =
    FileSystemOperations.readSmall(path(root), conf).map(b => parse(new String(b, StandardCharsets.UTF_8), path(root).toString))

  def write(root: String, marker: StorageMarker, conf: Configuration): Unit =
    FileSystemOperations.writeAtomic(path(root), overwrite = true, conf)(
      _.write(marker.text.getBytes(StandardCharsets.UTF_8)))
}
