package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.provider.HeapStateStoreProvider

/**
 * Before Spark 4.2 no provider can be asked, through Spark's API, to open a store empty at
 * an arbitrary version (`getStore(loadEmpty = true)` came with 4.2's state repartitioning).
 * Our own provider opens one itself on every line, so it writes the migrated batch as its
 * version in its own file format; Spark's HDFS provider gets its snapshot file written
 * directly ([[HdfsSnapshotFile]]); Spark's RocksDB provider writes the rows as its first
 * version, renamed to the batch's ([[RocksDbFirstVersionSink]]). Any other provider is
 * refused.
 */
object OwnStoreWriter {
  /** Refuses a target this line cannot write, naming the line and what to do instead. */
  def checkWritable(targetProvider: String): Unit = {
    if (!Set(TargetProvider.Heap, TargetProvider.Hdfs, TargetProvider.RocksDb).contains(targetProvider)) {
      throw new MigrationException(s"Spark ${org.apache.spark.SPARK_VERSION} cannot write state for " +
        s"$targetProvider in a migration: before Spark 4.2 only a provider's own previous version opens " +
        "a store of it (getStore(loadEmpty) came with 4.2), and this provider's files cannot be written " +
        "from outside it. On this line, migrate to heap (ours), hdfs or rocksdb; migrate to another " +
        "provider with pyspark 4.2 or later, and run the query on that Spark.")
    }
  }

  /** The settings the target's stores are written with on top of the checkpoint's own. */
  def writeSettings(targetProvider: String): Map[String, String] =
    if (targetProvider == TargetProvider.RocksDb) Map(SparkSettingKeys.RocksDbChangelogCheckpointing -> "false")
    else Map.empty

  /**
   * Where the rows of one store go (commit writes `version + 1`): our provider's store
   * opened empty at `version`, or RocksDB's opened at 0 by `openRocksDbAtZero`, its
   * snapshot renamed on commit.
   */
  def openSink(
      storeId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      numColsPrefixKey: Int,
      storeConf: StateStoreConf,
      hadoopConf: Configuration,
      version: Long,
      targetProvider: String)(openRocksDbAtZero: => (StateStoreProvider, StateStore)): RowSink = {
    if (targetProvider == TargetProvider.RocksDb) {
      val (provider, store) = openRocksDbAtZero
      return new RocksDbFirstVersionSink(provider, store, storeId.storeCheckpointLocation(), version + 1, hadoopConf)
    }
    val provider = new HeapStateStoreProvider()
    new ProviderSink(provider, closingOnFailure(provider)(provider.openEmptyForMigration(storeId, keySchema,
      valueSchema, if (numColsPrefixKey > 0) Some(numColsPrefixKey) else None, storeConf, hadoopConf, version)))
  }

  /** Closes `provider` when opening its store failed. */
  def closingOnFailure[T](provider: StateStoreProvider)(open: => T): T =
    try open catch {
      case e: Throwable =>
        provider.close()
        throw e
    }
}
