// Spark 4.2-4.3: `getStore(loadEmpty)` opens any provider's store empty; Spark's state rewriter rescales.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.streaming.state.{StateRewriter, StateStore, StateStoreProvider}

/**
 * The Spark 4.2+ members a migration uses: a classic session's conf and rows, and a store
 * opened empty at any version (`getStore(loadEmpty = true)`, Spark's state repartitioning),
 * which lets the target provider write the source's batch as its first version.
 */
object MigrationShim extends Spark4MigrationShim {
  val opensStoreEmpty: Boolean = true
  /** Spark's state rewriter rewrites transformWithState's column families at another partition count. */
  val rewritesStatePartitioned: Boolean = true

  def openAtZero(provider: StateStoreProvider): StateStore =
    provider.getStore(0, None, forceSnapshotOnCommit = false, loadEmpty = false)

  /**
   * The store opened empty at `version` (commit writes `version + 1`), as a snapshot of the
   * whole state: a provider that restores from a snapshot plus changes (RocksDB with changelog
   * checkpointing) has nothing else to start from.
   */
  def openStoreEmpty(provider: StateStoreProvider, version: Long): StateStore =
    provider.getStore(version, None, forceSnapshotOnCommit = true, loadEmpty = true)

  /**
   * Rewrites the state of every operator of the checkpoint `readFrom` at `batchId` into the
   * checkpoint `writeTo` (its logs and operator metadata already there) at the same batch,
   * over `numPartitions` partitions: Spark's state rewriter (the one its offline repartition
   * runs), which reads and writes every column family, each row moved to the partition of its
   * `partition_key` by a Spark shuffle.
   */
  def rewriteStatePartitioned(spark: SparkSession, readFrom: String, writeTo: String, batchId: Long,
      numPartitions: Int, hadoopConf: Configuration): Unit = {
    val session = classicSession(spark).getOrElse(throw new IllegalArgumentException(
      s"Spark's state rewriter runs on a classic SparkSession, not ${spark.getClass.getName} (Spark Connect)."))
    val repartition = (df: DataFrame) => df.repartition(numPartitions, org.apache.spark.sql.functions.col("partition_key"))
    new StateRewriter(session, batchId, batchId, writeTo, hadoopConf, Some(readFrom),
      Some(repartition), None).run()
  }
}
