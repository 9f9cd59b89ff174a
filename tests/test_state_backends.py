"""State backends (spark_checkpoint_storage.state_backend): the API in PyFlink's shape, its
settings on builders and running sessions, and real queries on each backend:
transformWithStateInPandas (value, list and map state, a processing-time timer, TTL) on
RocksDB through both checkpoint storages, resumed by a new driver, with the state files
counted against RocksDB on Spark's own file manager; checkpoint format version 2; and the
hash-map backend refused by Spark for transformWithState."""
import json
import os
import re

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_checkpoint_storage import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
    configure_spark_with_checkpoint_storage,
    get_checkpoint_config,
    jvm_names,
)
from spark_checkpoint_storage.state_backend import from_provider_class

from conftest import assert_ok

SCHEMA = "k long, v long"
ROCKSDB = jvm_names.ROCKSDB_PROVIDER_CLASS
CHANGELOG = jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF
STORAGE = jvm_names.STORAGE
FORMAT_VERSION = "spark.sql.streaming.stateStore.checkpointFormatVersion"

import pyspark

_LINE = tuple(int(x) for x in pyspark.__version__.split(".")[:2])
#: transformWithState and checkpoint format version 2 came with Spark 4.0
needs_spark_4 = pytest.mark.skipif(_LINE < (4, 0), reason="Spark 3.5 has neither "
                                   "transformWithState nor state checkpoint format version 2")
#: Spark names the provider it allows for transformWithState from 4.2 (on 4.0 and 4.1 the
#: hash map fails when the store opens, with another error)
needs_spark_4_2 = pytest.mark.skipif(_LINE < (4, 2), reason="Spark refuses providers for "
                                     "transformWithState by name from 4.2")

#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {"spark.sql.shuffle.partitions": 2}


def files_under(path):
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, fs in os.walk(path) for f in fs)


# --------------------------------------------------------------------------------------
# The API

def test_defaults_and_settings_of_each_backend():
    heap = HashMapStateBackend()
    assert heap.get_provider_class() == jvm_names.HEAP_PROVIDER_CLASS
    assert heap._to_conf() == {jvm_names.PROVIDER_CLASS_CONF: jvm_names.HEAP_PROVIDER_CLASS}
    assert str(heap) == "HashMapStateBackend (%s)" % jvm_names.HEAP_PROVIDER_CLASS
    assert repr(heap) == "HashMapStateBackend()"

    rocksdb = EmbeddedRocksDBStateBackend()
    assert rocksdb.get_provider_class() == ROCKSDB
    assert rocksdb.is_changelog_checkpointing_enabled()
    assert rocksdb._to_conf() == {jvm_names.PROVIDER_CLASS_CONF: ROCKSDB, CHANGELOG: "true"}
    assert (rocksdb.is_bounded_memory_usage(), rocksdb.is_compact_on_commit(),
            rocksdb.get_max_memory_usage_mb(), rocksdb.get_block_cache_size_mb()) == \
        (False, False, 500, 8)
    assert repr(rocksdb) == "EmbeddedRocksDBStateBackend(enable_changelog_checkpointing=True)"
    assert str(rocksdb).endswith("RocksDBStateStoreProvider, changelog checkpointing on)")
    assert not EmbeddedRocksDBStateBackend(False).is_changelog_checkpointing_enabled()
    assert EmbeddedRocksDBStateBackend(False)._to_conf()[CHANGELOG] == "false"

    rocksdb.set_bounded_memory_usage(True)
    rocksdb.set_max_memory_usage_mb(1024)
    rocksdb.set_block_cache_size_mb(64)
    rocksdb.set_compact_on_commit(True)
    rocksdb.set_options({jvm_names.ROCKSDB_CONF_PREFIX + "maxOpenFiles": 100,
                         jvm_names.ROCKSDB_CONF_PREFIX + "trackTotalNumberOfRows": False})
    assert (rocksdb.is_bounded_memory_usage(), rocksdb.is_compact_on_commit(),
            rocksdb.get_max_memory_usage_mb(), rocksdb.get_block_cache_size_mb()) == \
        (True, True, 1024, 64)
    assert rocksdb._to_conf() == {
        jvm_names.PROVIDER_CLASS_CONF: ROCKSDB,
        CHANGELOG: "true",
        jvm_names.ROCKSDB_BOUNDED_MEMORY_USAGE_CONF: "true",
        jvm_names.ROCKSDB_MAX_MEMORY_USAGE_MB_CONF: "1024",
        jvm_names.ROCKSDB_BLOCK_CACHE_SIZE_MB_CONF: "64",
        jvm_names.ROCKSDB_COMPACT_ON_COMMIT_CONF: "true",
        jvm_names.ROCKSDB_CONF_PREFIX + "maxOpenFiles": "100",
        jvm_names.ROCKSDB_CONF_PREFIX + "trackTotalNumberOfRows": "false",
    }
    assert rocksdb.get_options() == {k: v for k, v in rocksdb._to_conf().items()
                                     if k != jvm_names.PROVIDER_CLASS_CONF}
    # Changelog checkpointing through set_options is the same setting as the constructor's.
    rocksdb.set_options({CHANGELOG: False})
    assert not rocksdb.is_changelog_checkpointing_enabled()

    custom = CustomStateBackend(" " + jvm_names.HDFS_PROVIDER_CLASS + " ")
    assert custom.get_provider_class() == jvm_names.HDFS_PROVIDER_CLASS
    assert custom._to_conf() == {jvm_names.PROVIDER_CLASS_CONF: jvm_names.HDFS_PROVIDER_CLASS}
    assert repr(custom) == "CustomStateBackend(%r)" % jvm_names.HDFS_PROVIDER_CLASS
    assert all(isinstance(b, StateBackend) for b in (heap, rocksdb, custom))


def test_equality_is_by_kind_and_settings():
    assert HashMapStateBackend() == HashMapStateBackend()
    assert EmbeddedRocksDBStateBackend() == EmbeddedRocksDBStateBackend(True)
    assert EmbeddedRocksDBStateBackend() != EmbeddedRocksDBStateBackend(False)
    tuned = EmbeddedRocksDBStateBackend()
    tuned.set_compact_on_commit(True)
    assert tuned != EmbeddedRocksDBStateBackend()
    assert len({HashMapStateBackend(), HashMapStateBackend(), tuned}) == 2
    # Same provider class, another kind: a CustomStateBackend of the heap provider is no
    # HashMapStateBackend (the dispatch below turns the class name into the latter).
    assert CustomStateBackend(jvm_names.HEAP_PROVIDER_CLASS) != HashMapStateBackend()
    assert CustomStateBackend("a.B") == CustomStateBackend("a.B") != CustomStateBackend("a.C")


def test_bad_keys_and_values_are_refused_and_nothing_is_set():
    backend = EmbeddedRocksDBStateBackend()
    with pytest.raises(ValueError) as err:
        backend.set_options({jvm_names.ROCKSDB_CONF_PREFIX + "formatVersion": 5,
                             "spark.sql.shuffle.partitions": 4,
                             jvm_names.PROVIDER_CLASS_CONF: ROCKSDB})
    message = str(err.value)
    assert "keys starting with spark.sql.streaming.stateStore.rocksdb." in message
    assert "spark.sql.shuffle.partitions" in message and jvm_names.PROVIDER_CLASS_CONF in message
    assert backend.get_options() == {CHANGELOG: "true"}  # not even the good key
    with pytest.raises(ValueError):
        backend.set_options({jvm_names.ROCKSDB_CONF_PREFIX: "x"})
    with pytest.raises(ValueError, match="changelogCheckpointing.enabled must be true or false"):
        backend.set_options({CHANGELOG: "yes"})
    with pytest.raises(TypeError):
        backend.set_options({jvm_names.ROCKSDB_CONF_PREFIX + "maxOpenFiles": [1]})
    with pytest.raises(TypeError):
        backend.set_options([(CHANGELOG, "true")])
    for size in (0, -1, 1.5, True, "64"):
        with pytest.raises(ValueError, match="must be a positive int"):
            backend.set_max_memory_usage_mb(size)
        with pytest.raises(ValueError, match="must be a positive int"):
            backend.set_block_cache_size_mb(size)
    with pytest.raises(TypeError):
        backend.set_bounded_memory_usage("true")
    with pytest.raises(TypeError):
        EmbeddedRocksDBStateBackend(enable_changelog_checkpointing="true")
    with pytest.raises(ValueError):
        CustomStateBackend(" ")
    assert backend == EmbeddedRocksDBStateBackend()


def test_provider_class_dispatch():
    assert from_provider_class(jvm_names.HEAP_PROVIDER_CLASS) == HashMapStateBackend()
    # Unset is Spark's default provider.
    for unset in (None, "", "  "):
        assert from_provider_class(unset) == CustomStateBackend(jvm_names.HDFS_PROVIDER_CLASS)
    assert from_provider_class("com.example.P") == CustomStateBackend("com.example.P")
    # RocksDB takes its settings from the configuration, and only those: an unset changelog
    # setting is Spark's default, off.
    read = from_provider_class(ROCKSDB, {jvm_names.ROCKSDB_MAX_MEMORY_USAGE_MB_CONF: "300",
                                          "spark.sql.shuffle.partitions": "4"})
    assert type(read) is EmbeddedRocksDBStateBackend
    assert not read.is_changelog_checkpointing_enabled()
    assert read.get_max_memory_usage_mb() == 300
    assert read.get_options() == {CHANGELOG: "false",
                                  jvm_names.ROCKSDB_MAX_MEMORY_USAGE_MB_CONF: "300"}
    assert from_provider_class(ROCKSDB, {CHANGELOG: " TRUE "}).is_changelog_checkpointing_enabled()


def test_defaults_are_spark_ones(spark):
    defaults = spark.sparkContext._jvm.org.apache.spark.sql.execution.streaming.state \
        .RocksDBConf.apply()
    backend = EmbeddedRocksDBStateBackend()
    assert backend.get_max_memory_usage_mb() == defaults.totalMemoryUsageMB()
    assert backend.get_block_cache_size_mb() == defaults.blockCacheSizeMB()
    assert backend.is_bounded_memory_usage() == defaults.boundedMemoryUsage()
    assert backend.is_compact_on_commit() == defaults.compactOnCommit()


def test_round_trip_through_a_builder():
    config = get_checkpoint_config(SparkSession.builder.master("local[1]"))
    assert config.get_state_backend() == CustomStateBackend(jvm_names.HDFS_PROVIDER_CLASS)
    tuned = EmbeddedRocksDBStateBackend()
    tuned.set_bounded_memory_usage(True)
    tuned.set_options({jvm_names.ROCKSDB_CONF_PREFIX + "maxOpenFiles": 64})
    assert config.set_state_backend(tuned) is config
    assert config.get_state_backend() == tuned
    assert config._conf.get(jvm_names.ROCKSDB_BOUNDED_MEMORY_USAGE_CONF) == "true"
    # Back to the hash map: only the provider changes, the RocksDB settings stay.
    config.set_state_backend(HashMapStateBackend())
    assert config.get_state_backend() == HashMapStateBackend()
    assert config._conf.get(jvm_names.ROCKSDB_BOUNDED_MEMORY_USAGE_CONF) == "true"
    config.set_state_backend(CustomStateBackend("com.example.P"))
    assert config.get_state_backend() == CustomStateBackend("com.example.P")
    with pytest.raises(TypeError, match="set_state_backend takes a StateBackend"):
        config.set_state_backend(ROCKSDB)


def test_round_trip_through_a_running_session(spark):
    config = get_checkpoint_config(spark)
    assert config.get_state_backend() == HashMapStateBackend()  # the module's session
    tuned = EmbeddedRocksDBStateBackend()
    tuned.set_block_cache_size_mb(16)
    try:
        config.set_state_backend(tuned)
        assert spark.conf.get(jvm_names.PROVIDER_CLASS_CONF) == ROCKSDB
        assert spark.conf.get(jvm_names.ROCKSDB_BLOCK_CACHE_SIZE_MB_CONF) == "16"
        assert config.get_state_backend() == tuned
        assert get_checkpoint_config(spark).get_state_backend() == tuned
        config.set_state_backend(HashMapStateBackend())
        assert config.get_state_backend() == HashMapStateBackend()
        assert spark.conf.get(CHANGELOG) == "true"  # left as it was
    finally:
        config.set_state_backend(HashMapStateBackend())
        for key in tuned.get_options():
            spark.conf.unset(key)


def test_configure_spark_with_checkpoint_storage_sets_the_backend(spark):
    """(The module's running session already holds the jar, so that the helper accepts new
    builders in this process; none of them is started.)"""
    def options(**kwargs):
        builder = SparkSession.builder.master("local[1]")
        if "provider" in kwargs:
            builder = builder.config(jvm_names.PROVIDER_CLASS_CONF, kwargs.pop("provider"))
        return dict(configure_spark_with_checkpoint_storage(builder, **kwargs)._options)

    assert options()[jvm_names.PROVIDER_CLASS_CONF] == jvm_names.HEAP_PROVIDER_CLASS
    assert options(provider="com.example.P")[jvm_names.PROVIDER_CLASS_CONF] == "com.example.P"
    rocksdb = options(state_backend=EmbeddedRocksDBStateBackend())
    assert rocksdb[jvm_names.PROVIDER_CLASS_CONF] == ROCKSDB and rocksdb[CHANGELOG] == "true"
    assert rocksdb[jvm_names.FILE_MANAGER_CLASS_CONF] == jvm_names.FILE_MANAGER_CLASS
    # A backend given wins over the provider the builder names.
    given = options(provider="com.example.P", state_backend=HashMapStateBackend())
    assert given[jvm_names.PROVIDER_CLASS_CONF] == jvm_names.HEAP_PROVIDER_CLASS
    with pytest.raises(TypeError, match="state_backend must be a StateBackend"):
        options(state_backend="rocksdb")


# --------------------------------------------------------------------------------------
# transformWithStateInPandas on RocksDB, through both storages, across a new driver

#: The driver of one phase: each variant's query (RocksDB, changelog checkpointing on) reads
#: its own source folder and writes its output with Spark's file sink (exactly once, so the
#: output of both phases is the whole output). No-data batches are off: a processing-time
#: query would otherwise run one per trigger for ever, and every batch here is one the test
#: feeds, so timers and TTL see only the batch timestamps the phases below order.
TWS_DRIVER = r"""
import functools, json, os, time
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor
from spark_checkpoint_storage import (
    DriverCheckpointStorage, EmbeddedRocksDBStateBackend, FileSystemCheckpointStorage,
    configure_spark_with_checkpoint_storage, get_checkpoint_config, jvm_names)

spec = json.loads(%r)
root = spec["root"]
SHORT_TTL_MS = 2000


class Sessions(StatefulProcessor):
    # Per key: a count (value state), every value (list state), how often each value came
    # (map state), two flags with a short and a long TTL, and a timer that a negative value
    # -s asks for s seconds later, which emits the key's totals and clears all of its state.

    def init(self, handle):
        self.handle = handle
        self.count = handle.getValueState("count", "n long")
        self.values = handle.getListState("values", "v long")
        self.seen = handle.getMapState("seen", "v long", "times long")
        self.short = handle.getValueState("short", "b boolean", ttlDurationMs=SHORT_TTL_MS)
        self.long = handle.getValueState("long", "b boolean", ttlDurationMs=3600 * 1000)

    def totals(self, key, kind, had_short, had_long):
        n = self.count.get()[0] if self.count.exists() else 0
        total = sum(row[0] for row in self.values.get())
        distinct = len(list(self.seen.keys()))
        return pd.DataFrame({"k": [key[0]], "kind": [kind], "n": [n], "total": [total],
                             "distinct": [distinct], "had_short": [had_short],
                             "had_long": [had_long]})

    def handleInputRows(self, key, rows, timerValues):
        values = [int(v) for frame in rows for v in frame["v"]]
        had_short, had_long = self.short.exists(), self.long.exists()
        data = [v for v in values if v >= 0]
        n = (self.count.get()[0] if self.count.exists() else 0) + len(data)
        self.count.update((n,))
        if data:
            self.values.appendList([(v,) for v in data])
        for v in data:
            times = self.seen.getValue((v,))[0] if self.seen.containsKey((v,)) else 0
            self.seen.updateValue((v,), (times + 1,))
        self.short.update((True,))
        self.long.update((True,))
        for v in values:
            if v < 0:
                self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() - v * 1000)
        yield self.totals(key, "input", had_short, had_long)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        out = self.totals(key, "closed", False, False)
        for state in (self.count, self.values, self.seen, self.short, self.long):
            state.clear()
        yield out

    def close(self):
        pass


builder = (SparkSession.builder.master("local[2]")
           .config("spark.ui.enabled", "false")
           .config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", 2)
           .config("spark.sql.streaming.noDataMicroBatches.enabled", "false"))
spark = configure_spark_with_checkpoint_storage(
    builder, state_backend=EmbeddedRocksDBStateBackend()).getOrCreate()
config = get_checkpoint_config(spark)


@functools.lru_cache(maxsize=None)
def checkpoint_of(variant):
    # Phase 2 resumes the migrated variant from its checkpoint migrated to RocksDB (rescaled
    # where the spec says), which it migrates first (once: a query started again resumes it).
    folder = os.path.join(root, variant)
    if variant != "filesystem-migrated" or spec["phase"] == 1:
        return os.path.join(folder, "checkpoint")
    from spark_checkpoint_storage.migration import migrate
    result = migrate(os.path.join(folder, "checkpoint"), os.path.join(folder, "migrated"),
                     to="rocksdb", num_partitions=spec.get("rescale_to"), spark=spark)
    print("MIGRATED " + json.dumps(result.to_dict()))
    return os.path.join(folder, "migrated")


def start(variant):
    folder = os.path.join(root, variant)
    checkpoint = checkpoint_of(variant)
    if variant == "spark-file-manager":
        spark.conf.set(jvm_names.FILE_MANAGER_CLASS_CONF, jvm_names.spark_file_manager_class())
    else:
        spark.conf.set(jvm_names.FILE_MANAGER_CLASS_CONF, jvm_names.FILE_MANAGER_CLASS)
        storage = (FileSystemCheckpointStorage if variant.startswith("filesystem")
                   else DriverCheckpointStorage)(os.path.join(folder, "storage"))
        config.set_checkpoint_storage(storage)
    os.makedirs(os.path.join(folder, "source"), exist_ok=True)
    stream = (spark.readStream.schema("k long, v long").parquet(os.path.join(folder, "source"))
              .groupBy("k").transformWithStateInPandas(
                  statefulProcessor=Sessions(),
                  outputStructType="k long, kind string, n long, total long, distinct long, "
                                   "had_short boolean, had_long boolean",
                  outputMode="Append", timeMode="ProcessingTime"))
    return (stream.writeStream.format("parquet").option("path", os.path.join(folder, "out"))
            .option("checkpointLocation", checkpoint).start())


def run(query, variant, rows):
    spark.createDataFrame(rows, "k long, v long").coalesce(1).write.mode("append") \
        .parquet(os.path.join(root, variant, "source"))
    # Spark gives the driver-side Python worker of transformWithStateInPandas 10 s to connect
    # back (PythonWorkerFactory.createSimpleWorker, not a setting); on a machine whose cores
    # other tests keep busy, starting Python with pandas can take longer, and the query fails
    # before its batch. It is started again from its checkpoint, as a user would: the file
    # sink's output stays exactly once, and the replayed batch keeps its timestamp. A pause
    # first: the busy spell that slowed the worker may pass.
    for attempt in range(5):
        try:
            query.processAllAvailable()
            return query
        except Exception as e:
            if "Python worker failed to connect back" not in str(e) or attempt == 4:
                raise
            print("RESTARTED %%s: the Python worker did not connect back in time" %% variant, flush=True)
            time.sleep(20)
            query = start(variant)


marker = os.path.join(root, "phase-1-ended")
if spec["phase"] == 2:
    # Every short TTL and timer of phase 1 has expired when phase 2's first batch starts.
    time.sleep(max(0.0, float(open(marker).read()) + SHORT_TTL_MS / 1000.0 + 0.5 - time.time()))
for variant in spec["variants"]:
    query = start(variant)
    if spec["phase"] == 1:
        query = run(query, variant, [(k, v) for k in range(6) for v in (1, 2, 2)] + [(5, -1)])
        time.sleep(1.5)  # key 5's timer (1 s) fires in the next batch
        query = run(query, variant, [(k, 3) for k in (6, 7) for _ in range(2)] + [(7, -1)])
    else:
        query = run(query, variant, [(k, 4) for k in (0, 1, 2)] + [(8, 1)])
        query = run(query, variant, [(5, 2), (7, 9)])
    query.stop()
    with open(os.path.join(root, variant, "checkpoint", "offsets", "0")) as f:
        assert jvm_names.ROCKSDB_PROVIDER_CLASS in f.read(), variant
if spec["phase"] == 1:
    with open(marker, "w") as f:
        f.write(repr(time.time()))
print("PHASE", spec["phase"], "DONE")
spark.stop()
"""

VARIANTS = ["filesystem", "driver", "spark-file-manager"]

#: (k, kind, n, total, distinct, had_short, had_long) of every row the input implies.
TWS_EXPECTED = sorted(
    # phase 1, batch 0: keys 0-5 get 1, 2, 2 (key 5 also asks for a timer in 1 s)
    [(k, "input", 3, 5, 2, False, False) for k in range(6)]
    # batch 1, 1.5 s later: keys 6, 7 get 3, 3 (key 7 asks for a timer); key 5's timer fires
    + [(k, "input", 2, 6, 1, False, False) for k in (6, 7)]
    + [(5, "closed", 3, 5, 2, False, False)]
    # phase 2 (a new driver), batch 2: keys 0-2 get 4: the short TTL has expired, the long
    # one not; key 8 is new; key 7's timer, restored from the checkpoint, fires
    + [(k, "input", 4, 9, 3, False, True) for k in (0, 1, 2)]
    + [(8, "input", 1, 1, 1, False, False), (7, "closed", 2, 6, 1, False, False)]
    # batch 3: keys 5 and 7 start again from nothing (their timers cleared every state)
    + [(5, "input", 1, 2, 1, False, False), (7, "input", 1, 9, 1, False, False)])


# Its drivers start again (a pause each) when Spark's Python worker misses its 10 s to connect.
@pytest.mark.timeout(1200)
@needs_spark_4
def test_transform_with_state_on_rocksdb_through_both_storages_resumes_in_a_new_driver(
        spark, subproc, tmp_path):
    root = str(tmp_path / "tws")
    # A fourth query is migrated between the drivers, rescaled from 2 to 5 partitions where
    # Spark has its state rewriter (4.2+), copied before; then it resumes on the copy.
    rescale_to = 5 if _LINE >= (4, 2) else None
    for phase in (1, 2):
        spec = {"root": root, "phase": phase, "variants": VARIANTS + ["filesystem-migrated"],
                "rescale_to": rescale_to}
        output = assert_ok(subproc.python(TWS_DRIVER % json.dumps(spec), timeout=600,
                                          env={"TZ": "UTC"}))
        assert "PHASE %d DONE" % phase in output
    _check_migrated_transform_with_state(spark, os.path.join(root, "filesystem-migrated"),
                                         output, rescale_to)

    counts = {}
    for variant in VARIANTS:
        out = spark.read.parquet(os.path.join(root, variant, "out")).collect()
        assert sorted(tuple(r) for r in out) == TWS_EXPECTED, variant
        checkpoint = os.path.join(root, variant, "checkpoint")
        state = files_under(os.path.join(checkpoint, "state"))
        counts[variant] = state
        with open(os.path.join(checkpoint, "offsets", "3")) as f:
            assert ROCKSDB in f.read()

    spark_files = counts["spark-file-manager"]
    # Spark's file manager: a changelog file per partition and batch (4 batches, 2 partitions).
    assert len([f for f in spark_files if f.endswith(".changelog")]) == 8, spark_files
    for variant in ("filesystem", "driver"):
        checkpoint = os.path.join(root, variant, "checkpoint")
        ours = counts[variant]
        # Ours: every changelog is in the packs, none on disk in the state folder.
        assert not [f for f in ours if "changelog" in f], (variant, ours)
        packs = files_under(os.path.join(checkpoint, "state-packs"))
        assert len(packs) == 4, (variant, packs)  # one per batch
        packed = b"".join(open(os.path.join(checkpoint, "state-packs", p), "rb").read()
                          for p in packs)
        for partition in (0, 1):
            assert ("state/0/%d/4.changelog" % partition).encode() in packed, variant
        # What stays on disk: the operator's metadata and schema, RocksDB's first snapshot
        # and its SST files (shared by later snapshots).
        assert 2 * len(ours) <= len(spark_files), (variant, ours, spark_files)
    print("state files: " + ", ".join("%s %d" % (v, len(counts[v])) for v in VARIANTS))


def _check_migrated_transform_with_state(spark, folder, output, rescale_to):
    """The query migrated (and rescaled) between its drivers gave every row the others gave,
    timers and TTL included; its migration reported every state variable's rows, placed each
    key where Spark's shuffle sends it, and left its source as it was."""
    out = spark.read.parquet(os.path.join(folder, "out")).collect()
    assert sorted(tuple(r) for r in out) == TWS_EXPECTED
    result = json.loads(re.search(r"^MIGRATED (.*)$", output, re.M).group(1))
    partitions = rescale_to or 2
    assert (result["sourceNumPartitions"], result["numPartitions"]) == (2, partitions)
    assert result["targetProvider"] == ROCKSDB and result["batchId"] == 1
    [operator] = result["operators"]
    stores = {s["store"]: s for s in operator["stores"]}
    assert sorted(stores) == ["count", "long", "seen", "short", "values"], stores
    # After phase 1 keys 0-4, 6 and 7 hold state; key 5's timer cleared its state.
    assert stores["count"]["rows"] == 7 and len(stores["count"]["rowsPerPartition"]) == partitions
    assert stores["values"]["rows"] == 5 * 3 + 2 * 2
    migrated = os.path.join(folder, "migrated")
    # The source is only read: it still ends with phase 1's batches.
    assert sorted(n for n in os.listdir(os.path.join(folder, "checkpoint", "offsets"))
                  if not n.startswith(".")) == ["0", "1"]
    # The target names its own state schema files, not the source's.
    for name in os.listdir(os.path.join(migrated, "state", "0", "_metadata", "v2")):
        if not name.startswith("."):
            with open(os.path.join(migrated, "state", "0", "_metadata", "v2", name)) as f:
                text = f.read()
            assert "/checkpoint/state/" not in text and "/migrated/state/0/_stateSchema/" in text, text
    # No batch of its own: the resumed query went on with batches 2 and 3.
    assert sorted(n for n in os.listdir(os.path.join(migrated, "offsets"))
                  if not n.startswith(".")) == ["0", "1", "2", "3"]
    if rescale_to:
        with open(os.path.join(migrated, "offsets", "3")) as f:
            assert '"spark.sql.shuffle.partitions":"%d"' % rescale_to in f.read()
        # Every key's state lies in the partition Spark's hash partitioning of the key picks.
        spark.streams.active  # Spark 4.2's RocksDB needs the state store coordinator it starts
        rows = (spark.read.format("statestore").option("path", migrated)
                .option("stateVarName", "count").load()
                .select("partition_id", F.expr("pmod(hash(key.k), %d)" % rescale_to).alias("p"))
                .collect())
        assert rows and all(r.partition_id == r.p for r in rows), rows
        assert len({r.partition_id for r in rows}) > 2, rows


@needs_spark_4
@pytest.mark.cluster
def test_transform_with_state_on_rocksdb_survives_executor_kills(tmp_path):
    """transformWithStateInPandas on RocksDB (changelog checkpointing on) through each of our
    storages on local-cluster, beside an aggregation, in one driver (the driver storage's
    queries a variant of support/stateful_operators.py): both executors SIGKILLed inside
    running batches, one after the other; Spark replaces them and the results equal the batch
    computation."""
    import test_stateful_operators as tso
    names = ["transform_with_state", "aggregation_update"]
    # Changelog checkpointing on, as EmbeddedRocksDBStateBackend sets it: the changelogs go
    # through our file manager into the storage.
    results = tso.run_scenario(tmp_path, "rocksdb", "executor_killed", operators=names, extra={
        "spark_conf": {CHANGELOG: "true"},
        "variants": [{"label": "driver", "storage": "driver", "operators": names}]})
    log = results["log"]
    killed = [k["executor"] for k in log["killed"]]
    assert killed == ["0", "1"], log
    assert all(k["query"].rsplit("/", 1)[-1] in names and k["batch"] >= 0 for k in log["killed"]), log
    assert log["executors_after_kills"] and not set(log["executors_after_kills"]) & set(killed), log
    marker = {"filesystem": "FileSystemCheckpointStorage", "driver": "DriverCheckpointStorage"}
    for storage in ("filesystem", "driver"):
        view = tso.variant_results(results, None if storage == "filesystem" else storage)
        for name in names:
            tso.check(view, "rocksdb", name)
            assert marker[storage] in view["operators"][name]["checkpoint"]["storage"], (storage, name)


# --------------------------------------------------------------------------------------
# Checkpoint format version 2, RocksDB through our file manager

class _Counts:
    """A transformWithStateInPandas counting rows and summing values per key (value and
    list state), its output appended to a file sink."""

    @staticmethod
    def processor():
        import pandas as pd
        from pyspark.sql.streaming import StatefulProcessor

        class Counts(StatefulProcessor):
            def init(self, handle):
                self.count = handle.getValueState("count", "n long")
                self.values = handle.getListState("values", "v long")

            def handleInputRows(self, key, rows, timerValues):
                values = [int(v) for frame in rows for v in frame["v"]]
                n = (self.count.get()[0] if self.count.exists() else 0) + len(values)
                self.count.update((n,))
                self.values.appendList([(v,) for v in values])
                yield pd.DataFrame({"k": [key[0]], "n": [n],
                                    "total": [sum(r[0] for r in self.values.get())]})

            def close(self):
                pass

        return Counts()


def _start_v2_queries(spark, root):
    source = os.path.join(root, "source")
    os.makedirs(source, exist_ok=True)
    stream = spark.readStream.schema(SCHEMA).parquet(source)
    aggregation = (stream.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("total"))
                   .writeStream.outputMode("complete")
                   .foreachBatch(lambda df, batch: df.write.mode("overwrite").parquet(
                       os.path.join(root, "aggregation-out", str(batch))))
                   .option("checkpointLocation", os.path.join(root, "aggregation")).start())
    tws = (stream.groupBy("k").transformWithStateInPandas(
        statefulProcessor=_Counts.processor(), outputStructType="k long, n long, total long",
        outputMode="Append", timeMode="None")
        .writeStream.format("parquet").option("path", os.path.join(root, "tws-out"))
        .option("checkpointLocation", os.path.join(root, "tws")).start())
    return aggregation, tws


@needs_spark_4
def test_checkpoint_format_version_2_with_rocksdb_through_our_file_manager(spark, tmp_path):
    root = str(tmp_path)
    config = get_checkpoint_config(spark)
    config.set_state_backend(EmbeddedRocksDBStateBackend())
    spark.conf.set(FORMAT_VERSION, "2")
    spark.conf.set(STORAGE, "filesystem")
    batches = [[(k, b + 1) for k in range(5) for _ in range(b + 1)] for b in range(3)]
    try:
        queries = _start_v2_queries(spark, root)
        for rows in batches[:2]:
            spark.createDataFrame(rows, SCHEMA).coalesce(1).write.mode("append") \
                .parquet(os.path.join(root, "source"))
            for query in queries:
                query.processAllAvailable()
        for query in queries:
            query.stop()
        # Restarted: the state of both operators is restored from batch 1's checkpoint.
        queries = _start_v2_queries(spark, root)
        spark.createDataFrame(batches[2], SCHEMA).coalesce(1).write.mode("append") \
            .parquet(os.path.join(root, "source"))
        for query in queries:
            query.processAllAvailable()
            query.stop()
    finally:
        spark.conf.unset(FORMAT_VERSION)
        spark.conf.unset(STORAGE)
        config.set_state_backend(HashMapStateBackend())
        spark.conf.unset(CHANGELOG)

    # Key k: 1 row of 1, 2 rows of 2, 3 rows of 3.
    final = sorted(tuple(r) for r in spark.read.parquet(
        os.path.join(root, "aggregation-out", "2")).collect())
    assert final == [(k, 6, 14) for k in range(5)]
    tws = sorted(tuple(r) for r in spark.read.parquet(os.path.join(root, "tws-out")).collect())
    assert tws == sorted([(k, 1, 1) for k in range(5)] + [(k, 3, 5) for k in range(5)]
                         + [(k, 6, 14) for k in range(5)])
    for name in ("aggregation", "tws"):
        checkpoint = os.path.join(root, name)
        with open(os.path.join(checkpoint, "offsets", "2")) as f:
            assert ROCKSDB in f.read()
        # Version 2: the commit log names each store's checkpoint of the batch, and the
        # changelog of that checkpoint is in the packs, not on disk.
        with open(os.path.join(checkpoint, "commits", "2")) as f:
            ids = json.loads(f.read().splitlines()[1])["stateUniqueIds"]["0"]
        assert len(ids) == 2, ids
        assert not [f for f in files_under(os.path.join(checkpoint, "state"))
                    if "changelog" in f], name
        packed = b"".join(open(os.path.join(checkpoint, "state-packs", p), "rb").read()
                          for p in os.listdir(os.path.join(checkpoint, "state-packs")))
        for partition, (unique_id,) in enumerate(ids):
            assert ("state/0/%d/3_%s.changelog" % (partition, unique_id)).encode() in packed, \
                (name, partition, unique_id)
        # RocksDB's snapshots named by checkpoint id (transformWithState's first batch makes
        # one per partition): from 4.2 RocksDB reads them through the file manager, and they
        # are packed too (its SST files stay files); before 4.2 they are files.
        zips_on_disk = [f for f in files_under(os.path.join(checkpoint, "state")) if ".zip" in f]
        snapshots_packed = set(re.findall(rb"state/0/\d/\d+_[0-9a-f-]+\.zip(?!\.crc)", packed))
        if _LINE >= (4, 2):
            assert not zips_on_disk, (name, zips_on_disk)
            assert len(snapshots_packed) >= (2 if name == "tws" else 0), (name, snapshots_packed)
        else:
            assert not snapshots_packed, (name, snapshots_packed)
            assert len(zips_on_disk) >= (2 if name == "tws" else 0), (name, zips_on_disk)


CLEANUP_DRIVER = r"""
import json, os, time
from pyspark.sql import SparkSession, functions as F
from spark_checkpoint_storage import (
    EmbeddedRocksDBStateBackend, FileSystemCheckpointStorage, configure_spark_with_checkpoint_storage)
from spark_checkpoint_storage.inspection import inspect_checkpoint

root = %r
builder = (SparkSession.builder.master("local[2]")
           .config("spark.ui.enabled", "false")
           .config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", 2)
           .config("spark.sql.streaming.stateStore.checkpointFormatVersion", 2)
           # A snapshot every version, uploaded and cleaned up by maintenance twice a second,
           # two batches kept: old snapshots, changelogs and SST files go while the query runs.
           .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", 1)
           .config("spark.sql.streaming.stateStore.maintenanceInterval", "500ms")
           .config("spark.sql.streaming.minBatchesToRetain", 2))
spark = configure_spark_with_checkpoint_storage(
    builder, FileSystemCheckpointStorage("file://" + os.path.join(root, "storage")),
    state_backend=EmbeddedRocksDBStateBackend()).getOrCreate()
source, checkpoint = os.path.join(root, "source"), os.path.join(root, "checkpoint")
os.makedirs(source)
query = (spark.readStream.schema("k long, v long").parquet(source)
         .groupBy("k").agg(F.count("*").alias("n"))
         .writeStream.outputMode("update").format("noop")
         .option("checkpointLocation", checkpoint).start())
for b in range(8):
    # Keys 0-9 every batch, ten new keys each batch: every version changes the SST files.
    spark.createDataFrame([(k, b) for k in list(range(10)) + list(range(10 * b + 10, 10 * b + 20))],
                          "k long, v long").coalesce(1).write.mode("append").parquet(source)
    query.processAllAvailable()
    time.sleep(1.2)
query.stop()
stores = inspect_checkpoint(checkpoint).stores.to_pylist()
# A new RocksDB instance (the state data source's) loads the last version from the checkpoint:
# the packed snapshot and the SST files it names.
state = {r.key.k: r.value[0] for r in spark.read.format("statestore").load(checkpoint).collect()}
print("RESULT " + json.dumps({"stores": stores, "state": state}))
spark.stop()
"""


@needs_spark_4_2
def test_rocksdb_cleanup_keeps_what_packed_snapshots_need(subproc, tmp_path):
    """Checkpoint format version 2 on 4.2+: RocksDB's snapshots are packed, its SST files stay
    files. RocksDB's cleanup (minBatchesToRetain, run by maintenance while the query runs)
    decides which SST files to delete from the snapshots it lists and opens through our file
    manager: it deleted old versions, and the last one still loads with every key's count."""
    root = str(tmp_path / "cleanup")
    out = assert_ok(subproc.python(CLEANUP_DRIVER % root, timeout=600))
    result = json.loads(re.search(r"^RESULT (.*)$", out, re.M).group(1))
    assert result["state"] == {**{str(k): 8 for k in range(10)},
                               **{str(k): 1 for k in range(10, 90)}}, result["state"]
    for store in result["stores"]:
        assert store["inline_files"] > 0, store
        # Versions 1-8 were written (batches 0-7); cleanup removed the oldest.
        assert store["max_version"] == 8 and store["min_version"] > 2, store
    state = os.path.join(root, "checkpoint", "state")
    on_disk = files_under(state)
    assert not [f for f in on_disk if f.endswith(".zip")], on_disk  # every snapshot packed
    assert [f for f in on_disk if f.endswith(".sst")], on_disk


# --------------------------------------------------------------------------------------
# The hash-map backend: Spark refuses transformWithState on it

@needs_spark_4_2
def test_transform_with_state_on_the_hash_map_backend_fails_with_spark_message(spark, tmp_path):
    """The words a user sees, and the advice they follow: the same query runs on RocksDB."""
    from pyspark.errors import StreamingQueryException

    root = str(tmp_path)
    spark.createDataFrame([(1, 1), (2, 2)], SCHEMA).write.parquet(os.path.join(root, "source"))
    config = get_checkpoint_config(spark)

    def run(name):
        query = (spark.readStream.schema(SCHEMA).parquet(os.path.join(root, "source"))
                 .groupBy("k").transformWithStateInPandas(
                     statefulProcessor=_Counts.processor(),
                     outputStructType="k long, n long, total long",
                     outputMode="Append", timeMode="None")
                 .writeStream.format("parquet").option("path", os.path.join(root, name + "-out"))
                 .option("checkpointLocation", os.path.join(root, name)).start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    config.set_state_backend(HashMapStateBackend())
    with pytest.raises(StreamingQueryException) as err:
        run("heap")
    message = str(err.value)
    assert "STORE_BACKEND_NOT_SUPPORTED_FOR_TWS" in message
    assert ("Store backend %s is not supported by TransformWithState operator. Please use "
            "RocksDBStateStoreProvider." % jvm_names.HEAP_PROVIDER_CLASS) in message
    try:
        config.set_state_backend(EmbeddedRocksDBStateBackend())
        run("rocksdb")
    finally:
        config.set_state_backend(HashMapStateBackend())
        spark.conf.unset(CHANGELOG)
    assert sorted(tuple(r) for r in spark.read.parquet(
        os.path.join(root, "rocksdb-out")).collect()) == [(1, 1, 1), (2, 1, 2)]


# --------------------------------------------------------------------------------------
# Real-Time Mode (Spark 4.3): Spark refuses it on any provider but RocksDB

@pytest.mark.skipif(_LINE < (4, 3), reason="Spark refuses other providers for Real-Time Mode from 4.3")
def test_real_time_mode_on_the_hash_map_backend_says_to_pick_rocksdb(spark, tmp_path):
    """Spark refuses every Real-Time Mode query, stateless ones too, while a provider other
    than RocksDB is set: with the hash-map backend the user reads which backend to pick, and
    the same query passes that check once the RocksDB backend is set (it then stops at the
    rate source, which Real-Time Mode does not read: only Kafka's source does)."""
    from pyspark.errors import StreamingQueryException
    from spark_checkpoint_storage.errors import StateBackendNotSupportedException

    config = get_checkpoint_config(spark)
    rate = spark.readStream.format("rate").load()
    stateless, stateful = rate, rate.groupBy("value").count()

    def start(df, name):
        return (df.writeStream.format("console").outputMode("update")
                .trigger(realTime="5 seconds")
                .option("checkpointLocation", str(tmp_path / name)).start())

    config.set_state_backend(HashMapStateBackend())
    try:
        for name, df in (("stateless", stateless), ("stateful", stateful)):
            with pytest.raises(StateBackendNotSupportedException) as e:
                start(df, name)
            message = str(e.value)
            assert message.startswith("[CHECKPOINT_STORAGE.STATE_BACKEND_NOT_SUPPORTED] Real-Time Mode "
                                      "needs the RocksDB state backend"), message
            assert "set_state_backend(EmbeddedRocksDBStateBackend())" in message
            assert "stateless ones too" in message
            # Spark's own words follow ours.
            assert "STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED" in message
            assert isinstance(e.value, ValueError)
            assert not (tmp_path / name / "offsets").exists()
        config.set_state_backend(EmbeddedRocksDBStateBackend())
        query = start(stateful, "rocksdb")
        try:
            with pytest.raises(StreamingQueryException) as e:
                query.awaitTermination(120)
        finally:
            query.stop()
        assert "SQL_CONFIGURATION_NOT_SUPPORTED" not in str(e.value), str(e.value)
        assert "STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED" in str(e.value), str(e.value)
        assert "RateStreamMicroBatchStream" in str(e.value), str(e.value)
    finally:
        config.set_state_backend(HashMapStateBackend())

