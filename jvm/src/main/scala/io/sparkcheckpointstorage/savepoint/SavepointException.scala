package io.sparkcheckpointstorage.savepoint

import java.io.IOException

/** A savepoint cannot be taken; the message says why and what to do. */
class SavepointException(message: String, cause: Throwable = null) extends IOException(message, cause)
