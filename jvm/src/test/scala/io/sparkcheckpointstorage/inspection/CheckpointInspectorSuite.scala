package io.sparkcheckpointstorage.inspection

import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.layout.VersionedName

class CheckpointInspectorSuite extends AnyFunSuite {
  import CheckpointInspector._

  private def files(deltas: Seq[Long], snapshots: Seq[Long]) =
    deltas.map(VersionedName(_, snapshot = false)) ++ snapshots.map(VersionedName(_, snapshot = true))

  test("restorable range: contiguous deltas from 1, or from a snapshot") {
    assert(restorableFrom(files(1L to 5L, Nil)).contains(1L))
    // Cleanup removed deltas 1-3; the snapshot at 4 restores 4 and later.
    assert(restorableFrom(files(5L to 9L, Seq(4L, 8L))).contains(4L))
    // A missing delta after the last snapshot: the latest version cannot be rebuilt.
    assert(restorableFrom(files(Seq(1L, 2L, 4L), Nil)).isEmpty)
    // A gap before a snapshot only limits how far back one can go.
    assert(restorableFrom(files(Seq(1L, 2L, 6L, 7L), Seq(5L))).contains(5L))
    assert(restorableFrom(Nil).isEmpty)
  }
}
