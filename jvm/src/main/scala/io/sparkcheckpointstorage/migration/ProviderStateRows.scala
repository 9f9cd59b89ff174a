package io.sparkcheckpointstorage.migration

import org.apache.spark.TaskContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.checkpointstorage.shim.MigrationShim
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.util.SerializableConfiguration

import io.sparkcheckpointstorage.layout.{CheckpointPaths, SparkSettingKeys}

/**
 * The rows of one store at a batch, read on a line without the state data source (Spark 3.5;
 * it came with 4.0, `MigrationShim.hasStateDataSource`): one task per state partition opens
 * the provider that wrote the state (the offset log's, with the offset log's state settings)
 * read-only at the batch's version, as the data source does, and yields `partition_id`, `key`
 * and `value` rows. The store's key and value schemas are those Spark recorded in its
 * partition 0.
 */
private[migration] object ProviderStateRows {
  def read(spark: SparkSession, layout: SourceCheckpoint, op: StatefulOperator, store: OperatorStore): StoreRows = {
    val (keySchema, valueSchema) = layout.storeSchemas(op.id, store.name)
    val sqlConf = MigrationSession.sqlConf(spark)
    layout.offsetConf.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    val storeConf = new StateStoreConf(sqlConf)
    val hadoopConf = new SerializableConfiguration(MigrationSession.hadoopConf(spark))
    val stateRoot = s"${layout.root}/${CheckpointPaths.State}"
    val (opId, storeName, prefix, version) = (op.id, store.name, store.numColsPrefixKey, layout.batchId + 1)
    val provider = layout.offsetConf.getOrElse(SparkSettingKeys.ProviderClass, "")
    val rows = spark.sparkContext.parallelize(0 until store.numPartitions, store.numPartitions).mapPartitions { _ =>
      val partition = TaskContext.getPartitionId()
      val storeId = StateStoreId(stateRoot, opId, partition, storeName)
      val source = MigrationShim.createProvider(storeId, keySchema, valueSchema, prefix, storeConf, hadoopConf.value)
      val read = try source.getReadStore(version) catch {
        case e: Throwable =>
          source.close()
          throw new MigrationException(s"$provider could not read version $version of store $storeName " +
            s"of operator $opId, partition $partition: ${e.getMessage}", e)
      }
      TaskContext.get().addTaskCompletionListener[Unit] { _ =>
        try read.abort() finally source.close()
      }
      read.iterator().map(pair => InternalRow(partition, pair.key.copy(), pair.value.copy()))
    }
    StoreRows(rows, keySchema, valueSchema, keyIndex = 1, valueIndex = 2, partitionIndex = 0)
  }
}
