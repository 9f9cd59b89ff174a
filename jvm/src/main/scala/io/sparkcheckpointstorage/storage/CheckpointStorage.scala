package io.sparkcheckpointstorage.storage

/** Where one state file goes, decided when its stream closes (Flink: the state handle kind). */
sealed trait Placement
object Placement {
  /** Kept by the driver: in heap, and in the batch's pack when the storage is persistent. */
  case object Inline extends Placement
  /** Written by the executor as a file of its own. */
  case object OwnFile extends Placement
}

/**
 * Where the state of streaming queries is checkpointed: a serializable, configuration-only
 * factory, as Flink's `CheckpointStorage`. Implementations are immutable; [[configure]]
 * returns a copy with unset values filled from configuration (values set in code win).
 */
trait CheckpointStorage extends Serializable {
  /** Default checkpoint location of queries, if any. */
  def checkpointPath: Option[String]

  /** Default target of savepoints: the explicit savepoint path, else `<checkpointPath>/savepoints`. */
  def savepointPath: Option[String]

  /** Whether checkpointed state survives the driver (false only for driver heap without a path). */
  def isPersistent: Boolean

  /**
   * Whether the driver keeps inline state in its heap after writing it to a pack, serving
   * restores from memory (the driver storage: Flink's JobManager keeps its state handles), or
   * drops it and serves restores from the packs (the file system storage, whose inline state
   * is only a packing of small files). State that is not persistent always stays in heap.
   */
  def keepsInlineStateInHeap: Boolean = !isPersistent

  /** Size of the executor's buffer when writing a state file of its own. */
  def writeBufferSize: Int

  /**
   * Where a state file of `size` bytes goes.
   *
   * @throws StateSizeLimitException when this storage cannot take a file of that size
   */
  def placement(size: Long): Placement

  /** A copy with values left unset in code taken from `conf`. */
  def configure(conf: String => Option[String]): CheckpointStorage

  /** The settings that reproduce this storage through configuration (under [[CheckpointStorageOptions.AppPrefix]]). */
  def toConf: Map[String, String]

  // Java-friendly getters, for py4j (Python wrappers) and Java callers.

  /** [[checkpointPath]], or null. */
  def getCheckpointPath: String = checkpointPath.orNull

  /** [[savepointPath]], or null. */
  def getSavepointPath: String = savepointPath.orNull

  /** [[toConf]] as a Java map. */
  def toConfMap: java.util.Map[String, String] = {
    import scala.jdk.CollectionConverters._
    toConf.asJava
  }
}

/** A user storage named by class in `spark.sql.streaming.checkpointStorage`: needs a public no-arg constructor. */
trait CheckpointStorageFactory {
  def createFromConfig(conf: String => Option[String]): CheckpointStorage
}

