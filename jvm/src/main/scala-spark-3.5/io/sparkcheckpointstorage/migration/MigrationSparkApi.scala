package io.sparkcheckpointstorage.migration

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * The Spark 3.5 members a migration uses: the session's conf and rows (3.5's `SparkSession`
 * is the classic one), state read without the state data source ([[ProviderStateRows]]) and
 * a target store written without `getStore(loadEmpty)` ([[OwnStoreWriter]]), both of which
 * came with 4.0 and 4.2.
 */
object MigrationSparkApi {
  def sqlConf(spark: SparkSession): SQLConf = spark.sessionState.conf.clone()

  def hadoopConf(spark: SparkSession): Configuration = spark.sessionState.newHadoopConf()

  def internalRows(df: DataFrame): RDD[InternalRow] = df.queryExecution.toRdd

  /** Spark 3.5 has no state data source: the provider that wrote the state reads it. */
  def readWithoutStateSource(spark: SparkSession, layout: CheckpointLayout, op: OperatorLayout,
      store: StoreLayout): Option[StoreRows] = Some(ProviderStateRows.read(spark, layout, op, store))

  def checkWritable(targetProvider: String): Unit = OwnStoreWriter.checkWritable(targetProvider)

  def writeSettings(targetProvider: String): Map[String, String] = OwnStoreWriter.writeSettings(targetProvider)

  def openSink(storeId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      numColsPrefixKey: Int, storeConf: StateStoreConf, hadoopConf: Configuration,
      version: Long, targetProvider: String): RowSink =
    OwnStoreWriter.openSink(storeId, keySchema, valueSchema, numColsPrefixKey, storeConf, hadoopConf, version,
        targetProvider) {
      val provider = StateStoreProvider.createAndInit(StateStoreProviderId(storeId, UUID.randomUUID()),
        keySchema, valueSchema, numColsPrefixKey, storeConf, hadoopConf)
      (provider, OwnStoreWriter.closingOnFailure(provider)(provider.getStore(0)))
    }

  /** Refused: Spark's state rewriter, the one writer of transformWithState's column families, came with 4.2. */
  def rewriteStatePartitioned(spark: SparkSession, readFrom: String, writeTo: String, batchId: Long,
      numPartitions: Int, hadoopConf: Configuration): Unit = throw TransformWithStateMigration.rescaleRefused(readFrom, "-")
}
