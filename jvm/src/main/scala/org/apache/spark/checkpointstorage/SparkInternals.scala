package org.apache.spark.checkpointstorage

import org.apache.spark.SparkConf
import org.apache.spark.io.CompressionCodec

/**
 * The bridge to Spark's `private[spark]` API that the plugin uses: it lives under
 * `org.apache.spark` for that reason only. Keep it small; everything else belongs in
 * `io.sparkcheckpointstorage`.
 */
object SparkInternals {
  /** Spark's codec for a short name (`lz4`, `zstd`, `snappy`, `lzf`) or class name. */
  def compressionCodec(conf: SparkConf, name: String): CompressionCodec =
    CompressionCodec.createCodec(conf, name)
}

/** Spark's `private[spark]` `NextIterator` over a plain iterator, for the change feed. */
final class IteratorAsNextIterator[T](underlying: Iterator[T], onClose: () => Unit)
  extends org.apache.spark.util.NextIterator[T] {
  override protected def getNext(): T = {
    if (underlying.hasNext) underlying.next() else { finished = true; null.asInstanceOf[T] }
  }
  override protected def close(): Unit = onClose()
}
