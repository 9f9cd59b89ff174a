package io.sparkcheckpointstorage

/**
 * Where Spark 4.1 and later keep the checkpoint file manager
 * (`...execution.streaming.checkpointing`): the rest of the code base imports it from here.
 */
package object sparkapi {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  type FileContextBasedCheckpointFileManager =
    org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager

  def closeFileManager(fm: CheckpointFileManager): Unit = fm.close()
}
