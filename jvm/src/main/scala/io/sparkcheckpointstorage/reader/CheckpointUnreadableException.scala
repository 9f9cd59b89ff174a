package io.sparkcheckpointstorage.reader

/** The checkpoint's state cannot be read; the message says why and what to do. */
class CheckpointUnreadableException(message: String) extends IllegalStateException(message)
