package io.sparkcheckpointstorage.migration

import java.io.{ByteArrayInputStream, DataInputStream}

import org.apache.spark.sql.types.{DataType, LongType, NullType, StructType, TimestampType}

import io.sparkcheckpointstorage.layout.CheckpointPaths

/**
 * The layout of a stateful operator that Spark recorded no metadata for: Spark 3.5 writes
 * none (operator metadata came with 4.0), yet every store of an operator keeps its key and
 * value schemas in partition 0 (`state/<op>/0[/<store>]/_metadata/schema`), and what
 * Spark's operators keep there tells them apart as far as a migration needs (which key
 * fields the shuffle hashes, the key prefix):
 *
 *  - four stores `left-`/`right-` × `keyToNumValues`/`keyWithIndexToValue`: a stream-stream join;
 *  - a key ending in `sessionStartTime`, the value holding the `session_window` Spark marks
 *    (`spark.sessionWindow`): a session window, the grouping keys before it as key prefix;
 *  - a value of Spark's one `__dummy__` null field: dropDuplicates; of one `expiresAtMicros`:
 *    dropDuplicatesWithinWatermark;
 *  - a value ending in `timeoutTimestamp` after the group's state: flatMapGroupsWithState (or
 *    applyInPandasWithState, which keeps the same);
 *  - a key of one null field: a global limit (its one row, not partitioned by key);
 *  - any other single store: an aggregation.
 *
 * Names are those of Spark's operator metadata, so the rest of a migration treats an inferred
 * operator as a recorded one.
 */
object InferredOperator {
  private val JoinStores = for (side <- Seq("left", "right"); kind <- Seq("keyToNumValues", "keyWithIndexToValue"))
    yield s"$side-$kind"

  /**
   * The operator `opId` of the checkpoint at `root` from its stores' schema files (store name
   * -> file content), each store with `numPartitions` partitions.
   */
  def infer(opId: Long, root: String, schemaFiles: Map[String, Array[Byte]], numPartitions: Int): StatefulOperator = {
    def store(name: String, prefix: Int = 0) = OperatorStore(name, prefix, numPartitions)
    val names = schemaFiles.keySet
    if (names == JoinStores.toSet) {
      return StatefulOperator(opId, "symmetricHashJoin", JoinStores.map(store(_)))
    }
    if (names != Set(CheckpointPaths.DefaultStore)) {
      throw new MigrationException(s"Operator $opId of the checkpoint $root has no operator metadata " +
        s"(${CheckpointPaths.operatorMetadata(opId)}) and stores ${names.toSeq.sorted.mkString(", ")}, which " +
        "no Spark operator of 3.5 keeps: what it is cannot be told. Resume the query on Spark 4.0 or later " +
        "for one batch (Spark then writes the metadata) and migrate that checkpoint.")
    }
    val where = s"$root/state/$opId/0/_metadata/schema"
    val (key, value) = readSchemaFile(schemaFiles(CheckpointPaths.DefaultStore), where)
    val fields = value.fields.toSeq
    def valueIs(name: String, dataType: DataType) =
      fields.length == 1 && fields.head.name == name && fields.head.dataType == dataType
    val sessionWindow = key.fields.lastOption.exists(f => f.name == "sessionStartTime" && f.dataType == TimestampType) &&
      fields.exists(f => f.metadata.contains("spark.sessionWindow"))
    val name =
      if (sessionWindow) "sessionWindowStateStoreSaveExec"
      else if (key.length == 1 && key.head.dataType == NullType) "globalLimit"
      else if (valueIs("__dummy__", NullType)) "dedupe"
      else if (valueIs("expiresAtMicros", LongType)) "dedupeWithinWatermark"
      else if (fields.length >= 2 && fields.last.name == "timeoutTimestamp" && fields.last.dataType == LongType)
        "flatMapGroupsWithState"
      else "stateStoreSave"
    StatefulOperator(opId, name, Seq(store(CheckpointPaths.DefaultStore, if (sessionWindow) key.length - 1 else 0)))
  }

  /**
   * The key and value schemas of a state schema file as Spark writes it: a version (`v1`:
   * each schema's JSON, or `v2`: each in 64 KB chunks after their count).
   */
  def readSchemaFile(content: Array[Byte], where: String): (StructType, StructType) = {
    val in = new DataInputStream(new ByteArrayInputStream(content))
    def schema(json: String): StructType = DataType.fromJson(json) match {
      case s: StructType => s
      case other => throw new MigrationException(s"$where holds the schema $other where a struct was expected.")
    }
    def chunked(): String = (0 until in.readInt()).map(_ => in.readUTF()).mkString
    try {
      in.readUTF() match {
        case "v1" => (schema(in.readUTF()), schema(in.readUTF()))
        case "v2" => (schema(chunked()), schema(chunked()))
        case other => throw new MigrationException(s"$where is a state schema file of version $other, which " +
          "this migration cannot read (it reads versions 1 and 2).")
      }
    } catch {
      case e @ (_: java.io.EOFException | _: java.io.UTFDataFormatException) =>
        throw new MigrationException(s"$where is not a state schema file: $e")
    }
  }
}
