// Spark 4.1-4.3: the checkpoint file manager moved to `...execution.streaming.checkpointing` and is closed.
package org.apache.spark.sql.checkpointstorage.shim

/**
 * Where Spark 4.1 and later keep the checkpoint file manager: the rest of the code base
 * imports it from here.
 */
object CheckpointFileManagerShim {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  type FileContextBasedCheckpointFileManager =
    org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager

  def closeFileManager(fm: CheckpointFileManager): Unit = fm.close()
}
