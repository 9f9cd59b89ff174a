package io.sparkcheckpointstorage.migration

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.types.StructType

import io.sparkcheckpointstorage.layout.{CheckpointPaths, OffsetLogEntry, SparkSettingKeys}
import io.sparkcheckpointstorage.packs.PackDirectory
import io.sparkcheckpointstorage.reader.{CheckpointEntry, CheckpointReader}
import io.sparkcheckpointstorage.results.ResultCodec

/** One state store of an operator: its name (`default`, or a join's four), key prefix, partitions. */
final case class OperatorStore(name: String, numColsPrefixKey: Int, numPartitions: Int)

/**
 * A stateful operator of a checkpoint, as Spark's operator metadata (`state/<op>/_metadata/metadata`)
 * records it, or as its state schemas tell it where Spark recorded none ([[InferredOperator]]).
 */
final case class StatefulOperator(id: Long, name: String, stores: Seq[OperatorStore])

/**
 * What a migration needs to know of a source checkpoint at one committed batch: the batch's
 * offset log conf (the provider that wrote the state, the state format settings), the
 * stateful operators with their stores and partitions, and whether some of the state is
 * inline (packs of our storages).
 */
final class SourceCheckpoint private (
    val reader: CheckpointReader,
    val batchId: Long,
    val committed: Seq[Long],
    val offsetConf: Map[String, String],
    val operators: Seq[StatefulOperator],
    val entries: Seq[CheckpointEntry]) {

  def root: String = reader.root.stripSuffix("/")

  def sourceProvider: String = offsetConf.getOrElse(SparkSettingKeys.ProviderClass,
    throw new MigrationException(s"The offset log entry offsets/$batchId of $root records no " +
      s"${SparkSettingKeys.ProviderClass}: this checkpoint was written by a Spark too old to migrate."))

  def hasPacks: Boolean = entries.exists(e => e.inline || e.relPath.startsWith(PackDirectory.DirName + "/"))

  /**
   * Refuses a checkpoint whose offset log does not record its number of partitions: a
   * rescaled checkpoint records the new one there, and Spark takes it from there on restart.
   */
  def requireRecordedPartitions(): Unit = if (!offsetConf.contains(SparkSettingKeys.ShufflePartitions)) {
    throw new MigrationException(s"The offset log entry offsets/$batchId of $root records no " +
      s"${SparkSettingKeys.ShufflePartitions}: this checkpoint was written by a Spark too old to rescale.")
  }

  /** The key and value schemas of `store` of operator `op`, as its partition 0 records them. */
  def storeSchemas(op: Long, store: String): (StructType, StructType) = {
    val rel = CheckpointPaths.storeSchema(op, 0, store)
    val entry = entries.find(_.relPath == rel).getOrElse(throw new MigrationException(
      s"The state schema $rel of store $store of operator $op is missing from the checkpoint $root."))
    InferredOperator.readSchemaFile(reader.read(entry).getOrElse(throw new MigrationException(
      s"$rel of the checkpoint $root disappeared while it was read.")), s"$root/$rel")
  }

  /** The number of state partitions (Spark's `spark.sql.shuffle.partitions` when the query started). */
  def numPartitions: Int = operators.flatMap(_.stores.map(_.numPartitions)).headOption
    .orElse(offsetConf.get(SparkSettingKeys.ShufflePartitions).map(_.toInt))
    .getOrElse(throw new MigrationException(s"Cannot tell the number of state partitions of $root."))
}

object SourceCheckpoint {
  /** What a transformWithState query can be migrated to instead ([[TransformWithStateMigration]]). */
  private val TransformWithStateTarget = "Migrate it with to=rocksdb (--to rocksdb): that copies it, " +
    "and with num_partitions (--partitions) rescales it, from Spark 4.2."

  /**
   * Reads the checkpoint at `location` at `batchId` (-1: the last committed batch), refusing
   * what a migration cannot take: no checkpoint, no committed batch, a batch that is not
   * committed, state checkpoint format version 2, operators that keep column families, or
   * whose kind neither their metadata nor their state schemas tell.
   */
  def read(location: String, batchId: Long, conf: Configuration): SourceCheckpoint = {
    val reader = new CheckpointReader(location, conf)
    val root = reader.root.stripSuffix("/")
    if (!reader.exists) throw new MigrationException(s"No checkpoint at $location.")
    val (batch, committed) = reader.committedBatch(batchId) match {
      case Right(c) => (c.id, c.committedUpTo)
      case Left(why) => throw new MigrationException(why.message(root, "migrate", "migrated"))
    }
    val entries = reader.entries()
    def bytes(rel: String): Array[Byte] = {
      val entry = entries.find(_.relPath == rel).getOrElse(
        throw new MigrationException(s"$rel is missing from the checkpoint $root."))
      reader.read(entry).getOrElse(throw new MigrationException(
        s"$rel of the checkpoint $root disappeared while it was read."))
    }
    def text(rel: String): String = new String(bytes(rel), StandardCharsets.UTF_8)
    val offsetConf = parseOffsetConf(text(CheckpointPaths.offsetEntry(batch)), s"$root/${CheckpointPaths.offsetEntry(batch)}")
    requireFormatVersion1(root, batch, offsetConf, text(CheckpointPaths.commitEntry(batch)))
    entries.map(_.relPath).flatMap(CheckpointPaths.operatorMetadataV2Of).headOption.foreach { op =>
      throw new MigrationException(s"Operator $op of the checkpoint $root has operator metadata of version 2 " +
        s"(${CheckpointPaths.operatorMetadataV2Dir(op)}): it is a transformWithState operator, which keeps its state in column " +
        "families that only Spark's RocksDBStateStoreProvider stores, and cannot be migrated. Supported: " +
        "aggregation, dropDuplicates, dropDuplicatesWithinWatermark, stream-stream joins, " +
        "flatMapGroupsWithState, applyInPandasWithState, session windows. " + TransformWithStateTarget)
    }
    val recorded = entries.map(_.relPath).flatMap(CheckpointPaths.operatorMetadataOf).sorted
      .map(CheckpointPaths.operatorMetadata).map(rel => parseOperator(text(rel), s"$root/$rel"))
    // Spark 3.5 records no operator metadata: its operators are told from their state schemas.
    val inferred = entries.map(_.relPath).flatMap(CheckpointPaths.stateOperatorOf).distinct.sorted
      .filterNot(id => recorded.exists(_.id == id)).map { id =>
        val schemas = entries.flatMap(e => CheckpointPaths.storeSchemaOf(e.relPath).collect {
          case (`id`, 0, store) => store -> e
        }).toMap
        if (schemas.isEmpty) {
          throw new MigrationException(s"Operator $id of the checkpoint $root has state but neither operator " +
            s"metadata (${CheckpointPaths.operatorMetadata(id)}) nor the state schema of its partition 0 " +
            s"(state/$id/0/_metadata/schema): which operator keeps the state, its stores and key prefix, and " +
            "so how its rows are indexed and partitioned, cannot be told. Resume the query on Spark 4.0 or " +
            "later for one batch (Spark then writes the metadata) and migrate that checkpoint.")
        }
        val partitions = offsetConf.get(SparkSettingKeys.ShufflePartitions).map(_.toInt).getOrElse(
          throw new MigrationException(s"The offset log entry ${CheckpointPaths.offsetEntry(batch)} of $root " +
            s"records no ${SparkSettingKeys.ShufflePartitions}, and operator $id no metadata: its number of " +
            "state partitions cannot be told."))
        InferredOperator.infer(id, root, schemas.map { case (store, e) => store -> bytes(e.relPath) }, partitions)
      }
    val operators = (recorded ++ inferred).sortBy(_.id)
    operators.find(_.name.toLowerCase(java.util.Locale.ROOT).contains("transformwithstate")).foreach { op =>
      throw new MigrationException(s"Operator ${op.id} of the checkpoint $root is ${op.name}, which keeps " +
        "its state in column families that only Spark's RocksDBStateStoreProvider stores: it cannot be " +
        "migrated. Supported: aggregation, dropDuplicates, dropDuplicatesWithinWatermark, stream-stream " +
        "joins, flatMapGroupsWithState, applyInPandasWithState, session windows. " + TransformWithStateTarget)
    }
    new SourceCheckpoint(reader, batch, committed, offsetConf, operators, entries)
  }

  /**
   * Refuses state checkpoint format version 2: its state files are named by checkpoint ids
   * only the writing provider resolves. It shows in the commit log (a `v2` entry with the
   * stores' checkpoint ids); the setting itself is not recorded in the offset log.
   */
  def requireFormatVersion1(root: String, batch: Long, offsetConf: Map[String, String], commit: String): Unit = {
    val formatVersion = offsetConf.get(SparkSettingKeys.CheckpointFormatVersion).map(_.trim).filter(_ != "1")
      .orElse(if (commit.startsWith("v2") || commit.contains("\"stateUniqueIds\"")) Some("2") else None)
    formatVersion.foreach { v =>
      throw new MigrationException(s"The checkpoint $root was written with state checkpoint format " +
        s"version $v (${SparkSettingKeys.CheckpointFormatVersion}; its commit log entry ${CheckpointPaths.commitEntry(batch)} " +
        "records the stores' checkpoint ids): its state files are " +
        "named by checkpoint ids that only the writing provider can resolve, and cannot be migrated. " +
        s"Run the query with ${SparkSettingKeys.CheckpointFormatVersion}=1 from a new checkpoint.")
    }
  }

  /** The conf map of an offset log entry: `v1`, then the metadata JSON, then one line per source. */
  def parseOffsetConf(content: String, where: String): Map[String, String] =
    OffsetLogEntry.conf(content).getOrElse(throw new MigrationException(s"$where is not an offset log entry Spark wrote."))

  private def parseOperator(content: String, where: String): StatefulOperator = {
    val lines = content.split("\n", 2)
    if (lines.length < 2 || lines(0).trim != "v1") {
      throw new MigrationException(s"$where is operator metadata of version ${lines(0).trim}, which this " +
        "migration cannot read (it reads version 1, written for every operator but transformWithState).")
    }
    val json: JsonNode = ResultCodec.readTree(lines(1))
    val info = json.get("operatorInfo")
    val stores = json.get("stateStoreInfo").elements().asScala.map { s =>
      OperatorStore(s.get("storeName").asText(), s.get("numColsPrefixKey").asInt(), s.get("numPartitions").asInt())
    }.toSeq
    StatefulOperator(info.get("operatorId").asLong(), info.get("operatorName").asText(), stores)
  }
}
