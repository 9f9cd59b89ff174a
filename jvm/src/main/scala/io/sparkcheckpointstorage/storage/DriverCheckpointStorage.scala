package io.sparkcheckpointstorage.storage

import io.sparkcheckpointstorage.storage.CheckpointStorageOptions._

/**
 * Checkpoints state to the driver's heap (Flink's `JobManagerCheckpointStorage`).
 *
 * Every state file travels to the driver, which holds it in heap; with a checkpoint path the
 * driver also writes the batch's state as one pack file under the query's checkpoint
 * location before the batch commits, so the query survives a driver restart. Without one,
 * state lives only as long as the driver: a restarted driver refuses to resume the query.
 *
 * Meant for small state: a state file over `maxStateSize` fails the task.
 *
 * @param checkpointPathOpt where checkpoints go by default; None for heap-only state
 * @param maxStateSizeOpt largest state file accepted, in bytes (None: from configuration,
 *                        else [[DriverCheckpointStorage.DefaultMaxStateSize]])
 */
final class DriverCheckpointStorage private (
    checkpointPathOpt: Option[String],
    maxStateSizeOpt: Option[Int],
    savepointPathOpt: Option[String]) extends CheckpointStorage {
  import DriverCheckpointStorage._

  maxStateSizeOpt.foreach { m =>
    require(m > 0, s"The maximum state size must be positive, got $m ($MaxStateSize)")
  }

  def this() = this(None, None, None)
  def this(checkpointPath: String) = this(Option(checkpointPath), None, None)
  def this(checkpointPath: String, maxStateSize: Int) = this(Option(checkpointPath), Some(maxStateSize), None)
  def this(maxStateSize: Int) = this(None, Some(maxStateSize), None)

  override def checkpointPath: Option[String] = checkpointPathOpt

  override def savepointPath: Option[String] =
    savepointPathOpt.orElse(checkpointPathOpt.map(p => s"${p.stripSuffix("/")}/savepoints"))

  def maxStateSize: Int = maxStateSizeOpt.getOrElse(DefaultMaxStateSize)

  /** [[maxStateSize]], for Java and Python callers. */
  def getMaxStateSize: Int = maxStateSize

  def withSavepointPath(path: String): DriverCheckpointStorage =
    new DriverCheckpointStorage(checkpointPathOpt, maxStateSizeOpt, Option(path))

  override def isPersistent: Boolean = checkpointPathOpt.isDefined

  override def writeBufferSize: Int = 4096

  /** The driver is where this storage keeps state: a pack is a durable copy, not the place restores read. */
  override def keepsInlineStateInHeap: Boolean = true

  override def placement(size: Long): Placement = {
    if (size > maxStateSize) {
      throw new StateSizeLimitException(s"Size of the state is larger than the maximum permitted " +
        s"memory-backed state. Size=$size, maxSize=$maxStateSize. Raise $MaxStateSize, or " +
        "consider using a different checkpoint storage, like the FileSystemCheckpointStorage.")
    }
    Placement.Inline
  }

  override def configure(conf: String => Option[String]): DriverCheckpointStorage =
    new DriverCheckpointStorage(
      checkpointPathOpt.orElse(conf(CheckpointPath)),
      maxStateSizeOpt.orElse(conf(MaxStateSize).map(CheckpointStorageSettings.MaxStateSizeSetting.parseInt)),
      savepointPathOpt.orElse(conf(SavepointPath)))

  override def toConf: Map[String, String] =
    Map(AppPrefix + "kind" -> Name) ++
      checkpointPathOpt.map(AppPrefix + "checkpointPath" -> _) ++
      maxStateSizeOpt.map(AppPrefix + "maxStateSize" -> _.toString) ++
      savepointPathOpt.map(AppPrefix + "savepointPath" -> _)

  override def toString: String =
    s"DriverCheckpointStorage (checkpoints to driver heap, checkpoint path: " +
      s"${checkpointPathOpt.getOrElse("(none: state is not persistent)")}, maxStateSize: $maxStateSize)"

  override def equals(other: Any): Boolean = other match {
    case o: DriverCheckpointStorage =>
      o.checkpointPath == checkpointPath && o.maxStateSize == maxStateSize && o.savepointPath == savepointPath
    case _ => false
  }
  override def hashCode(): Int = (checkpointPath, maxStateSize, savepointPath).##
}

object DriverCheckpointStorage {
  /** Flink's `JobManagerCheckpointStorage.DEFAULT_MAX_STATE_SIZE`: 5 MiB. */
  val DefaultMaxStateSize: Int = 5 * 1024 * 1024
  val Name = "driver"

  def apply(checkpointPath: Option[String] = None, maxStateSize: Option[Int] = None,
      savepointPath: Option[String] = None): DriverCheckpointStorage =
    new DriverCheckpointStorage(checkpointPath, maxStateSize, savepointPath)
}
