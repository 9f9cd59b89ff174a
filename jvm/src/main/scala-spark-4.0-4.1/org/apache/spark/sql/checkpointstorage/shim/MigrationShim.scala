// Spark 4.0-4.1: no `getStore(loadEmpty)` and no state rewriter, so a migration writes its targets itself.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}

import io.sparkcheckpointstorage.migration.{ProviderSink, TargetStore}

/**
 * The Spark 4.0-4.1 members a migration uses: a classic session's conf and rows
 * ([[Spark4MigrationShim]]), and a target store written without `getStore(loadEmpty)`, which
 * these lines lack ([[OwnStoreWriterShim]]).
 */
object MigrationShim extends Spark4MigrationShim with OwnStoreWriterShim {
  protected def openRocksDbAtZero(target: TargetStore): (StateStoreProvider, StateStore) = {
    val provider = createProvider(target)
    (provider, ProviderSink.closingOnFailure(provider)(provider.getStore(0, None)))
  }
}
