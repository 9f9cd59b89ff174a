// Spark 4.0-4.3: `SparkSession` is an interface (the classic one holds the state), and a state data source exists.
package org.apache.spark.sql.checkpointstorage.shim

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.classic
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf

import io.sparkcheckpointstorage.migration.{MigrationException, OperatorStore, SourceCheckpoint, StatefulOperator, StoreRows, TargetStore}

/**
 * The migration members every line from Spark 4.0 shares. They reach into a classic
 * session: from 4.0 `SparkSession` is an interface, and its session state and query
 * execution are the classic session's, which a Spark Connect session has not.
 */
trait Spark4MigrationShim {
  protected def classicSession(spark: SparkSession): classic.SparkSession = spark match {
    case s: classic.SparkSession => s
    case other => throw new MigrationException(s"A migration runs on a classic SparkSession, not ${other.getClass.getName} (Spark Connect).")
  }

  def sqlConf(spark: SparkSession): SQLConf = classicSession(spark).sessionState.conf.clone()

  def hadoopConf(spark: SparkSession): Configuration = classicSession(spark).sessionState.newHadoopConf()

  /** None: Spark's state data source reads every store from 4.0. */
  def readWithoutStateSource(spark: SparkSession, layout: SourceCheckpoint, op: StatefulOperator,
      store: OperatorStore): Option[StoreRows] = None

  def internalRows(df: DataFrame): RDD[InternalRow] =
    df.asInstanceOf[classic.Dataset[Row]].queryExecution.toRdd

  /** The provider `target`'s settings name, initialized for its store, no version opened yet. */
  protected def createProvider(target: TargetStore): StateStoreProvider = {
    val spec = target.prefixKeyColumns.map(PrefixKeyScanStateEncoderSpec(target.keySchema, _))
      .getOrElse(NoPrefixKeyStateEncoderSpec(target.keySchema))
    StateStoreProvider.createAndInit(StateStoreProviderId(target.storeId, UUID.randomUUID()),
      target.keySchema, target.valueSchema, spec, false, target.storeConf, target.hadoopConf, false, None)
  }
}
