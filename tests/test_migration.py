"""Migration of a query's checkpoint between state store providers
(``spark_checkpoint_storage.migration``), end to end on real Spark.

Each direction runs in two driver processes (tests/support/stateful_operators.py's driver,
every direction in the same two, a session each): the first runs every operator's query on the
source provider over the first files, then stops; the second migrates each checkpoint to a new
location with the target provider, resumes the queries there (its session still names the
source provider: the migrated offset log alone must make them run on the target) and feeds
the rest. What the sinks got over both drivers must equal
the batch computation over all the input.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import Subprocess, assert_ok, wait_or_kill
from support import counting
from support import stateful_operators as so
from support.counting import (COUNTS, PROVIDER_CONF, add_file, assert_counts_match,
                              expected_counts, final_counts, kill_while_writing, resume,
                              run_batches, tree)

#: operators every direction runs: aggregation, both deduplications, a stream-stream join (four
#: stores, outer: rows kept for the watermark), applyInPandasWithState with event-time timeouts,
#: session windows (prefix-key scan)
OPERATORS = ["aggregation_update", "drop_duplicates", "drop_duplicates_within_watermark",
             "join_left_outer", "apply_in_pandas_with_state", "session_window"]

#: direction -> (source provider, source storage, target provider, target storage, operators)
DIRECTIONS = {
    # a canonical savepoint of RocksDB state, restored by Spark's HDFS provider
    "rocksdb_via_canonical_savepoint_to_hdfs": ("rocksdb", None, "hdfs", None, OPERATORS),
    "hdfs_to_heap": ("hdfs", None, "heap", None, list(so.OPERATORS)),
    "heap_to_hdfs": ("heap", None, "hdfs", None, OPERATORS),
    "heap_filesystem_to_heap_driver": ("heap", "filesystem", "heap", "driver", OPERATORS),
    # RocksDB with changelog checkpointing: a source whose latest versions are changelogs
    # only, and a target that resumes from the migration's snapshot writing changelogs. (A
    # RocksDB source without changelogs is the canonical savepoint's above; a RocksDB target
    # without them is one of test_canonical_savepoint's restores.)
    "rocksdb_changelog_to_heap": ("rocksdb", None, "heap", None, OPERATORS),
    "heap_to_rocksdb_changelog": ("heap", None, "rocksdb", None, OPERATORS),
}

#: RocksDB with changelog checkpointing, on Spark's own file manager so that the changelogs
#: are files on disk the test can see (ours would pack them)
CHANGELOG = dict(spark_conf={
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"},
    file_manager="spark")
#: direction -> what the source's driver (writing SRC) and the target's (migrating and
#: resuming) add to their spec
SOURCE_SPEC = {"rocksdb_changelog_to_heap": CHANGELOG}
TARGET_SPEC = {"heap_to_rocksdb_changelog": CHANGELOG}

#: Runs several steps of support/stateful_operators.py's driver, one after the other, in ONE
#: driver JVM (one process): each step gets a session of its own (``newSession()``: its own
#: provider, storage, file manager and settings, as the step's spec names them; the
#: SparkContext and the settings every step shares come from a first session, started at
#: once, with none of a step's), and is not stopped by the step. A step with ``after`` (the
#: ``<name>.json`` another such process writes when a step ends) waits for it, and fails if
#: that step failed or its process ended without it (an ``_ended`` file beside it). A step
#: that fails records its traceback and the next one runs. Writes ``<name>.json``
#: ({"error", "seconds"}) per step into the folder of the steps file, and moves there a
#: step's results.json as ``<name>.results.json``.
_SHARED_DRIVER = """
    import json, os, sys, time, traceback
    sys.path.insert(0, %r)
    from support import stateful_operators as so

    class Step(so.Driver):
        base = None

        def session(self):
            spark = Step.base.newSession()
            spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                           so.provider_class(self.spec["provider"]))
            storage = self.spec.get("storage")
            if storage:
                spark.conf.set(so.STORAGE_CONF, storage)
                if storage == "driver":
                    spark.conf.set(so.STORAGE_CONF + ".checkpointPath",
                                   self.checkpoint_root.rstrip("/") + "/driver-storage")
            for k, v in (self.spec.get("spark_conf") or {}).items():
                spark.conf.set(k, v)
            fm = self.spec.get("file_manager")
            if fm:
                spark.conf.set("spark.sql.streaming.checkpointFileManagerClass",
                               so.FILE_MANAGERS.get(fm, fm))
            spark.stop = lambda: None  # the next step's session shares the SparkContext
            self.spark = spark
            return spark

    def wait_for(done):
        ended = os.path.join(os.path.dirname(done), "_ended")
        while not os.path.exists(done):
            if os.path.exists(ended) and not os.path.exists(done):
                raise RuntimeError("%%s was never written: its driver process ended" %% done)
            time.sleep(0.5)
        with open(done) as f:
            error = json.load(f)["error"]
        if error:
            raise RuntimeError("the step this one needs failed (%%s)" %% done)

    folder = os.path.dirname(%r)
    with open(%r) as f:
        steps = json.load(f)
    if steps:
        neutral = dict(steps[0]["spec"], provider="heap", storage=None, spark_conf=None,
                       file_manager=None)
        Step.base = so.Driver(neutral).session()
    for step in steps:
        started = time.time()
        try:
            if step.get("after"):
                wait_for(step["after"])
                started = time.time()
            Step(step["spec"]).run()
            if step["spec"].get("results"):
                os.rename(os.path.join(step["spec"]["work"], "results.json"),
                          os.path.join(folder, step["name"] + ".results.json"))
            error = None
        except BaseException:
            error = traceback.format_exc()
            print("STEP %%s FAILED:\\n%%s" %% (step["name"], error), flush=True)
        done = os.path.join(folder, step["name"] + ".json")
        with open(done + ".tmp", "w") as f:
            json.dump({"error": error, "seconds": round(time.time() - started, 1)}, f)
        os.rename(done + ".tmp", done)  # whole, for a process waiting for it
        print("STEP %%s in %%.1f s" %% (step["name"], time.time() - started), flush=True)
    if Step.base is not None:
        Step.base.stop()
"""


def start_steps(folder, steps: list):
    """Starts a driver process running ``steps`` (each {"name", "spec"[, "after"]}; see
    ``_SHARED_DRIVER``); its stdout and stderr go to files in ``folder``."""
    import textwrap
    folder.mkdir()
    steps_path = folder / "steps.json"
    steps_path.write_text(json.dumps(steps))
    tests = os.path.dirname(os.path.abspath(__file__))
    script = folder / "script.py"
    script.write_text(textwrap.dedent(_SHARED_DRIVER % (tests, str(steps_path), str(steps_path))))
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=out, stderr=err,
                                env=Subprocess(folder).env({"TZ": "UTC"}), cwd=str(folder))
    return folder, steps, proc


def finish_steps(started, timeout: float = 2400) -> dict:
    """Waits for a process of ``start_steps``, then writes ``_ended`` beside its steps' files
    (the steps of another process waiting for one of them stop waiting); step name -> its
    traceback, or None."""
    folder, steps, proc = started
    wait_or_kill(proc, timeout)
    (folder / "_ended").write_text("")
    errors = {}
    for step in steps:
        done = folder / (step["name"] + ".json")
        if done.exists():
            errors[step["name"]] = json.loads(done.read_text())["error"]
        else:
            errors[step["name"]] = "the driver process ended before this step (exit %s):\n%s" % (
                proc.returncode, ((folder / "stderr.txt").read_text())[-8000:])
    return errors


def run_steps(folder, steps: list) -> dict:
    """``steps`` in one driver process (``_SHARED_DRIVER``), to its end; step name -> its
    traceback, or None."""
    return finish_steps(start_steps(folder, steps))


@pytest.fixture(scope="module")
def directions(request, tmp_path_factory):
    """direction -> the target driver's results.json. Every selected direction runs at the
    first call, in two driver processes: the first writes each direction's source (its
    operators' queries over files 0 and 1; direction after direction in one driver JVM, a session
    each), the second migrates each direction's checkpoints once its source is written and
    resumes them over file 2 and the flush (again one JVM, a session per direction): each
    target runs in a driver other than its source's, the two side by side."""
    selected = sorted({item.callspec.params["direction"] for item in request.session.items
                       if item.originalname == "test_migrated_queries_resume_with_exact_results"
                       and hasattr(item, "callspec")}) or sorted(DIRECTIONS)
    root = tmp_path_factory.mktemp("directions")
    sources, targets = [], []
    for direction in selected:
        source, source_storage, target, target_storage, operators = DIRECTIONS[direction]
        work = root / direction / "work"
        common = dict(work=str(work), master="local[2]", operators=operators)
        sources.append({"name": direction, "spec": dict(
            common, provider=source, storage=source_storage, checkpoint_root=str(work / "src"),
            feed=[0, 1], **SOURCE_SPEC.get(direction, {}))})
        targets.append({"name": direction, "spec": dict(
            common, provider=source, storage=target_storage, **TARGET_SPEC.get(direction, {}),
            checkpoint_root=str(work / "dst"), migrate_from=str(work / "src"),
            migrate_to=target, feed=[2, "flush"], results=True,
            via_canonical_savepoint="canonical" in direction)})
    # The targets' driver starts with the sources' (its JVM's start overlaps their batches),
    # each direction's migration waiting for its source to be written.
    for t in targets:
        t["after"] = str(root / "sources" / (t["name"] + ".json"))
    started = start_steps(root / "sources", sources)
    try:
        resumed = start_steps(root / "targets", targets)
    finally:
        source_errors = finish_steps(started)
    target_errors = finish_steps(resumed)

    def get(direction):
        assert not source_errors[direction], "the source driver failed:\n%s" % source_errors[direction]
        assert not target_errors[direction], "the target driver failed:\n%s" % target_errors[direction]
        return json.loads((root / "targets" / (direction + ".results.json")).read_text())

    return get


#: files each provider writes for the one version a migration writes (a snapshot of it)
STATE_FILES = {"heap": {"heap-snapshot"}, "hdfs": {"snapshot"}, "rocksdb": {"zip"}}


# The first direction's test runs the fixture: every direction's two drivers.
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("direction", sorted(DIRECTIONS))
def test_migrated_queries_resume_with_exact_results(directions, direction):
    source, _, target, target_storage, operators = DIRECTIONS[direction]
    results = directions(direction)
    migrations = results["log"]["migrations"]
    for name in operators:
        got = results["operators"][name]
        assert got["got"] == got["expected"], name
        assert got["expected"], name
        m = migrations[name]
        # The source driver committed batches 0 and 1 at least: the migration took the last one.
        assert m["batchId"] >= 1, name
        assert m["sourceProvider"] == so.provider_class(source), name
        assert m["targetProvider"] == so.provider_class(target), name
        assert m["numPartitions"] == 4, name
        # The resumed query ran on the target provider: the offset log says so...
        assert so.provider_class(target) in got["checkpoint"]["offsets"], name
        if source != target:
            assert so.provider_class(source) not in got["checkpoint"]["offsets"], name
        if target_storage == "driver":
            # ...on the storage of the resuming session (state migrated as plain files).
            marker = got["checkpoint"]["storage"].splitlines()
            assert any(l.startswith("storage=DriverCheckpointStorage") for l in marker), (name, marker)
        # ...and what the migration wrote were the target provider's files.
        assert STATE_FILES[target] <= set(m["state_files"]), (name, m["state_files"])
        if direction in SOURCE_SPEC:
            # The source's newest state was in changelogs: read, not only snapshots.
            assert "changelog" in m["source_state_files"], (name, m["source_state_files"])
        if direction in TARGET_SPEC:
            # The resumed query wrote changelogs on top of the migrated snapshot.
            assert "changelog" in got["state_files"], (name, got["state_files"])
    # Operators with state that was still held at the migrated batch moved rows over.
    for name in ["aggregation_update", "drop_duplicates", "join_left_outer", "session_window"]:
        assert migrations[name]["rows"] > 0, name
    join_stores = {s["store"] for s in migrations["join_left_outer"]["operators"][0]["stores"]}
    assert join_stores == {"left-keyToNumValues", "left-keyWithIndexToValue",
                           "right-keyToNumValues", "right-keyWithIndexToValue"}


# --------------------------------------------------------------------------------------
# In this process's session: a large state, refusals, a failed and a killed migration.

#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {"spark.sql.shuffle.partitions": 4}


def test_several_hundred_thousand_keys(spark, tmp_path):
    """300k keys in 4 partitions on Spark's HDFS provider, migrated to ours, resumed: the final
    counts of every key equal the batch computation, and the source is untouched."""
    from pyspark.sql import functions as F
    from spark_checkpoint_storage.migration import migrate

    source, src, dst, out = (str(tmp_path / n) for n in ("source", "src", "dst", "out"))
    keys = 300_000
    first = spark.range(keys).select(F.col("id").alias("k"), (F.col("id") % 7).alias("v"))
    second = spark.range(0, keys, 3).select(F.col("id").alias("k"), F.lit(100).cast("long").alias("v"))
    run_batches(spark, "hdfs", source, src, out, [first])
    before = tree(src)
    result = migrate(src, dst, to="heap")
    assert tree(src) == before
    assert result.rows == keys and result.batch_id == 0 and result.num_partitions == 4
    assert sum(result.operators[0]["stores"][0]["rowsPerPartition"]) == keys
    resume(spark, source, dst, out, second)  # the session's provider: ours
    assert_counts_match(spark, source, out, keys)
    with open(os.path.join(dst, "offsets", "1")) as f:
        assert so.provider_class("heap") in f.read()


@pytest.fixture(scope="module")
def small_checkpoint(spark, tmp_path_factory):
    """A counting query's checkpoint on Spark's HDFS provider after two batches."""
    return counting.small_checkpoint(spark, tmp_path_factory.mktemp("small"), "hdfs", keys=10, rows=50)


def copy_of(checkpoint, tmp_path, name="copy"):
    import shutil
    target = str(tmp_path / name)
    shutil.copytree(checkpoint, target)
    return target


def assert_refused(fn, *fragments):
    from spark_checkpoint_storage.errors import MigrationException
    with pytest.raises(MigrationException) as info:
        fn()
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    assert info.value.getCondition() == "CHECKPOINT_STORAGE.MIGRATION"
    return str(info.value)


def test_refuses_an_uncommitted_batch(spark, small_checkpoint, tmp_path):
    from spark_checkpoint_storage.migration import migrate
    src = copy_of(small_checkpoint, tmp_path)
    os.remove(os.path.join(src, "commits", "1"))  # batch 1 ran, its commit was never written
    assert_refused(lambda: migrate(src, str(tmp_path / "dst"), to="heap", batch_id=1),
                   "Batch 1 of the checkpoint", "is not committed", "last committed batch is 0")
    assert_refused(lambda: migrate(src, str(tmp_path / "dst"), to="heap", batch_id=7),
                   "has no committed batch 7 (committed: 0 to 0)")
    # Without a batch the last committed one is taken.
    assert migrate(src, str(tmp_path / "dst"), to="heap").batch_id == 0


def test_refuses_targets_inside_the_source_or_not_empty(spark, small_checkpoint, tmp_path):
    from spark_checkpoint_storage.migration import migrate
    assert_refused(lambda: migrate(small_checkpoint, os.path.join(small_checkpoint, "inside"), to="heap"),
                   "lies inside the checkpoint")
    assert_refused(lambda: migrate(small_checkpoint, os.path.dirname(small_checkpoint), to="heap"),
                   "contains the checkpoint")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "something").write_text("x")
    assert_refused(lambda: migrate(small_checkpoint, str(busy), to="heap"),
                   "already exists and is not empty")
    assert not (tmp_path / "busy" / "offsets").exists()


def test_refuses_providers_it_cannot_read_or_write(spark, small_checkpoint, tmp_path):
    from spark_checkpoint_storage.migration import migrate
    assert_refused(lambda: migrate(small_checkpoint, str(tmp_path / "a"), to="com.example.NoSuchProvider"),
                   "The target state store provider com.example.NoSuchProvider is not on the classpath",
                   "Use one of hdfs, heap, rocksdb")
    assert_refused(lambda: migrate(small_checkpoint, str(tmp_path / "b"), to="java.lang.String"),
                   "java.lang.String is not a org.apache.spark.sql.execution.streaming.state.StateStoreProvider")
    src = copy_of(small_checkpoint, tmp_path)
    for name in os.listdir(os.path.join(src, "offsets")):
        path = os.path.join(src, "offsets", name)
        if name.isdigit():
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(text.replace(so.provider_class("hdfs"), "com.example.GoneProvider"))
        else:
            os.remove(path)  # Hadoop's checksum of the original content
    assert_refused(lambda: migrate(src, str(tmp_path / "c"), to="heap"),
                   "The source state store provider com.example.GoneProvider is not on the classpath",
                   "cannot be read")
    for name in "abc":
        assert not (tmp_path / name).exists()


def test_refuses_inline_state_without_our_file_manager(spark, small_checkpoint, tmp_path):
    """The small checkpoint's state is in packs (this session's file system storage): a
    session on Spark's own file manager cannot read it, and is told which setting to change."""
    from spark_checkpoint_storage.migration import migrate
    assert os.path.isdir(os.path.join(small_checkpoint, "state-packs"))
    key = "spark.sql.streaming.checkpointFileManagerClass"
    ours = spark.conf.get(key)
    spark.conf.set(key, so.FILE_MANAGERS["spark"])
    try:
        assert_refused(lambda: migrate(small_checkpoint, str(tmp_path / "dst"), to="heap"),
                       "is inline (packs", "set %s=%s" % (key, ours))
    finally:
        spark.conf.set(key, ours)
    assert not (tmp_path / "dst").exists()


def test_refuses_state_checkpoint_format_version_2(spark, tmp_path):
    from spark_checkpoint_storage.migration import migrate
    source, src, out = (str(tmp_path / n) for n in ("source", "src", "out"))
    spark.conf.set("spark.sql.streaming.stateStore.checkpointFormatVersion", "2")
    try:
        run_batches(spark, "rocksdb", source, src, out,
                    [spark.createDataFrame([(1, 1)], COUNTS)])
    finally:
        spark.conf.unset("spark.sql.streaming.stateStore.checkpointFormatVersion")
    assert_refused(lambda: migrate(src, str(tmp_path / "dst"), to="heap"),
                   "state checkpoint format version 2",
                   "spark.sql.streaming.stateStore.checkpointFormatVersion=1")
    assert not (tmp_path / "dst").exists()


def test_transform_with_state_goes_to_rocksdb_only_and_rescales_there(spark, tmp_path):
    """transformWithState keeps column families (RocksDB only): another target is refused,
    naming the operator; to RocksDB it is rescaled (Spark 4.2+, refused before, naming the
    line), and the query resumes from the new checkpoint counting on."""
    import pandas as pd
    import pyspark
    from pyspark.sql.streaming import StatefulProcessor
    from spark_checkpoint_storage.migration import migrate

    class Count(StatefulProcessor):
        def init(self, handle):
            self.n = handle.getValueState("n", "n long")

        def handleInputRows(self, key, rows, timerValues):
            n = self.n.get()[0] if self.n.exists() else 0
            for pdf in rows:
                n += len(pdf)
            self.n.update((n,))
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

        def close(self):
            pass

    def run(checkpoint):
        query = (spark.readStream.schema(COUNTS).parquet(source).groupBy("k")
                 .transformWithStateInPandas(Count(), outputStructType="k long, n long",
                                             outputMode="Update", timeMode="None")
                 .writeStream.outputMode("update").format("noop")
                 .option("checkpointLocation", checkpoint).start())
        query.processAllAvailable()
        query.stop()

    source, src, dst = str(tmp_path / "source"), str(tmp_path / "src"), str(tmp_path / "dst")
    add_file(spark, source, spark.createDataFrame([(k, k) for k in range(20)], COUNTS))
    spark.conf.set(PROVIDER_CONF, so.provider_class("rocksdb"))
    try:
        run(src)
        assert_refused(lambda: migrate(src, dst, to="heap"),
                       "transformWithState", "column families", "cannot be migrated", "to=rocksdb")
        line = tuple(int(x) for x in pyspark.__version__.split(".")[:2])
        if line < (4, 2):
            assert_refused(lambda: migrate(src, dst, to="rocksdb", num_partitions=3),
                           "transformWithState", "Spark 4.2")
            return
        result = migrate(src, dst, to="rocksdb", num_partitions=3)
        assert (result.source_num_partitions, result.num_partitions) == (
            int(spark.conf.get("spark.sql.shuffle.partitions")), 3)
        [operator] = result.operators
        assert [(s["store"], s["rows"]) for s in operator["stores"]] == [("n", 20)]
        # Resumed with one more row for keys 0 and 1: their counts go on from the checkpoint.
        add_file(spark, source, spark.createDataFrame([(0, 1), (1, 1)], COUNTS))
        run(dst)
        state = {r.key.k: (r.value.n, r.partition_id) for r in spark.read.format("statestore")
                 .option("path", dst).option("stateVarName", "n").load().collect()}
        assert len(state) == 20 and state[0][0] == state[1][0] == 2 and state[2][0] == 1
        placed = spark.createDataFrame([(k, p) for k, (_, p) in state.items()], "k long, p int")
        assert placed.filter("p != pmod(hash(k), 3)").count() == 0
    finally:
        spark.conf.set(PROVIDER_CONF, so.provider_class("heap"))
    assert_refused(lambda: migrate(src, str(tmp_path / "dst2"), to="rocksdb", num_partitions=0),
                   "an int >= 1")


def test_failed_migration_leaves_nothing(spark, small_checkpoint, tmp_path):
    """A state file missing from the source: the error names it, and neither the target nor
    its temporary sibling is left behind."""
    from spark_checkpoint_storage.migration import migrate
    src = copy_of(small_checkpoint, tmp_path)
    # Batch 1's state (version 2) of partition 0, whatever the storage made of it: a real file
    # or an inline one in a pack. Removing the packs loses inline files; the error must say so.
    packs = os.path.join(src, "state-packs")
    if os.path.exists(packs):
        import shutil
        shutil.rmtree(packs)
    else:
        os.remove(os.path.join(src, "state", "0", "0", "2.delta"))
    message = str(pytest.raises(Exception, migrate, src, str(tmp_path / "dst"), to="heap").value)
    import re
    assert re.search(r"copy/state/0/\d/1\.delta does not exist", message), message
    assert sorted(os.listdir(tmp_path)) == ["copy"]


def test_killed_migration_leaves_the_target_unusable_and_says_so(spark, tmp_path, subproc):
    """A migration SIGKILLed while it writes leaves no checkpoint at the target, a hidden
    sibling saying what it is, and the next migration to that target refuses, naming it."""
    from pyspark.sql import functions as F
    from spark_checkpoint_storage.migration import migrate

    source, src, out = (str(tmp_path / n) for n in ("source", "src", "out"))
    dst = str(tmp_path / "dst")
    run_batches(spark, "hdfs", source, src, out, [spark.range(200_000).select(
        F.col("id").alias("k"), F.col("id").alias("v"))])
    # Killed once the target provider has written state into the temporary sibling.
    leftovers = kill_while_writing("from spark_checkpoint_storage.migration import migrate\n"
                                   "migrate(%r, %r, to='rocksdb')\n" % (src, dst),
                                   tmp_path, ".dst.migrating-", subproc.env())
    assert not os.path.exists(dst)
    leftover = os.path.join(tmp_path, leftovers[0])
    with open(os.path.join(leftover, "_MIGRATION_INCOMPLETE")) as f:
        note = f.read()
    assert "An unfinished migration of" in note and "not a checkpoint to start a query from" in note
    assert not os.path.exists(os.path.join(leftover, "_migration"))
    message = assert_refused(lambda: migrate(src, dst, to="rocksdb"),
                             "An earlier migration to", "did not finish", leftovers[0],
                             "was never written", "Delete")
    assert not os.path.exists(dst), message
    import shutil
    shutil.rmtree(leftover)
    assert migrate(src, dst, to="rocksdb").rows == 200_000


def test_canonical_savepoint(spark, small_checkpoint, tmp_path):
    """A canonical savepoint holds the state rows as parquet (key and value structs, per
    operator, store and partition) with a descriptor, and restores into any provider: each
    restored checkpoint resumes with the counts of the batch computation."""
    from spark_checkpoint_storage.migration import migrate
    from spark_checkpoint_storage.savepoints import savepoint

    before = tree(small_checkpoint)
    sp = str(tmp_path / "sp")
    assert savepoint(small_checkpoint, sp, format="canonical") == "file:" + sp
    assert tree(small_checkpoint) == before
    with open(os.path.join(sp, "_savepoint")) as f:
        manifest = json.load(f)
    assert manifest["format"] == "canonical" and manifest["batchId"] == 1
    assert manifest["sourceProvider"] == so.provider_class("hdfs") and manifest["rows"] == 10
    [op] = manifest["operators"]
    [store] = op["stores"]
    assert store["name"] == "default" and store["numPartitions"] == 4
    # Plain parquet, readable by anything: the key and value structs of the store.
    rows = spark.read.parquet(os.path.join(sp, store["path"]))
    assert [f.name for f in rows.schema.fields] == ["key", "value", "partition_id"]
    assert json.loads(rows.schema["key"].dataType.json()) == json.loads(store["keySchema"])
    assert sorted(r.key.k for r in rows.collect()) == list(range(10))
    assert not os.path.exists(os.path.join(sp, "state", "0", "0", "1.delta"))
    assert sorted(os.listdir(os.path.join(sp, "commits"))) == ["0", "1"]

    # One more file of input, which each restored query reads as its batch 2.
    source = os.path.join(os.path.dirname(small_checkpoint), "source")
    add_file(spark, source, spark.createDataFrame([(k, 5) for k in range(10)], COUNTS))
    expected = {r.k: (r.n, r.s) for r in expected_counts(spark, source).collect()}
    assert expected[3] == (11, 0 * 5 + 1 * 5 + 5)
    for provider in ["rocksdb", "heap"]:
        dst, out = str(tmp_path / ("dst-" + provider)), str(tmp_path / ("out-" + provider))
        result = migrate(sp, dst, to=provider)
        assert result.rows == 10 and result.batch_id == 1
        assert result.target_provider == so.provider_class(provider)
        resume(spark, source, dst, out)
        with open(os.path.join(dst, "offsets", "2")) as f:
            assert so.provider_class(provider) in f.read()
        got = {r.k: (r.n, r.s) for r in final_counts(spark, out).collect()}
        assert got == expected, provider


def test_command_line_canonical_savepoint_then_migrate(spark, small_checkpoint, tmp_path, subproc):
    """``savepoint --format canonical``, then ``migrate SAVEPOINT DST --to heap --json``, each in
    a process of its own: each prints what it wrote, the source is untouched, and the migrated
    state holds every key's count and sum at the saved batch (read back by Spark's state data
    source, through our provider)."""
    before = tree(small_checkpoint)
    sp, dst = str(tmp_path / "sp"), str(tmp_path / "dst")
    cli = [sys.executable, "-m", "spark_checkpoint_storage"]
    saved = subprocess.run(cli + ["savepoint", small_checkpoint, sp, "--format", "canonical"],
                           capture_output=True, text=True, timeout=600, env=subproc.env())
    assert assert_ok(saved).strip() == "file:" + sp
    with open(os.path.join(sp, "_savepoint")) as f:
        assert json.load(f)["format"] == "canonical"
    migrated = subprocess.run(cli + ["migrate", sp, dst, "--to", "heap", "--json"],
                              capture_output=True, text=True, timeout=600, env=subproc.env())
    result = json.loads(assert_ok(migrated))
    assert result["rows"] == 10 and result["batchId"] == 1, result
    assert result["targetProvider"] == so.provider_class("heap"), result
    assert tree(small_checkpoint) == before
    # Two files of 50 rows, k = row % 10 and v = the file's number: n = 10, s = 0 * 5 + 1 * 5.
    state = spark.read.format("statestore").load(dst).collect()
    assert {r.key[0]: (r.value[0], r.value[1]) for r in state} == {k: (10, 5) for k in range(10)}
