package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration

/**
 * One store of a migration's target, as the task of its partition writes it: where, its
 * schemas and prefix key columns, its settings, the version it opens at (commit writes
 * `version + 1`) and the provider that writes it.
 */
final case class TargetStore(
    storeId: StateStoreId,
    keySchema: StructType,
    valueSchema: StructType,
    numColsPrefixKey: Int,
    storeConf: StateStoreConf,
    hadoopConf: Configuration,
    version: Long,
    provider: String) {
  def prefixKeyColumns: Option[Int] = if (numColsPrefixKey > 0) Some(numColsPrefixKey) else None
}

/** Where the rows of one store partition go: the target provider's store, or a file in its format. */
trait RowSink {
  def put(key: UnsafeRow, value: UnsafeRow): Unit
  def commit(): Unit
  def abort(): Unit
  def close(): Unit
}

final class ProviderSink(provider: StateStoreProvider, store: StateStore) extends RowSink {
  def put(key: UnsafeRow, value: UnsafeRow): Unit = store.put(key, value)
  def commit(): Unit = store.commit()
  def abort(): Unit = if (!store.hasCommitted) store.abort()
  def close(): Unit = provider.close()
}

object ProviderSink {
  /** Closes `provider` when opening its store failed. */
  def closingOnFailure[T](provider: StateStoreProvider)(open: => T): T =
    try open catch {
      case e: Throwable =>
        provider.close()
        throw e
    }
}

private[migration] final class HdfsSink(writer: HdfsSnapshotWriter) extends RowSink {
  def put(key: UnsafeRow, value: UnsafeRow): Unit = writer.put(key, value)
  def commit(): Unit = writer.commit()
  def abort(): Unit = writer.abort()
  def close(): Unit = ()
}

/** What one store of one operator was written with: rows per partition. */
final case class WrittenStore(operatorId: Long, store: String, rowsPerPartition: Seq[Long])

/**
 * Writes rows of a store with the target provider, one task per state partition: the
 * provider opens the store empty at the batch's version, takes every row and commits the
 * next version (batch N: state version N + 1), as if the batch had been run on it. Spark's
 * HDFS provider cannot open a store empty at a version, so its snapshot file of that version
 * is written instead ([[HdfsSnapshotWriter]]); before 4.2 no Spark provider can
 * ([[TargetStoreWriters]]).
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
      store: OperatorStore,
      batchId: Long,
      targetProvider: String,
      storeConf: StateStoreConf,
      hadoopConf: SerializableConfiguration,
      progress: MigrationTracker): WrittenStore = {
    if (rows.getNumPartitions != store.numPartitions) {
      throw new MigrationException(s"Store ${store.name} of operator $operatorId has " +
        s"${store.numPartitions} partitions in its metadata but ${rows.getNumPartitions} were read.")
    }
    val keyFields = keySchema.length
    val valueFields = valueSchema.length
    val storeName = store.name
    val prefix = store.numColsPrefixKey
    val codec = storeConf.compressionCodec
    val partitionsWritten = progress.partitionsWritten
    val rowsWritten = progress.rowsWritten
    val counts = rows.mapPartitions { it =>
      val partition = TaskContext.getPartitionId()
      val keyProjection = UnsafeProjection.create(keySchema)
      val valueProjection = UnsafeProjection.create(valueSchema)
      val storeId = StateStoreId(stateRoot, operatorId, partition, storeName)
      val sink = if (targetProvider == TargetProvider.Hdfs) {
        new HdfsSink(new HdfsSnapshotWriter(storeId.storeCheckpointLocation(), batchId + 1, codec, hadoopConf.value))
      } else {
        TargetStoreWriters.openSink(TargetStore(storeId, keySchema, valueSchema, prefix, storeConf,
          hadoopConf.value, batchId, targetProvider))
      }
      var n = 0L
      try {
        it.foreach { row =>
          val rowPartition = row.getInt(partitionIndex)
          if (rowPartition != partition) {
            throw new MigrationException(s"A row of state partition $rowPartition of store $storeName " +
              s"(operator $operatorId) was read by the task of partition $partition.")
          }
          sink.put(keyProjection(row.getStruct(keyIndex, keyFields)),
            valueProjection(row.getStruct(valueIndex, valueFields)))
          n += 1
        }
        sink.commit()
        partitionsWritten.add(1)
        rowsWritten.add(n)
      } catch {
        case e: Throwable =>
          try sink.abort() catch { case s: Throwable => e.addSuppressed(s) }
          throw e
      } finally {
        sink.close()
      }
      Iterator(partition -> n)
    }.collect().sortBy(_._1)
    WrittenStore(operatorId, storeName, counts.map(_._2).toSeq)
  }
}
