package io.sparkcheckpointstorage.migration

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration

/** What one store of one operator was written with: rows per partition. */
final case class WrittenStore(operatorId: Long, store: String, rowsPerPartition: Seq[Long])

/**
 * Writes rows of a store with the target provider, one task per state partition: the
 * provider opens the store empty at the batch's version, takes every row and commits the
 * next version (batch N: state version N + 1), as if the batch had been run on it.
 */
object StateRowsWriter {
  /**
   * @param rows         partition `i` of the RDD holds the rows of state partition `i` (checked)
   * @param numPartitions the state partitions to write; each one gets a version, empty or not
   */
  def write(
      rows: RDD[InternalRow],
      keyIndex: Int,
      valueIndex: Int,
      partitionIndex: Int,
      keySchema: StructType,
      valueSchema: StructType,
      stateRoot: String,
      operatorId: Long,
      store: StoreLayout,
      batchId: Long,
      storeConf: StateStoreConf,
      hadoopConf: SerializableConfiguration): WrittenStore = {
    if (rows.getNumPartitions != store.numPartitions) {
      throw new MigrationException(s"Store ${store.name} of operator $operatorId has " +
        s"${store.numPartitions} partitions in its metadata but ${rows.getNumPartitions} were read.")
    }
    val keyFields = keySchema.length
    val valueFields = valueSchema.length
    val storeName = store.name
    val prefix = store.numColsPrefixKey
    val counts = rows.mapPartitions { it =>
      val partition = TaskContext.getPartitionId()
      val keyProjection = UnsafeProjection.create(keySchema)
      val valueProjection = UnsafeProjection.create(valueSchema)
      val (provider, stateStore) = MigrationSparkApi.openEmptyStore(
        StateStoreId(stateRoot, operatorId, partition, storeName),
        keySchema, valueSchema, prefix, storeConf, hadoopConf.value, batchId)
      var n = 0L
      try {
        it.foreach { row =>
          val rowPartition = row.getInt(partitionIndex)
          if (rowPartition != partition) {
            throw new MigrationException(s"A row of state partition $rowPartition of store $storeName " +
              s"(operator $operatorId) was read by the task of partition $partition.")
          }
          stateStore.put(keyProjection(row.getStruct(keyIndex, keyFields)),
            valueProjection(row.getStruct(valueIndex, valueFields)))
          n += 1
        }
        stateStore.commit()
      } catch {
        case e: Throwable =>
          if (!stateStore.hasCommitted) try stateStore.abort() catch { case s: Throwable => e.addSuppressed(s) }
          throw e
      } finally {
        provider.close()
      }
      Iterator(partition -> n)
    }.collect().sortBy(_._1)
    WrittenStore(operatorId, storeName, counts.map(_._2).toSeq)
  }
}
