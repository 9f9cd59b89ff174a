// Spark 3.5: `StateStoreSuiteBase` takes a prefix column count and has no column families.
package io.sparkcheckpointstorage.provider

import scala.util.Random

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf

/** Spark 3.5's `StateStoreSuiteBase` on [[HeapStateStoreProvider]]: no column families. */
class HeapStateStoreSuite extends HeapStateStoreSuiteSetup {
  import StateStoreTestsHelper._

  def newStoreProvider(
      opId: Long,
      partition: Int,
      numColsPrefixKey: Int = 0,
      dir: String = newDir(),
      minDeltasForSnapshot: Int = SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.defaultValue.get,
      numOfVersToRetainInMemory: Int = SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY.defaultValue.get,
      hadoopConf: Configuration = new Configuration): HeapStateStoreProvider =
    createProvider(opId, partition, keySchema, if (numColsPrefixKey > 0) Some(numColsPrefixKey) else None, dir,
      getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory), hadoopConf)

  override def newStoreProvider(): HeapStateStoreProvider =
    newStoreProvider(opId = Random.nextInt(), partition = 0)

  override def newStoreProvider(storeId: StateStoreId): HeapStateStoreProvider =
    newStoreProvider(storeId.operatorId, storeId.partitionId, dir = storeId.checkpointRootLocation)

  override def newStoreProvider(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): HeapStateStoreProvider =
    newStoreProvider(opId = Random.nextInt(), partition = 0,
      minDeltasForSnapshot = minDeltasForSnapshot, numOfVersToRetainInMemory = numOfVersToRetainInMemory)

  override def newStoreProvider(numPrefixCols: Int): HeapStateStoreProvider =
    newStoreProvider(opId = Random.nextInt(), partition = 0, numColsPrefixKey = numPrefixCols)

  override def getLatestData(storeProvider: HeapStateStoreProvider): Set[((String, Int), Int)] =
    dataAt(storeProvider, latestVersion(storeProvider))

  override def getData(provider: HeapStateStoreProvider, version: Int): Set[((String, Int), Int)] =
    if (version < 0) getLatestData(provider) else dataAt(provider, version)

  override def getDefaultSQLConf(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SQLConf =
    baseSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory)
}
