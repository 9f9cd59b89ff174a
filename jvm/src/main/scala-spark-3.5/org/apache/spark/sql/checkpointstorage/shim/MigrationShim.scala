// Spark 3.5: a classic session only, no state data source, no `getStore(loadEmpty)`, no state rewriter.
package org.apache.spark.sql.checkpointstorage.shim

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * The Spark 3.5 members a migration uses: the session's conf and rows (3.5's `SparkSession`
 * is the classic one, so every session has them), and a provider opened at version 0. The
 * state data source came with 4.0, `getStore(loadEmpty)` and the state rewriter with 4.2.
 */
object MigrationShim {
  val hasStateDataSource: Boolean = false
  val opensStoreEmpty: Boolean = false
  val rewritesStatePartitioned: Boolean = false

  def sqlConf(spark: SparkSession): Option[SQLConf] = Some(spark.sessionState.conf.clone())

  def hadoopConf(spark: SparkSession): Option[Configuration] = Some(spark.sessionState.newHadoopConf())

  def internalRows(df: DataFrame): RDD[InternalRow] = df.queryExecution.toRdd

  /** The provider the store's settings name, initialized for the store, no version opened yet. */
  def createProvider(storeId: StateStoreId, keySchema: StructType, valueSchema: StructType, numColsPrefixKey: Int,
      storeConf: StateStoreConf, hadoopConf: Configuration): StateStoreProvider =
    StateStoreProvider.createAndInit(StateStoreProviderId(storeId, UUID.randomUUID()),
      keySchema, valueSchema, numColsPrefixKey, storeConf, hadoopConf)

  def openAtZero(provider: StateStoreProvider): StateStore = provider.getStore(0)

  /** Never called: see [[opensStoreEmpty]]. */
  def openStoreEmpty(provider: StateStoreProvider, version: Long): StateStore =
    throw new UnsupportedOperationException(s"Spark ${org.apache.spark.SPARK_VERSION} has no getStore(loadEmpty)")

  /** Never called: see [[rewritesStatePartitioned]]. */
  def rewriteStatePartitioned(spark: SparkSession, readFrom: String, writeTo: String, batchId: Long,
      numPartitions: Int, hadoopConf: Configuration): Unit =
    throw new UnsupportedOperationException(s"Spark ${org.apache.spark.SPARK_VERSION} has no state rewriter")
}
