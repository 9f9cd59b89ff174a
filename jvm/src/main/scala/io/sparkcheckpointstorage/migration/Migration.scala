package io.sparkcheckpointstorage.migration

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim
import org.apache.spark.sql.execution.streaming.state.StateStoreConf
import org.apache.spark.util.SerializableConfiguration

import io.sparkcheckpointstorage.fileio.{CheckpointPublication, PublicationWriter}
import io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager
import io.sparkcheckpointstorage.formats.FileFormat
import io.sparkcheckpointstorage.layout.{CheckpointPaths, SparkSettingKeys}
import io.sparkcheckpointstorage.reader.CheckpointReader
import io.sparkcheckpointstorage.results.{MigratedOperator, MigratedStore, MigrationManifest, MigrationResult, ResultCodec}

/**
 * Migrates a streaming query's checkpoint between state store providers (Flink: restoring a
 * canonical savepoint into another state backend; Spark has no such path).
 *
 * The state of every stateful operator at a committed batch is read by Spark's state data
 * source with the provider that wrote it, and written by the target provider on the
 * executors as the version that batch produced; the query's metadata, offset and commit
 * logs up to the batch and its source logs are copied, with the offset log recording the target
 * provider, so that a query resumed from the target runs on it and gives what resuming the
 * source would have given. The source is only read.
 *
 * Everything is written into a hidden sibling of the target (`.<name>.migrating-<id>`,
 * holding an [[InProgressFile]] that says what it is) and renamed to the target last
 * ([[CheckpointPublication]]): a failed migration removes it, a killed one leaves it beside a
 * target that does not exist, and the next migration to that target refuses until it is deleted.
 */
object Migration {
  val ManifestFile: String = CheckpointPaths.MigrationManifest
  val InProgressFile = "_MIGRATION_INCOMPLETE"

  /** How a migration's target is checked, written and published. */
  val Writer: PublicationWriter = PublicationWriter("migration", ".migrating-", InProgressFile, "migrates",
    "Choose a target outside the source checkpoint.", "migrate again")(new MigrationException(_))

  /** The note in an unfinished migration's hidden sibling. */
  private[migration] def unfinished(root: String, batchId: Long, dst: Path): String =
    s"An unfinished migration of $root (batch $batchId) to $dst: not a checkpoint to start a query from. " +
      "Delete this directory and migrate again.\n"

  /**
   * Migrates the checkpoint at `source`, at batch `batchId` (-1: the last committed batch), to
   * a new checkpoint at `target` whose state is written by `to` (`heap`, `hdfs`, `rocksdb` or a
   * provider class). With `numPartitions` (null: unchanged) the state of every operator is
   * redistributed over that many partitions ([[StatePartitioning]], [[StateRowsShuffle]]) and
   * the resumed query runs with them. `progressId` (null: none) names the migration for
   * [[MigrationTracker.snapshot]] while it runs. Returns JSON of a
   * [[io.sparkcheckpointstorage.results.MigrationResult]].
   */
  def migrate(spark: SparkSession, source: String, target: String, to: String, batchId: Long,
      numPartitions: java.lang.Integer, progressId: String): String = {
    val started = System.nanoTime()
    val rescale = Option(numPartitions).map(_.intValue)
    rescale.filter(_ < 1).foreach { n =>
      throw new MigrationException(s"The number of partitions to rescale to must be at least 1, not $n.")
    }
    val conf = MigrationSession.hadoopConf(spark)
    // Spark 4.2's RocksDB provider reports every store it loads, the state data source's too, to
    // the state store coordinator, which a session starts with its streaming query manager.
    spark.streams
    val options = WriteOptions(rescale, Option(progressId))
    // A canonical savepoint restores through the same writer, its rows read from parquet.
    if (CanonicalSavepoints.manifest(source, conf).isDefined) {
      return inJobGroup(spark)(_ => CanonicalSavepoints.restore(spark, source, target, to, batchId, options))
    }
    // transformWithState's column families are Spark's RocksDB provider's to write.
    val reader = new CheckpointReader(source, conf)
    if (reader.exists) {
      val transformWithState = TransformWithStateMigration.operators(reader)
      if (transformWithState.nonEmpty) {
        return TransformWithStateMigration.migrate(spark, reader, transformWithState, target, to, batchId,
          options, conf, started)
      }
    }
    val targetProvider = TargetProvider.resolve(to)
    TargetStoreWriters.checkWritable(targetProvider)
    val layout = SourceCheckpoint.read(source, batchId, conf)
    TargetProvider.checkLoadable(layout.sourceProvider, "source")
    if (layout.hasPacks && !conf.get(SparkSettingKeys.FileManagerClass, "").equals(classOf[StorageCheckpointFileManager].getName)) {
      throw new MigrationException(s"Some of the state of ${layout.root} is inline (packs of a checkpoint " +
        s"storage of this package), which only our file manager reads: set ${SparkSettingKeys.FileManagerClass}=" +
        s"${classOf[StorageCheckpointFileManager].getName} on the session that migrates (as " +
        "configure_spark_with_checkpoint_storage does).")
    }
    inJobGroup(spark) { _ =>
      writeCheckpoint(spark, layout, target, targetProvider, conf, started, options) { (op, store) =>
        StateRowsReader.read(spark, layout, op, store)
      }
    }
  }

  /**
   * Writes the checkpoint of `layout` at `target` with `targetProvider`, the rows of each
   * store coming from `rowsOf`; the target is published last. Shared with the restore of
   * canonical savepoints.
   */
  private[sparkcheckpointstorage] def writeCheckpoint(
      spark: SparkSession,
      layout: SourceCheckpoint,
      target: String,
      targetProvider: String,
      conf: Configuration,
      started: Long,
      options: WriteOptions,
      canonicalSavepoint: Option[String] = None)(rowsOf: (StatefulOperator, OperatorStore) => StoreRows): String = {
    if (targetProvider == TargetProvider.Hdfs &&
        layout.offsetConf.get(SparkSettingKeys.RowChecksum).exists(_.trim.equalsIgnoreCase("true"))) {
      throw new MigrationException(s"The checkpoint ${layout.root} keeps a checksum in every state row " +
        s"(${SparkSettingKeys.RowChecksum}=true), which this migration cannot write for HDFSBackedStateStoreProvider. " +
        "Migrate to heap or rocksdb, or run the query with that setting off from a new checkpoint.")
    }
    TargetStoreWriters.checkWritable(targetProvider)
    if (options.numPartitions.isDefined) {
      layout.operators.foreach(op => op.stores.foreach(StatePartitioning.requireRescalable(op, _)))
      layout.requireRecordedPartitions()
    }
    val dst = CheckpointPublication.prepare(Writer, layout.root, target, conf)
    val fs = dst.fs
    val temp = dst.temporary
    dst.begin(unfinished(layout.root, layout.batchId, dst.path))
    try {
      val storeConf = targetStoreConf(spark, layout, targetProvider)
      val writeConf = new Configuration(conf)
      // Plain files at the target, whatever storage the migrating session uses: the checkpoint
      // is moved into place by a rename, and any session (storage) resumes it.
      writeConf.set(SparkSettingKeys.FileManagerClass, classOf[CheckpointFileManagerShim.FileContextBasedCheckpointFileManager].getName)
      val serializableConf = new SerializableConfiguration(writeConf)
      val stateRoot = new Path(temp, "state").toString
      val stores = layout.operators.map(_.stores.size).sum
      val (written, files, bytes) = MigrationTracker.track(options.progressId, spark.sparkContext, stores) { progress =>
        val written = for (op <- layout.operators; store <- op.stores) yield {
          val read = rowsOf(op, store)
          val (rows, targetStore) = options.numPartitions match {
            case Some(n) =>
              val hashed = StatePartitioning.hashedKeyFields(op, store, read.keySchema)
              (StateRowsShuffle.redistribute(read, hashed, n), store.copy(numPartitions = n))
            case None => (read, store)
          }
          progress.startStore(op.id, op.name, store.name, targetStore.numPartitions)
          val w = StateRowsWriter.write(rows.rows, rows.keyIndex, rows.valueIndex, rows.partitionIndex,
            rows.keySchema, rows.valueSchema, stateRoot, op.id, targetStore, layout.batchId, targetProvider,
            storeConf, serializableConf, progress)
          progress.finishStore()
          w
        }
        progress.finishing()
        val (files, bytes) = CheckpointCopier.copy(layout, fs, temp, targetProvider, options.numPartitions)
        (written, files, bytes)
      }
      val operators = layout.operators.map { op =>
        MigratedOperator(op.id, op.name, written.filter(_.operatorId == op.id).map { w =>
          MigratedStore(w.store, w.rowsPerPartition.sum, w.rowsPerPartition)
        })
      }
      val result = MigrationManifest(layout.root, layout.batchId, layout.sourceProvider, targetProvider,
        options.numPartitions.getOrElse(layout.numPartitions), layout.numPartitions, operators,
        written.map(_.rowsPerPartition.sum).sum, canonicalSavepoint)
      publish(dst, result, files, bytes, started)
    } catch {
      case NonFatal(e) =>
        // Nothing of a failed migration may look like a checkpoint.
        discard(spark, dst, e)
        throw e
    }
  }

  /**
   * Writes the migration's manifest into the target's hidden sibling, publishes the target, and
   * returns the [[MigrationResult]]: the manifest with where it went, what it holds and the time
   * taken, as JSON.
   */
  private[migration] def publish(dst: CheckpointPublication, manifest: MigrationManifest, logFiles: Long,
      logBytes: Long, started: Long): String = {
    dst.writeText(ManifestFile, ResultCodec.manifestJson(manifest, FileFormat.MigrationManifest))
    dst.publish()
    val summary = dst.fs.getContentSummary(dst.path)
    ResultCodec.toJson(MigrationResult(manifest, dst.path.toString, logFiles, logBytes, summary.getFileCount,
      summary.getLength, (System.nanoTime() - started) / 1e9))
  }

  /**
   * Runs `body` with its Spark jobs in a job group of their own, so that a failure can stop
   * the tasks still writing before their output is deleted.
   */
  private[sparkcheckpointstorage] def inJobGroup[T](spark: SparkSession)(body: String => T): T = {
    val sc = spark.sparkContext
    val keys = Seq("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    val saved = keys.map(k => k -> sc.getLocalProperty(k))
    val group = "spark-checkpoint-storage-migration-" + UUID.randomUUID()
    sc.setJobGroup(group, "spark-checkpoint-storage migration", interruptOnCancel = true)
    try body(group) finally saved.foreach { case (k, v) => sc.setLocalProperty(k, v) }
  }

  /**
   * Discards a failed writer's output once no task of its job group runs: a task of a failed
   * job that is still writing would otherwise recreate what was deleted.
   */
  private[sparkcheckpointstorage] def discard(spark: SparkSession, dst: CheckpointPublication, failure: Throwable): Unit = {
    val sc = spark.sparkContext
    Option(sc.getLocalProperty("spark.jobGroup.id")).foreach { group =>
      sc.cancelJobGroup(group)
      val tracker = sc.statusTracker
      val deadline = System.nanoTime() + 120L * 1000 * 1000 * 1000
      def running: Boolean = tracker.getJobIdsForGroup(group).exists { job =>
        tracker.getJobInfo(job).exists(_.stageIds().exists(stage => tracker.getStageInfo(stage).exists(_.numActiveTasks() > 0)))
      }
      while (running && System.nanoTime() < deadline) Thread.sleep(50)
    }
    dst.discard(failure)
  }

  /** The target's state settings: the source's, as its offset log records them, with the target provider. */
  private def targetStoreConf(spark: SparkSession, layout: SourceCheckpoint, targetProvider: String): StateStoreConf = {
    val sqlConf = MigrationSession.sqlConf(spark)
    layout.offsetConf.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    sqlConf.setConfString(SparkSettingKeys.ProviderClass, targetProvider)
    TargetStoreWriters.writeSettings(targetProvider).foreach { case (k, v) => sqlConf.setConfString(k, v) }
    new StateStoreConf(sqlConf, Map.empty)
  }
}

/**
 * What a migration changes besides the provider: the number of state partitions to
 * redistribute the state over (none: the source's), and the id its progress is polled by.
 */
final case class WriteOptions(numPartitions: Option[Int] = None, progressId: Option[String] = None)
