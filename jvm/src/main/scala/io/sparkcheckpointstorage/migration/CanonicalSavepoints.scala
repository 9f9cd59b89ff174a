package io.sparkcheckpointstorage.migration

object CanonicalSavepoints {
  /** Where a canonical savepoint keeps its state rows (parquet per operator, store and partition). */
  val StateDir = "canonical-state"
}
