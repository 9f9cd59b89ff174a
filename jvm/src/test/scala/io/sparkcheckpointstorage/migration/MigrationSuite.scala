package io.sparkcheckpointstorage.migration

import java.io.{DataInputStream, FileInputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => NioPath}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.checkpointstorage.shim.{MigrationShim, ProviderTestShim}
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{LongType, StructType}
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.fileio.CheckpointPublication
import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.provider.HeapStateStoreProvider
import io.sparkcheckpointstorage.provider.StateRows._

/** What a migration decides from the files alone: no Spark session needed. */
class MigrationSuite extends AnyFunSuite {
  private val conf = new Configuration()
  private val hdfs = TargetProvider.Hdfs

  private def write(root: NioPath, rel: String, text: String): Unit = {
    val p = root.resolve(rel)
    Files.createDirectories(p.getParent)
    Files.write(p, text.getBytes(UTF_8))
  }

  private def offsets(provider: String, extra: String = ""): String =
    "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{\"spark.sql.streaming.stateStore.providerClass\":\"" +
      provider + "\",\"spark.sql.shuffle.partitions\":\"4\"" + extra + "}}\n{\"logOffset\":0}"

  private val aggregationMetadata = "v1\n{\"operatorInfo\":{\"operatorId\":0,\"operatorName\":\"stateStoreSave\"}," +
    "\"stateStoreInfo\":[{\"storeName\":\"default\",\"numColsPrefixKey\":0,\"numPartitions\":4}]}"

  /** A checkpoint of `batches` committed batches (and one more in the offset log only). */
  private def checkpoint(batches: Int): NioPath = {
    val root = Files.createTempDirectory("scs-migration-")
    write(root, "metadata", "{\"id\":\"4f1b6a57-1a8e-4b58-a3b1-6f1a1d6a1c11\"}")
    (0 to batches).foreach(b => write(root, s"offsets/$b", offsets(hdfs)))
    (0 until batches).foreach(b => write(root, s"commits/$b", "v1\n{\"nextBatchWatermarkMs\":0}"))
    write(root, "state/0/_metadata/metadata", aggregationMetadata)
    write(root, "state/0/0/1.delta", "x")
    root
  }

  private def refused(f: => Any): String = intercept[MigrationException](f).getMessage

  test("the layout: last committed batch, offset log conf, operators with their stores") {
    val root = checkpoint(2)
    val layout = SourceCheckpoint.read(root.toString, -1, conf)
    assert(layout.batchId == 1 && layout.committed == Seq(0L, 1L))
    assert(layout.sourceProvider == hdfs && layout.numPartitions == 4)
    assert(layout.operators == Seq(StatefulOperator(0, "stateStoreSave", Seq(OperatorStore("default", 0, 4)))))
    assert(!layout.hasPacks)
  }

  test("refusals of the source: no commit, an uncommitted batch, format version 2, transformWithState, no metadata") {
    assert(refused(SourceCheckpoint.read(checkpoint(0).toString, -1, conf))
      .contains("has no committed batch yet: there is no state to migrate. Let the query complete a batch first"))
    val root = checkpoint(2)
    val inFlight = refused(SourceCheckpoint.read(root.toString, 2, conf))
    assert(inFlight.contains("Batch 2 of the checkpoint"))
    assert(inFlight.contains("is not committed (it is being processed, or failed): only the state of a committed " +
      "batch can be migrated. The last committed batch is 1; omit the batch to migrate it."), inFlight)
    assert(refused(SourceCheckpoint.read(root.toString, 9, conf)).contains("has no committed batch 9 (committed: 0 to 1)"))
    write(root, "commits/1", "v2\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{}}")
    assert(refused(SourceCheckpoint.read(root.toString, -1, conf)).contains("state checkpoint format version 2"))
    val tws = checkpoint(1)
    write(tws, "state/1/_metadata/v2/0", "{}")
    assert(refused(SourceCheckpoint.read(tws.toString, -1, conf)).contains("it is a transformWithState operator"))
    val old = checkpoint(1)
    write(old, "state/3/0/1.delta", "x")
    assert(refused(SourceCheckpoint.read(old.toString, -1, conf)).contains("Operator 3 of the checkpoint"))
    assert(refused(SourceCheckpoint.read(old.toString, -1, conf)).contains("Resume the query on Spark 4.0 or later"))
  }

  test("the offset log records the target provider, nothing else changes") {
    val entry = offsets(hdfs, ",\"spark.sql.streaming.stateStore.compression.codec\":\"lz4\"")
    val rewritten = CheckpointCopier.recordProvider(entry, TargetProvider.Heap)
    assert(rewritten == entry.replace(hdfs, TargetProvider.Heap))
    assert(SourceCheckpoint.parseOffsetConf(rewritten, "x")(SparkSettingKeys.ProviderClass) == TargetProvider.Heap)
  }

  test("a rescale records the new number of partitions as shuffle and (4.1+) state partitions") {
    val entry = offsets(hdfs, ",\"spark.sql.streaming.internal.stateStore.partitions\":\"4\"")
    val conf = SourceCheckpoint.parseOffsetConf(CheckpointCopier.recordPartitions(entry, 11), "x")
    assert(conf(SparkSettingKeys.ShufflePartitions) == "11")
    assert(conf(SparkSettingKeys.StatePartitions) == "11")
    assert(conf(SparkSettingKeys.ProviderClass) == hdfs)
  }

  test("the key fields each operator's shuffle hashes, and an unknown operator refused by name") {
    val key = new StructType().add("a", LongType).add("b", LongType).add("c", LongType)
    def fields(op: String, store: String = "default", prefix: Int = 0): Int =
      StatePartitioning.hashedKeyFields(StatefulOperator(0, op, Nil), OperatorStore(store, prefix, 4), key)
    Seq("stateStoreSave", "dedupe", "dedupeWithinWatermark", "flatMapGroupsWithState", "applyInPandasWithState")
      .foreach(op => assert(fields(op) == 3, op))
    assert(fields("symmetricHashJoin", "left-keyToNumValues") == 3)
    assert(fields("symmetricHashJoin", "right-keyWithIndexToValue") == 2)
    assert(fields("sessionWindowStateStoreSaveExec", prefix = 2) == 2)
    assert(refused(fields("transformWithStateExec")).contains("Operator 0 (transformWithStateExec, store default) cannot be rescaled"))
    assert(refused(fields("sessionWindowStateStoreSaveExec")).contains("cannot be rescaled"))
  }

  test("targets: inside or around the source, not empty, or left by a killed migration") {
    val root = checkpoint(1)
    val source = new Path(root.toUri).toString.stripSuffix("/")
    def prepare(target: String) = CheckpointPublication.prepare(Migration.Writer, source, target, conf)
    assert(refused(prepare(root.resolve("x").toString)).contains("lies inside"))
    assert(refused(prepare(root.getParent.toString)).contains("contains the checkpoint"))
    assert(refused(prepare(root.resolve("state").toString)).contains("lies inside"))
    val parent = Files.createTempDirectory("scs-targets-")
    write(parent, "busy/file", "x")
    assert(refused(prepare(parent.resolve("busy").toString)).contains("not empty"))
    val fresh = prepare(parent.resolve("dst").toString)
    assert(fresh.temporary.getName.startsWith(".dst" + Migration.Writer.marker))
    write(parent, ".dst.migrating-1234abcd/_MIGRATION_INCOMPLETE", "x")
    assert(refused(prepare(parent.resolve("dst").toString)).contains("An earlier migration to"))
    // Any writer's leftover refuses any writer, naming what it was.
    write(parent, ".sp.saving-1234abcd/_SAVEPOINT_INCOMPLETE", "x")
    val left = refused(prepare(parent.resolve("sp").toString))
    assert(left.contains("An earlier savepoint to") && left.contains(".sp.saving-1234abcd") &&
      left.contains("and migrate again"), left)
  }

  test("a publication is written into its hidden sibling and renamed into place, or discarded") {
    val source = new Path(checkpoint(1).toUri).toString.stripSuffix("/")
    val parent = Files.createTempDirectory("scs-publish-")
    val dst = CheckpointPublication.prepare(Migration.Writer, source, parent.resolve("dst").toString, conf)
    dst.begin("unfinished")
    dst.writeText("a/b", "x")
    assert(Files.exists(parent.resolve(dst.temporary.getName).resolve(Migration.InProgressFile)))
    assert(!Files.exists(parent.resolve("dst")))
    dst.publish()
    assert(Files.readAllLines(parent.resolve("dst/a/b")).get(0) == "x")
    assert(!Files.exists(parent.resolve("dst").resolve(Migration.InProgressFile)))
    assert(Files.list(parent).count() == 1)
    val failed = CheckpointPublication.prepare(Migration.Writer, source, parent.resolve("other").toString, conf)
    failed.begin("unfinished")
    failed.discard(new RuntimeException("failed"))
    assert(Files.list(parent).count() == 1)
  }

  test("target and source providers must be loadable state store providers") {
    assert(TargetProvider.resolve("RocksDB") == TargetProvider.RocksDb)
    assert(refused(TargetProvider.resolve("com.example.Nope")).contains("is not on the classpath"))
    assert(refused(TargetProvider.resolve("java.lang.String")).contains("is not a org.apache.spark"))
  }

  test("targets this line writes, and the settings RocksDB's are written with") {
    Seq(TargetProvider.Heap, hdfs, TargetProvider.RocksDb).foreach(TargetStoreWriters.checkWritable)
    assert(TargetStoreWriters.writeSettings(TargetProvider.Heap).isEmpty)
    val other = "com.example.OtherStateStoreProvider"
    if (MigrationShim.opensStoreEmpty) {
      TargetStoreWriters.checkWritable(other)
      assert(TargetStoreWriters.writeSettings(TargetProvider.RocksDb).isEmpty)
    } else {
      assert(refused(TargetStoreWriters.checkWritable(other)).startsWith(
        s"Spark ${org.apache.spark.SPARK_VERSION} cannot write state for $other in a migration: before Spark 4.2 "))
      assert(TargetStoreWriters.writeSettings(TargetProvider.RocksDb) ==
        Map(SparkSettingKeys.RocksDbChangelogCheckpointing -> "false"))
    }
  }

  test("a heap target store holds the rows written, as the version after the batch") {
    val root = Files.createTempDirectory("scs-heap-target-").toString
    val sqlConf = new SQLConf()
    sqlConf.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key, TargetProvider.Heap)
    // No streaming query, so no coordinator to report commits to.
    sqlConf.setConfString("spark.sql.streaming.stateStore.commitValidation.enabled", "false")
    val storeConf = new StateStoreConf(sqlConf)
    val id = StateStoreId(root, 0, 0)
    val sink = TargetStoreWriters.openSink(TargetStore(id, keySchema, valueSchema, 0, storeConf, conf, 4,
      TargetProvider.Heap))
    try {
      sink.put(key("a", 1), value(1))
      sink.put(key("b", 2), value(2))
      sink.commit()
    } finally sink.close()
    val read = new HeapStateStoreProvider()
    ProviderTestShim.init(read, id, keySchema, valueSchema, None, storeConf, conf)
    try {
      val store = read.getReadStore(5)
      assert(store.iterator().map(p => keyOf(p.key) -> valueOf(p.value)).toMap == Map(("a", 1) -> 1L, ("b", 2) -> 2L))
      store.abort()
    } finally read.close()
  }

  test("an HDFS snapshot file holds every record, then the end marker") {
    val dir = Files.createTempDirectory("scs-hdfs-snapshot-")
    val schema = new StructType().add("k", LongType)
    val proj = UnsafeProjection.create(schema)
    val file = new HdfsSnapshotWriter(new Path(dir.toUri), 7, "lz4", conf)
    (1L to 3L).foreach(i => file.put(proj(InternalRow(i)).copy(), proj(InternalRow(i * 10)).copy()))
    file.commit()
    val in = new DataInputStream(HdfsSnapshotWriter.codec("lz4").compressedInputStream(
      new FileInputStream(dir.resolve("7.snapshot").toFile)))
    try {
      val records = Iterator.continually(in.readInt()).takeWhile(_ != -1).map { keyLen =>
        val key = new Array[Byte](keyLen)
        in.readFully(key)
        val value = new Array[Byte](in.readInt())
        in.readFully(value)
        (key.length, value.length)
      }.toList
      assert(records == List.fill(3)((16, 16)))
    } finally in.close()
  }
}
