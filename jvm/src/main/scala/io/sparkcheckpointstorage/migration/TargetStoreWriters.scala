package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.checkpointstorage.shim.MigrationShim
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}

import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.provider.HeapStateStoreProvider

/**
 * How a migration's target stores are written on this line. From Spark 4.2 any provider's
 * store opens empty at an arbitrary version (`getStore(loadEmpty = true)`, which came with
 * its state repartitioning), so the target provider writes the source's batch as its first
 * version. Before 4.2 (`MigrationShim.opensStoreEmpty` false) only a provider's own previous
 * version opens a store of it: our own provider opens one itself, so it writes the migrated
 * batch as its version in its own file format; Spark's HDFS provider gets its snapshot file
 * written directly (`HdfsSnapshotWriter`); Spark's RocksDB provider writes the rows as its
 * first version, renamed to the batch's ([[RocksDbFirstVersionSink]]). Any other provider is
 * refused there.
 */
private[migration] object TargetStoreWriters {
  /** Refuses a target this line cannot write, naming the line and what to do instead. */
  def checkWritable(targetProvider: String): Unit = {
    if (!MigrationShim.opensStoreEmpty &&
        !Set(TargetProvider.Heap, TargetProvider.Hdfs, TargetProvider.RocksDb).contains(targetProvider)) {
      throw new MigrationException(s"Spark ${org.apache.spark.SPARK_VERSION} cannot write state for " +
        s"$targetProvider in a migration: before Spark 4.2 only a provider's own previous version opens " +
        "a store of it (getStore(loadEmpty) came with 4.2), and this provider's files cannot be written " +
        "from outside it. On this line, migrate to heap (ours), hdfs or rocksdb; migrate to another " +
        "provider with pyspark 4.2 or later, and run the query on that Spark.")
    }
  }

  /** The settings the target's stores are written with on top of the checkpoint's own. */
  def writeSettings(targetProvider: String): Map[String, String] =
    if (!MigrationShim.opensStoreEmpty && targetProvider == TargetProvider.RocksDb) {
      Map(SparkSettingKeys.RocksDbChangelogCheckpointing -> "false")
    } else Map.empty

  /** Where the rows of one store go (commit writes `version + 1`). */
  def openSink(target: TargetStore): RowSink = {
    if (MigrationShim.opensStoreEmpty) {
      val provider = createProvider(target)
      new ProviderSink(provider, ProviderSink.closingOnFailure(provider)(
        MigrationShim.openStoreEmpty(provider, target.version)))
    } else if (target.provider == TargetProvider.RocksDb) {
      val provider = createProvider(target)
      val store = ProviderSink.closingOnFailure(provider)(MigrationShim.openAtZero(provider))
      new RocksDbFirstVersionSink(provider, store, target.storeId.storeCheckpointLocation(),
        target.version + 1, target.hadoopConf)
    } else {
      val provider = new HeapStateStoreProvider()
      new ProviderSink(provider, ProviderSink.closingOnFailure(provider)(provider.openEmptyForMigration(target.storeId,
        target.keySchema, target.valueSchema, target.prefixKeyColumns, target.storeConf, target.hadoopConf,
        target.version)))
    }
  }

  private def createProvider(target: TargetStore): StateStoreProvider =
    MigrationShim.createProvider(target.storeId, target.keySchema, target.valueSchema, target.numColsPrefixKey,
      target.storeConf, target.hadoopConf)
}

/**
 * Spark's RocksDB provider before 4.2, which opens a store only at a version it wrote: the
 * rows go into its version 0 and commit version 1 (a snapshot, changelog checkpointing off
 * for the write: [[TargetStoreWriters.writeSettings]]), whose `1.zip` is then renamed to the
 * batch's version. Nothing in a RocksDB snapshot names its own version: the zip's name is
 * the version, and the SST files it lists keep theirs.
 */
private[migration] final class RocksDbFirstVersionSink(
    provider: StateStoreProvider,
    store: StateStore,
    storeDir: Path,
    version: Long,
    hadoopConf: Configuration) extends RowSink {
  private var closed = false

  def put(key: UnsafeRow, value: UnsafeRow): Unit = store.put(key, value)

  def commit(): Unit = {
    store.commit()
    close() // the snapshot is uploaded and the instance released before its file moves
    val fs = storeDir.getFileSystem(hadoopConf)
    val written = new Path(storeDir, "1.zip")
    if (!fs.exists(written)) {
      throw new MigrationException(s"RocksDB committed version 1 of $storeDir without writing its " +
        s"snapshot $written, so it cannot become version $version.")
    }
    // Spark 4.1+ writes a checksum beside each file (`1.zip.crc`): it moves with its zip.
    Seq("1.zip" -> s"$version.zip", "1.zip.crc" -> s"$version.zip.crc").foreach { case (from, to) =>
      val (src, dst) = (new Path(storeDir, from), new Path(storeDir, to))
      if (version != 1 && fs.exists(src) && !fs.rename(src, dst)) {
        throw new MigrationException(s"Could not rename RocksDB's snapshot file $src to $dst.")
      }
    }
  }

  def abort(): Unit = if (!store.hasCommitted) store.abort()

  def close(): Unit = if (!closed) {
    closed = true
    provider.close()
  }
}
