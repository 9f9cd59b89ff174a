package io.sparkcheckpointstorage.provider

import java.util.UUID

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.scalactic.source.Position
import org.scalatest.{BeforeAndAfter, Tag}

import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.test.SharedSparkSession
import org.apache.spark.sql.types.StructType

/**
 * Spark's provider contract tests (`StateStoreSuiteBase`, from the spark-sql 4.2.0 `tests`
 * jar) run against [[HeapStateStoreProvider]], set up the way Spark's own `StateStoreSuite`
 * sets up the HDFS provider.
 *
 * `useColumnFamilies` is ignored, as Spark's HDFS suite does: neither provider supports
 * column families, and the base tests only use the default family.
 */
class HeapStateStoreSuite extends StateStoreSuiteBase[HeapStateStoreProvider]
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
      "asserts the message names HDFSStateStore or RocksDBStateStore, not ours"
  )

  override protected def test(testName: String, testTags: Tag*)(testBody: => Any)
      (implicit pos: Position): Unit = {
    SparkTestCompat.skipReason(notApplicable, testName) match {
      case Some(reason) => super.ignore(s"$testName [skipped: $reason]", testTags: _*)(())
      case None => super.test(testName, testTags: _*)(SparkTestCompat.guard(testBody))
    }
  }

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

  def newStoreProvider(
      opId: Long,
      partition: Int,
      keyStateEncoderSpec: KeyStateEncoderSpec = NoPrefixKeyStateEncoderSpec(keySchema),
      keySchema: StructType = keySchema,
      dir: String = newDir(),
      sqlConfOpt: Option[SQLConf] = None,
      minDeltasForSnapshot: Int = SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.defaultValue.get,
      numOfVersToRetainInMemory: Int = SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY.defaultValue.get,
      hadoopConf: Configuration = new Configuration): HeapStateStoreProvider = {
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    val sqlConf = sqlConfOpt.getOrElse(getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory))
    val provider = new HeapStateStoreProvider()
    provider.init(
      StateStoreId(dir, opId, partition), keySchema, valueSchema, keyStateEncoderSpec,
      useColumnFamilies = false, new StateStoreConf(sqlConf), hadoopConf)
    provider
  }

  override def newStoreProvider(): HeapStateStoreProvider =
    newStoreProvider(opId = Random.nextInt(), partition = 0)

  override def newStoreProvider(storeId: StateStoreId): HeapStateStoreProvider =
    newStoreProvider(storeId.operatorId, storeId.partitionId, dir = storeId.checkpointRootLocation)

  override def newStoreProvider(storeId: StateStoreId, useColumnFamilies: Boolean): HeapStateStoreProvider =
    newStoreProvider(storeId)

  override def newStoreProvider(storeId: StateStoreId, conf: Configuration): HeapStateStoreProvider =
    newStoreProvider(storeId.operatorId, storeId.partitionId, dir = storeId.checkpointRootLocation,
      hadoopConf = conf)

  override def newStoreProvider(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): HeapStateStoreProvider =
    newStoreProvider(opId = Random.nextInt(), partition = 0,
      minDeltasForSnapshot = minDeltasForSnapshot, numOfVersToRetainInMemory = numOfVersToRetainInMemory)

  override def newStoreProvider(keySchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean): HeapStateStoreProvider =
    newStoreProvider(opId = Random.nextInt(), partition = 0, keyStateEncoderSpec = keyStateEncoderSpec,
      keySchema = keySchema)

  override def newStoreProvider(useColumnFamilies: Boolean): HeapStateStoreProvider = newStoreProvider()

  override def newStoreProviderWithClonedConf(storeId: StateStoreId): HeapStateStoreProvider =
    newStoreProvider(storeId.operatorId, storeId.partitionId, dir = storeId.checkpointRootLocation,
      sqlConfOpt = Some(cloneSQLConf()))

  override def newStoreProviderNoInit(): HeapStateStoreProvider = new HeapStateStoreProvider

  /** The newest version in the store's directory, read by a fresh provider (0 when none). */
  override def getLatestData(storeProvider: HeapStateStoreProvider,
      useColumnFamilies: Boolean = false): Set[((String, Int), Int)] = {
    val id = storeProvider.stateStoreId
    val dir = id.storeCheckpointLocation()
    val latest = new StateFiles(dir, CheckpointFileManager.create(dir, new Configuration))
      .list().map(_.version).foldLeft(0L)(math.max)
    getData(storeProvider, latest.toInt, useColumnFamilies)
  }

  override def getData(provider: HeapStateStoreProvider, version: Int,
      useColumnFamilies: Boolean = false): Set[((String, Int), Int)] = {
    if (version < 0) return getLatestData(provider, useColumnFamilies)
    tryWithProviderResource(newStoreProvider(provider.stateStoreId, useColumnFamilies)) { reloaded =>
      val store = reloaded.getStore(version)
      try rowPairsToDataSet(store.iterator()) finally if (!store.hasCommitted) store.abort()
    }
  }

  override def getDefaultSQLConf(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SQLConf = {
    val sqlConf = new SQLConf()
    sqlConf.setConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT, minDeltasForSnapshot)
    sqlConf.setConf(SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY, numOfVersToRetainInMemory)
    sqlConf.setConf(SQLConf.MIN_BATCHES_TO_RETAIN, 2)
    sqlConf.setConf(SQLConf.STATE_STORE_COMPRESSION_CODEC, SQLConf.get.stateStoreCompressionCodec)
    sqlConf.setConf(SQLConf.STREAMING_CHECKPOINT_FILE_CHECKSUM_ENABLED, SQLConf.get.checkpointFileChecksumEnabled)
    sqlConf.setConf(SQLConf.STATE_STORE_ROW_CHECKSUM_ENABLED, SQLConf.get.stateStoreRowChecksumEnabled)
    sqlConf
  }

  override protected def testQuietly(name: String)(f: => Unit): Unit =
    super[StateStoreSuiteBase].testQuietly(name)(f)
}
