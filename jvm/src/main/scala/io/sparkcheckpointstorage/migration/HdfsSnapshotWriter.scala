package io.sparkcheckpointstorage.migration

import java.io.{DataOutputStream, OutputStream}
import java.util.Locale

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.io.CompressionCodec
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * Writes one version of a store as `HDFSBackedStateStoreProvider` keeps a snapshot:
 * `<version>.snapshot`, compressed with the store's codec, records `int keyLen, key bytes,
 * int valueLen, value bytes`, ended by `-1`.
 *
 * Needed because that provider refuses to open a store empty at an arbitrary version
 * (`getStore(loadEmpty = true)`: "HDFSBackedStateStoreProvider doesn't support loadEmpty"), so
 * it cannot itself write the migrated batch as its version. The query resumed on the target
 * reads the file with the provider's own loader, which checks every record.
 */
final class HdfsSnapshotWriter(dir: Path, version: Long, codecName: String, conf: Configuration) {
  private val path = new Path(dir, s"$version.snapshot")
  private val fs = path.getFileSystem(conf)
  fs.mkdirs(dir)
  private val raw: OutputStream = fs.create(path, false)
  private val out = new DataOutputStream(HdfsSnapshotWriter.codec(codecName).compressedOutputStream(raw))
  private var open = true

  def put(key: UnsafeRow, value: UnsafeRow): Unit = {
    out.writeInt(key.getSizeInBytes)
    out.write(key.getBytes)
    out.writeInt(value.getSizeInBytes)
    out.write(value.getBytes)
  }

  def commit(): Unit = {
    out.writeInt(-1)
    out.close()
    open = false
  }

  def abort(): Unit = if (open) {
    open = false
    try out.close() finally fs.delete(path, false)
  }
}

object HdfsSnapshotWriter {
  private val ShortNames = Map(
    "lz4" -> "org.apache.spark.io.LZ4CompressionCodec",
    "lzf" -> "org.apache.spark.io.LZFCompressionCodec",
    "snappy" -> "org.apache.spark.io.SnappyCompressionCodec",
    "zstd" -> "org.apache.spark.io.ZStdCompressionCodec")

  /** The codec the provider reads the file with (`spark.sql.streaming.stateStore.compression.codec`). */
  def codec(name: String): CompressionCodec = {
    val className = ShortNames.getOrElse(name.toLowerCase(Locale.ROOT), name)
    val sparkConf = Option(SparkEnv.get).map(_.conf).getOrElse(new SparkConf(false))
    Class.forName(className, true, Option(Thread.currentThread().getContextClassLoader).getOrElse(getClass.getClassLoader))
      .getConstructor(classOf[SparkConf]).newInstance(sparkConf).asInstanceOf[CompressionCodec]
  }
}
