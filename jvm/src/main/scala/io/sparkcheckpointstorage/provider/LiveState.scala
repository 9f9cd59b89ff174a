package io.sparkcheckpointstorage.provider

import java.util.{ArrayList => JArrayList, Map => JMap}

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
  /** Entries (key, previous value or null) that turn `_version` back into `_version - 1`. */
  private var undo: JArrayList[(UnsafeRow, UnsafeRow)] = null

  def version: Long = _version

  def canRollBack: Boolean = undo != null

  def reset(version: Long): Unit = {
    map.clear()
    prefixIndex.foreach(_.clear())
    undo = null
    _version = version
  }

  /** Loading replays files into the map: no undo, the version is set at the end. */
  def loadPut(key: UnsafeRow, value: UnsafeRow): Unit = {
    if (prefixIndex.isDefined && !map.contains(key)) prefixIndex.get.add(key)
    map.put(key, value)
  }

  def loadRemove(key: UnsafeRow): Unit = {
    if (map.remove(key)) prefixIndex.foreach(_.remove(key))
  }

  def loaded(version: Long): Unit = {
    undo = null
    _version = version
  }

  /** Applies a batch's changes (value null = removed) to make `newVersion`. */
  def apply(changes: JMap[UnsafeRow, UnsafeRow], newVersion: Long): Unit = {
    val keepUndo = changes.size <= MaxUndoEntries
    val newUndo = if (keepUndo) new JArrayList[(UnsafeRow, UnsafeRow)](changes.size) else null
    val it = changes.entrySet.iterator
    while (it.hasNext) {
      val e = it.next()
      val key = e.getKey
      if (keepUndo) {
        val old = map.get(key)
        newUndo.add((key, if (old == null) null else old.copy()))
      }
      if (e.getValue == null) loadRemove(key) else loadPut(key, e.getValue)
    }
    map.compactIfWasteful()
    undo = newUndo
    _version = newVersion
  }

  /** Steps back one version using the undo of the last change. */
  def rollBack(): Unit = {
    require(undo != null, "no undo to roll back with")
    val it = undo.iterator
    while (it.hasNext) {
      val (key, old) = it.next()
      if (old == null) loadRemove(key) else loadPut(key, old)
    }
    undo = null
    _version -= 1
  }

  def memoryBytes: Long = map.memoryBytes + (if (undo == null) 0L else undo.size * 96L)
}

object LiveState {
  /** A larger change (a first big load, say) keeps no undo: a retry reloads from files. */
  val MaxUndoEntries = 100000
}
