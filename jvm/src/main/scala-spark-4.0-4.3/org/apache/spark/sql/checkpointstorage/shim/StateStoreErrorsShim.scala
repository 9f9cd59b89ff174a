// Spark 4.0-4.3: Spark's own state store error classes, built by `private[sql]` QueryExecutionErrors.
package org.apache.spark.sql.checkpointstorage.shim

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path

import org.apache.spark.{QueryContext, SparkException}
import org.apache.spark.sql.errors.QueryExecutionErrors

/**
 * Spark's own state store errors, which `QueryExecutionErrors` (`private[sql]`) builds: the
 * plugin throws the same error classes as Spark's built-in providers, so that Spark, its
 * tests and users' error handling see `CANNOT_LOAD_STATE_STORE.*` and
 * `CANNOT_WRITE_STATE_STORE.*` whichever provider runs. It lives under `org.apache.spark.sql`
 * for that access only.
 */
object StateStoreErrorsShim {
  /** `CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION`: a negative version was asked for. */
  def unexpectedVersion(version: Long): Throwable =
    QueryExecutionErrors.unexpectedStateStoreVersion(version)

  /**
   * `CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE`: a state file needed to load
   * a version does not exist. Spark's message (which names `file`) is followed, on its own
   * line, by `detail`: which version was wanted and what else was looked for. Spark reports
   * a failed query with the message of this exception only, not its causes.
   */
  def stateFileMissing(file: Path, detail: String): SparkException = {
    val spark = QueryExecutionErrors.failedToReadStreamingStateFileError(file, null)
      .asInstanceOf[SparkException]
    new SparkException(s"${spark.getMessage}\n$detail", null, Option(spark.getCondition),
      spark.getMessageParameters.asScala.toMap, Array.empty[QueryContext])
  }

  /**
   * `CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT`: a store's commit failed; `store` names it.
   * Spark's message says only that the commit failed, and a failed query shows the message
   * of this exception, not its causes: `reason` (what failed: a state file over the storage's
   * limit, a pack that cannot be written) follows on its own line.
   */
  def commitFailed(store: String, cause: Throwable, reason: String): Throwable =
    QueryExecutionErrors.failedToCommitStateFileError(store, cause) match {
      case spark: SparkException =>
        new SparkException(s"${spark.getMessage}\n$reason", cause, Option(spark.getCondition),
          spark.getMessageParameters.asScala.toMap, Array.empty[QueryContext])
      case other => other
    }
}
