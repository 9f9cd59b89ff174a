"""Migration of a query's checkpoint between state store providers
(``spark_checkpoint_storage.migration``), end to end on real Spark.

Each direction runs two driver processes (tests/stateful_operators.py): the first runs every
operator's query on the source provider over the first files, then stops; the second
migrates each checkpoint to a new location with the target provider, resumes the queries
there (its session still names the source provider: the migrated offset log alone must make
them run on the target) and feeds the rest. What the sinks got over both drivers must equal
the batch computation over all the input.
"""
import json
import os
import sys

import pytest

from conftest import Subprocess, assert_ok

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)

import stateful_operators as so  # noqa: E402

#: operators every direction runs: aggregation, both deduplications, a stream-stream join (four
#: stores, outer: rows kept for the watermark), applyInPandasWithState with event-time timeouts,
#: session windows (prefix-key scan)
OPERATORS = ["aggregation_update", "drop_duplicates", "drop_duplicates_within_watermark",
             "join_left_outer", "apply_in_pandas_with_state", "session_window"]

#: direction -> (source provider, source storage, target provider, target storage, operators)
DIRECTIONS = {
    "hdfs_to_heap": ("hdfs", None, "heap", None, list(so.OPERATORS)),
    "rocksdb_to_heap": ("rocksdb", None, "heap", None, OPERATORS),
    "heap_to_hdfs": ("heap", None, "hdfs", None, OPERATORS),
    "heap_to_rocksdb": ("heap", None, "rocksdb", None, OPERATORS),
    "heap_filesystem_to_heap_driver": ("heap", "filesystem", "heap", "driver", OPERATORS),
}

DRIVER = """
    import sys
    sys.path.insert(0, %r)
    import stateful_operators
    stateful_operators.main(["stateful_operators.py", %r])
"""


def run_driver(root, name: str, spec: dict):
    step_dir = root / name
    step_dir.mkdir()
    spec_path = step_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    result = Subprocess(step_dir).python(DRIVER % (TESTS, str(spec_path)), timeout=900,
                                         env={"TZ": "UTC"})
    (step_dir / "stdout.txt").write_text(result.stdout)
    (step_dir / "stderr.txt").write_text(result.stderr)
    assert_ok(result)


@pytest.fixture(scope="module")
def directions(tmp_path_factory):
    cache = {}

    def get(direction):
        if direction not in cache:
            source, source_storage, target, target_storage, operators = DIRECTIONS[direction]
            root = tmp_path_factory.mktemp(direction)
            work = root / "work"
            common = dict(work=str(work), master="local[2]", operators=operators)
            run_driver(root, "source", dict(common, provider=source, storage=source_storage,
                                            checkpoint_root=str(work / "src"), feed=[0, 1, 2]))
            run_driver(root, "target", dict(
                common, provider=source, storage=target_storage,
                checkpoint_root=str(work / "dst"), migrate_from=str(work / "src"),
                migrate_to=target, feed=[3, 4, "flush"], results=True))
            cache[direction] = json.loads((work / "results.json").read_text())
        return cache[direction]

    return get


#: files each provider writes for the one version a migration writes (a snapshot of it)
STATE_FILES = {"heap": {"heap-snapshot"}, "hdfs": {"snapshot"}, "rocksdb": {"zip"}}


@pytest.mark.parametrize("direction", sorted(DIRECTIONS))
def test_migrated_queries_resume_with_exact_results(directions, direction):
    source, _, target, _, operators = DIRECTIONS[direction]
    results = directions(direction)
    migrations = results["log"]["migrations"]
    for name in operators:
        got = results["operators"][name]
        assert got["got"] == got["expected"], name
        assert got["expected"], name
        m = migrations[name]
        # Batches 0-2 were committed by the source driver: the migration took the last one.
        assert m["batchId"] >= 1, name
        assert m["sourceProvider"] == so.provider_class(source), name
        assert m["targetProvider"] == so.provider_class(target), name
        assert m["numPartitions"] == 4, name
        # The resumed query ran on the target provider: the offset log says so...
        assert so.provider_class(target) in got["checkpoint"]["offsets"], name
        assert so.provider_class(source) not in got["checkpoint"]["offsets"], name
        # ...and what the migration wrote were the target provider's files.
        assert STATE_FILES[target] <= set(m["state_files"]), (name, m["state_files"])
    # Operators with state that was still held at the migrated batch moved rows over.
    for name in ["aggregation_update", "drop_duplicates", "join_left_outer", "session_window"]:
        assert migrations[name]["rows"] > 0, name
    join_stores = {s["store"] for s in migrations["join_left_outer"]["operators"][0]["stores"]}
    assert join_stores == {"left-keyToNumValues", "left-keyWithIndexToValue",
                           "right-keyToNumValues", "right-keyWithIndexToValue"}
