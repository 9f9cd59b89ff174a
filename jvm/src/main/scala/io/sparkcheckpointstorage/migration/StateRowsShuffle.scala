package io.sparkcheckpointstorage.migration

import org.apache.spark.Partitioner
import org.apache.spark.rdd.{RDD, ShuffledRDD}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, GetStructField, Literal, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.UnsafeRowSerializer

/** Sends a record keyed by a partition id to that partition. */
private[migration] final class PartitionIdPartitioner(override val numPartitions: Int) extends Partitioner {
  def getPartition(key: Any): Int = key.asInstanceOf[Int]
}

/**
 * Moves the rows of one store to `numPartitions` state partitions, each row to the partition
 * the resumed query's shuffle sends its key to: Spark's own partition id expression
 * (`HashPartitioning(keys, n).partitionIdExpression`, Murmur3 with Spark's seed) evaluated
 * over the key fields the operator's shuffle hashes ([[StatePartitioning]]). The rows go
 * through a Spark shuffle of unsafe rows, executor to executor; the driver sees none.
 */
object StateRowsShuffle {
  /** `rows` redistributed: partition `i` of the result holds the rows of state partition `i`. */
  def redistribute(rows: StoreRows, hashedKeyFields: Int, numPartitions: Int): StoreRows = {
    val keyType = rows.keySchema
    val keyRef = BoundReference(rows.keyIndex, keyType, nullable = false)
    val partitionId: Expression = if (hashedKeyFields == 0) Literal(0) else {
      val keys = (0 until hashedKeyFields).map(i => GetStructField(keyRef, i, Some(keyType(i).name)))
      HashPartitioning(keys, numPartitions).partitionIdExpression
    }
    val output = Seq(keyRef, BoundReference(rows.valueIndex, rows.valueSchema, nullable = false), partitionId)
    val keyed: RDD[(Int, InternalRow)] = rows.rows.mapPartitions { it =>
      val project = UnsafeProjection.create(output)
      // No copy: a shuffle of unsafe rows into fewer than 16M partitions without a map-side
      // combine serializes each record as it is written (bypass-merge or serialized sorting),
      // as Spark's own exchange relies on.
      it.map { row =>
        val out = project(row)
        (out.getInt(2), out)
      }
    }
    val shuffled = new ShuffledRDD[Int, InternalRow, InternalRow](keyed, new PartitionIdPartitioner(numPartitions))
      .setSerializer(new UnsafeRowSerializer(3))
    StoreRows(shuffled.map(_._2), keyType, rows.valueSchema, 0, 1, 2)
  }
}
