package io.sparkcheckpointstorage.coordinator

/**
 * State store maintenance asked about a checkpoint that no query runs on in this driver: its
 * query stopped, or has not committed a batch since the driver started. The maintenance
 * leaves that state alone; a query started on the checkpoint commits, and maintains, again.
 */
class QueryNotRunningException(message: String) extends IllegalStateException(message)
