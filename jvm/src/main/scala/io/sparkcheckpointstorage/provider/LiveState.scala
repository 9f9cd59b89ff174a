package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

/**
 * The state of one store at one version, held in executor heap, plus the undo of the
 * change that produced that version.
 *
 * A new version is made by applying a batch's changes in place, so a commit costs the keys
 * the batch touched, never a copy of the map. The undo lets a retried task (which asks for
 * the version before the one just committed) step back at the same cost instead of
 * reloading every file.
 */
final class LiveState(keySchema: StructType, valueSchema: StructType, prefixCols: Option[Int]) {
  import LiveState._

  val map = new CompactRowMap(keySchema.length, valueSchema.length)
  val prefixIndex: Option[PrefixIndex] = prefixCols.map(new PrefixIndex(keySchema, _))

  /** The version the map holds; -1 when nothing is loaded. */
  private var _version = -1L
  /**
   * Key -> value before the last change ([[CompactRowMap.Removed]]: key was absent), which
   * turns `_version` back into `_version - 1`.
   */
  private var undo: CompactRowMap = null

  def version: Long = _version

  def canRollBack: Boolean = undo != null

  def reset(version: Long): Unit = {
    map.clear()
    prefixIndex.foreach(_.clear())
    undo = null
    _version = version
  }

  /** Readies the map for a state file's records, which come in their writer's slot order. */
  def prepareLoad(layout: CompactRowMap.Layout): Unit = map.prepareFor(layout)

  /** Loading replays files into the map: no undo, the version is set at the end. */
  def loadPut(key: UnsafeRow, value: UnsafeRow): Unit = {
    if (prefixIndex.isDefined && !map.contains(key)) prefixIndex.get.add(key)
    map.put(key, value)
  }

  def loadRemove(key: UnsafeRow): Unit = {
    if (map.remove(key)) prefixIndex.foreach(_.remove(key))
  }

  def loaded(version: Long): Unit = {
    prefixIndex.foreach(_.compactIfWasteful())
    undo = null
    _version = version
  }

  /** Applies a batch's changes (value [[CompactRowMap.Removed]] = removed) to make `newVersion`. */
  def apply(changes: CompactRowMap, newVersion: Long): Unit = {
    // The changes come in their slot order: with the map and the undo laid out alike, the
    // lookups and the undo's inserts walk their indexes forward instead of at random.
    map.prepareFor(changes.layout)
    val newUndo = if (changes.size <= MaxUndoEntries) {
      val u = new CompactRowMap(keySchema.length, valueSchema.length, changes.size)
      u.prepareFor(changes.layout)
      u
    } else {
      null
    }
    changes.iterator.foreach { case (key, value) =>
      val removal = value eq CompactRowMap.Removed
      if (newUndo != null) {
        val held = map.replaceRecording(key, if (removal) null else value, newUndo)
        prefixIndex.foreach { index =>
          if (removal && held) index.remove(key) else if (!removal && !held) index.add(key)
        }
      } else if (removal) loadRemove(key) else loadPut(key, value)
    }
    map.compactIfWasteful()
    prefixIndex.foreach(_.compactIfWasteful())
    undo = newUndo
    _version = newVersion
  }

  /** Steps back one version using the undo of the last change. */
  def rollBack(): Unit = {
    require(undo != null, "no undo to roll back with")
    map.prepareFor(undo.layout)
    undo.iterator.foreach { case (key, old) =>
      if (old eq CompactRowMap.Removed) loadRemove(key) else loadPut(key, old)
    }
    undo = null
    _version -= 1
  }

  def memoryBytes: Long = map.memoryBytes + (if (undo == null) 0L else undo.memoryBytes) +
    prefixIndex.map(_.memoryBytes).getOrElse(0L)
}

object LiveState {
  /** A larger change (a first big load, say) keeps no undo: a retry reloads from files. */
  val MaxUndoEntries = 100000
}
