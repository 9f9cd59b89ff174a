// Spark 4.0-4.1: no `getStore(loadEmpty)` and no state rewriter, so a migration writes its targets itself.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}

/**
 * The Spark 4.0-4.1 members a migration uses: a classic session's conf and rows and the state
 * data source ([[Spark4MigrationShim]]), and a provider opened at version 0. These lines lack
 * `getStore(loadEmpty)` and the state rewriter, which came with 4.2.
 */
object MigrationShim extends Spark4MigrationShim {
  val opensStoreEmpty: Boolean = false
  val rewritesStatePartitioned: Boolean = false

  def openAtZero(provider: StateStoreProvider): StateStore = provider.getStore(0, None)

  /** Never called: see [[opensStoreEmpty]]. */
  def openStoreEmpty(provider: StateStoreProvider, version: Long): StateStore =
    throw new UnsupportedOperationException(s"Spark ${org.apache.spark.SPARK_VERSION} has no getStore(loadEmpty)")

  /** Never called: see [[rewritesStatePartitioned]]. */
  def rewriteStatePartitioned(spark: SparkSession, readFrom: String, writeTo: String, batchId: Long,
      numPartitions: Int, hadoopConf: Configuration): Unit =
    throw new UnsupportedOperationException(s"Spark ${org.apache.spark.SPARK_VERSION} has no state rewriter")
}
