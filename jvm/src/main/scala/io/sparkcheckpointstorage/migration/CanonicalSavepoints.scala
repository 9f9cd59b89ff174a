package io.sparkcheckpointstorage.migration

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.HashPartitioner
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.checkpointstorage.shim.MigrationShim
import org.apache.spark.sql.types.{DataType, StructType}

import io.sparkcheckpointstorage.fileio.CheckpointPublication
import io.sparkcheckpointstorage.formats.FileFormat
import io.sparkcheckpointstorage.layout.CheckpointPaths
import io.sparkcheckpointstorage.results.{CanonicalOperator, CanonicalSavepointManifest, CanonicalSavepointResult,
  CanonicalStore, ResultCodec}
import io.sparkcheckpointstorage.savepoint.Savepoints

/**
 * Savepoints in a canonical, provider-neutral form (Flink: canonical savepoints, which restore
 * into any state backend).
 *
 * A canonical savepoint holds the query's metadata, offset and commit logs up to the batch,
 * its source logs, and Spark's operator metadata and schema files, like a savepoint of our own format;
 * instead of state files it holds the state rows, per operator and store, as parquet
 * (`canonical-state/<operator>/<store>/partition_id=<p>/`, columns `key` and `value`: structs
 * with the store's key and value schemas), written from Spark's state data source, so that any
 * provider's state is saved the same way. Its `_savepoint` file (JSON, written last) says
 * `"format": "canonical"` and describes every store: schemas, key prefix, partitions, rows.
 * Like a savepoint of our own format, it is written into a hidden sibling of its target and
 * renamed into place last ([[CheckpointPublication]]).
 *
 * Restoring one is a migration whose rows come from the parquet files: the target provider
 * writes them, and the restored checkpoint records it.
 */
object CanonicalSavepoints {
  val StateDir: String = CheckpointPaths.CanonicalState
  val Format = "canonical"

  /**
   * Writes a canonical savepoint of `source` at `batchId` (-1: the last committed) to `target`; returns JSON of a
   * [[CanonicalSavepointResult]].
   */
  def create(spark: SparkSession, source: String, target: String, batchId: Long): String =
    Migration.inJobGroup(spark)(_ => write(spark, source, target, batchId))

  private def write(spark: SparkSession, source: String, target: String, batchId: Long): String = {
    val started = System.nanoTime()
    val conf = MigrationSession.hadoopConf(spark)
    val layout = SourceCheckpoint.read(source, batchId, conf)
    TargetProvider.checkLoadable(layout.sourceProvider, "source")
    val dst = CheckpointPublication.prepare(Savepoints.Writer, layout.root, target, conf)
    val fs = dst.fs
    dst.begin(Savepoints.unfinished("canonical savepoint", layout.root, layout.batchId, dst.path))
    try {
      val operators = layout.operators.toList.map { op =>
        val stores = op.stores.toList.map { store =>
          val df = StateRowsReader.readWithoutStateSource(spark, layout, op, store).map(StateRowsReader.dataFrame(spark, _))
            .getOrElse {
              var reader = StateRowsReader.stateSource(spark).option("batchId", layout.batchId).option("operatorId", op.id)
              if (store.name != CheckpointPaths.DefaultStore) reader = reader.option("storeName", store.name)
              reader.load(layout.root).select("key", "value", "partition_id")
            }
          val rel = s"$StateDir/${op.id}/${store.name}"
          df.write.partitionBy("partition_id").parquet(new Path(dst.temporary, rel).toString)
          val rows = spark.read.parquet(new Path(dst.temporary, rel).toString).count()
          CanonicalStore(store.name, rel, store.numColsPrefixKey, store.numPartitions,
            df.schema("key").dataType.json, df.schema("value").dataType.json, rows)
        }
        CanonicalOperator(op.id, op.name, stores)
      }
      // The provider recorded stays the source's until a restore picks one.
      CheckpointCopier.copy(layout, fs, dst.temporary, layout.sourceProvider)
      val manifest = CanonicalSavepointManifest(Format, FileFormat.CanonicalSavepointManifest.current, layout.batchId, layout.sourceProvider, layout.numPartitions,
        operators.map(_.stores.map(_.rows).sum).sum, operators, System.currentTimeMillis())
      dst.writeText(Savepoints.ManifestFile, ResultCodec.manifestJson(manifest, FileFormat.CanonicalSavepointManifest))
      dst.publish()
      val summary = fs.getContentSummary(dst.path)
      ResultCodec.toJson(CanonicalSavepointResult(manifest, dst.path.toString, summary.getFileCount, summary.getLength,
        (System.nanoTime() - started) / 1e9))
    } catch {
      case NonFatal(e) =>
        Migration.discard(spark, dst, e)
        throw e
    }
  }

  /** The manifest of a canonical savepoint at `location`, if it is one. */
  def manifest(location: String, conf: org.apache.hadoop.conf.Configuration): Option[com.fasterxml.jackson.databind.JsonNode] = {
    val path = new Path(location, Savepoints.ManifestFile)
    val fs = path.getFileSystem(conf)
    if (!fs.exists(path)) return None
    val in = fs.open(path)
    val json = try ResultCodec.readTree(new String(org.apache.commons.io.IOUtils.toByteArray(in), StandardCharsets.UTF_8))
      finally in.close()
    if (!Option(json.get("format")).map(_.asText()).contains(Format)) return None
    def field(name: String): Option[String] = Option(json.get(name)).map(_.asText())
    val format = FileFormat.CanonicalSavepointManifest
    format.check(path.toString, format.versionIn(path.toString, field(FileFormat.VersionField)),
      field(FileFormat.MinReaderField))
    Some(json)
  }

  /** Restores the canonical savepoint at `savepoint` into a new checkpoint at `target` written by `to`; JSON as a migration's. */
  def restore(spark: SparkSession, savepoint: String, target: String, to: String, batchId: Long,
      options: WriteOptions = WriteOptions()): String = {
    val started = System.nanoTime()
    val conf = MigrationSession.hadoopConf(spark)
    val manifest = this.manifest(savepoint, conf).getOrElse(throw new MigrationException(
      s"$savepoint is not a canonical savepoint (no ${Savepoints.ManifestFile} saying format $Format)."))
    val saved = manifest.get("batchId").asLong()
    if (batchId >= 0 && batchId != saved) {
      throw new MigrationException(s"The canonical savepoint $savepoint holds batch $saved only, not batch $batchId.")
    }
    val layout = SourceCheckpoint.read(savepoint, saved, conf)
    val targetProvider = TargetProvider.resolve(to)
    val stores = manifest.get("operators").elements().asScala.flatMap { op =>
      op.get("stores").elements().asScala.map(s => (op.get("operatorId").asLong(), s.get("name").asText()) -> s)
    }.toMap
    Migration.writeCheckpoint(spark, layout, target, targetProvider, conf, started, options,
        Some(layout.root)) { (op, store) =>
      val s = stores.getOrElse((op.id, store.name), throw new MigrationException(
        s"The canonical savepoint $savepoint has no rows of store ${store.name} of operator ${op.id}."))
      val keySchema = DataType.fromJson(s.get("keySchema").asText()).asInstanceOf[StructType]
      val valueSchema = DataType.fromJson(s.get("valueSchema").asText()).asInstanceOf[StructType]
      val dir = new Path(layout.root, s.get("path").asText())
      val n = store.numPartitions
      val rows: RDD[InternalRow] = if (dir.getFileSystem(conf).exists(dir)) {
        val df = spark.read.parquet(dir.toString).select("key", "value", "partition_id")
        MigrationShim.internalRows(df)
      } else spark.sparkContext.emptyRDD[InternalRow]
      if (options.numPartitions.isDefined) {
        StoreRows(rows, keySchema, valueSchema, 0, 1, 2) // placed anew by the rescale
      } else {
        // Partition p's rows to task p: an int key p < n hashes to p.
        val byPartition = rows.map(r => (r.getInt(2), r.copy())).partitionBy(new HashPartitioner(n)).values
        StoreRows(byPartition, keySchema, valueSchema, 0, 1, 2)
      }
    }
  }
}
