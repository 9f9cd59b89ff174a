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
