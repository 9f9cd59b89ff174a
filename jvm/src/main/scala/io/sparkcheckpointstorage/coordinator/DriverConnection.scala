package io.sparkcheckpointstorage.coordinator

import scala.util.control.NonFatal

/**
 * One executor's round trips to the driver's coordinator, looking the driver up again after
 * any failure: a lookup that failed is never kept, so once the driver answers again the next
 * message goes through, with no restart and no new executor.
 *
 * The first successful lookup is kept, as Spark keeps its own endpoint references: a commit's
 * normal path is one round trip, never a lookup. A round trip that times out keeps the
 * reference too (the driver was slow, not gone; Spark reconnects the channel itself). Threads
 * that waited for a lookup that failed meanwhile get its failure rather than each waiting a
 * lookup timeout of their own in turn.
 *
 * @param lookup        finds the driver's endpoint (blocking up to the lookup timeout) and
 *                      returns one round trip through it (blocking up to the ask timeout)
 * @param lookupTimeout the lookup timeout in force, as `key=value`, for the error message
 * @param askTimeout    the ask timeout in force, as `key=value`, for the error message
 */
final class DriverConnection(lookup: () => AnyRef => AnyRef, lookupTimeout: String, askTimeout: String) {
  @volatile private var roundTrip: AnyRef => AnyRef = _
  private var lastFailure: Throwable = _
  private var lastFailureNanos = Long.MinValue

  /** The driver's reply to `message`; a lookup or round trip that failed raises [[CoordinatorUnreachableException]]. */
  def send(message: AnyRef): AnyRef = {
    val trip = endpoint()
    try trip(message) catch {
      case NonFatal(e) => throw CoordinatorUnreachableException.noAnswer(askTimeout, e)
    }
  }

  private def endpoint(): AnyRef => AnyRef = {
    val known = roundTrip
    if (known != null) return known
    val waitedSince = System.nanoTime()
    synchronized {
      if (roundTrip != null) return roundTrip
      if (lastFailure != null && lastFailureNanos - waitedSince >= 0) {
        throw CoordinatorUnreachableException.noLookup(lookupTimeout, lastFailure)
      }
      try {
        roundTrip = lookup()
        lastFailure = null
        roundTrip
      } catch {
        case NonFatal(e) =>
          lastFailure = e
          lastFailureNanos = System.nanoTime()
          throw CoordinatorUnreachableException.noLookup(lookupTimeout, e)
      }
    }
  }
}
