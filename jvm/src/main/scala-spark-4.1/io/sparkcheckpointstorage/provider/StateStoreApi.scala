package io.sparkcheckpointstorage.provider

/** Spark 4.1's `StateStore`: a read-only use ends with `release`. */
private[provider] abstract class StateStoreApi extends ColumnFamilyStateStoreApi {
  override def release(): Unit = releaseStore()
}
