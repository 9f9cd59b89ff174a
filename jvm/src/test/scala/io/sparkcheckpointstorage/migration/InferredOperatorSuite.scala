package io.sparkcheckpointstorage.migration

import java.io.{ByteArrayOutputStream, DataOutputStream}

import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** Operators told from their state schemas, as Spark 3.5 leaves them (no operator metadata). */
class InferredOperatorSuite extends AnyFunSuite {
  private val window = StructType(Seq(StructField("start", TimestampType), StructField("end", TimestampType)))

  /** A schema file as Spark writes it: format v2, each schema's JSON in one chunk. */
  private def schemaFile(key: StructType, value: StructType): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    out.writeUTF("v2")
    Seq(key, value).foreach { s =>
      out.writeInt(1)
      out.writeUTF(s.json)
    }
    out.close()
    bytes.toByteArray
  }

  private def infer(stores: (String, Array[Byte])*): StatefulOperator =
    InferredOperator.infer(3, "file:/ck", stores.toMap, numPartitions = 4)

  private def single(key: StructType, value: StructType): StatefulOperator = infer("default" -> schemaFile(key, value))

  private val k = StructType(Seq(StructField("k", LongType)))

  test("schema files of both formats read back") {
    val value = StructType(Seq(StructField("count", LongType, nullable = false)))
    assert(InferredOperator.readSchemaFile(schemaFile(k, value), "w") == ((k, value)))
    val v1 = new ByteArrayOutputStream()
    val out = new DataOutputStream(v1)
    Seq("v1", k.json, value.json).foreach(out.writeUTF)
    out.close()
    assert(InferredOperator.readSchemaFile(v1.toByteArray, "w") == ((k, value)))
    val e = intercept[MigrationException](InferredOperator.readSchemaFile(Array[Byte](0, 2, 'v', '9'), "here"))
    assert(e.getMessage.contains("here is a state schema file of version v9"))
    assert(intercept[MigrationException](InferredOperator.readSchemaFile(Array[Byte](1), "here"))
      .getMessage.contains("here is not a state schema file"))
  }

  test("each single-store operator of Spark 3.5 by what its state holds") {
    val buffers = StructType(Seq(StructField("count", LongType, nullable = false), StructField("sum", LongType)))
    assert(single(StructType(StructField("window", window) +: k.fields), buffers).name == "stateStoreSave")
    assert(single(k, StructType(Seq(StructField("__dummy__", NullType)))).name == "dedupe")
    assert(single(k, StructType(Seq(StructField("expiresAtMicros", LongType, nullable = false)))).name ==
      "dedupeWithinWatermark")
    val groupState = StructType(Seq(StructField("groupState", buffers), StructField("timeoutTimestamp", LongType)))
    assert(single(k, groupState).name == "flatMapGroupsWithState")
    assert(single(StructType(Seq(StructField("key", NullType))), StructType(Seq(StructField("value", LongType))))
      .name == "globalLimit")
    val op = single(k, buffers)
    assert(op == StatefulOperator(3, "stateStoreSave", Seq(OperatorStore("default", 0, 4))))
  }

  test("a session window: its grouping keys are the key prefix") {
    val key = StructType(k.fields :+ StructField("sessionStartTime", TimestampType, nullable = false))
    val marked = new MetadataBuilder().putBoolean("spark.sessionWindow", true).build()
    val value = StructType(Seq(StructField("session_window", window, nullable = false, marked)) ++ k.fields)
    assert(single(key, value) == StatefulOperator(3, "sessionWindowStateStoreSaveExec", Seq(OperatorStore("default", 1, 4))))
    // The same shapes without Spark's mark are an aggregation keyed by all of them.
    assert(single(key, StructType(Seq(StructField("session_window", window)) ++ k.fields)).name == "stateStoreSave")
  }

  test("a stream-stream join by its four stores; other store sets are refused, naming them") {
    val file = schemaFile(k, StructType(Seq(StructField("value", LongType))))
    val stores = Seq("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue")
    val join = infer(stores.map(_ -> file): _*)
    assert(join.name == "symmetricHashJoin" && join.stores.map(_.name) == stores && join.stores.forall(_.numPartitions == 4))
    val e = intercept[MigrationException](infer("left-keyToNumValues" -> file, "other" -> file))
    assert(e.getMessage.contains("stores left-keyToNumValues, other, which no Spark operator of 3.5 keeps"))
    assert(e.getMessage.contains("Resume the query on Spark 4.0 or later"))
  }
}
