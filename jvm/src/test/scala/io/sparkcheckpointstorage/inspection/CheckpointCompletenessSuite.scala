package io.sparkcheckpointstorage.inspection

import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.layout.VersionedName

class CheckpointCompletenessSuite extends AnyFunSuite {
  private def deltas(vs: Long*) = vs.map(VersionedName(_, snapshot = false))
  private def snapshot(v: Long) = VersionedName(v, snapshot = true)

  test("a store loads a version from a snapshot or the empty version 0 on, delta by delta") {
    assert(CheckpointCompleteness.loadableVersions(deltas(1, 2, 3)) == Set(0L, 1L, 2L, 3L))
    // Delta 2 is missing: 3 cannot be loaded; the snapshot at 4 starts over.
    assert(CheckpointCompleteness.loadableVersions(deltas(1, 3, 5) :+ snapshot(4)) == Set(0L, 1L, 4L, 5L))
    // Old deltas cleaned up after a snapshot.
    assert(CheckpointCompleteness.loadableVersions(deltas(11, 12) :+ snapshot(10)) == Set(0L, 10L, 11L, 12L))
  }

  test("the last complete batch is the last committed one every store can load, and what the last one misses") {
    val stores = Map("state/0/0" -> deltas(1, 2, 3, 4), "state/0/1" -> deltas(1, 2, 3))
    val c = CheckpointCompleteness.of(Seq(0L, 1L, 2L, 3L), stores)
    assert(c.lastComplete.contains(2L))
    assert(c.missing == Seq("state/0/1 version 4"))
    assert(CheckpointCompleteness.of(Seq(0L, 1L, 2L), stores) == CheckpointCompleteness(Some(2L), Nil))
    assert(CheckpointCompleteness.of(Seq(0L), Map("state/0/0" -> deltas(2))).lastComplete.isEmpty)
    assert(CheckpointCompleteness.of(Nil, stores) == CheckpointCompleteness(None, Nil))
  }
}
