package io.sparkcheckpointstorage.storage

/**
 * The configuration keys of the checkpoint storages. They are SQL confs
 * (`spark.sql.streaming...`), so Spark copies session values into the Hadoop configuration
 * that reaches every checkpoint file manager, on the driver and on executors.
 */
object CheckpointStorageOptions {
  val Prefix = "spark.sql.streaming.checkpointStorage"

  /** `driver`, `filesystem`, or the class name of a [[CheckpointStorageFactory]]. Flink: `state.checkpoint-storage`. */
  val Storage: String = Prefix
  /** Default checkpoint location of queries and of the storage. Flink: `state.checkpoints.dir`. */
  val CheckpointPath = s"$Prefix.checkpointPath"
  /** Default savepoint target. Flink: `state.savepoints.dir`. */
  val SavepointPath = s"$Prefix.savepointPath"
  /** Largest state file the driver storage accepts. */
  val MaxStateSize = s"$Prefix.maxStateSize"
  /** State files up to this size are packed inline. Flink: `state.storage.fs.memory-threshold`. */
  val FileStateSizeThreshold = s"$Prefix.fileStateSizeThreshold"
  /** Buffer of the executor's state file streams. Flink: `state.storage.fs.write-buffer-size`. */
  val WriteBufferSize = s"$Prefix.writeBufferSize"
  /**
   * Whether a task hands the state files it writes as files of their own (the file system
   * storage above its threshold) to a writer of its executor and returns, the batch's commit
   * waiting until they are durable. Flink: asynchronous snapshots (`state.backend.async`).
   */
  val AsyncStateWrites = s"$Prefix.asyncStateWrites"
  /** Bound on the inline state bytes the driver holds in heap, over all queries. */
  val DriverMaxTotalInlineSize = s"$Prefix.driver.maxTotalInlineSize"
  /**
   * The most request bytes an executor sends to the driver's coordinator in one message
   * (its concurrent tasks' small requests travel together); 0 sends each on its own.
   */
  val ExecutorMaxRequestBatchSize = s"$Prefix.executor.maxRequestBatchSize"
  /** `RETAIN_ON_CANCELLATION` (default) or `DELETE_ON_CANCELLATION`. */
  val ExternalizedCleanup = s"$Prefix.externalizedCleanup"

  /** The storage set in code (Python `set_checkpoint_storage`), encoded under this prefix; wins over [[Storage]]. */
  val AppPrefix = s"$Prefix.app."
}
