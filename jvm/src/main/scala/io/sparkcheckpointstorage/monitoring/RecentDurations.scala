package io.sparkcheckpointstorage.monitoring

import com.codahale.metrics.{Reservoir, Snapshot, UniformSnapshot}

/**
 * The last `capacity` durations, in the order they were recorded: a histogram's reservoir (its
 * percentiles are those of these durations, as with Dropwizard's `SlidingWindowReservoir`)
 * that also gives the newest ones in order, so that a benchmark reads those of its own window
 * out of a histogram the whole application shares.
 */
final class RecentDurations(capacity: Int) extends Reservoir {
  require(capacity > 0, s"a reservoir of $capacity durations")
  private val values = new Array[Long](capacity)
  private var recorded = 0L

  override def size(): Int = synchronized(math.min(recorded, capacity.toLong).toInt)

  override def update(value: Long): Unit = synchronized {
    values((recorded % capacity).toInt) = value
    recorded += 1
  }

  override def getSnapshot: Snapshot = new UniformSnapshot(latest(capacity))

  /** The newest `n` durations (at most the capacity), oldest first. */
  def latest(n: Int): Array[Long] = synchronized {
    val k = math.min(math.max(n, 0).toLong, math.min(recorded, capacity.toLong)).toInt
    Array.tabulate(k)(i => values(((recorded - k + i) % capacity).toInt))
  }
}
