package io.sparkcheckpointstorage.migration

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, DataFrameReader, Row, SparkSession}
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.checkpointstorage.shim.MigrationShim
import org.apache.spark.sql.types.{IntegerType, StructField, StructType}

import io.sparkcheckpointstorage.layout.CheckpointPaths

/**
 * The rows of one state store of a checkpoint at a batch, read by Spark's state data source
 * (`statestore`): it rebuilds the query's state settings from the offset log and opens the
 * provider that wrote the state, whichever it is, on the executors.
 *
 * @param rows        one RDD partition per state partition: `key` and `value` structs and `partition_id`
 * @param keySchema   the store's key schema, as the operator recorded it
 * @param valueSchema the store's value schema
 */
final case class StoreRows(rows: RDD[InternalRow], keySchema: StructType, valueSchema: StructType,
    keyIndex: Int, valueIndex: Int, partitionIndex: Int)

object StateRowsReader {
  /**
   * Spark's state data source, in a session whose state store coordinator runs. Spark 4.1's
   * HDFS provider reports each load to the driver's coordinator, which a session creates with
   * its streaming query manager: in a driver that has not touched `spark.streams` yet (one
   * started only to migrate) the executors' reads fail with `RpcEndpointNotFoundException`.
   */
  def stateSource(spark: SparkSession): DataFrameReader = {
    spark.streams
    spark.read.format("statestore")
  }

  /**
   * The rows of `store` of `op` at the layout's batch: by Spark's state data source, or on a
   * line without one (3.5) by the provider that wrote them, opened on the executors.
   */
  def read(spark: SparkSession, layout: SourceCheckpoint, op: StatefulOperator, store: OperatorStore): StoreRows =
    readWithoutStateSource(spark, layout, op, store)
      .getOrElse(read(spark, layout.root, op.id, store.name, layout.batchId))

  /** The rows of `store` read by the provider that wrote them, on a line without the state data source. */
  def readWithoutStateSource(spark: SparkSession, layout: SourceCheckpoint, op: StatefulOperator,
      store: OperatorStore): Option[StoreRows] =
    if (MigrationShim.hasStateDataSource) None else Some(ProviderStateRows.read(spark, layout, op, store))

  def read(spark: SparkSession, checkpoint: String, operatorId: Long, store: String, batchId: Long): StoreRows = {
    var reader = stateSource(spark)
      .option("batchId", batchId)
      .option("operatorId", operatorId)
    // The default store is read without a name; a join's four stores by theirs.
    if (store != CheckpointPaths.DefaultStore) reader = reader.option("storeName", store)
    val df = reader.load(checkpoint)
    val schema = df.schema
    StoreRows(
      MigrationShim.internalRows(df),
      schema("key").dataType.asInstanceOf[StructType],
      schema("value").dataType.asInstanceOf[StructType],
      schema.fieldIndex("key"), schema.fieldIndex("value"), schema.fieldIndex("partition_id"))
  }

  /**
   * `rows` as the state data source shows them (`key`, `value`, `partition_id`), for a line
   * that has none (3.5): a canonical savepoint writes this to parquet.
   */
  def dataFrame(spark: SparkSession, rows: StoreRows): DataFrame = {
    val schema = StructType(Seq(StructField("key", rows.keySchema, nullable = false),
      StructField("value", rows.valueSchema, nullable = false), StructField("partition_id", IntegerType, nullable = false)))
    val (keyFields, valueFields) = (rows.keySchema.length, rows.valueSchema.length)
    val (keyIndex, valueIndex, partitionIndex) = (rows.keyIndex, rows.valueIndex, rows.partitionIndex)
    val external = rows.rows.mapPartitions { it =>
      val toRow = CatalystTypeConverters.createToScalaConverter(schema)
      it.map(r => toRow(InternalRow(r.getStruct(keyIndex, keyFields), r.getStruct(valueIndex, valueFields),
        r.getInt(partitionIndex))).asInstanceOf[Row])
    }
    spark.createDataFrame(external, schema)
  }
}
