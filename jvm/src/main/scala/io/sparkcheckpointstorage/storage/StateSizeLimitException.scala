package io.sparkcheckpointstorage.storage

/** A state file exceeds what the chosen storage accepts. */
class StateSizeLimitException(message: String) extends java.io.IOException(message)
