package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * The Spark 3.5 members a migration uses: the session's conf and rows (3.5's `SparkSession`
 * is the classic one), and a target store written without `getStore(loadEmpty)`, which 3.5
 * lacks ([[OwnStoreWriter]]).
 */
object MigrationSparkApi {
  def sqlConf(spark: SparkSession): SQLConf = spark.sessionState.conf.clone()

  def hadoopConf(spark: SparkSession): Configuration = spark.sessionState.newHadoopConf()

  def internalRows(df: DataFrame): RDD[InternalRow] = df.queryExecution.toRdd

  def checkWritable(targetProvider: String): Unit = OwnStoreWriter.checkWritable(targetProvider)

  def openEmptyStore(storeId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      numColsPrefixKey: Int, storeConf: StateStoreConf, hadoopConf: Configuration,
      version: Long): (StateStoreProvider, StateStore) =
    OwnStoreWriter.openEmptyStore(storeId, keySchema, valueSchema, numColsPrefixKey, storeConf, hadoopConf, version)
}
