package io.sparkcheckpointstorage.coordinator

/**
 * Marks the checkpoint requests a state store provider's maintenance makes (snapshots,
 * cleanup), so that [[CoordinatorClient]] sends them as [[FromMaintenance]].
 *
 * Spark runs the maintenance of every store an executor has loaded, on a thread of its own,
 * until the executor learns that the store's query stopped: at least once after the stop.
 * Only the thread knows it is doing maintenance, hence a thread-local scope.
 */
object StateMaintenanceScope {
  private val active = new ThreadLocal[java.lang.Boolean] {
    override def initialValue(): java.lang.Boolean = false
  }

  /** Runs `body` with its checkpoint requests marked as maintenance. */
  def run[T](body: => T): T = {
    val outer = active.get
    active.set(true)
    try body finally active.set(outer)
  }

  def isActive: Boolean = active.get
}
