package org.apache.spark.sql.checkpointstorage

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.errors.QueryExecutionErrors

/**
 * Spark's own state store errors, which `QueryExecutionErrors` (`private[sql]`) builds: the
 * plugin throws the same error classes as Spark's built-in providers, so that Spark, its
 * tests and users' error handling see `CANNOT_LOAD_STATE_STORE.*` and
 * `CANNOT_WRITE_STATE_STORE.*` whichever provider runs. It lives under `org.apache.spark.sql`
 * for that access only.
 */
object StateStoreErrorsBridge {
  /** `CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION`: a negative version was asked for. */
  def unexpectedVersion(version: Long): Throwable =
    QueryExecutionErrors.unexpectedStateStoreVersion(version)

  /**
   * `CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE`: a state file needed to load
   * a version does not exist. Its message names `file`; `cause` says what else was looked for.
   */
  def stateFileMissing(file: Path, cause: Throwable): Throwable =
    QueryExecutionErrors.failedToReadStreamingStateFileError(file, cause)

  /** `CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT`: a store's commit failed; `store` names it. */
  def commitFailed(store: String, cause: Throwable): Throwable =
    QueryExecutionErrors.failedToCommitStateFileError(store, cause)
}
