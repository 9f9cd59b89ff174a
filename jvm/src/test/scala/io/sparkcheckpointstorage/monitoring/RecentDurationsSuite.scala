package io.sparkcheckpointstorage.monitoring

import com.codahale.metrics.Histogram
import org.scalatest.funsuite.AnyFunSuite

/** The reservoir of `coordinator.stageEndWaitMs`: the last durations, in order, and their percentiles. */
class RecentDurationsSuite extends AnyFunSuite {
  test("keeps the newest durations in the order they came, the oldest dropped past its capacity") {
    val recent = new RecentDurations(4)
    assert(recent.size() == 0 && recent.latest(3).isEmpty)
    Seq(5L, 1L, 9L).foreach(recent.update)
    assert(recent.latest(10).toSeq == Seq(5L, 1L, 9L))
    assert(recent.latest(2).toSeq == Seq(1L, 9L))
    Seq(7L, 3L, 8L).foreach(recent.update)
    assert(recent.size() == 4)
    assert(recent.latest(4).toSeq == Seq(9L, 7L, 3L, 8L), "the two oldest are gone")
    assert(recent.latest(1).toSeq == Seq(8L))
    assert(recent.latest(-1).isEmpty)
  }

  test("a histogram over it gives the percentiles of the kept durations") {
    val recent = new RecentDurations(100)
    val histogram = new Histogram(recent)
    (1L to 250L).foreach(histogram.update)
    val snapshot = histogram.getSnapshot
    assert(histogram.getCount == 250, "every duration counts")
    assert(snapshot.size == 100 && snapshot.getMin == 151 && snapshot.getMax == 250)
    assert(snapshot.getMedian == 200.5 || snapshot.getMedian == 200 || snapshot.getMedian == 201, snapshot.getMedian)
    assert(snapshot.get99thPercentile >= 249)
  }
}
