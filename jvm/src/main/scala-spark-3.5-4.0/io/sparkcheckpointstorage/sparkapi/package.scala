package io.sparkcheckpointstorage

/**
 * Where Spark 3.5 and 4.0 keep the checkpoint file manager (`...execution.streaming`; 4.1
 * moved it to `...execution.streaming.checkpointing`): the rest of the code base imports it
 * from here.
 */
package object sparkapi {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  type FileContextBasedCheckpointFileManager =
    org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager

  /** Before 4.1 a file manager has nothing to close. */
  def closeFileManager(fm: CheckpointFileManager): Unit = ()
}
