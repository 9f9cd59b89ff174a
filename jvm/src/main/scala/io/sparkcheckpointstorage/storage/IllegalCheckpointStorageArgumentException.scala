package io.sparkcheckpointstorage.storage

/**
 * A setting or argument of the checkpoint storage is wrong: the message's first line names
 * the setting, the value given and what is allowed. An `IllegalArgumentException`, so that
 * Spark and PySpark treat it as the user's error (PySpark: `IllegalArgumentException`; this
 * package's Python errors: `IllegalCheckpointStorageArgumentException`).
 */
class IllegalCheckpointStorageArgumentException(message: String, cause: Throwable = null)
  extends IllegalArgumentException(message, cause)
