package io.sparkcheckpointstorage.storage

import java.io.IOException

/**
 * A file of a checkpoint (a pack, a state file) is corrupt, truncated, missing from a
 * sequence, or belongs to another checkpoint. `file` names it; the message says what is
 * wrong and what to do. The common parent lets every layer (and Python) recognise the kind
 * of error, whichever file format raised it.
 */
class CorruptCheckpointException(val file: String, message: String, cause: Throwable = null)
  extends IOException(message, cause)
