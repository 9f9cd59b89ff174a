// Spark 4.2-4.3: RocksDB opens its snapshot zips named by a checkpoint id through the checkpoint file manager.
package org.apache.spark.sql.checkpointstorage.shim

/** How Spark's RocksDB provider of this line reaches its snapshot files. */
object RocksDbFilesShim {
  /**
   * Whether RocksDB writes, lists, opens and deletes its snapshots named by a checkpoint id
   * (`<version>_<id>.zip`) through the checkpoint file manager, so that they may be held inline.
   */
  val zipsWithCheckpointIdThroughFileManager: Boolean = true
}
