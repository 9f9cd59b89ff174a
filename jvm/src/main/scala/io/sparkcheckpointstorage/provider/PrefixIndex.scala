package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.catalyst.expressions.{BoundReference, JoinedRow, SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{IntegerType, StructType}

/**
 * Keys grouped by their leading `numColsPrefixKey` columns, for `prefixScan` (session
 * windows) without a scan of the whole map.
 *
 * Held like the state itself, in [[CompactRowMap]]s (packed bytes, no object per entry for
 * the garbage collector to trace): the keys of a prefix are numbered 0 to n-1, so that
 *   - `members`: (prefix, number) -> key,
 *   - `numbers`: key -> its number,
 *   - `counts`:  prefix -> n.
 * A removal moves the prefix's last key into the freed number, so numbers stay dense.
 */
final class PrefixIndex(keySchema: StructType, numColsPrefixKey: Int) {
  private val prefixProjection = UnsafeProjection.create(
    keySchema.fields.take(numColsPrefixKey).zipWithIndex.map { case (f, i) =>
      BoundReference(i, f.dataType, f.nullable)
    }.toSeq)
  /** (the first `numColsPrefixKey` columns of the left row, the number on the right). */
  private def memberProjection(leftWidth: Int) = UnsafeProjection.create(
    keySchema.fields.take(numColsPrefixKey).zipWithIndex.map { case (f, i) =>
      BoundReference(i, f.dataType, f.nullable)
    }.toSeq :+ BoundReference(leftWidth, IntegerType, nullable = false))
  private val memberOfKey = memberProjection(keySchema.length)
  private val memberOfPrefix = memberProjection(numColsPrefixKey)
  private val number = new SpecificInternalRow(Seq(IntegerType))
  private val joined = new JoinedRow()
  private val intRow = {
    val r = new UnsafeRow(1)
    r.pointTo(new Array[Byte](16), 16)
    r
  }

  private val members = new CompactRowMap(numColsPrefixKey + 1, keySchema.length)
  private val numbers = new CompactRowMap(keySchema.length, 1)
  private val counts = new CompactRowMap(numColsPrefixKey, 1)

  def prefixOf(key: UnsafeRow): UnsafeRow = prefixProjection(key).copy()

  private def int(n: Int): UnsafeRow = { intRow.setInt(0, n); intRow }

  private def memberKey(key: UnsafeRow, n: Int): UnsafeRow = {
    number.setInt(0, n)
    memberOfKey(joined(key, number))
  }

  private def countOf(prefix: UnsafeRow): Int = {
    val c = counts.get(prefix)
    if (c == null) 0 else c.getInt(0)
  }

  def add(key: UnsafeRow): Unit = {
    if (numbers.contains(key)) return
    val prefix = prefixProjection(key)
    val n = countOf(prefix)
    counts.put(prefix, int(n + 1))
    numbers.put(key, int(n))
    members.put(memberKey(key, n), key)
  }

  def remove(key: UnsafeRow): Unit = {
    val held = numbers.get(key)
    if (held == null) return
    val at = held.getInt(0)
    val prefix = prefixProjection(key).copy()
    val last = countOf(prefix) - 1
    if (at != last) {
      // The prefix's last key takes the freed number.
      val moved = members.get(memberKey(key, last)).copy()
      members.put(memberKey(key, at), moved)
      numbers.put(moved, int(at))
    }
    members.remove(memberKey(key, last))
    numbers.remove(key)
    if (last == 0) counts.remove(prefix) else counts.put(prefix, int(last))
  }

  /** The keys of `prefix`, copied: the caller may change the index while it walks them. */
  def keys(prefix: UnsafeRow): Iterator[UnsafeRow] = {
    val n = countOf(prefix)
    val out = new Array[UnsafeRow](n)
    var i = 0
    while (i < n) {
      number.setInt(0, i)
      out(i) = members.get(memberOfPrefix(joined(prefix, number))).copy()
      i += 1
    }
    out.iterator
  }

  def clear(): Unit = {
    members.clear()
    numbers.clear()
    counts.clear()
  }

  /** Reclaims the records superseded by updates (as the state's own map does after a batch). */
  def compactIfWasteful(): Unit = {
    members.compactIfWasteful()
    numbers.compactIfWasteful()
    counts.compactIfWasteful()
  }

  def size: Int = numbers.size

  /** The bytes this index holds: what `memoryUsedBytes` counts for it. */
  def memoryBytes: Long = members.memoryBytes + numbers.memoryBytes + counts.memoryBytes
}
