package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * Before Spark 4.2 a provider cannot open a store empty at an arbitrary version
 * (`getStore(loadEmpty = true)` came with 4.2's state repartitioning), so the target could
 * not write the source's batch as its version: migration refuses on this line.
 */
object MigrationSparkApi {
  def supported: Boolean = false

  private def refuse(): Nothing = throw new MigrationException(
    s"Migrating state between providers needs Spark 4.2 or later (this is Spark ${org.apache.spark.SPARK_VERSION}): " +
      "only from 4.2 can a state store provider open a store empty at the version of the migrated " +
      "batch. Run the migration with pyspark 4.2 or later.")

  def sqlConf(spark: SparkSession): SQLConf = refuse()
  def hadoopConf(spark: SparkSession): Configuration = refuse()
  def internalRows(df: DataFrame): RDD[InternalRow] = refuse()
  def openEmptyStore(storeId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      numColsPrefixKey: Int, storeConf: StateStoreConf, hadoopConf: Configuration,
      version: Long): (StateStoreProvider, StateStore) = refuse()
}
