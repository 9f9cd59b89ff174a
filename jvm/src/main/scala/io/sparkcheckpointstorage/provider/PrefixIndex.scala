package io.sparkcheckpointstorage.provider

import java.util.{HashMap => JHashMap, HashSet => JHashSet}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType

/**
 * Keys grouped by their leading `numColsPrefixKey` columns, for `prefixScan` (session
 * windows) without a scan of the whole map. Holds copies of the keys it indexes.
 */
final class PrefixIndex(keySchema: StructType, numColsPrefixKey: Int) {
  private val projection = UnsafeProjection.create(
    keySchema.fields.take(numColsPrefixKey).zipWithIndex.map { case (f, i) =>
      BoundReference(i, f.dataType, f.nullable)
    }.toSeq)
  private val byPrefix = new JHashMap[UnsafeRow, JHashSet[UnsafeRow]]()

  def prefixOf(key: UnsafeRow): UnsafeRow = projection(key).copy()

  def add(key: UnsafeRow): Unit = {
    val prefix = prefixOf(key)
    var keys = byPrefix.get(prefix)
    if (keys == null) {
      keys = new JHashSet[UnsafeRow]()
      byPrefix.put(prefix, keys)
    }
    keys.add(key.copy())
  }

  def remove(key: UnsafeRow): Unit = {
    val prefix = prefixOf(key)
    val keys = byPrefix.get(prefix)
    if (keys != null) {
      keys.remove(key)
      if (keys.isEmpty) byPrefix.remove(prefix)
    }
  }

  def keys(prefix: UnsafeRow): Iterator[UnsafeRow] = {
    val keys = byPrefix.get(prefix)
    if (keys == null) Iterator.empty else keys.asScala.toArray.iterator
  }

  def clear(): Unit = byPrefix.clear()
}
