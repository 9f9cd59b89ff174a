package io.sparkcheckpointstorage.provider

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.checkpointing.ChecksumCheckpointFileManager
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

import io.sparkcheckpointstorage.sparkapi.CheckpointFileManager

/** Spark 4.1+'s store settings and checks: checkpoint ids, commit validation, file checksums. */
private[provider] object StateStoreBridge {
  /**
   * The file manager of a store directory. With
   * `spark.sql.streaming.checkpoint.fileChecksum.enabled` each state file gets a checksum
   * file written beside it and checked on every read, deleted with it, as Spark's own
   * providers do (4 checksum threads, Spark 4.1's number).
   */
  def fileManager(dir: Path, hadoopConf: Configuration, conf: StateStoreConf): CheckpointFileManager = {
    val files = CheckpointFileManager.create(dir, hadoopConf)
    if (!conf.checkpointFileChecksumEnabled) files
    else new ChecksumCheckpointFileManager(files, true, 4, conf.checkpointFileChecksumSkipCreationIfFileMissingChecksum)
  }

  def unsupportedCheckpointFormat(conf: StateStoreConf): Option[String] =
    if (conf.enableStateStoreCheckpointIds) {
      Some(s"state store checkpoint format version ${conf.stateStoreCheckpointFormatVersion}; " +
        "set spark.sql.streaming.stateStore.checkpointFormatVersion=1")
    } else None

  def minVersionsToDelete(conf: StateStoreConf): Long = conf.minVersionsToDelete

  /** Spark checks, before the batch commits, that every store of the batch committed. */
  def reportCommit(conf: StateStoreConf, version: Long, id: StateStoreId, hadoopConf: Configuration): Unit =
    if (conf.commitValidationEnabled) StateStore.reportCommitToCoordinator(version, id, hadoopConf)

  def validateRowFormat(key: UnsafeRow, keySchema: StructType, value: UnsafeRow, valueSchema: StructType,
      id: StateStoreId, conf: StateStoreConf): Unit =
    StateStoreProvider.validateStateRowFormat(key, keySchema, value, valueSchema, id, conf)
}
