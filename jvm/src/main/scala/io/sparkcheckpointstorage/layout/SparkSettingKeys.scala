package io.sparkcheckpointstorage.layout

/**
 * Spark's own setting keys that this package reads, writes or names in its errors: the
 * ones a query records in its offset log and the ones that choose the state store provider
 * and the checkpoint file manager, with the provider Spark uses when none is set. Spelt once
 * here (Python's twins are in `jvm_names.py`).
 */
object SparkSettingKeys {
  /** The state store provider class: Spark reads it when a query starts, records it in the offset log. */
  val ProviderClass = "spark.sql.streaming.stateStore.providerClass"
  /** The checkpoint file manager class: Spark reads it from the Hadoop configuration. */
  val FileManagerClass = "spark.sql.streaming.checkpointFileManagerClass"
  /** The state checkpoint format (1, or 2 with checkpoint ids; Spark 4.0+). */
  val CheckpointFormatVersion = "spark.sql.streaming.stateStore.checkpointFormatVersion"
  /** The number of state partitions, recorded in the offset log when a query first starts. */
  val ShufflePartitions = "spark.sql.shuffle.partitions"
  /** Spark 4.1+: the state partitions, recorded apart from the (then changeable) shuffle partitions. */
  val StatePartitions = "spark.sql.streaming.internal.stateStore.partitions"
  /** Spark 4.1+: a checksum in every state row. */
  val RowChecksum = "spark.sql.streaming.stateStore.rowChecksum.enabled"
  /** RocksDB's changelog checkpointing (a changelog per version, snapshots now and then). */
  val RocksDbChangelogCheckpointing = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
  /** Spark's default state store provider: a query's when the session names none. */
  val DefaultProvider = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
  /** Spark's default checkpoint root of queries. */
  val CheckpointLocation = "spark.sql.streaming.checkpointLocation"
}
