package io.sparkcheckpointstorage.layout

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

class CheckpointPathsSuite extends AnyFunSuite {
  test("state files, directories and commits are told apart, even under a root named state") {
    val root = "file:/tmp/state/ck"
    assert(CheckpointPaths.splitState(new Path(s"$root/state/0/3/7.heap-delta")) == Some((root, "state/0/3/7.heap-delta")))
    assert(CheckpointPaths.splitState(new Path(s"$root/state/1/2/left-keyToNumValues/4.delta")) ==
      Some((root, "state/1/2/left-keyToNumValues/4.delta")))
    assert(CheckpointPaths.splitState(new Path(s"$root/offsets/3")).isEmpty)
    assert(CheckpointPaths.stateDirRoot(new Path(s"$root/state/0/3")) == Some((root, "state/0/3")))
    assert(CheckpointPaths.stateDirRoot(new Path(s"$root/state/1/2/right-keyWithIndexToValue")) ==
      Some((root, "state/1/2/right-keyWithIndexToValue")))
    assert(CheckpointPaths.stateDirRoot(new Path(s"$root/offsets")).isEmpty)
    assert(CheckpointPaths.commit(new Path(s"$root/commits/12")) == Some((root, 12L)))
    assert(CheckpointPaths.commit(new Path(s"$root/commits/.12.crc")).isEmpty)
  }

  test("state file names of every known provider give their version and kind") {
    assert(StateFileNaming.versionOf("7.heap-delta") == Some(VersionedName(7, snapshot = false)))
    assert(StateFileNaming.versionOf("7.heap-snapshot") == Some(VersionedName(7, snapshot = true)))
    assert(StateFileNaming.versionOf("3.delta") == Some(VersionedName(3, snapshot = false)))
    assert(StateFileNaming.versionOf(".3.delta.crc") == Some(VersionedName(3, snapshot = false)))
    assert(StateFileNaming.versionOf("12_0b1c2d3e-aaaa.changelog") == Some(VersionedName(12, snapshot = false)))
    assert(StateFileNaming.versionOf("12.zip") == Some(VersionedName(12, snapshot = true)))
    assert(StateFileNaming.versionOf("schema").isEmpty)
    assert(StateFileNaming.versionOf("000123-uuid.sst").isEmpty)
  }

  test("store paths: operator, partition, store (default or a join's) and file name") {
    assert(CheckpointPaths.storeOf("state/0/3/7.heap-delta") == Some((0, 3, "default", "7.heap-delta")))
    assert(CheckpointPaths.storeOf("state/1/2/left-keyToNumValues/4.delta") == Some((1, 2, "left-keyToNumValues", "4.delta")))
    assert(CheckpointPaths.storeOf("state/0/_metadata/metadata").isEmpty)
    assert(CheckpointPaths.storeOf("offsets/3").isEmpty)
  }

  test("operator metadata (versions 1 and 2), state operators and log entries by batch") {
    assert(CheckpointPaths.operatorMetadataOf(CheckpointPaths.operatorMetadata(3)) == Some(3L))
    assert(CheckpointPaths.operatorMetadataOf("state/3/_metadata/v2/1_abc").isEmpty)
    assert(CheckpointPaths.operatorMetadataOf("state/3/0/_metadata/schema").isEmpty)
    assert(CheckpointPaths.operatorMetadataV2Of(CheckpointPaths.operatorMetadataV2Dir(2) + "/0_abc") == Some(2L))
    assert(CheckpointPaths.operatorMetadataV2Of(CheckpointPaths.operatorMetadata(2)).isEmpty)
    assert(CheckpointPaths.stateOperatorOf("state/1/4/2.delta") == Some(1L))
    assert(CheckpointPaths.stateOperatorOf("state-packs/1.pack").isEmpty)
    assert(CheckpointPaths.stateOperatorOf("offsets/1").isEmpty)
  }

  test("state schema files: operator, partition and store, the default store without a folder") {
    assert(CheckpointPaths.storeSchemaOf("state/2/0/_metadata/schema") == Some((2L, 0, "default")))
    assert(CheckpointPaths.storeSchemaOf("state/2/0/left-keyToNumValues/_metadata/schema") ==
      Some((2L, 0, "left-keyToNumValues")))
    assert(CheckpointPaths.storeSchemaOf(CheckpointPaths.storeSchema(4, 1, "right-keyWithIndexToValue")) ==
      Some((4L, 1, "right-keyWithIndexToValue")))
    assert(CheckpointPaths.storeSchemaOf(CheckpointPaths.storeSchema(4, 0, "default")) == Some((4L, 0, "default")))
    assert(CheckpointPaths.storeSchemaOf("state/2/_metadata/metadata").isEmpty)
    assert(CheckpointPaths.storeSchemaOf("state/2/0/1.delta").isEmpty)
  }

  test("RocksDB snapshots may be held inline only with a checkpoint id, and only where Spark reads them through the file manager") {
    val fromFourTwo = org.apache.spark.sql.checkpointstorage.shim.RocksDbFilesShim.zipsWithCheckpointIdThroughFileManager
    assert(StateFileNaming.inlinable("state/0/1/3_0b1c2d3e-aaaa.zip") == fromFourTwo)
    assert(StateFileNaming.inlinable("state/0/1/3_0b1c2d3e-aaaa.zip.crc") == fromFourTwo)
    assert(!StateFileNaming.inlinable("state/0/1/3.zip"))
    assert(!StateFileNaming.inlinable("state/0/1/SSTs/000008-0b1c2d3e-aaaa.sst"))
    assert(StateFileNaming.inlinable("state/0/1/3_0b1c2d3e-aaaa.changelog"))
    assert(StateFileNaming.inlinable("state/0/1/3.changelog"))
  }

  test("transformWithState's operator metadata names the schema files of the checkpoint it is copied to") {
    val metadata = "v2\n{\"stateStoreInfo\":[{\"storeName\":\"default\",\"numPartitions\":2,\"stateSchemaFilePaths\":" +
      "[\"/data/old/state/0/_stateSchema/default/0_ab\",\"/data/old/state/0/_stateSchema/default/3_cd\"]}]}"
    val moved = StateSchemaPaths.relocate(metadata, new org.apache.hadoop.fs.Path("file:/data/new-copy"))
    assert(moved.contains("\"/data/new-copy/state/0/_stateSchema/default/0_ab\""))
    assert(moved.contains("\"/data/new-copy/state/0/_stateSchema/default/3_cd\""))
    assert(!moved.contains("/data/old/"))
    // Paths written with a scheme keep one.
    val s3 = metadata.replace("/data/old", "s3a://bucket/old")
    assert(StateSchemaPaths.relocate(s3, new org.apache.hadoop.fs.Path("s3a://bucket/new"))
      .contains("\"s3a://bucket/new/state/0/_stateSchema/default/0_ab\""))
    // Nothing else changes.
    assert(StateSchemaPaths.relocate("v1\n{\"numPartitions\":2}", new org.apache.hadoop.fs.Path("/x")) == "v1\n{\"numPartitions\":2}")
  }
}
