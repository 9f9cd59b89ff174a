"""The checkpoint storages on real remote file systems, started by session fixtures
(tests/conftest.py, tests/support/realfs.py): HDFS (a MiniDFSCluster in its own JVM) and an
S3-compatible object store (SeaweedFS, reached through ``s3a://`` with credentials enforced).
On each:

- every stateful operator, with each storage, in one scenario per storage: the driver is
  SIGKILLed between the state commit of a batch and its ``commits/N`` and a new driver resumes
  the queries; with the file system storage on ``local-cluster``, where an executor JVM is
  SIGKILLed mid-stream first. Every result equals the batch computation
  (tests/support/stateful_operators.py, shared with tests/test_stateful_operators.py);
- in one driver for both file systems (tests/support/remote_storage_checks.py): both
  storages across a restart, damaged and missing packs, retention (``minBatchesToRetain``)
  and background cleanup, a savepoint from and to the remote file system resumed exactly,
  inspection; on S3 no request copies an object (the state path never renames);
- in another driver (again both file systems), ``DELETE_ON_CANCELLATION``; and the command
  line (no Spark session) inspecting and savepointing remote locations.
"""
import json
import os
import subprocess
import sys
import uuid

import pytest

from conftest import Subprocess, assert_ok

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)

from support import realfs  # noqa: E402
from support import stateful_operators as so  # noqa: E402
from test_stateful_operators import (  # noqa: E402
    CLUSTER, LOCAL, OPERATORS, PROVIDER_NAMES, cached_scenarios, check,
    check_killed_between_state_commit_and_commit_log, run_scenario, storage_of)

#: One scenario per file system and storage, all operators side by side: the driver is
#: killed in the batch of file 2 (between the state commit and commits/N), then a new driver
#: (a restart) feeds file 3 and the flush. With the file system storage the first driver runs
#: on local-cluster and an executor JVM is killed after file 1 too; the driver storage runs
#: on local[2] (its executor side is the same code; local-cluster's start-up and executor
#: JVMs would double the time this module adds to CI).
STEPS = {
    "filesystem": [dict(master=CLUSTER, feed=[0, 1, 2], kill_executor_after=[1], kill_driver_at=2,
                        expect_exit=so.DRIVER_KILLED_EXIT),
                   dict(master=LOCAL, feed=[3, "flush"])],
    "driver": [dict(master=LOCAL, feed=[0, 1, 2], kill_driver_at=2, expect_exit=so.DRIVER_KILLED_EXIT),
               dict(master=LOCAL, feed=[3, "flush"])],
}
STORAGES = ["filesystem", "driver"]


def unique(fs, what: str) -> str:
    """A fresh folder on the remote file system for one scenario."""
    return fs.path("%s-%s" % (what, uuid.uuid4().hex[:8]))


@pytest.fixture(scope="module")
def operator_results(remote_fs, tmp_path_factory):
    """storage -> results of its scenario on this file system (run once)."""
    def run(storage):
        return run_scenario(
            tmp_path_factory.mktemp("%s-%s" % (remote_fs.scheme, storage)),
            PROVIDER_NAMES[0], "kills_then_restart", storage, OPERATORS, steps=STEPS[storage],
            extra={"checkpoint_root": unique(remote_fs, "operators-" + storage),
                   "spark_conf": realfs.spark_settings(remote_fs)})
    return cached_scenarios(run)


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("storage", [pytest.param("filesystem", marks=pytest.mark.cluster), "driver"])
def test_operator_survives_kills_and_restart(remote_fs, operator_results, storage, name):
    results = operator_results(storage)
    assert {"filesystem": "FileSystemCheckpointStorage", "driver": "DriverCheckpointStorage"}[
        storage] in storage_of(results, name)
    if storage == "filesystem":
        killed = results["log"]["killed"]
        assert [k["executor"] for k in killed] == ["0"], results["log"]
        assert not os.path.exists("/proc/%d" % killed[0]["pid"])
    check_killed_between_state_commit_and_commit_log(results, name)
    check(results, PROVIDER_NAMES[0], name)


@pytest.mark.cluster
@pytest.mark.skipif(tuple(int(x) for x in __import__("pyspark").__version__.split(".")[:2]) < (4, 0),
                    reason="transformWithState came with Spark 4.0")
def test_transform_with_state_on_rocksdb_on_s3_survives_kills_and_restart(seaweed_s3, tmp_path):
    """transformWithStateInPandas on Spark's RocksDB provider (changelog checkpointing on)
    through the file system storage on S3: an executor JVM SIGKILLed, then the driver between
    a state commit and its commits/N; a new driver resumes. The results equal the batch
    computation; the changelogs went through our file manager (the storage's packs)."""
    names = ["transform_with_state"]
    results = run_scenario(tmp_path, "rocksdb", "kills_then_restart", None, names,
                           steps=STEPS["filesystem"],
                           extra={"checkpoint_root": unique(seaweed_s3, "transform-with-state"),
                                  "spark_conf": dict(realfs.spark_settings(seaweed_s3), **{
                                      "spark.sql.streaming.stateStore.rocksdb."
                                      "changelogCheckpointing.enabled": "true"})})
    assert "FileSystemCheckpointStorage" in storage_of(results, names[0])
    killed = results["log"]["killed"]
    assert [k["executor"] for k in killed] == ["0"], results["log"]
    check_killed_between_state_commit_and_commit_log(results, names[0])
    check(results, "rocksdb", names[0])


# --------------------------------------------------------------------------------------
# Storage behaviour, both file systems in one driver.

def settings_of(filesystems, extra_conf=None) -> dict:
    """The settings of a session that reaches every file system of ``filesystems`` (their
    jars' class paths joined)."""
    conf = {}
    for fs in filesystems:
        for key, value in realfs.spark_settings(fs).items():
            conf[key] = conf[key] + ":" + value if key.endswith("extraClassPath") and key in conf else value
    conf.update(extra_conf or {})
    return conf


def run_checks(filesystems, tmp_path, checks, extra_conf=None) -> dict:
    """Runs ``checks`` on each file system of ``filesystems``, one after the other in one
    driver process; scheme -> its results."""
    runs = {}
    for fs in filesystems:
        work = tmp_path / ("work-" + fs.scheme)
        work.mkdir()
        runs[fs.scheme] = {"work": str(work), "root": unique(fs, "storages"), "checks": checks}
    spec = {"runs": list(runs.values()), "spark_conf": settings_of(filesystems, extra_conf)}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    s3 = [fs for fs in filesystems if isinstance(fs, realfs.SeaweedS3)]
    before = s3[0].request_counts() if s3 else None
    checks_driver = os.path.join(TESTS, "support", "remote_storage_checks.py")
    result = subprocess.run([sys.executable, checks_driver, str(tmp_path / "spec.json")],
                            capture_output=True, text=True,
                            timeout=1200, env=Subprocess(tmp_path).env(), cwd=str(tmp_path))
    (tmp_path / "stdout.txt").write_text(result.stdout)
    (tmp_path / "stderr.txt").write_text(result.stderr)
    assert_ok(result)
    out = {}
    for fs in filesystems:
        results = json.loads((tmp_path / ("work-" + fs.scheme) / "results.json").read_text())
        results["root"] = runs[fs.scheme]["root"]
        if isinstance(fs, realfs.SeaweedS3):
            # The S3 server's requests while the driver ran: the other file systems' checks
            # make none.
            after = fs.request_counts()
            results["requests"] = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        out[fs.scheme] = results
    return out


@pytest.fixture(scope="module")
def storage_results_of(minidfs, seaweed_s3, tmp_path_factory):
    """scheme -> the results of the checks on that file system: both file systems' checks in
    one driver (one JVM start for both)."""
    return run_checks([minidfs, seaweed_s3], tmp_path_factory.mktemp("checks"),
                      ["restart", "damaged_packs", "retention", "savepoint", "inspection"])


@pytest.fixture(scope="module")
def storage_results(remote_fs, storage_results_of):
    return storage_results_of[remote_fs.scheme]


def no_error(results, check_name):
    assert check_name not in results.get("errors", {}), results["errors"][check_name]


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


# --------------------------------------------------------------------------------------
# DELETE_ON_CANCELLATION (a start-up setting: a driver of its own), and the command line.

@pytest.fixture(scope="module")
def deleted_on_cancellation(minidfs, seaweed_s3, tmp_path_factory):
    """scheme -> the delete_on_cancellation check's results: both file systems in one driver
    started with DELETE_ON_CANCELLATION."""
    return run_checks([minidfs, seaweed_s3], tmp_path_factory.mktemp("delete-on-cancellation"),
                      ["delete_on_cancellation"], {
                          "spark.sql.streaming.checkpointStorage.externalizedCleanup":
                              "DELETE_ON_CANCELLATION"})


def test_delete_on_cancellation_deletes_the_remote_checkpoint(remote_fs, deleted_on_cancellation):
    r = deleted_on_cancellation[remote_fs.scheme]
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
