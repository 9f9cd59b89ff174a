package io.sparkcheckpointstorage.layout

import java.nio.charset.StandardCharsets

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkcheckpointstorage.filesystem.FileSystemOperations

/**
 * The `checkpoint-storage` file, written before a checkpoint's first commit: which storage
 * keeps its state, whether that state persists, and whether the driver keeps a copy in heap.
 * A checkpoint without it never held inline state.
 *
 * {{{
 *   storage=<storage name>
 *   persistent=true|false
 *   keepInHeap=true|false
 * }}}
 */
final case class StorageMarker(storage: String, persistent: Boolean, keepInHeap: Boolean) {
  def text: String = s"storage=$storage\npersistent=$persistent\nkeepInHeap=$keepInHeap\n"
}

object StorageMarker {
  def path(root: String): Path = new Path(root, CheckpointPaths.Marker)

  def parse(text: String): StorageMarker = {
    val fields = text.linesIterator.map(_.split("=", 2)).collect { case Array(k, v) => k -> v }.toMap
    StorageMarker(fields.getOrElse("storage", ""), fields.get("persistent").contains("true"),
      fields.get("keepInHeap").contains("true"))
  }

  /** The marker of checkpoint `root`; None when it has none. */
  def read(root: String, conf: Configuration): Option[StorageMarker] =
    FileSystemOperations.readSmall(path(root), conf).map(b => parse(new String(b, StandardCharsets.UTF_8)))

  def write(root: String, marker: StorageMarker, conf: Configuration): Unit =
    FileSystemOperations.writeAtomic(path(root), overwrite = true, conf)(
      _.write(marker.text.getBytes(StandardCharsets.UTF_8)))
}
