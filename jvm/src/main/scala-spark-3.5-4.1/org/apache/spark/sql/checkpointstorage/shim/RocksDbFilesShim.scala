// Spark 3.5-4.1: RocksDB opens every snapshot zip through Hadoop's FileSystem, past the checkpoint file manager.
package org.apache.spark.sql.checkpointstorage.shim

/** How Spark's RocksDB provider of this line reaches its snapshot files. */
object RocksDbFilesShim {
  /**
   * Whether RocksDB writes, lists, opens and deletes its snapshots named by a checkpoint id
   * (`<version>_<id>.zip`) through the checkpoint file manager, so that they may be held inline.
   */
  val zipsWithCheckpointIdThroughFileManager: Boolean = false
}
