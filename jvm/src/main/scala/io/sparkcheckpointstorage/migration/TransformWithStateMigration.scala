package io.sparkcheckpointstorage.migration

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.checkpointstorage.shim.{CheckpointFileManagerShim, MigrationShim}
import org.apache.spark.sql.functions.col

import io.sparkcheckpointstorage.fileio.CheckpointPublication
import io.sparkcheckpointstorage.layout.{CheckpointPaths, SparkSettingKeys, StateSchemaPaths}
import io.sparkcheckpointstorage.reader.CheckpointReader
import io.sparkcheckpointstorage.results.{MigratedOperator, MigratedStore, MigrationManifest, ResultCodec}
import io.sparkcheckpointstorage.savepoint.Savepoints

/**
 * Migrates a checkpoint that holds transformWithState operators: a copy of it at a committed
 * batch, as plain files, into Spark's RocksDB provider (the only one that stores their column
 * families), rescaled with `numPartitions` by Spark's own offline repartition (4.2+).
 *
 * transformWithState's column families (value, list and map state, timers, TTL indexes) are
 * written only by Spark's RocksDB provider, and their layout belongs to Spark: a rescale is
 * left to the writer Spark ships for it (the state rewriter of `StreamingCheckpointManager.repartition`),
 * which reads a plain copy of the source and writes the target's state at the same batch (unlike
 * Spark's repartition, no batch is added: a file sink's log stays gapless). As for every
 * migration, the source is only read and the target is written into a hidden sibling that is
 * renamed into place last ([[CheckpointPublication]]); the state schema files the target's operator metadata names are its own.
 */
object TransformWithStateMigration {

  /** The transformWithState operators of the checkpoint `reader` reads (version-2 operator metadata). */
  def operators(reader: CheckpointReader): Seq[Long] =
    reader.entries().map(_.relPath).flatMap(CheckpointPaths.operatorMetadataV2Of).distinct.sorted

  def migrate(spark: SparkSession, reader: CheckpointReader, operators: Seq[Long], target: String,
      to: String, batchId: Long, options: WriteOptions, conf: Configuration, started: Long): String = {
    val root = reader.root.stripSuffix("/")
    val ops = operators.mkString(", ")
    val targetProvider = TargetProvider.resolve(to)
    if (targetProvider != TargetProvider.RocksDb) {
      throw new MigrationException(s"Operator $ops of the checkpoint $root is a transformWithState operator, " +
        "which keeps its state in column families that only Spark's RocksDBStateStoreProvider stores: it " +
        s"cannot be migrated to $targetProvider. Migrate it with to=rocksdb (--to rocksdb): that copies it, " +
        "and with num_partitions (--partitions) rescales it, from Spark 4.2.")
    }
    val batch = reader.committedBatch(batchId) match {
      case Right(c) => c.id
      case Left(why) => throw new MigrationException(why.message(root, "migrate", "migrated"))
    }
    val entries = reader.entries()
    def text(rel: String): String = new String(entries.find(_.relPath == rel).flatMap(reader.read)
      .getOrElse(throw new MigrationException(s"$rel is missing from the checkpoint $root.")), StandardCharsets.UTF_8)
    val offsetConf = SourceCheckpoint.parseOffsetConf(text(CheckpointPaths.offsetEntry(batch)),
      s"$root/${CheckpointPaths.offsetEntry(batch)}")
    SourceCheckpoint.requireFormatVersion1(root, batch, offsetConf, text(CheckpointPaths.commitEntry(batch)))
    val sourceProvider = offsetConf.getOrElse(SparkSettingKeys.ProviderClass, TargetProvider.RocksDb)
    val sourcePartitions = offsetConf.get(SparkSettingKeys.ShufflePartitions).map(_.toInt).getOrElse(
      throw new MigrationException(s"The offset log entry ${CheckpointPaths.offsetEntry(batch)} of $root records " +
        s"no ${SparkSettingKeys.ShufflePartitions}: this checkpoint was written by a Spark too old to migrate."))
    val repartition = options.numPartitions.filter(_ != sourcePartitions)
    if (repartition.isDefined && !MigrationShim.rewritesStatePartitioned) throw rescaleRefused(root, ops)

    val dst = CheckpointPublication.prepare(Migration.Writer, root, target, conf)
    val fs = dst.fs
    val temp = dst.temporary
    // A rescale reads a plain copy of the source beside the target, hidden like it.
    val sourceCopy = new Path(temp.getParent, temp.getName + "-source")
    Migration.inJobGroup(spark) { _ =>
      try {
        dst.begin(Migration.unfinished(root, batch, dst.path))
        // The plain copy: the migration's output itself, or what a rescale reads.
        val into = repartition.fold(temp)(_ => sourceCopy)
        val copy = Savepoints.copy(reader, batch, fs, into, into)
        val plain = plainFilesSession(spark)
        MigrationTracker.track(options.progressId, spark.sparkContext, 1) { progress =>
          repartition match {
            case Some(n) =>
              val copied = new CheckpointReader(sourceCopy.toString, conf)
              CheckpointCopier.copy(copied, copied.entries(), batch, fs, temp, targetProvider, Some(n))
              progress.startStore(operators.head, "transformWithState", "every column family", n)
              val writeConf = new Configuration(conf)
              writeConf.set(SparkSettingKeys.FileManagerClass,
                classOf[CheckpointFileManagerShim.FileContextBasedCheckpointFileManager].getName)
              MigrationShim.rewriteStatePartitioned(plain, sourceCopy.toString, temp.toString, batch, n, writeConf)
              progress.finishStore()
            case None => // the copy is the output
          }
          progress.finishing()
        }
        val numPartitions = repartition.getOrElse(sourcePartitions)
        val (operatorList, rows) = stateVariableRows(plain, temp.toString, numPartitions)
        val result = MigrationManifest(root, batch, sourceProvider, targetProvider, numPartitions, sourcePartitions,
          operatorList, rows)
        // Read until here through the copy's schema files; the target names its own.
        StateSchemaPaths.relocateAll(fs, temp, dst.path)
        if (repartition.isDefined) fs.delete(sourceCopy, true)
        Migration.publish(dst, result, copy.files, copy.bytes, started)
      } catch {
        case NonFatal(e) =>
          Migration.discard(spark, dst, e)
          try fs.delete(sourceCopy, true) catch { case NonFatal(d) => e.addSuppressed(d) }
          throw e
      }
    }
  }

  /**
   * transformWithState's column families are rewritten at another number of partitions only by
   * Spark's state rewriter, which came with 4.2.
   */
  def rescaleRefused(root: String, operators: String): MigrationException =
    new MigrationException(s"Operator $operators of the checkpoint $root is a transformWithState " +
      "operator: its column families are rewritten at another number of partitions only by Spark's " +
      s"state rewriter, which came with Spark 4.2, and this is Spark ${org.apache.spark.SPARK_VERSION}. " +
      "Migrate it without num_partitions (--partitions) here, and rescale it on Spark 4.2 or later.")

  /**
   * A session of the same application whose checkpoint files are plain files (Spark's own file
   * manager): the copy is renamed into place, and any session, with either storage or none,
   * resumes it.
   */
  private def plainFilesSession(spark: SparkSession): SparkSession = {
    val session = spark.newSession()
    session.conf.set(SparkSettingKeys.FileManagerClass,
      classOf[CheckpointFileManagerShim.FileContextBasedCheckpointFileManager].getName)
    session
  }

  /**
   * Per operator, the rows per partition of each state variable of a transformWithState
   * operator (the state data source's rows: list elements one each; timers, Spark's own
   * column families, not counted), or of each store of any
   * other operator, read back from the migrated copy; and their total.
   */
  private def stateVariableRows(spark: SparkSession, checkpoint: String, numPartitions: Int): (Seq[MigratedOperator], Long) = {
    val metadata = spark.read.format("state-metadata").load(checkpoint).collect()
      .groupBy(_.getAs[Long]("operatorId")).toSeq.sortBy(_._1)
    val operators = metadata.map { case (id, rows) =>
      val variables = rows.flatMap(r => Option(r.getAs[String]("operatorProperties"))).map(ResultCodec.readTree)
        .flatMap(p => Option(p.get("stateVariables"))).flatMap(_.elements().asScala.map(_.get("stateName").asText()))
        // Spark's own column families (timers, `$`-named) are not read by name.
        .filterNot(_.startsWith("$"))
      // A state variable is read by its name; any other operator's store by the store's.
      val reads = if (variables.nonEmpty) variables.distinct.sorted.map(v => v -> ("stateVarName" -> v))
        else rows.map(_.getAs[String]("stateStoreName")).distinct.sorted.map(s => s -> ("storeName" -> s))
      val stores = reads.toList.map { case (name, (option, value)) =>
        val perPartition = Array.fill(numPartitions)(0L)
        spark.read.format("statestore").option("path", checkpoint).option("operatorId", id)
          .option(option, value).load().groupBy(col("partition_id")).count().collect()
          .foreach(r => perPartition(r.getAs[Number](0).intValue) = r.getLong(1))
        MigratedStore(name, perPartition.sum, perPartition.toSeq)
      }
      MigratedOperator(id, rows.head.getAs[String]("operatorName"), stores)
    }.toList
    (operators, operators.flatMap(_.stores.map(_.rows)).sum)
  }
}
