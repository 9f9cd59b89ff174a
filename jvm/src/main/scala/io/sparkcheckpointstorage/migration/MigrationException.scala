package io.sparkcheckpointstorage.migration

import java.io.IOException

/** A migration cannot be done as asked; the message says why and what to change. */
class MigrationException(message: String, cause: Throwable = null) extends IOException(message, cause)
