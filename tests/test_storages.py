"""Both checkpoint storages on real streaming queries: where state bytes go, packs, limits,
restarts, and the errors a user sees."""
import contextlib
import json
import os
import shutil

import pytest
from pyspark.sql import functions as F

from spark_checkpoint_storage.checkpoint_config import ASYNC_STATE_WRITES
from spark_checkpoint_storage.errors import (CorruptCheckpointException, UnsupportedFormatException,
                                             convert_jvm_exception)

from conftest import assert_ok
from support.aggregation import expected, files_under, run_aggregation, state_of

STORAGE = "spark.sql.streaming.checkpointStorage"


#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {"spark.sql.shuffle.partitions": 20}


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


@contextlib.contextmanager
def async_state_writes(spark, tmp_path):
    """The file system storage, every state file a file of its own, written in the background
    (set as docs/operations.md shows)."""
    settings = {STORAGE: "filesystem", STORAGE + ".checkpointPath": str(tmp_path / "cp"),
                STORAGE + ".fileStateSizeThreshold": "0"}
    for k, v in settings.items():
        spark.conf.set(k, v)
    spark.conf.set(ASYNC_STATE_WRITES, "true")
    try:
        yield
    finally:
        for k in (*settings, ASYNC_STATE_WRITES):
            spark.conf.unset(k)


def test_async_state_writes_put_every_file_on_disk_and_restore(spark, tmp_path):
    """With ``asyncStateWrites`` the tasks hand their state files to a background writer; the
    files are all there after each commit, and a new run of the query restores from them."""
    with async_state_writes(spark, tmp_path):
        checkpoint = run_aggregation(spark, tmp_path, batches=2, keys=2000)
        deltas = [f for f in files_under(checkpoint) if f.endswith(".heap-delta")]
        assert len(deltas) == 40, deltas  # 20 partitions x 2 versions, each a file of its own
        run_aggregation(spark, tmp_path, batches=1, keys=2000, start_batch=2)
        assert state_of(spark, checkpoint) == expected(3, keys=2000)


def test_failed_async_state_write_fails_its_batch_commit_and_a_restart_replays_it(spark, tmp_path):
    """A background write that fails (here: a directory where partition 3's state file of
    batch 2 goes) fails batch 2's commit with the file and the cause, and nothing of batch 2
    is committed; once the obstacle is gone, a restart runs batch 2 again from batch 1's
    state and the counts are exact."""
    with async_state_writes(spark, tmp_path):
        checkpoint = run_aggregation(spark, tmp_path, batches=2, keys=2000)
        blocker = os.path.join(checkpoint, "state", "0", "3", "3.heap-delta")
        os.makedirs(os.path.join(blocker, "in-the-way"))
        with pytest.raises(Exception) as err:
            run_aggregation(spark, tmp_path, batches=1, keys=2000, start_batch=2)
        message = str(err.value)
        for part in ("Batch 2 of the streaming query", "cannot commit", "state/0/3/3.heap-delta",
                     "spark.sql.streaming.checkpointStorage.asyncStateWrites=true", "the write failed on executor",
                     "restart the query"):
            assert part in message, message
        assert os.path.exists(os.path.join(checkpoint, "offsets", "2"))
        assert not os.path.exists(os.path.join(checkpoint, "commits", "2"))
        shutil.rmtree(blocker)
        run_aggregation(spark, tmp_path, batches=1, keys=2000, start_batch=3)
        assert os.path.exists(os.path.join(checkpoint, "commits", "3"))
        assert state_of(spark, checkpoint) == expected(4, keys=2000)


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
    return spark.sparkContext._jvm.io.sparkcheckpointstorage.coordinator.DriverRuntime.currentCoordinator()


def _drain_listener_bus(spark):
    """Query listeners run on Spark's listener bus, after stop() returns: wait until it has
    delivered every event posted so far (the query's termination among them)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()


def test_stopping_a_query_frees_its_driver_memory_and_queries_do_not_mix(spark, tmp_path):
    spark.conf.set(STORAGE, "driver")
    try:
        first = run_aggregation(spark, tmp_path / "one", batches=2)
        _drain_listener_bus(spark)
        assert _coordinator(spark).heldInlineBytes() == 0
        second = run_aggregation(spark, tmp_path / "two", batches=3, keys=10)
        _drain_listener_bus(spark)
        assert _coordinator(spark).heldInlineBytes() == 0
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
        # The deletion runs in the query listener, on Spark's listener bus.
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
        print("AFTER", os.path.exists(checkpoint))
    """ % str(tmp_path)))
    assert "state-packs" in out.split("BEFORE", 1)[1].splitlines()[0]
    assert "AFTER False" in out


# --------------------------------------------------------------------------------------
# Limits at the byte: one partition, one batch; the state file of version 1 has a size S
# that does not change from run to run (same rows, same codec).

def _one_state_file(spark, root, **settings):
    """Runs one batch of a one-partition aggregation with the given storage settings;
    returns the checkpoint."""
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    for k, v in settings.items():
        spark.conf.set(STORAGE + k, str(v))
    try:
        return run_aggregation(spark, root, batches=1, keys=300)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "20")
        for k in settings:
            spark.conf.unset(STORAGE + k)


@pytest.fixture(scope="module")
def state_file_size(spark, tmp_path_factory):
    """S: the size of the delta of version 1, written as a file of its own (threshold 0)."""
    checkpoint = _one_state_file(spark, tmp_path_factory.mktemp("size"),
                                 **{"": "filesystem", ".fileStateSizeThreshold": 0})
    return os.path.getsize(os.path.join(checkpoint, "state", "0", "0", "1.heap-delta"))


def test_driver_max_state_size_at_the_limit_passes_one_byte_over_fails(
        spark, tmp_path, state_file_size):
    size = state_file_size
    checkpoint = _one_state_file(spark, tmp_path / "at", **{
        "": "driver", ".maxStateSize": size, ".checkpointPath": tmp_path / "cp"})
    assert state_of(spark, checkpoint) == expected(1, keys=300)
    with pytest.raises(Exception) as err:
        _one_state_file(spark, tmp_path / "over", **{"": "driver", ".maxStateSize": size - 1})
    message = str(err.value)
    assert "Size=%d, maxSize=%d" % (size, size - 1) in message, message[-3000:]
    assert "spark.sql.streaming.checkpointStorage.maxStateSize" in message
    assert "FileSystemCheckpointStorage" in message


def test_filesystem_threshold_at_the_limit_inline_one_byte_over_a_file(
        spark, tmp_path, state_file_size):
    size = state_file_size
    at = _one_state_file(spark, tmp_path / "at",
                         **{"": "filesystem", ".fileStateSizeThreshold": size})
    assert not os.path.exists(os.path.join(at, "state", "0", "0", "1.heap-delta"))
    assert os.listdir(os.path.join(at, "state-packs")) == ["1.pack"]
    over = _one_state_file(spark, tmp_path / "over",
                           **{"": "filesystem", ".fileStateSizeThreshold": size - 1})
    assert os.path.getsize(os.path.join(over, "state", "0", "0", "1.heap-delta")) == size
    for checkpoint in (at, over):
        assert state_of(spark, checkpoint) == expected(1, keys=300)


# --------------------------------------------------------------------------------------
# Damaged packs: the restart of the query fails naming the pack, never starts over.

@pytest.mark.parametrize("damage", ["corrupt", "truncated", "missing"])
def test_damaged_pack_fails_the_restart_naming_the_pack(spark, tmp_path, damage):
    spark.conf.set(STORAGE, "filesystem")
    try:
        checkpoint = run_aggregation(spark, tmp_path, batches=3)
        packs = sorted(os.listdir(os.path.join(checkpoint, "state-packs")),
                       key=lambda n: int(n.split(".")[0]))
        assert len(packs) >= 2, packs
        victim = os.path.join(checkpoint, "state-packs", packs[-2] if damage == "missing" else packs[-1])
        with open(victim, "rb") as f:
            data = bytearray(f.read())
        if damage == "corrupt":
            data[len(data) // 2] ^= 0x5A
            with open(victim, "wb") as f:
                f.write(bytes(data))
        elif damage == "truncated":
            with open(victim, "wb") as f:
                f.write(bytes(data[:-7]))
        else:
            os.remove(victim)
        with pytest.raises(Exception) as err:
            run_aggregation(spark, tmp_path, batches=1, start_batch=3)
        message = str(err.value)
        assert "State pack " in message and os.path.basename(victim) in message, message[-3000:]
        if damage == "missing":
            assert "it is missing" in message
        # The query's error carries the kind across the task and the RPC: Python gets the
        # corrupt-checkpoint error naming the pack, not a bare IOException.
        converted = convert_jvm_exception(err.value)
        assert isinstance(converted, CorruptCheckpointException), (type(converted), message[-2000:])
        assert converted.java_class == "io.sparkcheckpointstorage.packs.CorruptPackException"
        assert os.path.basename(victim) in converted.getMessage()
    finally:
        spark.conf.unset(STORAGE)


def _write_later_format(path: str, kind: str) -> None:
    """Makes ``path`` a file of the next format version of its kind, written by a release 9.9.9,
    the way a later release would write it (docs/operations.md, "Upgrading")."""
    with open(path, "rb") as f:
        data = f.read()
    release = len("9.9.9").to_bytes(2, "big") + b"9.9.9"  # Java's writeUTF
    if kind == "marker":
        text = data.decode().replace("formatVersion=1", "formatVersion=2").replace(
            "minReaderVersion=0.1.0", "minReaderVersion=9.9.9")
        data = text.encode()
    elif kind == "pack":
        data = b"SCSPACK2" + release + data[8:]
    else:
        data = b"SCSHEAP\x03" + release + data[8:]
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("kind", ["marker", "pack", "state-file"])
def test_a_checkpoint_file_of_a_later_format_fails_the_restart_naming_the_release(spark, tmp_path, kind):
    """Every file we write names its format; one written by a later release is refused in one
    sentence naming the file and the release to upgrade to, with the error of its kind in
    Python, whichever side reads it (the driver: marker, packs; a task: state files)."""
    spark.conf.set(STORAGE, "filesystem")
    if kind == "state-file":
        spark.conf.set(STORAGE + ".fileStateSizeThreshold", "0")
    try:
        checkpoint = run_aggregation(spark, tmp_path, batches=2)
        if kind != "state-file":  # a checkpoint that never held inline state has no marker
            with open(os.path.join(checkpoint, "checkpoint-storage")) as f:
                assert f.read().startswith("formatVersion=1\nminReaderVersion=0.1.0\n")
        if kind == "marker":
            victim = os.path.join(checkpoint, "checkpoint-storage")
            fmt = "storage marker of format version 2"
        elif kind == "pack":
            packs = sorted(os.listdir(os.path.join(checkpoint, "state-packs")), key=lambda n: int(n.split(".")[0]))
            victim = os.path.join(checkpoint, "state-packs", packs[-1])
            fmt = "state pack of format version 2"
        else:
            victim = os.path.join(checkpoint, "state", "0", "0", "2.heap-delta")
            fmt = "state file of format version 3"
        _write_later_format(victim, kind)
        with pytest.raises(Exception) as err:
            run_aggregation(spark, tmp_path, batches=1, start_batch=2)
        converted = convert_jvm_exception(err.value)
        assert isinstance(converted, UnsupportedFormatException), (type(converted), str(err.value)[-3000:])
        message = converted.getMessage()
        assert os.path.basename(victim) in message and fmt in message, message
        assert message.endswith("upgrade spark-checkpoint-storage to at least 9.9.9."), message
    finally:
        spark.conf.unset(STORAGE)
        spark.conf.unset(STORAGE + ".fileStateSizeThreshold")


# --------------------------------------------------------------------------------------
# Spark's own provider on our file manager.

def test_hdfs_backed_provider_on_our_file_manager_packs_and_restores(spark, tmp_path):
    """Only the file manager is ours: Spark's HDFSBackedStateStoreProvider writes its delta
    files through it, so they land in packs too, and a restart restores them. Spark 4.3's
    checksum sidecars (spark.sql.streaming.checkpoint.fileChecksum.enabled, on by default:
    Spark's providers wrap the file manager to write a .crc next to each state file) would be
    state files like the others: none may appear on disk in the store directories."""
    hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    provider_key = "spark.sql.streaming.stateStore.providerClass"
    ours = spark.conf.get(provider_key)
    spark.conf.set(provider_key, hdfs)
    spark.conf.set(STORAGE, "filesystem")
    try:
        checkpoint = run_aggregation(spark, tmp_path, batches=3)
        assert spark.conf.get("spark.sql.streaming.checkpoint.fileChecksum.enabled") == "true"
        files = files_under(checkpoint)
        in_store_dirs = [f for f in files if f.startswith("state/")
                         and f.split("/")[1].isdigit() and f.split("/")[2].isdigit()]
        # Spark's own schema file of the operator (written once, not per batch) is a real file:
        # packed, it would keep the first pack alive for the query's life.
        schema = [f for f in in_store_dirs if "/_metadata/" in f]
        assert schema == ["state/0/0/_metadata/schema"], schema
        state_files = [f for f in in_store_dirs if "/_metadata/" not in f]
        assert state_files == [], state_files  # 20 partitions x 3 batches: no state file at all
        packs = [os.path.join(checkpoint, f) for f in files if f.startswith("state-packs/")]
        assert packs
        packed = b"".join(open(p, "rb").read() for p in packs)
        assert b"state/0/19/3.delta" in packed  # the names in the packs' index
        run_aggregation(spark, tmp_path, batches=2, start_batch=3)
        with open(os.path.join(checkpoint, "offsets", "4")) as f:
            assert hdfs in f.read()
        assert state_of(spark, checkpoint) == expected(5)
    finally:
        spark.conf.set(provider_key, ours)
        spark.conf.unset(STORAGE)


# --------------------------------------------------------------------------------------
# Duplicate commits: a retried task commits the same partition and version again.
# (Speculative attempts cannot be provoked here: Spark never runs a speculative copy on a
# host that already runs the task, and local-cluster executors all share one host.)

#: the retried task's storages: the file system storage with every state file a file of its
#: own (threshold 0), and the driver storage with a checkpoint path
RETRY_STORAGES = ["filesystem-own-files", "driver"]

#: One local-cluster application, the storages' queries one after the other (each query starts
#: with its storage's settings): what each printed, prefixed with its storage.
_RETRIED_TASKS = """
    import glob, json, os, time
    import pandas as pd
    from pyspark import TaskContext
    from pyspark.sql import SparkSession, functions as F
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
    root, storages = %r, %r
    STORAGE = "spark.sql.streaming.checkpointStorage"
    events = os.path.join(root, "events"); os.makedirs(events)
    spark = configure_spark_with_checkpoint_storage(
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.sql.shuffle.partitions", 4)
        .config("spark.task.maxFailures", 4)
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", events)
        .config("spark.eventLog.compress", "false")
        .config("spark.eventLog.rolling.enabled", "false")).getOrCreate()
    jvm = spark.sparkContext._jvm
    coordinator = jvm.io.sparkcheckpointstorage.coordinator.DriverRuntime.currentCoordinator()
    runs = {}

    for storage in storages:
        work = os.path.join(root, storage); os.makedirs(work)
        own_files = storage == "filesystem-own-files"
        spark.conf.set(STORAGE, "filesystem" if own_files else storage)
        spark.conf.set(STORAGE + ".checkpointPath", os.path.join(work, "cp"))
        if own_files:
            spark.conf.set(STORAGE + ".fileStateSizeThreshold", "0")
        else:
            spark.conf.unset(STORAGE + ".fileStateSizeThreshold")
        checkpoint = os.path.join(work, "checkpoint")
        armed = os.path.join(work, "armed")
        failed = os.path.join(work, "failed")
        delta = os.path.join(checkpoint, "state", "0", "0", "2.heap-delta")
        proof = delta if own_files else os.path.join(work, "inline-on-driver")
        if not own_files:
            import threading
            held = jvm.io.sparkcheckpointstorage.coordinator.ExistsInline(
                "file:" + checkpoint, "state/0/0/2.heap-delta")

            def watch(proof=proof, held=held):
                while not os.path.exists(proof):
                    if coordinator.handle(held).toString() == "IsInline":
                        open(proof, "w").close()
                    else:
                        time.sleep(0.02)

            threading.Thread(target=watch, daemon=True).start()

        def failing_once(armed, failed, proof):
            @F.pandas_udf("long")
            def fail_once(n: pd.Series) -> pd.Series:
                tc = TaskContext.get()
                if tc.partitionId() == 0 and tc.attemptNumber() == 0 and os.path.exists(armed):
                    try:
                        os.close(os.open(failed, os.O_CREAT | os.O_EXCL))
                    except FileExistsError:
                        return n
                    deadline = time.time() + 60
                    while time.time() < deadline and not os.path.exists(proof):
                        time.sleep(0.05)
                    with open(failed, "w") as f:
                        f.write("committed" if os.path.exists(proof) else "unknown")
                    raise RuntimeError("injected failure after the state store commit")
                return n
            return fail_once

        udf = failing_once(armed, failed, proof)
        source = os.path.join(work, "source"); os.makedirs(source)
        q = (spark.readStream.schema("k long, v long").parquet(source).groupBy("k")
             .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
             .select("k", udf("n").alias("n"), "s")
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint).start())
        for b in range(3):
            if b == 1:
                open(armed, "w").close()
            spark.createDataFrame([(k, b) for k in range(100)], "k long, v long") \\
                .coalesce(1).write.mode("append").parquet(source)
            q.processAllAvailable()
        q.stop()
        got = sorted((r.key[0], r.value[0], r.value[1]) for r in
                     spark.read.format("statestore").load(checkpoint).collect())
        print(storage, "EQUAL", got == sorted((k, 3, 3) for k in range(100)))
        print(storage, "FAILED_ATTEMPT", open(failed).read())
        runs[str(q.runId)] = storage
    spark.stop()
    # Each query's jobs run in the job group of its run id: its stages are those jobs'.
    lines = [json.loads(line) for f in glob.glob(os.path.join(events, "**"), recursive=True)
             if os.path.isfile(f) for line in open(f)]
    stage_storage = {stage: runs.get(e.get("Properties", {}).get("spark.jobGroup.id"))
                     for e in lines if e["Event"] == "SparkListenerJobStart" for stage in e["Stage IDs"]}
    ends = [e for e in lines if e["Event"] == "SparkListenerTaskEnd"]
    for storage in storages:
        print(storage, "RETRIED", json.dumps(sorted(
            [e["Stage ID"], e["Task Info"]["Index"], e["Task Info"]["Attempt"],
             e["Task End Reason"]["Reason"]] for e in ends
            if stage_storage.get(e["Stage ID"]) == storage
            and (e["Task Info"]["Attempt"] > 0 or e["Task End Reason"]["Reason"] != "Success"))))
"""


@pytest.fixture(scope="module")
def retried_tasks(tmp_path_factory):
    """storage -> what its query printed, both storages' queries in one application."""
    from conftest import Subprocess

    tmp_path = tmp_path_factory.mktemp("retried-tasks")
    out = assert_ok(Subprocess(tmp_path).python(_RETRIED_TASKS % (str(tmp_path), RETRY_STORAGES),
                                                timeout=600))
    return {storage: "\n".join(line[len(storage) + 1:] for line in out.splitlines()
                               if line.startswith(storage + " "))
            for storage in RETRY_STORAGES}


@pytest.mark.cluster
@pytest.mark.parametrize("storage", RETRY_STORAGES)
def test_retried_task_commits_the_same_version_again(retried_tasks, storage):
    """In the second batch, partition 0's first attempt fails in a pandas UDF placed after
    the stateful operator, in the same task, once the operator's state store has committed
    (Spark hands the UDF the operator's whole output, and the store commits at its end).
    Spark retries the task: the new attempt loads the previous version again and commits
    the same version a second time. The state is exactly that of one commit.

    The failing attempt first waits for proof that its commit happened: with the file system
    storage and a threshold of 0 every state file is a file of its own, and the proof is the
    delta on disk; with the driver storage a thread of the driver asks the coordinator until
    it holds the delta inline, then leaves a file saying so. Both storages' queries run in
    one local-cluster application, one after the other."""
    out = retried_tasks[storage]
    assert "EQUAL True" in out, out
    retried = json.loads(out.split("RETRIED ", 1)[1].splitlines()[0])
    stages = {s for s, _, _, _ in retried}
    assert len(stages) == 1 and [(i, a, r) for _, i, a, r in retried] == [
        (0, 0, "ExceptionFailure"), (0, 1, "Success")], retried
    assert "FAILED_ATTEMPT committed" in out, out


@pytest.mark.parametrize("log", ["offsets", "commits"])
def test_a_log_entry_another_driver_wrote_first_fails_the_query_as_on_sparks_file_manager(spark, tmp_path, log):
    """Our file manager answers Spark's "does the next entry exist?" from memory (no request
    to the file system each batch): the entry is then created only if absent, so a second
    driver on the checkpoint is still refused, as Spark's own file manager refuses it."""
    from pyspark.errors import StreamingQueryException
    from support.aggregation import SCHEMA
    spark.conf.set(STORAGE, "filesystem")
    source = str(tmp_path / "source")
    os.makedirs(source)
    checkpoint = str(tmp_path / "checkpoint")
    query = (spark.readStream.schema(SCHEMA).parquet(source).groupBy("k").count()
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint).start())
    try:
        for b in range(2):
            spark.createDataFrame([(k, b) for k in range(10)], SCHEMA).coalesce(1).write.mode("append").parquet(source)
            query.processAllAvailable()
        # The other driver's entry of the next batch, written while ours waits for input.
        theirs = os.path.join(checkpoint, log, "2")
        shutil.copy(os.path.join(checkpoint, log, "1"), theirs)
        with open(theirs, "rb") as f:
            written = f.read()
        spark.createDataFrame([(k, 2) for k in range(10)], SCHEMA).coalesce(1).write.mode("append").parquet(source)
        with pytest.raises(StreamingQueryException) as failure:
            query.processAllAvailable()
        message = str(failure.value)
        # Spark's own words for a second query on a checkpoint (its metadata log's error).
        assert "Multiple streaming queries are concurrently using %s" % os.path.join(checkpoint, log) in message, message
        with open(theirs, "rb") as f:
            assert f.read() == written, "the other driver's entry was overwritten"
    finally:
        query.stop()
        spark.conf.unset(STORAGE)
