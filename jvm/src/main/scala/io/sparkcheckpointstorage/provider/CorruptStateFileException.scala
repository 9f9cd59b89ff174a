package io.sparkcheckpointstorage.provider

/** A state file failed to read; the message names the file and what is wrong with it. */
class CorruptStateFileException(file: String, reason: String, cause: Throwable = null)
  extends io.sparkcheckpointstorage.storage.CorruptCheckpointException(file,
    s"State file $file is corrupt or truncated: $reason. The state of this " +
    "partition cannot be restored from it; restore the file from a backup or restart the " +
    "query from a savepoint or a new checkpoint location.", cause)
