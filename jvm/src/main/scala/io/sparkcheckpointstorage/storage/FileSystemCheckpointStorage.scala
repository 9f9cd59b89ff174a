package io.sparkcheckpointstorage.storage

import io.sparkcheckpointstorage.storage.CheckpointStorageOptions._

/**
 * Checkpoints state to a file system (Flink's `FileSystemCheckpointStorage`): any Hadoop file
 * system URI (`file://`, `hdfs://`, `s3a://`, ...).
 *
 * A state file of at most `fileStateSizeThreshold` bytes travels to the driver, which packs
 * all such files of a batch into one pack file before the batch commits: small state costs
 * one file per batch and query instead of one per partition and operator. Larger state files
 * are written by the executors as files of their own, through a buffer of
 * `writeBufferSize` bytes.
 *
 * @param checkpointPathValue default checkpoint location of queries (`state.checkpoints.dir`)
 * @param thresholdOpt inline threshold in [0, [[FileSystemCheckpointStorage.MaxFileStateThreshold]]];
 *                     None (or -1 from Python) takes it from configuration
 * @param writeBufferSizeOpt buffer size, at least the threshold; None: from configuration
 */
final class FileSystemCheckpointStorage private (
    checkpointPathValue: String,
    thresholdOpt: Option[Int],
    writeBufferSizeOpt: Option[Int],
    savepointPathOpt: Option[String]) extends CheckpointStorage {
  import FileSystemCheckpointStorage._

  require(checkpointPathValue != null && checkpointPathValue.trim.nonEmpty,
    s"FileSystemCheckpointStorage needs a checkpoint path ($CheckpointPath)")
  thresholdOpt.foreach(checkThreshold)
  writeBufferSizeOpt.foreach { b =>
    require(b >= 0, s"The write buffer size must be non-negative, got $b ($WriteBufferSize)")
  }

  def this(checkpointPath: String) = this(checkpointPath, None, None, None)
  def this(checkpointPath: String, fileStateSizeThreshold: Int) =
    this(checkpointPath, Some(fileStateSizeThreshold).filter(_ != -1), None, None)
  def this(checkpointPath: String, fileStateSizeThreshold: Int, writeBufferSize: Int) =
    this(checkpointPath, Some(fileStateSizeThreshold).filter(_ != -1), Some(writeBufferSize).filter(_ != -1), None)

  override def checkpointPath: Option[String] = Some(checkpointPathValue)

  override def savepointPath: Option[String] =
    savepointPathOpt.orElse(Some(s"${checkpointPathValue.stripSuffix("/")}/savepoints"))

  /** The inline threshold in bytes: state files up to this size are packed. */
  def minFileSizeThreshold: Int = thresholdOpt.getOrElse(DefaultFileStateThreshold)

  /** The buffer size, never below the threshold (Flink: `max(writeBufferSize, threshold)`). */
  override def writeBufferSize: Int =
    math.max(writeBufferSizeOpt.getOrElse(DefaultWriteBufferSize), minFileSizeThreshold)

  /** [[minFileSizeThreshold]] and [[writeBufferSize]], for Java and Python callers. */
  def getMinFileSizeThreshold: Int = minFileSizeThreshold
  def getWriteBufferSize: Int = writeBufferSize

  def withSavepointPath(path: String): FileSystemCheckpointStorage =
    new FileSystemCheckpointStorage(checkpointPathValue, thresholdOpt, writeBufferSizeOpt, Option(path))

  override def isPersistent: Boolean = true

  override def placement(size: Long): Placement =
    if (size <= minFileSizeThreshold) Placement.Inline else Placement.OwnFile

  override def configure(conf: String => Option[String]): FileSystemCheckpointStorage =
    new FileSystemCheckpointStorage(
      checkpointPathValue,
      thresholdOpt.orElse(conf(FileStateSizeThreshold).map(CheckpointStorageSettings.FileStateSizeThresholdSetting.parseInt)),
      writeBufferSizeOpt.orElse(conf(WriteBufferSize).map(CheckpointStorageSettings.WriteBufferSizeSetting.parseInt)),
      savepointPathOpt.orElse(conf(SavepointPath)))

  override def toConf: Map[String, String] =
    Map(AppPrefix + "kind" -> Name, AppPrefix + "checkpointPath" -> checkpointPathValue) ++
      thresholdOpt.map(AppPrefix + "fileStateSizeThreshold" -> _.toString) ++
      writeBufferSizeOpt.map(AppPrefix + "writeBufferSize" -> _.toString) ++
      savepointPathOpt.map(AppPrefix + "savepointPath" -> _)

  override def toString: String =
    s"FileSystemCheckpointStorage (checkpoints to file system, checkpoint path: $checkpointPathValue, " +
      s"fileStateThreshold: $minFileSizeThreshold, writeBufferSize: $writeBufferSize)"

  override def equals(other: Any): Boolean = other match {
    case o: FileSystemCheckpointStorage =>
      o.checkpointPath == checkpointPath && o.minFileSizeThreshold == minFileSizeThreshold &&
        o.writeBufferSize == writeBufferSize && o.savepointPath == savepointPath
    case _ => false
  }
  override def hashCode(): Int = (checkpointPath, minFileSizeThreshold, writeBufferSize, savepointPath).##
}

object FileSystemCheckpointStorage {
  /** Flink's `FileSystemCheckpointStorage.MAX_FILE_STATE_THRESHOLD`: 1 MiB. */
  val MaxFileStateThreshold: Int = 1024 * 1024
  /** Flink's default `state.storage.fs.memory-threshold`: 20 KiB. */
  val DefaultFileStateThreshold: Int = 20 * 1024
  /** Flink's default `state.storage.fs.write-buffer-size`: 4 KiB. */
  val DefaultWriteBufferSize: Int = 4 * 1024
  val Name = "filesystem"

  def apply(checkpointPath: String, fileStateSizeThreshold: Option[Int] = None,
      writeBufferSize: Option[Int] = None, savepointPath: Option[String] = None): FileSystemCheckpointStorage =
    new FileSystemCheckpointStorage(checkpointPath, fileStateSizeThreshold, writeBufferSize, savepointPath)

  private def checkThreshold(t: Int): Unit = {
    require(t >= 0 && t <= MaxFileStateThreshold, s"The threshold for file state size must be in " +
      s"[0, $MaxFileStateThreshold] (or -1 for the value of $FileStateSizeThreshold), got $t")
  }
}
