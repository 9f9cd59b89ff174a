package io.sparkcheckpointstorage.migration

import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}

/**
 * The Spark 4.0-4.1 members a migration uses: a classic session's conf and rows
 * ([[Spark4MigrationApi]]), and a target store written without `getStore(loadEmpty)`, which
 * these lines lack ([[OwnStoreWriting]]).
 */
object MigrationSparkApi extends Spark4MigrationApi with OwnStoreWriting {
  protected def openRocksDbAtZero(target: TargetStore): (StateStoreProvider, StateStore) = {
    val provider = createProvider(target)
    (provider, OwnStoreWriter.closingOnFailure(provider)(provider.getStore(0, None)))
  }
}
