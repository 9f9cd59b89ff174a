// Spark 3.5: no error classes for state stores, so plain exceptions carry their words.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.fs.Path

import org.apache.spark.SparkException

/**
 * Spark 3.5 has no error classes for state stores (4.0 added `CANNOT_LOAD_STATE_STORE.*` and
 * `CANNOT_WRITE_STATE_STORE.*`): the same failures as on later lines, as plain exceptions
 * carrying the words Spark 4's error classes use, so a message reads the same on every line.
 */
object StateStoreErrorsShim {
  /** A negative version was asked for. */
  def unexpectedVersion(version: Long): Throwable =
    new IllegalArgumentException(s"An error occurred during loading state. Version cannot be " +
      s"$version because it is less than 0.")

  /** A state file needed to load a version does not exist; `detail` says what was wanted. */
  def stateFileMissing(file: Path, detail: String): SparkException =
    new SparkException(s"An error occurred during loading state. Error reading streaming " +
      s"state file of $file does not exist. If the stream job is restarted with a new or " +
      "updated state operation, please create a new checkpoint location or clear the existing " +
      s"checkpoint location.\n$detail")

  /** A store's commit failed; `store` names it, `reason` says what failed. */
  def commitFailed(store: String, cause: Throwable, reason: String): Throwable =
    new SparkException(s"Error writing state store files for provider $store. Cannot perform " +
      s"commit during state checkpoint.\n$reason", cause)
}
