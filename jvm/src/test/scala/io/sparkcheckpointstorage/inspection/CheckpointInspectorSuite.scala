package io.sparkcheckpointstorage.inspection

import org.scalatest.funsuite.AnyFunSuite

class CheckpointInspectorSuite extends AnyFunSuite {
  import CheckpointInspector._

  test("state file names of every known provider give their version and kind") {
    assert(versionOf("7.heap-delta") == Some(VersionedName(7, snapshot = false)))
    assert(versionOf("7.heap-snapshot") == Some(VersionedName(7, snapshot = true)))
    assert(versionOf("3.delta") == Some(VersionedName(3, snapshot = false)))
    assert(versionOf(".3.delta.crc") == Some(VersionedName(3, snapshot = false)))
    assert(versionOf("12_0b1c2d3e-aaaa.changelog") == Some(VersionedName(12, snapshot = false)))
    assert(versionOf("12.zip") == Some(VersionedName(12, snapshot = true)))
    assert(versionOf("schema").isEmpty)
    assert(versionOf("000123-uuid.sst").isEmpty)
  }

  test("store paths: operator, partition, store (default or a join's) and file name") {
    assert(storeOf("state/0/3/7.heap-delta") == Some((0, 3, "default", "7.heap-delta")))
    assert(storeOf("state/1/2/left-keyToNumValues/4.delta") == Some((1, 2, "left-keyToNumValues", "4.delta")))
    assert(storeOf("state/0/_metadata/metadata").isEmpty)
    assert(storeOf("offsets/3").isEmpty)
  }

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
