"""Rescaling a query's state to another number of partitions
(``migrate(..., num_partitions=N)``), end to end on real Spark.

Every operator's query runs on 4 partitions on Spark's HDFS provider in one driver process
(tests/support/stateful_operators.py); a second driver rescales each checkpoint into ours at 7
partitions, records where every state row landed, resumes the queries (its session still sets
4 shuffle partitions: the rescaled offset log alone must make them run on 7) and feeds one
more batch; then (the same driver, a session of its own) rescales that into Spark's HDFS
provider at 2 and feeds the rest. What
the sinks got must equal the batch computation over the input so far, and every state row,
right after each rescale and after the resumed batches, must lie in the partition that SQL's
``pmod(hash(keys), n)`` (Spark's shuffle partitioning) gives its key.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import assert_ok
from support import counting
from support import stateful_operators as so
from support.counting import (COUNTS, assert_counts_match, kill_while_writing, resume,
                              run_batches, tree)

TESTS = os.path.dirname(os.path.abspath(__file__))

#: aggregation (plain and windowed), both deduplications, a stream-stream join (four stores),
#: applyInPandasWithState with event-time timeouts, session windows (prefix-key scan)
OPERATORS = ["aggregation_update", "window_append", "drop_duplicates",
             "drop_duplicates_within_watermark", "join_left_outer", "apply_in_pandas_with_state",
             "session_window"]

#: the rescales, in order: (provider, partitions, batches fed after it)
STEPS = [("heap", 7, [2]), ("hdfs", 2, [3, "flush"])]


@pytest.fixture(scope="module")
def rescaled(tmp_path_factory):
    """The results of each rescale step (stateful_operators' results.json), in order. The
    source runs in a driver of its own; the rescale steps, one after the other, in a second
    one (one driver JVM, a session per step: test_migration.start_steps), started beside the
    first and waiting for its source to be written."""
    from test_migration import finish_steps, start_steps
    root = tmp_path_factory.mktemp("rescale")
    work = root / "work"
    common = dict(work=str(work), master="local[2]", operators=OPERATORS)
    source = [{"name": "source", "spec": dict(
        common, provider="hdfs", checkpoint_root=str(work / "cp0"), feed=[0, 1])}]
    steps = [{"name": "step%d" % i, "spec": dict(
        common, provider="hdfs", checkpoint_root=str(work / ("cp%d" % i)),
        migrate_from=str(work / ("cp%d" % (i - 1))), migrate_to=provider,
        migrate_partitions=n, feed=feed, results=True, check_placement=True)}
        for i, (provider, n, feed) in enumerate(STEPS, 1)]
    steps[0]["after"] = str(root / "source" / "source.json")
    started = start_steps(root / "source", source)
    try:
        rescaling = start_steps(root / "steps", steps)
    finally:
        errors = finish_steps(started)
    errors.update(finish_steps(rescaling))
    assert not errors["source"], "the source driver failed:\n%s" % errors["source"]
    results = []
    for step in steps:
        # A step that failed fails the steps after it too (each rescales the one before).
        assert not errors[step["name"]], "%s failed:\n%s" % (step["name"], errors[step["name"]])
        results.append(json.loads((root / "steps" / (step["name"] + ".results.json")).read_text()))
    return results


#: Spark 3.5 has no state data source: the rows' placement is not read back there (the
#: resumed queries' exact results still show every key found its state).
READS_STATE = int(__import__("pyspark").__version__.split(".")[0]) >= 4


def assert_placed(placement, n, what):
    if not READS_STATE:
        assert placement is None, what
        return
    assert placement["numPartitions"] == n, what
    for store, p in placement["stores"].items():
        assert p["misplaced"] == 0, (what, store, p)
        assert all(0 <= i < n for i in p["partitions"]), (what, store, p)


@pytest.mark.timeout(700)
@pytest.mark.parametrize("step", range(len(STEPS)))
def test_rescaled_queries_resume_with_exact_results(rescaled, step):
    target, n, _ = STEPS[step]
    source, source_n = ("hdfs", 4) if step == 0 else STEPS[step - 1][:2]
    results = rescaled[step]
    migrations = results["log"]["migrations"]
    for name in OPERATORS:
        got = results["operators"][name]
        # Appended rows are final once the last step's flush closes every window, session,
        # outer join row and timeout; updates are final after any step.
        if step == len(STEPS) - 1 or so.OPERATORS[name].mode == "update":
            assert got["got"] == got["expected"], name
            assert got["expected"], name
        m = migrations[name]
        assert (m["sourceNumPartitions"], m["numPartitions"]) == (source_n, n), name
        assert m["sourceProvider"] == so.provider_class(source), name
        assert m["targetProvider"] == so.provider_class(target), name
        # Every store got one version per new partition, and each row its key's partition.
        for op in m["operators"]:
            for store in op["stores"]:
                assert len(store["rowsPerPartition"]) == n, (name, store)
        assert_placed(m["placement"], n, (name, "rescaled"))
        # The resumed query ran on n partitions, its session's 4 notwithstanding: its offset
        # log says so, and its state is still where its shuffle put the keys.
        assert '"spark.sql.shuffle.partitions":"%d"' % n in got["checkpoint"]["offsets"], name
        assert so.provider_class(target) in got["checkpoint"]["offsets"], name
        assert_placed(got["placement"], n, (name, "resumed"))
    # State that was held at the rescaled batch was moved and spread over the partitions.
    for name in ["aggregation_update", "drop_duplicates", "join_left_outer", "session_window"]:
        assert migrations[name]["rows"] > 0, name
        stores = [s for op in migrations[name]["operators"] for s in op["stores"]]
        assert max(sum(1 for r in s["rowsPerPartition"] if r) for s in stores) > 1, name
    if not READS_STATE:
        return
    join = migrations["join_left_outer"]["placement"]["stores"]
    assert set(join) == {"left-keyToNumValues", "left-keyWithIndexToValue",
                         "right-keyToNumValues", "right-keyWithIndexToValue"}
    assert join["left-keyWithIndexToValue"]["hashed"] == join["left-keyToNumValues"]["hashed"]
    assert migrations["session_window"]["placement"]["stores"]["default"]["hashed"] == ["k"]


# --------------------------------------------------------------------------------------
# In this process's session: many keys, a canonical savepoint, progress, refusals, a kill.

SPARK_CONF = {"spark.sql.shuffle.partitions": 4}


def misplaced(spark, checkpoint, n):
    """State rows of the counting query outside partition ``pmod(hash(k), n)``, and the
    partitions holding rows."""
    state = spark.read.format("statestore").load(checkpoint)
    wrong = state.where("partition_id != pmod(hash(key.k), %d)" % n).count()
    return wrong, sorted(r.partition_id for r in state.select("partition_id").distinct().collect())


def assert_rows_placed(spark, checkpoint, n, partitions=None):
    """Every state row of the counting query in its key's partition, and (given) the
    partitions holding rows; not read back on Spark 3.5 (no state data source): there the
    resumed counts alone show each key found its state."""
    if READS_STATE:
        wrong, holding = misplaced(spark, checkpoint, n)
        assert wrong == 0, (checkpoint, n)
        assert partitions is None or holding == partitions, (checkpoint, holding)


@pytest.fixture(scope="module")
def small_checkpoint(spark, tmp_path_factory):
    """A counting query's checkpoint on our provider after two batches, 4 partitions."""
    return counting.small_checkpoint(spark, tmp_path_factory.mktemp("small"), "heap", keys=40, rows=120)


def test_same_provider_new_count_and_back(spark, small_checkpoint, tmp_path):
    """Ours to ours at 2, then that to ours at 9: each resumes with exact counts."""
    import shutil
    from spark_checkpoint_storage.migration import migrate
    # The shared input folder: the source log names its files, and every resumed copy reads
    # what was added since, so the batch computation over all of it stays the expectation.
    root = os.path.dirname(small_checkpoint)
    source = os.path.join(root, "source")
    two, nine = str(tmp_path / "two"), str(tmp_path / "nine")
    assert migrate(small_checkpoint, two, to="heap", num_partitions=2).rows == 40
    assert_rows_placed(spark, two, 2, [0, 1])
    result = migrate(two, nine, to="heap", num_partitions=9)
    assert (result.source_num_partitions, result.num_partitions, result.rows) == (2, 9, 40)
    assert_rows_placed(spark, nine, 9)
    out = str(tmp_path / "out")
    shutil.copytree(os.path.join(root, "out"), out)
    resume(spark, source, nine, out, spark.createDataFrame([(k, 7) for k in range(50)], COUNTS))
    assert_counts_match(spark, source, out)


def spark_built_in_target(spark) -> str:
    """Spark's provider a line's migrations write with Spark's own API: RocksDB from 4.2 (its
    stores open empty at a version from there), HDFS before (its snapshot file written
    directly; RocksDB through its first version: test_rocksdb_target_on_every_line)."""
    return "rocksdb" if spark_line(spark) >= (4, 2) else "hdfs"


def test_canonical_savepoint_restored_at_another_count(spark, small_checkpoint, tmp_path):
    """A canonical savepoint taken at 4 partitions restores into Spark's provider at 3."""
    import shutil
    from spark_checkpoint_storage.migration import migrate
    from spark_checkpoint_storage.savepoints import savepoint
    root = os.path.dirname(small_checkpoint)
    source, out = os.path.join(root, "source"), str(tmp_path / "out")
    shutil.copytree(os.path.join(root, "out"), out)
    sp, dst = str(tmp_path / "sp"), str(tmp_path / "dst")
    savepoint(small_checkpoint, sp, format="canonical")
    target = spark_built_in_target(spark)
    result = migrate(sp, dst, to=target, num_partitions=3)
    assert (result.num_partitions, result.rows) == (3, 40)
    assert result.target_provider == so.provider_class(target)
    assert_rows_placed(spark, dst, 3, [0, 1, 2])
    resume(spark, source, dst, out, spark.createDataFrame([(k, 1) for k in range(45)], COUNTS))
    assert_counts_match(spark, source, out)


def test_refuses_bad_counts_and_leaves_nothing(spark, small_checkpoint, tmp_path):
    from spark_checkpoint_storage.errors import MigrationException
    from spark_checkpoint_storage.migration import migrate
    dst = str(tmp_path / "dst")
    for bad in [0, -3, 2.5, True]:
        with pytest.raises(MigrationException, match="num_partitions must be a number of partitions"):
            migrate(small_checkpoint, dst, to="heap", num_partitions=bad)
    # The JVM refuses on its own too (a caller other than this package's Python API).
    jvm = spark._jvm.io.sparkcheckpointstorage.migration.Migration
    with pytest.raises(Exception, match="must be at least 1, not 0"):
        jvm.migrate(spark._jsparkSession, small_checkpoint, dst, "heap", -1, 0, None)
    assert sorted(os.listdir(tmp_path)) == []


def test_refuses_an_operator_it_cannot_place(spark, small_checkpoint, tmp_path):
    """An operator whose shuffle keys are unknown is refused by name, before anything is
    written."""
    import shutil
    from spark_checkpoint_storage.errors import MigrationException
    from spark_checkpoint_storage.migration import migrate
    src = str(tmp_path / "copy")
    shutil.copytree(small_checkpoint, src)
    meta = os.path.join(src, "state", "0", "_metadata", "metadata")
    with open(meta) as f:
        text = f.read()
    with open(meta, "w") as f:
        f.write(text.replace('"stateStoreSave"', '"someFutureOperator"'))
    crc = os.path.join(os.path.dirname(meta), ".metadata.crc")
    if os.path.exists(crc):
        os.remove(crc)
    with pytest.raises(MigrationException) as info:
        migrate(src, str(tmp_path / "dst"), to="heap", num_partitions=3)
    assert "Operator 0 (someFutureOperator, store default) cannot be rescaled" in str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["copy"]
    # Without a new count it still migrates.
    assert migrate(src, str(tmp_path / "dst"), to="heap").rows == 40


def test_command_line_rescale_shows_progress(spark, small_checkpoint, tmp_path, subproc):
    dst = str(tmp_path / "dst")
    done = subprocess.run([sys.executable, "-m", "spark_checkpoint_storage", "migrate",
                           small_checkpoint, dst, "--to", "hdfs", "--partitions", "5"],
                          capture_output=True, text=True, timeout=600, env=subproc.env())
    out = assert_ok(done)
    assert "(heap" not in out and "4 partitions) to file:%s" % dst in out, out
    assert "HDFSBackedStateStoreProvider, 5 partitions): 40 state rows" in out, out
    assert "progress: stores" in done.stderr, done.stderr[-3000:]
    assert_rows_placed(spark, dst, 5, list(range(5)))


def test_killed_rescale_then_several_hundred_thousand_keys(spark, tmp_path, subproc):
    """200k keys in 4 partitions on Spark's HDFS provider. A rescale to 16 (into Spark's
    provider of the line: RocksDB from 4.2, else HDFS) SIGKILLed while it
    writes leaves no checkpoint at the target and a hidden sibling saying what it is; the next
    one to that target refuses, naming it. Once that is deleted, a rescale into ours at 7,
    with progress reported, puts every key in its partition; resumed on 7 and fed more, the
    counts equal the batch computation; the source was never touched."""
    import shutil
    from pyspark.sql import functions as F
    from spark_checkpoint_storage.errors import MigrationException
    from spark_checkpoint_storage.migration import migrate

    source, src, out = (str(tmp_path / n) for n in ("source", "src", "out"))
    dst = str(tmp_path / "dst")
    keys = 200_000
    run_batches(spark, "hdfs", source, src, out, [spark.range(keys).select(
        F.col("id").alias("k"), (F.col("id") % 7).alias("v"))])
    before = tree(src)
    leftovers = kill_while_writing("from spark_checkpoint_storage.migration import migrate\n"
                                   "migrate(%r, %r, to=%r, num_partitions=16)\n"
                                   % (src, dst, spark_built_in_target(spark)),
                                   tmp_path, ".dst.migrating-", subproc.env())
    assert not os.path.exists(dst)
    leftover = os.path.join(tmp_path, leftovers[0])
    with open(os.path.join(leftover, "_MIGRATION_INCOMPLETE")) as f:
        assert "not a checkpoint to start a query from" in f.read()
    assert not os.path.exists(os.path.join(leftover, "_migration"))
    with pytest.raises(MigrationException) as info:
        migrate(src, dst, to="heap", num_partitions=7)
    assert "did not finish" in str(info.value) and leftovers[0] in str(info.value)
    assert not os.path.exists(dst)
    shutil.rmtree(leftover)

    seen = []
    result = migrate(src, dst, to="heap", num_partitions=7, progress=seen.append,
                     progress_interval=0.05)
    assert tree(src) == before
    assert result.rows == keys and result.num_partitions == 7 and result.source_num_partitions == 4
    per_partition = result.operators[0]["stores"][0]["rowsPerPartition"]
    assert len(per_partition) == 7 and sum(per_partition) == keys and min(per_partition) > 0
    assert seen and all(p.stores_total == 1 for p in seen)
    assert any(p.store == "default" and p.partitions == 7 for p in seen), [str(p) for p in seen]
    assert all(a.rows_written <= b.rows_written for a, b in zip(seen, seen[1:]))
    # The last report is the finished migration's, however short it was.
    assert (seen[-1].phase, seen[-1].stores_done, seen[-1].rows_written) == ("done", 1, keys)
    assert_rows_placed(spark, dst, 7, list(range(7)))
    resume(spark, source, dst, out, spark.range(0, keys, 3).select(
        F.col("id").alias("k"), F.lit(100).cast("long").alias("v")))
    assert_counts_match(spark, source, out, keys)
    assert_rows_placed(spark, dst, 7)
    with open(os.path.join(dst, "offsets", "1")) as f:
        assert '"spark.sql.shuffle.partitions":"7"' in f.read()
    with open(os.path.join(dst, "state", "0", "_metadata", "metadata")) as f:
        assert '"numPartitions":7' in f.read()


def spark_line(spark):
    return tuple(int(x) for x in spark.version.split(".")[:2])


def test_rocksdb_to_ours(spark, tmp_path):
    """A query on Spark's RocksDB provider at 4 partitions rescaled into ours at 3: every key
    in its partition, and resumed, the counts equal the batch computation."""
    from spark_checkpoint_storage.migration import migrate
    source, src, dst, out = (str(tmp_path / n) for n in ("source", "src", "dst", "out"))
    run_batches(spark, "rocksdb", source, src, out,
                [spark.createDataFrame([(k % 30, b) for k in range(90)], COUNTS) for b in range(2)])
    result = migrate(src, dst, to="heap", num_partitions=3)
    assert result.source_provider == so.provider_class("rocksdb")
    assert (result.num_partitions, result.rows) == (3, 30)
    assert_rows_placed(spark, dst, 3, [0, 1, 2])
    resume(spark, source, dst, out, spark.createDataFrame([(k, 9) for k in range(35)], COUNTS))
    assert_counts_match(spark, source, out, 35)


def test_rocksdb_target_on_every_line(spark, small_checkpoint, tmp_path):
    """Ours at 4 partitions into Spark's RocksDB provider at 3, on every line: before 4.2 its
    store is written as RocksDB's first version and the snapshot renamed to the batch's.
    Every key in its partition, one snapshot per store at the batch's version; resumed with
    changelog checkpointing on, the counts equal the batch computation."""
    import shutil
    from spark_checkpoint_storage.migration import migrate
    root = os.path.dirname(small_checkpoint)
    source, out, dst = os.path.join(root, "source"), str(tmp_path / "out"), str(tmp_path / "dst")
    shutil.copytree(os.path.join(root, "out"), out)
    result = migrate(small_checkpoint, dst, to="rocksdb", num_partitions=3)
    assert (result.batch_id, result.num_partitions, result.rows) == (1, 3, 40)
    assert result.target_provider == so.provider_class("rocksdb")
    assert_rows_placed(spark, dst, 3, [0, 1, 2])
    for partition in range(3):
        store = os.path.join(dst, "state", "0", str(partition))
        files = os.listdir(store)
        assert sorted(f for f in files if f.endswith(".zip")) == ["2.zip"], files
        assert not [f for f in files if f.startswith(("1.zip", ".1.zip"))], files
    changelog = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
    spark.conf.set(changelog, "true")
    try:
        resume(spark, source, dst, out, spark.createDataFrame([(k, 5) for k in range(44)], COUNTS))
    finally:
        spark.conf.unset(changelog)
    keys = spark.read.schema(COUNTS).parquet(source).select("k").distinct().count()
    assert_counts_match(spark, source, out, keys)
    # What the resumed batch committed on top (version 3, a changelog) reads back placed.
    assert_rows_placed(spark, dst, 3, [0, 1, 2])
    if READS_STATE:
        assert spark.read.format("statestore").load(dst).count() == keys


def test_docs_example_runs(subproc, tmp_path):
    """docs/rescaling.md's Python example in a fresh process, then its command line against
    the checkpoint it left."""
    import re
    with open(os.path.join(os.path.dirname(TESTS), "docs", "rescaling.md")) as f:
        text = f.read()
    [python] = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    [bash] = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    env_file = tmp_path / "env.json"
    script = python + ("\nimport json\nwith open(%r, 'w') as _f:\n    json.dump({'ROOT': root}, _f)\n"
                       % str(env_file))
    out = assert_ok(subproc.python(script, timeout=400))
    assert "2 -> 8 partitions, 1000 rows" in out, out
    assert "MigrationProgress" not in out and "stores " in out, out  # progress printed
    root = json.loads(env_file.read_text())["ROOT"]
    env = subproc.env({"ROOT": root})
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", bash], capture_output=True,
                          text=True, timeout=300, env=env)
    shown = assert_ok(done)
    assert "2 partitions) to file:%s/checkpoint-16" % root in shown, shown
    assert "16 partitions): 1000 state rows" in shown, shown
    assert "progress: stores" in done.stderr


def test_refuses_a_checkpoint_without_operator_metadata_or_schema(spark, small_checkpoint, tmp_path):
    """Without operator metadata (Spark 3.5 writes none) the operator is told from its state
    schema; with neither, which operator keeps the state (so how its rows are partitioned)
    cannot be told, and the rescale is refused saying what to do."""
    import shutil
    from spark_checkpoint_storage.errors import MigrationException
    from spark_checkpoint_storage.migration import migrate
    src = str(tmp_path / "copy")
    shutil.copytree(small_checkpoint, src)
    meta = os.path.join(src, "state", "0", "_metadata")
    assert os.path.exists(os.path.join(meta, "metadata")) == (spark_line(spark) >= (4, 0))
    shutil.rmtree(meta, ignore_errors=True)
    assert os.path.exists(os.path.join(src, "state", "0", "0", "_metadata", "schema"))
    for partition in range(4):
        shutil.rmtree(os.path.join(src, "state", "0", str(partition), "_metadata"), ignore_errors=True)
    with pytest.raises(MigrationException) as info:
        migrate(src, str(tmp_path / "dst"), to="heap", num_partitions=3)
    message = str(info.value)
    assert "has state but neither operator metadata" in message, message
    assert "state/0/0/_metadata/schema" in message, message
    assert "Resume the query on Spark 4.0 or later" in message, message
    assert sorted(os.listdir(tmp_path)) == ["copy"]
