package io.sparkcheckpointstorage.migration

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.classic
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * The Spark 4.2+ members a migration uses: a classic session's conf and rows, and a store
 * opened empty at any version (`getStore(loadEmpty = true)`, Spark's state repartitioning),
 * which lets the target provider write the source's batch as its first version.
 */
object MigrationSparkApi {
  private def classicSession(spark: SparkSession): classic.SparkSession = spark match {
    case s: classic.SparkSession => s
    case other => throw new MigrationException(s"A migration runs on a classic SparkSession, not ${other.getClass.getName} (Spark Connect).")
  }

  def sqlConf(spark: SparkSession): SQLConf = classicSession(spark).sessionState.conf.clone()

  def hadoopConf(spark: SparkSession): Configuration = classicSession(spark).sessionState.newHadoopConf()

  /** Every provider opens a store empty at any version from 4.2. */
  def checkWritable(targetProvider: String): Unit = ()

  /** The target's stores are written with the checkpoint's own settings. */
  def writeSettings(targetProvider: String): Map[String, String] = Map.empty

  /** None: Spark's state data source reads every store on this line. */
  def readWithoutStateSource(spark: SparkSession, layout: CheckpointLayout, op: OperatorLayout,
      store: StoreLayout): Option[StoreRows] = None

  def internalRows(df: DataFrame): RDD[InternalRow] =
    df.asInstanceOf[classic.Dataset[Row]].queryExecution.toRdd

  /** The target provider's store opened empty at `version` (commit writes `version + 1`). */
  def openSink(
      storeId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      numColsPrefixKey: Int,
      storeConf: StateStoreConf,
      hadoopConf: Configuration,
      version: Long,
      targetProvider: String): RowSink = {
    val spec = if (numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, numColsPrefixKey)
      else NoPrefixKeyStateEncoderSpec(keySchema)
    val provider = StateStoreProvider.createAndInit(StateStoreProviderId(storeId, UUID.randomUUID()),
      keySchema, valueSchema, spec, false, storeConf, hadoopConf, false, None)
    try {
      // A snapshot of the whole state at the one version written: a provider that restores from
      // a snapshot plus changes (RocksDB with changelog checkpointing) has nothing else to start from.
      new ProviderSink(provider, provider.getStore(version, None, forceSnapshotOnCommit = true, loadEmpty = true))
    } catch {
      case e: Throwable =>
        provider.close()
        throw e
    }
  }

  /**
   * Rewrites the state of every operator of the checkpoint `readFrom` at `batchId` into the
   * checkpoint `writeTo` (its logs and operator metadata already there) at the same batch,
   * over `numPartitions` partitions: Spark's state rewriter (the one its offline repartition
   * runs), which reads and writes every column family, each row moved to the partition of its
   * `partition_key` by a Spark shuffle.
   */
  def rewriteStatePartitioned(spark: SparkSession, readFrom: String, writeTo: String, batchId: Long,
      numPartitions: Int, hadoopConf: Configuration): Unit = {
    val repartition = (df: DataFrame) => df.repartition(numPartitions, org.apache.spark.sql.functions.col("partition_key"))
    new StateRewriter(classicSession(spark), batchId, batchId, writeTo, hadoopConf, Some(readFrom),
      Some(repartition), None).run()
  }
}
