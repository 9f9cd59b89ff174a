// Spark 3.5: a classic session only, no state data source, no `getStore(loadEmpty)`, no state rewriter.
package org.apache.spark.sql.checkpointstorage.shim

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf

import io.sparkcheckpointstorage.migration.{OperatorStore, ProviderSink, SourceCheckpoint, StatefulOperator, StoreRows, TargetStore}

/**
 * The Spark 3.5 members a migration uses: the session's conf and rows (3.5's `SparkSession`
 * is the classic one), state read without the state data source ([[ProviderStateRowsShim]]) and
 * a target store written without `getStore(loadEmpty)` ([[OwnStoreWriterShim]]), both of which
 * came with 4.0 and 4.2.
 */
object MigrationShim extends OwnStoreWriterShim {
  def sqlConf(spark: SparkSession): SQLConf = spark.sessionState.conf.clone()

  def hadoopConf(spark: SparkSession): Configuration = spark.sessionState.newHadoopConf()

  def internalRows(df: DataFrame): RDD[InternalRow] = df.queryExecution.toRdd

  /** Spark 3.5 has no state data source: the provider that wrote the state reads it. */
  def readWithoutStateSource(spark: SparkSession, layout: SourceCheckpoint, op: StatefulOperator,
      store: OperatorStore): Option[StoreRows] = Some(ProviderStateRowsShim.read(spark, layout, op, store))

  protected def openRocksDbAtZero(target: TargetStore): (StateStoreProvider, StateStore) = {
    val provider = StateStoreProvider.createAndInit(StateStoreProviderId(target.storeId, UUID.randomUUID()),
      target.keySchema, target.valueSchema, target.numColsPrefixKey, target.storeConf, target.hadoopConf)
    (provider, ProviderSink.closingOnFailure(provider)(provider.getStore(0)))
  }
}
