"""HeapStateStoreProvider on a real streaming query: metrics, restores, the state data
source, and the errors a user sees for damaged checkpoints."""
import os
import time
import shutil

import pytest
from pyspark.sql import functions as F


from spark_checkpoint_storage import jvm_names

HEAP = jvm_names.HEAP_PROVIDER_CLASS
SCHEMA = "k long, v long"
SPARK_FILE_MANAGER = jvm_names.spark_file_manager_class()


#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {
    "spark.sql.shuffle.partitions": 2,
    "spark.sql.streaming.stateStore.providerClass": HEAP,
    # The provider alone, writing through Spark's own checkpoint file manager: where the
    # bytes go is the storages' business (tests/test_storages.py).
    "spark.sql.streaming.checkpointFileManagerClass": SPARK_FILE_MANAGER,
    # Snapshots every 2 versions, maintenance often: exercises both in seconds.
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": 2,
    "spark.sql.streaming.stateStore.maintenanceInterval": "200ms",
}


@pytest.fixture(scope="module")
def spark(spark):
    """Spark's maintenance thread is one per JVM and keeps the interval it started with: an
    earlier test module's session may have started it with the 60 s default."""
    jvm = spark.sparkContext._jvm
    jvm.java.lang.Class.forName("org.apache.spark.sql.execution.streaming.state.StateStore$") \
        .getField("MODULE$").get(None).stop()
    yield spark


@pytest.fixture
def deltas_only(spark):
    """No snapshots for queries started in the test: a restore must read every delta."""
    key = "spark.sql.streaming.stateStore.minDeltasForSnapshot"
    spark.conf.set(key, 1000)
    yield
    spark.conf.set(key, 2)


class Query:
    """A file-fed streaming aggregation whose input the test controls batch by batch."""

    def __init__(self, spark, root):
        self.spark = spark
        self.source = os.path.join(str(root), "source")
        self.checkpoint = os.path.join(str(root), "checkpoint")
        os.makedirs(self.source, exist_ok=True)
        self.rows = []
        self.query = None

    def start(self):
        agg = (self.spark.readStream.schema(SCHEMA).parquet(self.source)
               .groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s")))
        self.query = (agg.writeStream.outputMode("update").format("noop")
                      .option("checkpointLocation", self.checkpoint).start())
        return self

    def feed(self, rows):
        self.rows += rows
        self.spark.createDataFrame(rows, SCHEMA).coalesce(1).write.mode("append").parquet(self.source)
        self.query.processAllAvailable()
        return self.query.lastProgress

    def stop(self):
        self.query.stop()

    def expected(self):
        df = self.spark.createDataFrame(self.rows, SCHEMA)
        return sorted((r.k, r.n, r.s) for r in df.groupBy("k").agg(
            F.count("*").alias("n"), F.sum("v").alias("s")).collect())

    def state(self, **options):
        reader = self.spark.read.format("statestore")
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load(self.checkpoint)

    def state_dir(self, partition):
        return os.path.join(self.checkpoint, "state", "0", str(partition))



def rows_for(batch, keys=20):
    return [(k, batch * 100 + k) for k in range(batch, batch + keys)]


def state_rows(df):
    return sorted((r.key[0], r.value[0], r.value[1]) for r in df.collect())


def test_progress_reports_our_metrics_and_state(spark, tmp_path):
    q = Query(spark, tmp_path).start()
    try:
        progress = q.feed(rows_for(0))
        op = progress["stateOperators"][0]
        assert op["numRowsTotal"] == 20
        metrics = op["customMetrics"]
        assert metrics["heapStateFilesWritten"] == 2  # one delta per partition
        assert metrics["heapStateBytesWritten"] > 0
        # The delta's write, timed by the provider: within Spark's own time of the commit
        # (rounded to the millisecond, for each of the 2 partitions). Nothing to apply yet:
        # a batch applies the previous batch's changes when it opens its stores.
        assert 0 <= metrics["heapStateDeltaWriteTimeMs"] <= op["commitTimeMs"] + 2, (metrics, op["commitTimeMs"])
        assert metrics["heapStateApplyTimeMs"] == 0, metrics
        # memoryUsedBytes is what the maps hold, not a constant per key.
        assert 0 < op["memoryUsedBytes"] < 1 << 20
        progress = q.feed(rows_for(1))
        assert progress["stateOperators"][0]["numRowsTotal"] == 21
        assert progress["stateOperators"][0]["numRowsUpdated"] == 20
    finally:
        q.stop()
    files = sorted(os.listdir(q.state_dir(0)))
    assert "1.heap-delta" in files and "2.heap-delta" in files


def test_restart_restores_state_exactly(spark, tmp_path):
    q = Query(spark, tmp_path).start()
    for b in range(4):
        q.feed(rows_for(b))
    q.stop()
    # A new run of the query loads every partition from its files.
    q.start()
    try:
        for b in range(4, 7):
            q.feed(rows_for(b))
    finally:
        q.stop()
    assert state_rows(q.state()) == q.expected()


def test_state_data_source_reads_versions_snapshots_and_changes(spark, tmp_path):
    q = Query(spark, tmp_path).start()
    snapshots = []
    try:
        for b in range(6):
            q.feed(rows_for(b, keys=5))
        # Spark's maintenance thread (every 200 ms here) snapshots the partitions of a running
        # query: wait for that to have happened, not for a guessed time.
        deadline = time.time() + 60
        while not any(f.endswith(".heap-snapshot") for f in os.listdir(q.state_dir(0))):
            assert time.time() < deadline, "maintenance wrote no snapshot: %s" % os.listdir(q.state_dir(0))
            time.sleep(0.05)
    finally:
        q.stop()
    assert state_rows(q.state()) == q.expected()

    # An older batch: the expected state after batch 2 only.
    older = Query(spark, tmp_path / "expected")
    older.rows = [r for b in range(3) for r in rows_for(b, keys=5)]
    assert state_rows(q.state(batchId=2)) == older.expected()

    snapshots = sorted(int(f.split(".")[0]) for f in os.listdir(q.state_dir(0))
                       if f.endswith(".heap-snapshot"))
    assert snapshots, "maintenance wrote no snapshot: %s" % os.listdir(q.state_dir(0))
    start = snapshots[0] - 1  # snapshot of version v is the state after batch v - 1
    from_snapshot = q.state(snapshotStartBatchId=start, batchId=4, snapshotPartitionId=0)
    direct = q.state(batchId=4).where("partition_id = 0")
    assert state_rows(from_snapshot) == state_rows(direct)

    changes = q.state(readChangeFeed=True, changeStartBatchId=3).collect()
    assert {r.batch_id for r in changes} == {3, 4, 5}
    assert {r.change_type for r in changes} == {"update"}
    # Batch 5 updated keys 5..9: each shows up once for that batch, with its new totals.
    batch5 = sorted((r.key[0], r.value[0]) for r in changes if r.batch_id == 5)
    assert [k for k, _ in batch5] == list(range(5, 10))


def test_corrupt_delta_fails_restart_naming_the_file(spark, tmp_path, deltas_only):
    q = Query(spark, tmp_path).start()
    for b in range(2):
        q.feed(rows_for(b))
    q.stop()
    victim = os.path.join(q.state_dir(1), "2.heap-delta")
    data = bytearray(open(victim, "rb").read())
    data[len(data) // 2] ^= 0x5A
    open(victim, "wb").write(bytes(data))
    os.remove(os.path.join(q.state_dir(1), ".2.heap-delta.crc"))  # Hadoop's own checksum
    q.start()
    with pytest.raises(Exception) as err:
        q.feed(rows_for(2))
    q.stop()
    message = str(err.value)
    assert "2.heap-delta is corrupt or truncated" in message
    assert "/state/0/1/2.heap-delta" in message


def test_missing_delta_fails_restart_naming_the_file(spark, tmp_path, deltas_only):
    q = Query(spark, tmp_path).start()
    for b in range(3):
        q.feed(rows_for(b))
    q.stop()
    os.remove(os.path.join(q.state_dir(0), "2.heap-delta"))
    q.start()
    with pytest.raises(Exception) as err:
        q.feed(rows_for(3))
    q.stop()
    assert "2.heap-delta is missing" in str(err.value)


def test_transform_with_state_is_refused_by_spark_with_a_clear_message(spark, tmp_path):
    """Spark 4.3 lets transformWithState run only on its RocksDB provider."""
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StructField, StructType

    class Counter(StatefulProcessor):
        def init(self, handle):
            self.count = handle.getValueState("count", StructType([StructField("c", LongType())]))

        def handleInputRows(self, key, rows, timerValues):
            yield pd.DataFrame({"k": [key[0]]})

        def close(self):
            pass

    q = Query(spark, tmp_path)
    spark.createDataFrame(rows_for(0), SCHEMA).write.mode("append").parquet(q.source)
    stream = spark.readStream.schema(SCHEMA).parquet(q.source).groupBy("k").transformWithStateInPandas(
        statefulProcessor=Counter(), outputStructType="k long", outputMode="Update", timeMode="None")
    with pytest.raises(Exception) as err:
        query = stream.writeStream.format("noop").option("checkpointLocation", q.checkpoint).start()
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    assert "RocksDBStateStoreProvider" in str(err.value)
