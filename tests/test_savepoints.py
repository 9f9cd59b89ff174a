"""Savepoints: a copy taken from a running query, moved elsewhere, restored by a new query
with exact results; heap-only driver state made durable by a savepoint; the copy is
self-contained (no packs, no marker, no path of the original) and stops at the committed
batch; targets inside the checkpoint, non-empty targets and uncommitted batches refused; a
killed savepoint leaves only a hidden sibling, which the next one to that target names."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from pyspark.sql import functions as F

from spark_checkpoint_storage.checkpoint_config import get_checkpoint_config
from spark_checkpoint_storage.checkpoint_storage import (
    DriverCheckpointStorage,
    FileSystemCheckpointStorage,
)
from spark_checkpoint_storage.errors import SavepointException
from spark_checkpoint_storage.savepoints import SAVEPOINT_MANIFEST, savepoint

from conftest import assert_ok
from support.aggregation import files_under
from support.counting import kill_while_writing
from support.realfs import spark_line

SCHEMA = "k long, v long"
SPARK_4 = tuple(int(p) for p in spark_line().split(".")) >= (4, 0)
KEYS = 20


#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {"spark.sql.shuffle.partitions": 3}


def unset_storage_settings(spark):
    """Unsets every checkpoint storage setting of the session. Listed by the JVM's conf:
    pyspark 3.5's ``RuntimeConfig`` has no ``getAll``."""
    all_conf = spark.sparkContext._jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(
        spark._jsparkSession.conf().getAll()).asJava()
    for key in list(all_conf.keySet()):
        if key.startswith("spark.sql.streaming.checkpointStorage"):
            spark.conf.unset(key)


@pytest.fixture
def storage(spark):
    """Sets a storage for one test, then restores the session's settings."""
    config = get_checkpoint_config(spark)

    def set_storage(s, savepoint_path=None):
        config.set_checkpoint_storage(s)
        if savepoint_path:
            spark.conf.set("spark.sql.streaming.checkpointStorage.savepointPath", savepoint_path)
    yield set_storage
    unset_storage_settings(spark)


def add_input(spark, source, b):
    spark.createDataFrame([(k, b) for k in range(KEYS)], SCHEMA).coalesce(1) \
        .write.mode("append").parquet(source)


#: sink name -> [(batch id, k, n, s)] written by the query (foreachBatch recovers from a
#: checkpoint; the memory sink does not).
OUTPUT = {}


def start(spark, source, checkpoint, sink):
    rows = OUTPUT.setdefault(sink, [])

    def collect(df, batch_id):
        rows.extend((batch_id, r.k, r.n, r.s) for r in df.collect())

    return (spark.readStream.schema(SCHEMA).parquet(source).groupBy("k")
            .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
            .writeStream.outputMode("update").foreachBatch(collect)
            .option("checkpointLocation", checkpoint).start())


def fed_query(spark, tmp_path, sink, batches):
    """The query on a new checkpoint under ``tmp_path``, fed input files 0 to ``batches`` - 1,
    one batch each, and still running: (its input folder, its checkpoint, the query)."""
    source, checkpoint = str(tmp_path / "source"), str(tmp_path / "checkpoint")
    os.makedirs(source)
    query = start(spark, source, checkpoint, sink)
    for b in range(batches):
        add_input(spark, source, b)
        query.processAllAvailable()
    return source, checkpoint, query


def resume(spark, source, checkpoint, sink):
    """Runs the query from ``checkpoint`` over what ``source`` holds, then stops it."""
    query = start(spark, source, checkpoint, sink)
    query.processAllAvailable()
    query.stop()


def sink_rows(spark, sink):
    """The latest row per key, and the batches that wrote any."""
    latest = {}
    for batch_id, k, n, s in OUTPUT[sink]:
        latest[k] = (k, n, s)
    return sorted(latest.values())


def sink_batches(sink):
    return sorted({row[0] for row in OUTPUT[sink]})


def expected(batches):
    return sorted((k, len(batches), sum(batches)) for k in range(KEYS))


def assert_self_contained(path, source_checkpoint, batch):
    files = files_under(path)
    assert SAVEPOINT_MANIFEST in files
    assert not [f for f in files if f.startswith("state-packs/")], files
    assert "checkpoint-storage" not in files
    assert [f for f in files if ".heap-delta" in f], files
    assert max(int(f.split("/")[1]) for f in files if f.startswith("commits/")) == batch
    assert max(int(f.split("/")[1]) for f in files if f.startswith("offsets/")) == batch
    versions = {int(f.rsplit("/", 1)[1].split(".")[0]) for f in files if ".heap-" in f}
    assert max(versions) == batch + 1  # batch N writes state version N + 1
    needle = source_checkpoint.encode()
    for f in files:
        with open(os.path.join(path, f), "rb") as fh:
            assert needle not in fh.read(), "%s names the original checkpoint" % f
    with open(os.path.join(path, SAVEPOINT_MANIFEST)) as fh:
        manifest = json.load(fh)
    assert manifest["batchId"] == batch
    assert manifest["files"] == len(files) - 1


def test_savepoint_of_a_running_query_restores_exactly_elsewhere(spark, storage, tmp_path):
    storage(FileSystemCheckpointStorage(str(tmp_path / "cp")),
            savepoint_path=str(tmp_path / "savepoints"))
    source, checkpoint, query = fed_query(spark, tmp_path, "sp_original", 3)
    # Taken while the query runs: its last committed batch, 2.
    path = savepoint(query)
    assert path.startswith("file:" + str(tmp_path / "savepoints") + "/savepoint-%s-" % str(query.id)[:6])
    add_input(spark, source, 3)
    query.processAllAvailable()
    query.stop()
    local = path[len("file:"):]
    assert_self_contained(local, checkpoint, batch=2)

    # Relocatable: move it, then resume from it. Batch 3's input is new to the copy.
    moved = str(tmp_path / "elsewhere" / "restored")
    shutil.move(local, moved)
    resume(spark, source, moved, "sp_resumed")
    # Only batch 3 ran, on top of the saved state of batches 0-2: exact cumulative results,
    # the same the original query wrote for its batch 3.
    assert sink_batches("sp_resumed") == [3]
    assert sink_rows(spark, "sp_resumed") == expected([0, 1, 2, 3])
    assert sink_rows(spark, "sp_original") == expected([0, 1, 2, 3])
    if SPARK_4:  # Spark's state data source, from 4.0
        state = sorted((r.key[0], r.value[0], r.value[1])
                       for r in spark.read.format("statestore").load(moved).collect())
        assert state == expected([0, 1, 2, 3])


def test_savepoint_makes_heap_only_driver_state_durable(spark, storage, tmp_path):
    storage(DriverCheckpointStorage())  # state in driver heap only, no pack anywhere
    source, checkpoint, query = fed_query(spark, tmp_path, "sp_heap", 2)
    target = str(tmp_path / "sp")
    assert savepoint(query, target) == "file:" + target
    query.stop()
    assert not os.path.exists(os.path.join(checkpoint, "state-packs"))
    assert_self_contained(target, checkpoint, batch=1)

    # The original cannot resume (its state died with the query); the savepoint can, here
    # moving the query to the file system storage.
    storage(FileSystemCheckpointStorage(str(tmp_path / "cp")))
    add_input(spark, source, 2)
    resume(spark, source, target, "sp_heap_resumed")
    assert sink_batches("sp_heap_resumed") == [2]
    assert sink_rows(spark, "sp_heap_resumed") == expected([0, 1, 2])


def test_savepoint_refusals(spark, storage, tmp_path):
    storage(FileSystemCheckpointStorage(str(tmp_path / "cp")))
    _, checkpoint, query = fed_query(spark, tmp_path, "sp_refusals", 2)
    query.stop()

    with pytest.raises(SavepointException, match="lies inside the checkpoint") as err:
        savepoint(checkpoint, os.path.join(checkpoint, "sp"))
    assert err.value.getCondition() == "CHECKPOINT_STORAGE.SAVEPOINT"

    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "file").write_text("x")
    with pytest.raises(SavepointException, match="already exists and is not empty"):
        savepoint(checkpoint, str(occupied))

    with pytest.raises(SavepointException, match="has no committed batch 7"):
        savepoint(checkpoint, str(tmp_path / "sp7"), batch_id=7)

    # A batch that was planned but never committed (the driver died, or it is running).
    shutil.copy(os.path.join(checkpoint, "offsets", "1"), os.path.join(checkpoint, "offsets", "2"))
    with pytest.raises(SavepointException, match="Batch 2 of the checkpoint .* is not committed") as err:
        savepoint(checkpoint, str(tmp_path / "sp2"), batch_id=2)
    assert "The last committed batch is 1" in str(err.value)
    assert not os.path.exists(str(tmp_path / "sp2"))
    # By default the last committed batch is saved, without the uncommitted one.
    path = savepoint(checkpoint, str(tmp_path / "sp1"))
    assert_self_contained(path[len("file:"):], checkpoint, batch=1)
    # An earlier committed batch can be saved too.
    older = savepoint(checkpoint, str(tmp_path / "sp0"), batch_id=0)
    assert_self_contained(older[len("file:"):], checkpoint, batch=0)

    # Without a savepoint directory the default lies inside the query's own checkpoint.
    unset_storage_settings(spark)
    with pytest.raises(SavepointException, match="lies inside the checkpoint"):
        savepoint(checkpoint)

    with pytest.raises(SavepointException, match="No checkpoint at"):
        savepoint(str(tmp_path / "nothing"), str(tmp_path / "spx"))


@pytest.mark.skipif(not SPARK_4, reason="holds the savepoint at the operator metadata file, "
                    "the last it copies, which Spark writes from 4.0 on")
def test_killed_savepoint_leaves_nothing_to_start_from_and_says_so(spark, storage, tmp_path, subproc):
    """A savepoint SIGKILLed while it writes (held mid-copy: the last file it copies is a named
    pipe nobody writes) leaves no savepoint at the target, only a hidden sibling saying what it
    is; the next savepoint to that target refuses, naming it; once that is deleted, it is taken."""
    storage(FileSystemCheckpointStorage(str(tmp_path / "cp")))
    _, checkpoint, query = fed_query(spark, tmp_path, "sp_killed", 2)
    query.stop()
    # The last file a savepoint copies (entries go in path order; state/0/<partition>/ first).
    last = os.path.join(checkpoint, "state", "0", "_metadata", "metadata")
    with open(last, "rb") as f:
        content = f.read()
    os.remove(last)
    os.mkfifo(last)
    target = str(tmp_path / "sp")
    leftovers = kill_while_writing("from spark_checkpoint_storage.savepoints import savepoint\n"
                                   "savepoint(%r, %r)\n" % (checkpoint, target),
                                   tmp_path, ".sp.saving-", subproc.env())
    os.remove(last)
    with open(last, "wb") as f:
        f.write(content)
    assert not os.path.exists(target)
    leftover = os.path.join(str(tmp_path), leftovers[0])
    with open(os.path.join(leftover, "_SAVEPOINT_INCOMPLETE")) as f:
        note = f.read()
    assert "An unfinished savepoint of" in note and "not a checkpoint to start a query from" in note
    assert not os.path.exists(os.path.join(leftover, SAVEPOINT_MANIFEST))
    with pytest.raises(SavepointException) as err:
        savepoint(checkpoint, target)
    for fragment in ("An earlier savepoint to", "did not finish", leftovers[0], "was never written",
                     "take the savepoint again"):
        assert fragment in str(err.value), str(err.value)
    assert not os.path.exists(target)
    shutil.rmtree(leftover)
    assert savepoint(checkpoint, target) == "file:" + target
    assert_self_contained(target, checkpoint, batch=1)
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".sp.")]


def test_savepoint_command_line(spark, storage, tmp_path, subproc):
    storage(FileSystemCheckpointStorage(str(tmp_path / "cp")))
    _, checkpoint, query = fed_query(spark, tmp_path, "sp_cli", 1)
    query.stop()
    target = str(tmp_path / "cli-sp")
    ok = subprocess.run([sys.executable, "-m", "spark_checkpoint_storage", "savepoint", checkpoint,
                         target], capture_output=True, text=True, timeout=300, env=subproc.env())
    assert assert_ok(ok).strip() == "file:" + target
    assert_self_contained(target, checkpoint, batch=0)
    again = subprocess.run([sys.executable, "-m", "spark_checkpoint_storage", "savepoint",
                            checkpoint, target], capture_output=True, text=True, timeout=300,
                           env=subproc.env())
    assert again.returncode == 1
    assert "already exists and is not empty" in again.stderr
