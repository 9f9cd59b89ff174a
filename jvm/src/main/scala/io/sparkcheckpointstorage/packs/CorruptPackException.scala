package io.sparkcheckpointstorage.packs

import io.sparkcheckpointstorage.storage.CorruptCheckpointException

/** A pack file is damaged or belongs elsewhere; `file` names it. */
class CorruptPackException(pack: String, message: String, cause: Throwable = null)
  extends CorruptCheckpointException(pack, message, cause)

object CorruptPackException {
  /** The error for `pack`, saying what is wrong with it (`reason`) and what to do. */
  def apply(pack: String, reason: String, cause: Throwable = null): CorruptPackException =
    new CorruptPackException(pack, s"State pack $pack is unusable: $reason. The inline state it " +
      "holds cannot be restored; restore the file from a backup or restart the query from a " +
      "savepoint or a new checkpoint location.", cause)
}
