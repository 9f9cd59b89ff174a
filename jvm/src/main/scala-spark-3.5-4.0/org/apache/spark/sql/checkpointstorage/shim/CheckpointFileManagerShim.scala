// Spark 3.5-4.0: the checkpoint file manager is in `...execution.streaming` and has nothing to close.
package org.apache.spark.sql.checkpointstorage.shim

/**
 * Where Spark 3.5 and 4.0 keep the checkpoint file manager (4.1 moved it to
 * `...execution.streaming.checkpointing`): the rest of the code base imports it from here.
 */
object CheckpointFileManagerShim {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  type FileContextBasedCheckpointFileManager =
    org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager

  def closeFileManager(fm: CheckpointFileManager): Unit = ()
}
