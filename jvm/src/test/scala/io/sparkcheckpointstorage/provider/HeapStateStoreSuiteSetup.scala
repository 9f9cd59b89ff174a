package io.sparkcheckpointstorage.provider

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.scalactic.source.Position
import org.scalatest.{BeforeAndAfter, Tag}

import org.apache.spark.sql.checkpointstorage.shim.CheckpointFileManagerShim.CheckpointFileManager
import org.apache.spark.sql.checkpointstorage.shim.ProviderTestShim
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.test.SharedSparkSession
import org.apache.spark.sql.types.StructType

/**
 * Spark's provider contract tests (`StateStoreSuiteBase`, from the line's spark-sql `tests`
 * jar) run against [[HeapStateStoreProvider]], set up the way Spark's own `StateStoreSuite`
 * sets up the HDFS provider. This trait holds what every line shares; each line's
 * `HeapStateStoreSuite` (in the `scala-spark-*` test folders) maps that line's abstract
 * `newStoreProvider`, `getData` and `getDefaultSQLConf` members onto it.
 *
 * `useColumnFamilies` is ignored, as Spark's HDFS suite does: neither provider supports
 * column families, and the base tests only use the default family.
 */
abstract class HeapStateStoreSuiteSetup extends StateStoreSuiteBase[HeapStateStoreProvider]
  with SharedSparkSession with BeforeAndAfter {
  import StateStoreTestsHelper._

  /**
   * Base tests that are registered as ignored, by name prefix (the `testWithAllCodec` tests
   * carry a codec suffix), with the reason. A `def`: the base class registers its tests
   * (through `test`) before this class's fields are initialized.
   *
   * Set HEAP_SPARK_SUITES_ALL=1 in the environment to run them too.
   */
  private def notApplicable: Seq[(String, String)] = Seq(
    // Starts a second SparkContext beside the suite's shared one and fails at once with
    // "Only one SparkContext should be running in this JVM"; Spark's own StateStoreSuite
    // (HDFS provider) fails the same way here. Its providers extend
    // HDFSBackedStateStoreProvider: it never uses ours.
    "SPARK-48997: maintenance threads with exceptions unload only themselves" ->
      "starts a second SparkContext; fails the same in Spark's own StateStoreSuite here, never uses our provider",
    // Asserts that the message names the store class HDFSStateStore (or RocksDBStateStore).
    // The rest of it (CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT, operatorId, partitionId, a
    // "Failed to rename" cause) HeapStateStoreProviderSuite checks for HeapStateStore.
    "SPARK-18342: commit fails when rename fails" ->
      "asserts the message names HDFSStateStore or RocksDBStateStore, not ours",
    // Spark 4.1's: loads a checkpoint that Spark 4.0's HDFS or RocksDB provider wrote (its
    // test resources), and throws "Unknown ProviderClass" for any other provider.
    "Load spark 4.0 golden checkpoint written without checksum" ->
      "reads golden files of Spark's HDFS and RocksDB providers; throws for any other provider",
    // Spark 4.1's file checksum tests (4.2 moved them out of the base suite): they assert
    // the `.crc` sidecars Spark's own providers write beside each state file with
    // spark.sql.streaming.checkpoint.fileChecksum.enabled. Ours writes none: each of its state
    // files carries CRC-32s in its header and trailer, checked on every read (corrupt and
    // truncated files are HeapStateStoreProviderSuite's and StateFileFormatSuite's tests), so
    // a sidecar would be a second checksum, one more file per state file.
    "checksum files are also cleaned up during maintenance" ->
      "asserts Spark's .crc sidecar files; our state files carry their own CRC-32s",
    "overwrite state file without overwriting checksum file" ->
      "asserts Spark's .crc sidecar files; our state files carry their own CRC-32s"
  )

  override protected def test(testName: String, testTags: Tag*)(testBody: => Any)
      (implicit pos: Position): Unit =
    SparkTestCompat.registerOrSkip(notApplicable, testName, None)(
        name => super.ignore(name, testTags: _*)(()))(
        name => super.test(name, testTags: _*)(SparkTestCompat.guard(testBody)))

  before {
    StateStore.stop()
    require(!StateStore.isMaintenanceRunning)
    // Initialize the lazy coordinator (`private[sql]`, public in bytecode).
    spark.streams.getClass.getMethod("stateStoreCoordinator").invoke(spark.streams)
  }

  after {
    StateStore.stop()
    require(!StateStore.isMaintenanceRunning)
  }

  /** A provider of the store `opId`/`partition` under `dir`, initialized as Spark's suites expect. */
  protected def createProvider(
      opId: Long,
      partition: Int,
      keySchema: StructType,
      prefixCols: Option[Int],
      dir: String,
      sqlConf: SQLConf,
      hadoopConf: Configuration): HeapStateStoreProvider = {
    // StreamExecution.RUN_ID_KEY (its package moved in Spark 4.1).
    hadoopConf.set("sql.streaming.runId", UUID.randomUUID().toString)
    val provider = new HeapStateStoreProvider()
    ProviderTestShim.init(provider, StateStoreId(dir, opId, partition), keySchema, valueSchema, prefixCols,
      new StateStoreConf(sqlConf), hadoopConf)
    provider
  }

  /** The newest version in the store's directory (0 when none). */
  protected def latestVersion(storeProvider: HeapStateStoreProvider): Int = {
    val dir = storeProvider.stateStoreId.storeCheckpointLocation()
    new StoreDirectory(dir, CheckpointFileManager.create(dir, new Configuration))
      .list().map(_.version).foldLeft(0L)((a, b) => math.max(a, b)).toInt
  }

  /** The data of `version` as read by a fresh provider of the same store. */
  protected def dataAt(provider: HeapStateStoreProvider, version: Int): Set[((String, Int), Int)] =
    tryWithProviderResource(newStoreProvider(provider.stateStoreId)) { reloaded =>
      val store = reloaded.getStore(version)
      try rowPairsToDataSet(store.iterator()) finally if (!store.hasCommitted) store.abort()
    }

  /** The settings Spark's suite uses for the HDFS provider; lines add their own. */
  protected def baseSQLConf(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SQLConf = {
    val sqlConf = new SQLConf()
    sqlConf.setConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT, minDeltasForSnapshot)
    sqlConf.setConf(SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY, numOfVersToRetainInMemory)
    sqlConf.setConf(SQLConf.MIN_BATCHES_TO_RETAIN, 2)
    sqlConf.setConf(SQLConf.STATE_STORE_COMPRESSION_CODEC, SQLConf.get.stateStoreCompressionCodec)
    sqlConf
  }

  override protected def testQuietly(name: String)(f: => Unit): Unit =
    super[StateStoreSuiteBase].testQuietly(name)(f)
}
