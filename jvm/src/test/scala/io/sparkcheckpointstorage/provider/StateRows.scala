package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/** Key (string, int) and value (long) rows for provider tests. */
object StateRows {
  val keySchema: StructType = new StructType().add("name", StringType).add("n", IntegerType)
  val valueSchema: StructType = new StructType().add("value", LongType)
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)
  private val prefixProj = UnsafeProjection.create(new StructType().add("name", StringType))

  def key(name: String, n: Int): UnsafeRow = keyProj(InternalRow(UTF8String.fromString(name), n)).copy()
  def value(v: Long): UnsafeRow = valueProj(InternalRow(v)).copy()
  def prefix(name: String): UnsafeRow = prefixProj(InternalRow(UTF8String.fromString(name))).copy()
  def keyOf(row: UnsafeRow): (String, Int) = (row.getUTF8String(0).toString, row.getInt(1))
  def valueOf(row: UnsafeRow): Long = row.getLong(0)
}
