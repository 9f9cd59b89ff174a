// Spark 4.2-4.3: `getStore(loadEmpty)` opens any provider's store empty; Spark's state rewriter rescales.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.streaming.state.StateRewriter

import io.sparkcheckpointstorage.migration.{ProviderSink, RowSink, TargetStore}

/**
 * The Spark 4.2+ members a migration uses: a classic session's conf and rows, and a store
 * opened empty at any version (`getStore(loadEmpty = true)`, Spark's state repartitioning),
 * which lets the target provider write the source's batch as its first version.
 */
object MigrationShim extends Spark4MigrationShim {
  /** Every provider opens a store empty at any version from 4.2. */
  def checkWritable(targetProvider: String): Unit = ()

  /** The target's stores are written with the checkpoint's own settings. */
  def writeSettings(targetProvider: String): Map[String, String] = Map.empty

  /** Spark's state rewriter rewrites transformWithState's column families at another partition count. */
  def rescalesTransformWithState: Boolean = true

  /** The target provider's store opened empty at its version (commit writes `version + 1`). */
  def openSink(target: TargetStore): RowSink = {
    val provider = createProvider(target)
    // A snapshot of the whole state at the one version written: a provider that restores from
    // a snapshot plus changes (RocksDB with changelog checkpointing) has nothing else to start from.
    new ProviderSink(provider, ProviderSink.closingOnFailure(provider)(
      provider.getStore(target.version, None, forceSnapshotOnCommit = true, loadEmpty = true)))
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
