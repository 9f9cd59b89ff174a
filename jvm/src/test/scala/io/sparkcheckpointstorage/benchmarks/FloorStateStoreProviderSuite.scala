package io.sparkcheckpointstorage.benchmarks

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.spark.sql.QueryTest
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.test.SharedSparkSession
import org.apache.spark.sql.types.{LongType, StructType}

/**
 * The benchmarks' floor provider gives Spark's stateful operators correct results within one
 * JVM (an aggregation and a stream-stream join over several batches), and a retried task gets
 * the version before its commit back.
 */
class FloorStateStoreProviderSuite extends QueryTest with SharedSparkSession {

  private def writeBatch(dir: File, name: String, rows: Seq[(Long, Long)]): Unit = {
    val tmp = new File(dir, s".$name.tmp")
    Files.write(tmp.toPath, rows.map { case (k, v) => s"""{"k":$k,"v":$v}""" }.mkString("\n").getBytes(UTF_8))
    assert(tmp.renameTo(new File(dir, s"$name.json")))
  }

  private def withFloor(body: => Unit): Unit =
    withSQLConf(SQLConf.STATE_STORE_PROVIDER_CLASS.key -> FloorStateStoreProvider.ClassName,
      SQLConf.SHUFFLE_PARTITIONS.key -> "3")(body)

  test("an aggregation over several batches counts as the batch computation does") {
    withFloor {
      withTempDir { dir =>
        val source = new File(dir, "in")
        source.mkdirs()
        val batches = (0 until 3).map(b => (0 until 20).map(i => ((i * 7 + b) % 9).toLong -> (b * 100L + i)))
        val query = spark.readStream.schema("k long, v long").json(source.getPath)
          .groupBy("k").count()
          .writeStream.outputMode("update").format("memory").queryName("floor_agg")
          .option("checkpointLocation", new File(dir, "chk").getPath).start()
        try {
          batches.zipWithIndex.foreach { case (rows, b) =>
            writeBatch(source, s"b$b", rows)
            query.processAllAvailable()
          }
          val latest = spark.table("floor_agg").collect().groupBy(_.getLong(0)).map { case (k, rs) => k -> rs.map(_.getLong(1)).max }
          val expected = batches.flatten.groupBy(_._1).map { case (k, rs) => k -> rs.size.toLong }
          assert(latest == expected)
          assert(query.lastProgress.stateOperators.head.numRowsTotal == expected.size)
        } finally query.stop()
      }
    }
  }

  test("a stream-stream join finds every match across batches") {
    withFloor {
      withTempDir { dir =>
        val left = new File(dir, "left")
        val right = new File(dir, "right")
        left.mkdirs()
        right.mkdirs()
        val l = spark.readStream.schema("k long, v long").json(left.getPath).withColumnRenamed("v", "lv")
        val r = spark.readStream.schema("k long, v long").json(right.getPath).withColumnRenamed("v", "rv")
        val query = l.join(r, "k").writeStream.format("memory").queryName("floor_join")
          .option("checkpointLocation", new File(dir, "chk").getPath).start()
        val leftRows = (0 until 3).map(b => (0 until 10).map(i => (i + 5L * b) -> (100L * b + i)))
        val rightRows = (0 until 3).map(b => (0 until 10).map(i => (2L * i + b) -> (1000L * b + i)))
        try {
          (0 until 3).foreach { b =>
            writeBatch(left, s"b$b", leftRows(b))
            query.processAllAvailable()
            writeBatch(right, s"b$b", rightRows(b))
            query.processAllAvailable()
          }
          val joined = spark.table("floor_join").collect().map(r => (r.getLong(0), r.getLong(1), r.getLong(2))).sorted.toSeq
          val expected = (for {
            (k1, lv) <- leftRows.flatten
            (k2, rv) <- rightRows.flatten
            if k1 == k2
          } yield (k1, lv, rv)).sorted
          assert(expected.nonEmpty && joined == expected)
        } finally query.stop()
      }
    }
  }

  test("a retried task gets the version before the commit back; an abort undoes; other versions are refused") {
    val provider = new FloorStateStoreProvider
    provider.initForTest(StateStoreId("/tmp/never-written", 0, 0))
    val schema = new StructType().add("x", LongType)
    val proj = UnsafeProjection.create(schema)
    def row(x: Long): UnsafeRow = proj(InternalRow(x)).copy()

    val v0 = provider.getStoreForTest(0)
    v0.put(row(1), row(10))
    v0.put(row(2), row(20))
    assert(v0.commit() == 1)

    val v1 = provider.getStoreForTest(1)
    v1.put(row(1), row(11))
    v1.remove(row(2))
    v1.put(row(3), row(30))
    assert(v1.commit() == 2)

    // The task that committed version 2 is retried: it asks for version 1 again.
    val retried = provider.getStoreForTest(1)
    assert(retried.get(row(1)) == row(10) && retried.get(row(2)) == row(20) && retried.get(row(3)) == null)
    retried.put(row(4), row(40))
    retried.abort()
    val again = provider.getStoreForTest(1)
    assert(again.get(row(4)) == null && again.get(row(1)) == row(10))

    val e = intercept[IllegalStateException](provider.getStoreForTest(5))
    assert(e.getMessage.contains("version 5 cannot be loaded"))
    provider.close()
  }
}
