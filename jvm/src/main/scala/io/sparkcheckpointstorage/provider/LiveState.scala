package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

/**
 * The state of one store at one version, held in executor heap: a map at one version, and
 * possibly the committed changes that make the next one, not yet applied.
 *
 * A commit only sets the batch's changes aside ([[stage]]); they are applied to the map in
 * place when the next store is opened ([[settle]]), so a version costs the keys the batch
 * touched, never a copy of the map. Until then they are the undo as well: a retried task,
 * which asks for the version before the one just committed, gets the map as it is by
 * dropping them ([[rollBack]]), and the apply keeps no copy of the old values to step back
 * with.
 */
final class LiveState(keySchema: StructType, valueSchema: StructType, prefixCols: Option[Int]) {

  val map = new CompactRowMap(keySchema.length, valueSchema.length)
  val prefixIndex: Option[PrefixIndex] = prefixCols.map(new PrefixIndex(keySchema, _))

  /** The version the map holds; -1 when nothing is loaded. */
  private var _mapVersion = -1L
  /**
   * Key -> value ([[CompactRowMap.Removed]]: removed) of the commit that made
   * `_mapVersion + 1`, not applied to the map yet; null when there is none.
   */
  private var staged: CompactRowMap = null

  /** The version this state stands for: the map's, or the next one when changes are staged. */
  def version: Long = if (staged == null) _mapVersion else _mapVersion + 1

  /** The version the map itself holds, without the staged changes. */
  def mapVersion: Long = _mapVersion

  def canRollBack: Boolean = staged != null

  def reset(version: Long): Unit = {
    map.clear()
    prefixIndex.foreach(_.clear())
    staged = null
    _mapVersion = version
  }

  /** Readies the map for a state file's records, which come in their writer's slot order. */
  def prepareLoad(layout: CompactRowMap.Layout): Unit = map.prepareFor(layout)

  /** Loading replays files into the map: the version is set at the end. */
  def loadPut(key: UnsafeRow, value: UnsafeRow): Unit = {
    if (prefixIndex.isDefined && !map.contains(key)) prefixIndex.get.add(key)
    map.put(key, value)
  }

  def loadRemove(key: UnsafeRow): Unit = {
    if (map.remove(key)) prefixIndex.foreach(_.remove(key))
  }

  def loaded(version: Long): Unit = {
    prefixIndex.foreach(_.compactIfWasteful())
    staged = null
    _mapVersion = version
  }

  /**
   * Takes a committed batch's changes (value [[CompactRowMap.Removed]] = removed), which make
   * `newVersion` out of the map's version; the caller hands them over and no longer changes
   * them.
   */
  def stage(changes: CompactRowMap, newVersion: Long): Unit = {
    require(staged == null && newVersion == _mapVersion + 1,
      s"cannot stage version $newVersion on version $version (map at ${_mapVersion})")
    staged = changes
  }

  /** Applies the staged changes, if any, to the map; returns whether there were any. */
  def settle(): Boolean = {
    if (staged == null) return false
    val changes = staged
    // The changes come in their slot order: with the map laid out alike, the lookups walk
    // its index forward instead of at random.
    map.prepareFor(changes.layout)
    changes.iterator.foreach { case (key, value) =>
      if (value eq CompactRowMap.Removed) loadRemove(key) else loadPut(key, value)
    }
    map.compactIfWasteful()
    prefixIndex.foreach(_.compactIfWasteful())
    staged = null
    _mapVersion += 1
    true
  }

  /** Steps back to the map's version by dropping the staged changes. */
  def rollBack(): Unit = {
    require(staged != null, "no staged changes to roll back")
    staged = null
  }

  def memoryBytes: Long = map.memoryBytes + (if (staged == null) 0L else staged.memoryBytes) +
    prefixIndex.map(_.memoryBytes).getOrElse(0L)
}
