package io.sparkcheckpointstorage.provider

/** Spark 4.0's `StateStore`: column families, no `release`. */
private[provider] abstract class StateStoreApi extends ColumnFamilyStateStoreApi
