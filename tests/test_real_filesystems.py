"""The checkpoint storages on real remote file systems, started by session fixtures
(tests/conftest.py, tests/support/realfs.py): HDFS (a MiniDFSCluster in its own JVM) and an
S3-compatible object store (SeaweedFS, reached through ``s3a://`` with credentials enforced).
On each:

- one operator of each kind of state (an aggregation, a deduplication, a stream-stream
  join's four stores; every operator in the full tier, ``dev/test --full``), with each
  storage on each file system, side by side in one scenario (and, on Spark 4.0 and later,
  transformWithStateInPandas on RocksDB on S3 in one of its own): on ``local-cluster`` an
  executor JVM is SIGKILLed mid-stream, then the driver between the state commit of a batch
  and its ``commits/N``, and a new driver resumes the queries. Every result equals the batch
  computation (tests/support/stateful_operators.py, shared with
  tests/test_stateful_operators.py);
- in one driver for both file systems (tests/support/remote_storage_checks.py): both
  storages across a restart, damaged and missing packs, retention (``minBatchesToRetain``)
  and background cleanup, a savepoint from and to the remote file system resumed exactly,
  inspection; on S3 no request copies an object (the state path never renames);
- in another driver beside it (again both file systems), ``DELETE_ON_CANCELLATION``; and
  the command line (no Spark session) inspecting and savepointing remote locations.
"""
import json
import os
import subprocess
import sys
import uuid

import pytest

from conftest import FULL_TIER, Subprocess, assert_ok, wait_or_kill

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)

from support import realfs  # noqa: E402
from support import stateful_operators as so  # noqa: E402
from test_stateful_operators import (  # noqa: E402
    CLUSTER, LOCAL, OPERATORS, PROVIDER_NAMES, STORAGE_OPERATORS, cached_scenarios, check,
    check_killed_between_state_commit_and_commit_log, run_scenario, storage_of, variant_results)

#: One scenario for both file systems, KILL_OPERATORS with each storage side by side (the
#: HDFS file system storage's queries the step's own, the others variants beside them, each
#: with its checkpoints and packs on its file system): the first driver runs on local-cluster,
#: where an executor JVM is killed after file 1, and the driver is killed in the batch of
#: file 2 (between the state commit and commits/N); then a new driver (a restart) runs that
#: batch again and feeds the flush. One chain of applications for both: a Spark start and its
#: kills cost as much as a scenario's batches. (transformWithStateInPandas runs the same steps
#: in a driver of its own: Spark gives the Python worker that plans its batches on the driver
#: 10 s to connect back, which a driver starting every operator's queries on a loaded machine
#: missed.)
STEPS = [dict(master=CLUSTER, feed=[0, 1, 2], kill_executor_after=[1], kill_driver_at=2,
              expect_exit=so.DRIVER_KILLED_EXIT),
         dict(master=LOCAL, feed=["flush"])]
STORAGES = ["filesystem", "driver"]
#: The operators of the kills' scenario: what a remote file system changes is how state and
#: packs reach it, the same for every operator, so CI runs one operator of each kind of state
#: (the storages' operators of tests/test_stateful_operators.py, which runs every operator
#: through the same kills on the local file system); the full tier runs every operator.
KILL_OPERATORS = OPERATORS if FULL_TIER else STORAGE_OPERATORS
HAS_TRANSFORM_WITH_STATE = tuple(int(x) for x in __import__("pyspark").__version__.split(".")[:2]) >= (4, 0)


def unique(fs, what: str) -> str:
    """A fresh folder on the remote file system for one scenario."""
    return fs.path("%s-%s" % (what, uuid.uuid4().hex[:8]))


def variant_label(scheme: str, storage: str):
    """The variant of the kills' scenario that runs ``storage`` on the file system of
    ``scheme`` (None: the step's own queries)."""
    return None if (scheme, storage) == ("hdfs", "filesystem") else "%s-%s" % (scheme, storage)


@pytest.fixture(scope="module")
def kill_results(minidfs, seaweed_s3, tmp_path_factory):
    """label -> the results of that variant's queries in the kills' scenario (run once)."""
    roots = {fs.scheme: unique(fs, "operators") for fs in (minidfs, seaweed_s3)}
    variants = [{"label": variant_label(scheme, storage), "storage": storage,
                 "operators": KILL_OPERATORS, "checkpoint_root": roots[scheme]}
                for scheme in ("hdfs", "s3a") for storage in STORAGES
                if variant_label(scheme, storage)]

    def run():
        return run_scenario(
            tmp_path_factory.mktemp("kills"), PROVIDER_NAMES[0], "kills_then_restart",
            "filesystem", KILL_OPERATORS, steps=STEPS,
            extra={"checkpoint_root": roots["hdfs"],
                   "spark_conf": realfs.spark_settings_of_all([minidfs, seaweed_s3]),
                   "variants": variants})
    scenario = cached_scenarios(run)
    return lambda label: variant_results(scenario(), label)


def check_kills(results, name):
    """One executor JVM killed (and gone), the driver killed between a state commit and its
    commits/N."""
    killed = results["log"]["killed"]
    assert [k["executor"] for k in killed] == ["0"], results["log"]
    assert not os.path.exists("/proc/%d" % killed[0]["pid"])
    check_killed_between_state_commit_and_commit_log(results, name)


@pytest.mark.timeout(1500)
@pytest.mark.cluster
@pytest.mark.parametrize("name", KILL_OPERATORS)
@pytest.mark.parametrize("storage", STORAGES)
def test_operator_survives_kills_and_restart(remote_fs, kill_results, storage, name):
    results = kill_results(variant_label(remote_fs.scheme, storage))
    assert {"filesystem": "FileSystemCheckpointStorage", "driver": "DriverCheckpointStorage"}[
        storage] in storage_of(results, name)
    check_kills(results, name)
    check(results, PROVIDER_NAMES[0], name)


@pytest.mark.timeout(400)
@pytest.mark.cluster
@pytest.mark.skipif(not HAS_TRANSFORM_WITH_STATE, reason="transformWithState came with Spark 4.0")
def test_transform_with_state_on_rocksdb_on_s3_survives_kills_and_restart(seaweed_s3, tmp_path):
    """transformWithStateInPandas on Spark's RocksDB provider (changelog checkpointing on)
    through the file system storage on S3: an executor JVM SIGKILLed, then the driver between
    a state commit and its commits/N; a new driver resumes. The results equal the batch
    computation; the changelogs went through our file manager (the storage's packs)."""
    name = "transform_with_state"
    results = run_scenario(tmp_path, "rocksdb", "kills_then_restart", None, [name],
                           steps=STEPS,
                           extra={"checkpoint_root": unique(seaweed_s3, "transform-with-state"),
                                  "spark_conf": dict(realfs.spark_settings(seaweed_s3), **{
                                      "spark.sql.streaming.stateStore.rocksdb."
                                      "changelogCheckpointing.enabled": "true"})})
    assert "FileSystemCheckpointStorage" in storage_of(results, name)
    check_kills(results, name)
    check(results, "rocksdb", name)


# --------------------------------------------------------------------------------------
# Storage behaviour, both file systems in one driver; DELETE_ON_CANCELLATION in another.

def start_checks(filesystems, tmp_path, checks, extra_conf=None):
    """Starts a driver process running ``checks`` on each file system of ``filesystems``, one
    after the other (support/remote_storage_checks.py)."""
    runs = {}
    for fs in filesystems:
        work = tmp_path / ("work-" + fs.scheme)
        work.mkdir()
        runs[fs.scheme] = {"work": str(work), "root": unique(fs, "storages"), "checks": checks,
                           "counters": realfs.describe(fs)}
    spec = {"runs": list(runs.values()), "spark_conf": {**realfs.spark_settings_of_all(filesystems), **(extra_conf or {})}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    s3 = [fs for fs in filesystems if isinstance(fs, realfs.SeaweedS3)]
    before = s3[0].request_counts() if s3 else None
    checks_driver = os.path.join(TESTS, "support", "remote_storage_checks.py")
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, checks_driver, str(tmp_path / "spec.json")],
                                stdout=out, stderr=err, env=Subprocess(tmp_path).env(),
                                cwd=str(tmp_path))
    return dict(filesystems=filesystems, tmp_path=tmp_path, runs=runs, before=before, proc=proc)


def finish_checks(started, timeout: float = 1200) -> dict:
    """Waits for a driver of ``start_checks``; scheme -> its results (with, on S3, the
    server's requests from the driver's start to its end)."""
    proc, tmp_path = started["proc"], started["tmp_path"]
    wait_or_kill(proc, timeout)
    assert_ok(subprocess.CompletedProcess(proc.args, proc.returncode,
                                          (tmp_path / "stdout.txt").read_text(),
                                          (tmp_path / "stderr.txt").read_text()))
    out = {}
    for fs in started["filesystems"]:
        results = json.loads((tmp_path / ("work-" + fs.scheme) / "results.json").read_text())
        results["root"] = started["runs"][fs.scheme]["root"]
        if isinstance(fs, realfs.SeaweedS3):
            after = fs.request_counts()
            results["requests"] = {k: after.get(k, 0) - started["before"].get(k, 0) for k in after}
        out[fs.scheme] = results
    return out


@pytest.fixture(scope="module")
def checks_results(minidfs, seaweed_s3, tmp_path_factory):
    """The two drivers of the checks, side by side, each on both file systems: the storage
    checks; DELETE_ON_CANCELLATION (a start-up setting: a driver of its own). The S3 requests
    counted for the first include the second's: its queries copy nothing either."""
    both = [minidfs, seaweed_s3]
    storages = start_checks(both, tmp_path_factory.mktemp("checks"),
                            ["restart", "damaged_packs", "retention", "savepoint", "inspection", "another_writer"])
    def outcome(started):
        # A driver that failed fails the tests of its own results only.
        try:
            return finish_checks(started)
        except AssertionError as e:
            return e

    delete = None
    try:
        delete = start_checks(both, tmp_path_factory.mktemp("delete-on-cancellation"),
                              ["delete_on_cancellation"], {
                                  "spark.sql.streaming.checkpointStorage.externalizedCleanup":
                                      "DELETE_ON_CANCELLATION"})
    finally:
        # The delete driver's requests fall inside the storage checks' count.
        deleted = outcome(delete) if delete is not None else None
        checked = outcome(storages)
    return {"storages": checked, "delete": deleted}


def results_of(checks_results, driver, fs):
    results = checks_results[driver]
    if isinstance(results, AssertionError):
        pytest.fail("the %s driver failed: %s" % (driver, results), pytrace=False)
    return results[fs.scheme]


@pytest.fixture(scope="module")
def storage_results(remote_fs, checks_results):
    return results_of(checks_results, "storages", remote_fs)


def no_error(results, check_name):
    assert check_name not in results.get("errors", {}), results["errors"][check_name]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("storage", STORAGES)
def test_both_storages_restart_from_remote_packs(remote_fs, storage_results, storage):
    no_error(storage_results, "restart")
    r = storage_results["restart-" + storage]
    assert r["state_equal"] and r["rows"] == 50
    # state/<operator>/<partition>/...: small state, so no file of its own, only packs; but
    # Spark's schema file, written once and never replaced, is a file (packed, it would keep
    # the first pack alive forever).
    store_files = [f for f in r["files"] if f.startswith("state/") and f.split("/")[2].isdigit()]
    assert store_files == ["state/0/0/_metadata/schema"], store_files
    assert [f for f in r["files"] if f.startswith("state-packs/")], r["files"]
    assert ("FileSystemCheckpointStorage" if storage == "filesystem" else "DriverCheckpointStorage") in r["marker"]
    assert "persistent=true" in r["marker"]


@pytest.mark.parametrize("damage", ["corrupt", "truncated", "missing"])
def test_damaged_remote_pack_fails_the_restart_naming_it(remote_fs, storage_results, damage):
    no_error(storage_results, "damaged_packs")
    r = storage_results["damaged-" + damage]
    assert len(r["packs"]) >= 2, r
    assert "State pack " in r["message"] and r["victim"] in r["message"], r["message"]
    assert remote_fs.scheme + "://" in r["message"]  # the full remote path
    if damage == "missing":
        assert "it is missing" in r["message"]


def test_retention_deletes_old_logs_state_and_packs_remotely(remote_fs, storage_results):
    no_error(storage_results, "retention")
    r = storage_results["retention"]
    assert r["gone"], r
    assert r["state_equal"]
    assert "0" not in r["offsets"] and str(r["batches"] - 1) in r["offsets"], r
    assert "1.pack" not in r["packs"] and r["packs"], r


def test_savepoint_from_and_to_remote_resumes_exactly(remote_fs, storage_results):
    no_error(storage_results, "savepoint")
    r = storage_results["savepoint"]
    assert r["path"].startswith(remote_fs.scheme + "://"), r["path"]
    assert "_savepoint" in r["files"] and "commits/4" in r["files"], r["files"]
    assert "state/0/3/5.heap-delta" in r["files"], r["files"]  # inline state as plain files
    assert not [f for f in r["files"] if f.startswith("state-packs/")]  # self-contained
    assert r["state_equal"]


def test_inspection_of_remote_checkpoint(remote_fs, storage_results):
    no_error(storage_results, "inspection")
    r = storage_results["inspection"]
    assert r["committed_batches"] == [0, 1, 2, 3, 4] and r["retained_range"] == [0, 4]
    assert r["partitions"] == [0, 1, 2, 3]
    assert r["inline_bytes"] > 0 and r["file_bytes"] == 0


def test_object_store_state_path_never_copies(seaweed_s3, storage_results, remote_fs):
    """S3 has no rename: S3A emulates one with a COPY and a DELETE per object. Every check
    above (queries on both storages, restarts, packs, cleanup) wrote its state without a
    single COPY; the only COPYs are the savepoint's publication, which renames its hidden
    folder into place: one per file of the savepoint."""
    if remote_fs is not seaweed_s3:
        pytest.skip("object store only")
    requests = storage_results["requests"]
    assert requests.get("PUT", 0) > 0, requests  # the server's counter sees the writes
    assert requests.get("COPY", 0) == len(storage_results["savepoint"]["files"]), requests


def test_a_log_entry_another_driver_wrote_first_fails_the_query(remote_fs, storage_results):
    """Our file manager does not ask the store whether the next log entry exists (a HEAD and
    a LIST a batch on S3): its create-if-absent refuses the entry another driver wrote
    first, and Spark fails the query in its words for two queries on one checkpoint."""
    no_error(storage_results, "another_writer")
    r = storage_results["another-writer"]
    assert "Multiple streaming queries are concurrently using " + r["log"] in r["message"], r["message"]
    assert r["kept"], "the other driver's entry was overwritten"


@pytest.fixture(scope="module")
def request_results(seaweed_s3, tmp_path_factory):
    """The S3 requests of steady batches, counted by the server, in a driver of its own (the
    server counts every client: nothing else may run meanwhile)."""
    return finish_checks(start_checks([seaweed_s3], tmp_path_factory.mktemp("requests"),
                                      ["requests_per_batch"]))[seaweed_s3.scheme]


#: The most S3 requests a steady batch may make, every kind counted, maintenance and Spark's
#: purge of its logs included: Spark's offset and commit log entries and the batch's pack
#: (3 PUTs), the delete of the pack it supersedes, and a tenth of a delete for each log.
REQUESTS_PER_BATCH = 6


@pytest.mark.timeout(600)
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("query", ["aggregation", "deduplication"])
def test_a_steady_batch_on_s3_makes_at_most_six_requests(request_results, storage, query):
    """State store maintenance lists every store's directory (on S3 a LIST, a HEAD and a LIST
    per store): the driver answers those listings from what it knows, so the requests of a
    batch do not grow with its state partitions (40 for the aggregation, 5 for the
    deduplication)."""
    no_error(request_results, "requests_per_batch")
    r = request_results["requests-%s-%s" % (query, storage)]
    assert r["batches"] >= 10, r
    per_batch = {k: round(v / r["batches"], 1) for k, v in r["requests"].items() if v}
    assert r["requests"]["total"] / r["batches"] <= REQUESTS_PER_BATCH, per_batch
    # The Checkpoints tab's times come from the driver, not from a HEAD of each log entry.
    assert r["requests"].get("GET", 0) / r["batches"] < 1, per_batch
    # Deletes ran in the window (Spark's purge, the superseded packs), and are counted.
    assert r["requests"].get("DELETE", 0) > 0, per_batch


# --------------------------------------------------------------------------------------
# DELETE_ON_CANCELLATION (a start-up setting: a driver of its own, above), and the command line.

def test_delete_on_cancellation_deletes_the_remote_checkpoint(remote_fs, checks_results):
    r = results_of(checks_results, "delete", remote_fs)
    no_error(r, "delete_on_cancellation")
    assert r["delete-on-cancellation"]["deleted"], r
    assert r["delete-on-cancellation"]["left"] == []


def test_command_line_inspects_and_savepoints_remote_locations(remote_fs, storage_results, tmp_path):
    """`python -m spark_checkpoint_storage` with no Spark session: the file system's settings
    from HADOOP_CONF_DIR, its jars on the launched JVM's class path."""
    checkpoint = storage_results["root"] + "/restart-driver/checkpoint"
    env = Subprocess(tmp_path).env(remote_fs.client_env(str(tmp_path / "hadoop-conf")))
    cli = [sys.executable, "-m", "spark_checkpoint_storage"]
    out = assert_ok(subprocess.run(cli + ["inspect", checkpoint, "--json"], capture_output=True,
                                   text=True, env=env, timeout=300))
    info, in_driver = json.loads(out), storage_results["inspection"]["json"]
    assert info["committedBatches"] == in_driver["committedBatches"] == [0, 1, 2, 3, 4]
    assert info["stores"] == in_driver["stores"]  # inline state read from the remote packs
    target = storage_results["root"] + "/savepoints/from-cli"
    out = assert_ok(subprocess.run(cli + ["savepoint", checkpoint, target], capture_output=True,
                                   text=True, env=env, timeout=300))
    assert out.strip().startswith(remote_fs.scheme + "://")
    out = assert_ok(subprocess.run(cli + ["inspect", target, "--json"], capture_output=True,
                                   text=True, env=env, timeout=300))
    assert json.loads(out)["committedBatches"] == [0, 1, 2, 3, 4]
