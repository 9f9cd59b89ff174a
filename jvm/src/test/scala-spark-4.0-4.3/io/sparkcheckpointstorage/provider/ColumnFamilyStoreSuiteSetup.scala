// Spark 4.0-4.3: `StateStoreSuiteBase` takes a key encoder spec and a column family flag.
package io.sparkcheckpointstorage.provider

import scala.util.Random

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * What Spark 4.x's `StateStoreSuiteBase` asks of a provider beyond 3.5's: the key encoder
 * spec replaces the prefix column count, and every `newStoreProvider`/`getData` takes a
 * `useColumnFamilies` flag (ignored, see [[HeapStateStoreSuiteSetup]]).
 */
abstract class ColumnFamilyStoreSuiteSetup extends HeapStateStoreSuiteSetup {
  import StateStoreTestsHelper._

  /**
   * Spark's suites switch these on through `withSQLConf` on the session; the provider is
   * handed its own `SQLConf`, so they are carried over when set. Keys, not `SQLConf`
   * entries: the checksums do not exist before 4.1 (files) and 4.2 (rows).
   */
  private val sessionConfsForProvider = Seq(
    "spark.sql.streaming.checkpoint.fileChecksum.enabled",
    "spark.sql.streaming.stateStore.rowChecksum.enabled")

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
    val prefixCols = keyStateEncoderSpec match {
      case p: PrefixKeyScanStateEncoderSpec => Some(p.numColsPrefixKey)
      case _ => None
    }
    createProvider(opId, partition, keySchema, prefixCols, dir,
      sqlConfOpt.getOrElse(getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory)), hadoopConf)
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

  override def getLatestData(storeProvider: HeapStateStoreProvider,
      useColumnFamilies: Boolean = false): Set[((String, Int), Int)] =
    dataAt(storeProvider, latestVersion(storeProvider))

  override def getData(provider: HeapStateStoreProvider, version: Int,
      useColumnFamilies: Boolean = false): Set[((String, Int), Int)] =
    if (version < 0) getLatestData(provider, useColumnFamilies) else dataAt(provider, version)

  override def getDefaultSQLConf(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SQLConf = {
    val sqlConf = baseSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory)
    val session = SQLConf.get.getAllConfs
    sessionConfsForProvider.foreach(key => session.get(key).foreach(sqlConf.setConfString(key, _)))
    sqlConf
  }
}
