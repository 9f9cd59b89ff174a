package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

import io.sparkcheckpointstorage.provider.HeapStateStoreProvider

/**
 * Before Spark 4.2 no provider can be asked, through Spark's API, to open a store empty at
 * an arbitrary version (`getStore(loadEmpty = true)` came with 4.2's state repartitioning).
 * Our own provider opens one itself on every line, so it writes the migrated batch as its
 * version in its own file format; Spark's HDFS provider gets its snapshot file written
 * directly ([[HdfsSnapshotFile]]); Spark's RocksDB provider has no such way, and is refused.
 */
object OwnStoreWriter {
  /** Refuses a target this line cannot write, naming the line and what to do instead. */
  def checkWritable(targetProvider: String): Unit = {
    if (targetProvider != TargetProvider.Heap && targetProvider != TargetProvider.Hdfs) {
      throw new MigrationException(s"Spark ${org.apache.spark.SPARK_VERSION} cannot write state for " +
        s"$targetProvider in a migration: before Spark 4.2 only a provider's own previous version opens " +
        "a store of it (getStore(loadEmpty) came with 4.2), and this provider's files cannot be written " +
        "from outside it. On this line, migrate to heap (ours) or hdfs; migrate to rocksdb with pyspark " +
        "4.2 or later, and run the query on that Spark.")
    }
  }

  /** Our provider of one store, and its store opened empty at `version` (commit writes `version + 1`). */
  def openEmptyStore(
      storeId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      numColsPrefixKey: Int,
      storeConf: StateStoreConf,
      hadoopConf: Configuration,
      version: Long): (StateStoreProvider, StateStore) = {
    val provider = new HeapStateStoreProvider()
    try {
      (provider, provider.openEmptyForMigration(storeId, keySchema, valueSchema,
        if (numColsPrefixKey > 0) Some(numColsPrefixKey) else None, storeConf, hadoopConf, version))
    } catch {
      case e: Throwable =>
        provider.close()
        throw e
    }
  }
}
