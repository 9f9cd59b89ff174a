"""Both checkpoint storages on real streaming queries: where state bytes go, packs, limits,
restarts, and the errors a user sees."""
import os
import shutil

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

from conftest import assert_ok

SCHEMA = "k long, v long"
STORAGE = "spark.sql.streaming.checkpointStorage"


@pytest.fixture(scope="module")
def spark():
    builder = (SparkSession.builder.master("local[2]")
               .config("spark.sql.shuffle.partitions", 20)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    session = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    yield session
    session.stop()


def files_under(path):
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, fs in os.walk(path) for f in fs)


def run_aggregation(spark, root, batches, keys=50, start_batch=0):
    source = os.path.join(str(root), "source")
    checkpoint = os.path.join(str(root), "checkpoint")
    os.makedirs(source, exist_ok=True)
    query = (spark.readStream.schema(SCHEMA).parquet(source).groupBy("k")
             .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint).start())
    try:
        for b in range(start_batch, start_batch + batches):
            rows = [(k, b) for k in range(keys)]
            spark.createDataFrame(rows, SCHEMA).coalesce(1).write.mode("append").parquet(source)
            query.processAllAvailable()
    finally:
        query.stop()
    return checkpoint


def state_of(spark, checkpoint):
    return sorted((r.key[0], r.value[0], r.value[1])
                  for r in spark.read.format("statestore").load(checkpoint).collect())


def expected(batches, keys=50):
    return sorted((k, batches, sum(range(batches))) for k in range(keys))


@pytest.mark.parametrize("storage", ["filesystem", "driver-with-path"])
def test_small_state_is_one_pack_per_batch_and_restores(spark, tmp_path, storage):
    spark.conf.set(STORAGE, "filesystem" if storage == "filesystem" else "driver")
    spark.conf.set(STORAGE + ".checkpointPath", str(tmp_path / "cp"))
    try:
        checkpoint = run_aggregation(spark, tmp_path, batches=3)
        files = files_under(checkpoint)
        # 20 partitions, 3 batches: no state file of its own, all in packs.
        assert not [f for f in files if f.startswith("state/") and "heap-" in f], files
        packs = [f for f in files if f.startswith("state-packs/")]
        assert 1 <= len(packs) <= 3, packs
        assert "checkpoint-storage" in files
        # A new run of the query restores from the coordinator / packs.
        run_aggregation(spark, tmp_path, batches=2, start_batch=3)
        assert state_of(spark, checkpoint) == expected(5)
    finally:
        spark.conf.unset(STORAGE)
        spark.conf.unset(STORAGE + ".checkpointPath")


def test_filesystem_threshold_puts_large_state_in_own_files(spark, tmp_path):
    spark.conf.set(STORAGE, "filesystem")
    spark.conf.set(STORAGE + ".checkpointPath", str(tmp_path / "cp"))
    spark.conf.set(STORAGE + ".fileStateSizeThreshold", "0")
    try:
        checkpoint = run_aggregation(spark, tmp_path, batches=2, keys=2000)
        deltas = [f for f in files_under(checkpoint) if f.endswith(".heap-delta")]
        assert len(deltas) == 40, deltas  # 20 partitions x 2 versions, each over 0 bytes
        assert state_of(spark, checkpoint) == expected(2, keys=2000)
    finally:
        for k in ("", ".checkpointPath", ".fileStateSizeThreshold"):
            spark.conf.unset(STORAGE + k)


def test_driver_storage_over_max_state_size_fails_with_the_limit(spark, tmp_path):
    spark.conf.set(STORAGE, "driver")
    spark.conf.set(STORAGE + ".maxStateSize", "64")
    try:
        with pytest.raises(Exception) as err:
            run_aggregation(spark, tmp_path, batches=1, keys=2000)
        message = str(err.value)
        assert "Size of the state is larger than the maximum permitted memory-backed state" in message
        assert "maxSize=64" in message
        assert "spark.sql.streaming.checkpointStorage.maxStateSize" in message
        assert "FileSystemCheckpointStorage" in message
    finally:
        spark.conf.unset(STORAGE)
        spark.conf.unset(STORAGE + ".maxStateSize")


def test_non_persistent_driver_state_refuses_to_restart_in_a_new_driver(subproc, tmp_path):
    code = """
        import os, sys
        from pyspark.sql import SparkSession, functions as F
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        spark = configure_spark_with_checkpoint_storage(SparkSession.builder.master("local[2]")
            .config("spark.sql.shuffle.partitions", 4)
            .config("spark.sql.streaming.checkpointStorage", "driver")).getOrCreate()
        root = %r
        source = os.path.join(root, "source")
        os.makedirs(source, exist_ok=True)
        spark.createDataFrame([(1, 1)], "k long, v long").write.mode("append").parquet(source)
        q = (spark.readStream.schema("k long, v long").parquet(source).groupBy("k").count()
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", os.path.join(root, "checkpoint")).start())
        try:
            q.processAllAvailable()
            spark.createDataFrame([(1, 1)], "k long, v long").write.mode("append").parquet(source)
            q.processAllAvailable()
            print("RAN")
        except Exception as e:
            print("FAILED", e)
        q.stop()
    """ % str(tmp_path)
    first = assert_ok(subproc.python(code))
    assert "RAN" in first
    second = assert_ok(subproc.python(code))
    assert "FAILED" in second
    assert "kept in the heap of the driver only" in second
    assert "is gone" in second
    assert "checkpoint_path" in second


def _coordinator(spark):
    return spark.sparkContext._jvm.io.sparkcheckpointstorage.coordinator.CheckpointCoordinator.current()


def _eventually_zero(read, seconds=10.0):
    """Query listeners run on Spark's listener bus, shortly after stop() returns."""
    import time
    deadline = time.time() + seconds
    while read() != 0 and time.time() < deadline:
        time.sleep(0.1)
    return read()


def test_stopping_a_query_frees_its_driver_memory_and_queries_do_not_mix(spark, tmp_path):
    spark.conf.set(STORAGE, "driver")
    try:
        first = run_aggregation(spark, tmp_path / "one", batches=2)
        assert _eventually_zero(lambda: _coordinator(spark).heldInlineBytes()) == 0
        second = run_aggregation(spark, tmp_path / "two", batches=3, keys=10)
        assert _eventually_zero(lambda: _coordinator(spark).heldInlineBytes()) == 0
        assert not any(r.startswith("file:" + str(tmp_path / "one"))
                       for r in _coordinator(spark).knownRoots().mkString(",").split(","))
    finally:
        spark.conf.unset(STORAGE)
    assert os.path.isdir(first) and os.path.isdir(second)


def test_delete_on_cancellation_deletes_the_checkpoint_of_a_stopped_query(subproc, tmp_path):
    out = assert_ok(subproc.python("""
        import os
        from pyspark.sql import SparkSession
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        spark = configure_spark_with_checkpoint_storage(SparkSession.builder.master("local[2]")
            .config("spark.sql.shuffle.partitions", 4)
            .config("spark.sql.streaming.checkpointStorage.externalizedCleanup",
                    "DELETE_ON_CANCELLATION")).getOrCreate()
        root = %r
        source = os.path.join(root, "source"); os.makedirs(source)
        spark.createDataFrame([(1, 1)], "k long, v long").write.parquet(source + "/a")
        checkpoint = os.path.join(root, "checkpoint")
        q = (spark.readStream.schema("k long, v long").parquet(source + "/a").groupBy("k").count()
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint).start())
        q.processAllAvailable()
        print("BEFORE", sorted(os.listdir(checkpoint)))
        q.stop()
        import time
        for _ in range(50):
            if not os.path.exists(checkpoint):
                break
            time.sleep(0.1)
        print("AFTER", os.path.exists(checkpoint))
    """ % str(tmp_path)))
    assert "state-packs" in out.split("BEFORE", 1)[1].splitlines()[0]
    assert "AFTER False" in out


@pytest.mark.parametrize("storage", ["filesystem", "driver"])
def test_executor_killed_mid_stream_on_local_cluster(subproc, tmp_path, storage):
    """Executors are separate JVMs here: state crosses the process boundary over RPC, and a
    killed executor's partitions are restored on the others (from the driver or packs)."""
    out = assert_ok(subproc.python("""
        import os, signal, subprocess, time
        from pyspark.sql import SparkSession, functions as F
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        spark = configure_spark_with_checkpoint_storage(SparkSession.builder
            .master("local-cluster[2,1,1024]")
            .config("spark.sql.shuffle.partitions", 8)
            .config("spark.task.maxFailures", 8)
            .config("spark.sql.streaming.checkpointStorage", %r)
            .config("spark.sql.streaming.checkpointStorage.checkpointPath", %r)).getOrCreate()
        root = %r
        source = os.path.join(root, "source"); os.makedirs(source)
        app = spark.sparkContext.applicationId
        rows = []
        q = (spark.readStream.schema("k long, v long").parquet(source).groupBy("k")
             .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", os.path.join(root, "checkpoint")).start())
        for b in range(6):
            batch = [(k, b) for k in range(200)]
            rows += batch
            spark.createDataFrame(batch, "k long, v long").coalesce(1).write.mode("append").parquet(source)
            q.processAllAvailable()
            if b == 2:
                pids = subprocess.run(["pgrep", "-f", "CoarseGrainedExecutorBackend.*" + app],
                                      capture_output=True, text=True).stdout.split()
                print("EXECUTORS", len(pids))
                os.kill(int(pids[0]), signal.SIGKILL)
                time.sleep(2)
        q.stop()
        got = sorted((r.key[0], r.value[0], r.value[1]) for r in spark.read.format("statestore")
                     .load(os.path.join(root, "checkpoint")).collect())
        want = sorted((k, 6, sum(range(6))) for k in range(200))
        print("EQUAL", got == want)
    """ % (storage, str(tmp_path / "cp"), str(tmp_path)), timeout=600))
    assert "EXECUTORS 2" in out
    assert "EQUAL True" in out
