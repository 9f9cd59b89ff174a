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
 * The Spark 4.0-4.1 members a migration uses: a classic session's conf and rows, and a
 * target store written without `getStore(loadEmpty)`, which these lines lack
 * ([[OwnStoreWriter]]).
 */
object MigrationSparkApi {
  private def classicSession(spark: SparkSession): classic.SparkSession = spark match {
    case s: classic.SparkSession => s
    case other => throw new MigrationException(s"A migration runs on a classic SparkSession, not ${other.getClass.getName} (Spark Connect).")
  }

  def sqlConf(spark: SparkSession): SQLConf = classicSession(spark).sessionState.conf.clone()

  def hadoopConf(spark: SparkSession): Configuration = classicSession(spark).sessionState.newHadoopConf()

  /** None: Spark's state data source reads every store on this line. */
  def readWithoutStateSource(spark: SparkSession, layout: CheckpointLayout, op: OperatorLayout,
      store: StoreLayout): Option[StoreRows] = None

  def internalRows(df: DataFrame): RDD[InternalRow] =
    df.asInstanceOf[classic.Dataset[Row]].queryExecution.toRdd

  def checkWritable(targetProvider: String): Unit = OwnStoreWriter.checkWritable(targetProvider)

  def writeSettings(targetProvider: String): Map[String, String] = OwnStoreWriter.writeSettings(targetProvider)

  def openSink(storeId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      numColsPrefixKey: Int, storeConf: StateStoreConf, hadoopConf: Configuration,
      version: Long, targetProvider: String): RowSink =
    OwnStoreWriter.openSink(storeId, keySchema, valueSchema, numColsPrefixKey, storeConf, hadoopConf, version,
        targetProvider) {
      val spec = if (numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, numColsPrefixKey)
        else NoPrefixKeyStateEncoderSpec(keySchema)
      val provider = StateStoreProvider.createAndInit(StateStoreProviderId(storeId, UUID.randomUUID()),
        keySchema, valueSchema, spec, false, storeConf, hadoopConf, false, None)
      (provider, OwnStoreWriter.closingOnFailure(provider)(provider.getStore(0, None)))
    }

  /** Refused: Spark's state rewriter, the one writer of transformWithState's column families, came with 4.2. */
  def rewriteStatePartitioned(spark: SparkSession, readFrom: String, writeTo: String, batchId: Long,
      numPartitions: Int, hadoopConf: Configuration): Unit = throw TransformWithStateMigration.rescaleRefused(readFrom, "-")
}
