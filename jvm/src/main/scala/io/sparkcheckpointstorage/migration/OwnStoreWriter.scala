package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}

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
  def openSink(target: TargetStore)(openRocksDbAtZero: => (StateStoreProvider, StateStore)): RowSink = {
    if (target.provider == TargetProvider.RocksDb) {
      val (provider, store) = openRocksDbAtZero
      return new RocksDbFirstVersionSink(provider, store, target.storeId.storeCheckpointLocation(),
        target.version + 1, target.hadoopConf)
    }
    val provider = new HeapStateStoreProvider()
    new ProviderSink(provider, closingOnFailure(provider)(provider.openEmptyForMigration(target.storeId,
      target.keySchema, target.valueSchema, target.prefixKeyColumns, target.storeConf, target.hadoopConf,
      target.version)))
  }

  /** Closes `provider` when opening its store failed. */
  def closingOnFailure[T](provider: StateStoreProvider)(open: => T): T =
    try open catch {
      case e: Throwable =>
        provider.close()
        throw e
    }
}

/**
 * The migration members of a line before Spark 4.2, which writes its targets through
 * [[OwnStoreWriter]]; the line's `MigrationSparkApi` only opens Spark's RocksDB provider at
 * version 0, with that line's `createAndInit` and `getStore`.
 */
trait OwnStoreWriting {
  /** Spark's RocksDB provider for `target`, its store opened at version 0. */
  protected def openRocksDbAtZero(target: TargetStore): (StateStoreProvider, StateStore)

  def checkWritable(targetProvider: String): Unit = OwnStoreWriter.checkWritable(targetProvider)

  def writeSettings(targetProvider: String): Map[String, String] = OwnStoreWriter.writeSettings(targetProvider)

  def openSink(target: TargetStore): RowSink = OwnStoreWriter.openSink(target)(openRocksDbAtZero(target))

  /** Refused: Spark's state rewriter, the one writer of transformWithState's column families, came with 4.2. */
  def rewriteStatePartitioned(spark: SparkSession, readFrom: String, writeTo: String, batchId: Long,
      numPartitions: Int, hadoopConf: Configuration): Unit = throw TransformWithStateMigration.rescaleRefused(readFrom, "-")
}
