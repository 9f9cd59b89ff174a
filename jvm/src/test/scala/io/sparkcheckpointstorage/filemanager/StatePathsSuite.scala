package io.sparkcheckpointstorage.filemanager

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

class StatePathsSuite extends AnyFunSuite {
  test("state files, directories and commits are told apart, even under a root named state") {
    val root = "file:/tmp/state/ck"
    assert(StatePaths.splitState(new Path(s"$root/state/0/3/7.heap-delta")) == Some((root, "state/0/3/7.heap-delta")))
    assert(StatePaths.splitState(new Path(s"$root/state/1/2/left-keyToNumValues/4.delta")) ==
      Some((root, "state/1/2/left-keyToNumValues/4.delta")))
    assert(StatePaths.splitState(new Path(s"$root/offsets/3")).isEmpty)
    assert(StatePaths.stateDirRoot(new Path(s"$root/state/0/3")) == Some((root, "state/0/3")))
    assert(StatePaths.stateDirRoot(new Path(s"$root/state/1/2/right-keyWithIndexToValue")) ==
      Some((root, "state/1/2/right-keyWithIndexToValue")))
    assert(StatePaths.stateDirRoot(new Path(s"$root/offsets")).isEmpty)
    assert(StatePaths.commit(new Path(s"$root/commits/12")) == Some((root, 12L)))
    assert(StatePaths.commit(new Path(s"$root/commits/.12.crc")).isEmpty)
  }
}
