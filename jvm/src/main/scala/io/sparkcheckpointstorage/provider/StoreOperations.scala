package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair

/**
 * What a [[HeapStateStore]] does, in terms every Spark line shares. Each line's
 * `StateStoreShim` (in the `scala-spark-*` shim folders) maps that line's `StateStore`
 * signatures (with or without column families, its iterator type, which members exist) onto
 * these, so the store itself is written once.
 */
trait StoreOperations {
  /** The key's value in this version with the batch's changes, or null. */
  def getRow(key: UnsafeRow): UnsafeRow
  def putRow(key: UnsafeRow, value: UnsafeRow): Unit
  def removeRow(key: UnsafeRow): Unit
  /** Every key and value, as live views (see [[HeapStateStore]]). */
  def rowPairs(): Iterator[UnsafeRowPair]
  /** The keys starting with `prefixKey` (prefix key encoding only). */
  def prefixRowPairs(prefixKey: UnsafeRow): Iterator[UnsafeRowPair]
  /** Ends a read-only use of the store without aborting it. */
  def releaseStore(): Unit
  /** The version this store committed; fails before its commit. */
  def committedVersion: Long
  /** The error for a feature of Spark's API this provider does not offer. */
  def unsupportedOperation(what: String): UnsupportedOperationException
}
