// Spark 4.0-4.3: `SparkSession` is an interface (the classic one holds the state), and a state data source exists.
package org.apache.spark.sql.checkpointstorage.shim

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.classic
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, StateStoreConf, StateStoreId, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * The migration members every line from Spark 4.0 shares. They reach into a classic
 * session: from 4.0 `SparkSession` is an interface, and its session state and query
 * execution are the classic session's, which a Spark Connect session has not (None).
 */
trait Spark4MigrationShim {
  val hasStateDataSource: Boolean = true

  protected def classicSession(spark: SparkSession): Option[classic.SparkSession] = spark match {
    case s: classic.SparkSession => Some(s)
    case _ => None
  }

  def sqlConf(spark: SparkSession): Option[SQLConf] = classicSession(spark).map(_.sessionState.conf.clone())

  def hadoopConf(spark: SparkSession): Option[Configuration] = classicSession(spark).map(_.sessionState.newHadoopConf())

  def internalRows(df: DataFrame): RDD[InternalRow] =
    df.asInstanceOf[classic.Dataset[Row]].queryExecution.toRdd

  /** The provider the store's settings name, initialized for the store, no version opened yet. */
  def createProvider(storeId: StateStoreId, keySchema: StructType, valueSchema: StructType, numColsPrefixKey: Int,
      storeConf: StateStoreConf, hadoopConf: Configuration): StateStoreProvider = {
    val spec = if (numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, numColsPrefixKey)
      else NoPrefixKeyStateEncoderSpec(keySchema)
    StateStoreProvider.createAndInit(StateStoreProviderId(storeId, UUID.randomUUID()),
      keySchema, valueSchema, spec, false, storeConf, hadoopConf, false, None)
  }
}
