"""State survives storage faults: a file system that fails one operation, before acting or
after acting with its answer lost, never costs a batch's state. Each fault fails the batch
it hits; the query restarted in the same application and in a new one gives exactly the
batch computation's results (support/fault_queries.py runs the queries)."""
import json
import os

import pytest

from conftest import Subprocess, assert_ok
from support.fault_queries import SPARK_DEFAULT, checkpoints_of

#: batches each checkpoint commits before its scenario's fault is armed (packs 1-2)
BATCHES_BEFORE = 2
PACK = r"{cp}/checkpoint/state-packs/\.?3\.pack.*"
#: the fault of each scenario, on the third batch's files (the first two commit packs 1-2).
#: The pack's create, and its close that acted and lost its answer, fail behind a foreachBatch
#: sink that skips a batch id it wrote (Spark's exactly-once pattern, as Delta's sink does):
#: the pack is written when the batch's stateful stage ends, so its failure fails the batch
#: before the sink writes it; were it written at the commit log, after the sink, the batch's
#: rerun would be skipped and its state lost for good. The other faults meet the file sink.
PACK_SCENARIOS = [
    {"name": "pack-create-before", "sink": "foreachBatch", "rules": ["create before " + PACK]},
    {"name": "pack-close-before", "rules": ["close before " + PACK]},
    {"name": "pack-close-after", "sink": "foreachBatch", "rules": ["close after " + PACK]},
    {"name": "pack-rename-before", "rules": ["rename before " + PACK]},
    {"name": "pack-rename-after", "rules": ["rename after " + PACK]},
    {"name": "marker-create-before", "first_batch_fails": True,
     "rules": [r"create before {cp}/checkpoint/\.?checkpoint-storage.*"]},
]
#: state files of their own (the file system storage, every file over the threshold of 0)
OWN_FILE = r"{cp}/checkpoint/state/0/1/\.?3\.heap-delta.*"
OWN_FILE_SCENARIOS = [
    {"name": "own-file-create-before", "threshold": "0", "rules": ["create before " + OWN_FILE]},
    {"name": "own-file-close-after", "threshold": "0", "rules": ["close after " + OWN_FILE]},
    {"name": "own-file-rename-after", "threshold": "0", "rules": ["rename after " + OWN_FILE]},
]
#: the offset log's first entry, whose close wrote its temp file and lost its answer: the temp
#: file, never renamed, left in offsets/ made Spark 4.1+ take every later start for a new
#: query's on a log not empty (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY), as with Spark's own
#: file manager; ours deletes it (the log is the file manager's, whatever the storage)
LOG_SCENARIOS = [
    {"name": "offsets0-close-after", "first_batch_fails": True,
     "rules": [r"close after {cp}/checkpoint/offsets/\.0\..*\.tmp"]},
]
#: storage -> its scenarios
STORAGE_SCENARIOS = {"filesystem": PACK_SCENARIOS + OWN_FILE_SCENARIOS + LOG_SCENARIOS, "driver": PACK_SCENARIOS}


def start_phase(tmp_path, storage, phase, scenarios, **extra):
    """Starts support/fault_queries.py's application for ``phase`` (see its doc)."""
    spec = {"base": str(tmp_path / "runs"), "faults": str(tmp_path / "faults"), "storage": storage,
            "phase": phase, "scenarios": scenarios}
    spec.update(extra)
    spec_path = tmp_path / ("spec-%s.json" % phase)
    spec_path.write_text(json.dumps(spec))
    tests = os.path.dirname(os.path.abspath(__file__))
    return Subprocess(tmp_path).start_python(
        "import sys; sys.path.insert(0, %r)\nfrom support import fault_queries\nfault_queries.main(%r)\n"
        % (tests, str(spec_path)), "phase-" + phase)


def finish_phase(started, timeout: float = 1800):
    """Waits for an application of ``start_phase``; its JSON lines (fails showing its output
    if it failed)."""
    out = assert_ok(started.finish(timeout))
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def run_phase(tmp_path, storage, phase, scenarios, **extra):
    return finish_phase(start_phase(tmp_path, storage, phase, scenarios, **extra))


def run_faults_then_resume(tmp_path, storage_scenarios, **extra):
    """Every storage's scenarios (storage -> scenarios) in one application, and every
    checkpoint resumed in a new one; the runs' JSON lines. ``extra`` goes into both
    applications' specs."""
    storages = {storage: {"base": str(tmp_path / "runs" / storage), "scenarios": scenarios}
                for storage, scenarios in storage_scenarios.items()}
    # The applications start on one of our storages (the anchor's is no storage setting).
    first = sorted(s for s in storages if s != SPARK_DEFAULT)[0]
    # The new application starts beside the faults' one and resumes each scenario's
    # checkpoints once that one is done with them.
    ended = tmp_path / "faults-phase-ended"
    faulting = start_phase(tmp_path, first, "faults", [], storages=storages,
                           batches_before=BATCHES_BEFORE, **extra)
    resuming = None
    try:
        resuming = start_phase(tmp_path, first, "resume", [], storages=storages,
                               after=str(ended), **extra)
        runs = finish_phase(faulting)
    except BaseException:
        for started in (faulting, resuming):
            if started is not None and started.proc.poll() is None:
                started.proc.kill()
        raise
    finally:
        ended.write_text("")
    return runs + finish_phase(resuming)


def assert_no_state_lost(tmp_path, runs, storage, scenarios):
    """Each of ``storage``'s scenarios (run by run_faults_then_resume): the fault failed the
    batch it hit, nothing committed before it was lost, and the restart in the same
    application and the resume in a new one give the batch computation's keys, each once."""
    runs = [r for r in runs if r["storage"] == storage]
    by_step = {(r["scenario"], r["checkpoint"], r["step"]): r for r in runs}
    injected = (tmp_path / "faults" / "injected.log").read_text().splitlines()
    for s in scenarios:
        checkpoints = checkpoints_of(s)
        for checkpoint in checkpoints:
            if not s.get("first_batch_fails"):
                # The fault met a checkpoint with committed batches: none of them may be lost.
                before = by_step[(s["name"], checkpoint, "before")]
                assert before["error"] is None and len(before["keys"]) > 20, (s["name"], checkpoint)
            fault = by_step[(s["name"], checkpoint, "fault")]
            # The fault failed the batch it hit (a task's, in Spark's words: the commit failed).
            assert fault["error"], (s["name"], checkpoint)
            if not s["name"].startswith("own-file"):
                assert "Injected fault" in fault["error"], (s["name"], checkpoint, fault["error"])
            steps = ["restart", "resume"] if checkpoint == "same-app" else ["resume"]
            for step in steps:
                r = by_step[(s["name"], checkpoint, step)]
                assert r["error"] is None, (s["name"], checkpoint, step, r["error"])
                # Every key once, none missing: no state lost, none applied twice.
                assert r["keys"] == r["expected"], (s["name"], checkpoint, step)
        folder = str(tmp_path / "runs" / storage / s["name"])
        assert sum(1 for line in injected if folder + "/" in line) == len(checkpoints), s["name"]
    # A half-written or unanswered pack never shadows a real one: every pack reads. Nor is a
    # failed write's temp file left in a log.
    for s in scenarios:
        for checkpoint in checkpoints_of(s):
            for folder in ("state-packs", "offsets"):
                files = tmp_path / "runs" / storage / s["name"] / checkpoint / "checkpoint" / folder
                if files.exists():
                    names = sorted(os.listdir(files))
                    assert not [n for n in names if n.endswith(".tmp")], (s["name"], folder, names)


@pytest.fixture(scope="module")
def fault_runs(request, tmp_path_factory):
    """The runs of both storages' scenarios (the selected ones'): every storage's faults in
    one application, and every checkpoint resumed in a new one; (folder, lines)."""
    selected = sorted({item.callspec.params["storage"] for item in request.session.items
                       if item.originalname == "test_a_failed_or_unanswered_write_never_loses_state"
                       and hasattr(item, "callspec")}) or sorted(STORAGE_SCENARIOS)
    tmp_path = tmp_path_factory.mktemp("faults")
    return tmp_path, run_faults_then_resume(
        tmp_path, {storage: STORAGE_SCENARIOS[storage] for storage in selected})


@pytest.mark.parametrize("storage", ["filesystem", "driver"])
def test_a_failed_or_unanswered_write_never_loses_state(fault_runs, storage):
    tmp_path, runs = fault_runs
    assert_no_state_lost(tmp_path, runs, storage, STORAGE_SCENARIOS[storage])


def test_random_faults_lose_nothing_with_either_storage_nor_with_sparks_default_provider(tmp_path):
    """1% of every operation on the checkpoints fails at random (before acting, or after acting
    with the answer lost) for a whole run of an aggregation and a deduplication, restarted
    whenever they die: our provider on both storages (the file system storage also with every
    state file its own, written in the background: asyncStateWrites), Spark's RocksDB provider (changelog on)
    on our file manager, and, as the anchor in the same run, Spark's default provider on
    Spark's file manager. All must end exact."""
    # Every variant in one application, one after the other (each sets its provider, file
    # manager and storage anew; support/fault_queries.VARIANTS).
    runs = run_phase(tmp_path, "filesystem", "random", [],
                     variants=["filesystem", "async", "rocksdb", "hdfs", "driver"],
                     inputs=6, share="0.01", seed=11, max_restarts=60)
    assert len(runs) == 10, runs
    for r in runs:
        assert r["restarts"] <= 60, r
        assert r["exact"], r
    injected = (tmp_path / "faults" / "injected.log").read_text().splitlines()
    for variant in ("filesystem", "async", "rocksdb", "hdfs", "driver"):
        met = [line for line in injected if "/runs/%s/" % variant in line]
        assert met, "no fault met the %s runs" % variant
    print("\n".join("%s %s: %d faults met, %d restarts, %d batches" % (
        r["variant"], r["query"], sum(1 for l in injected if "/runs/%s/%s/" % (r["variant"], r["query"]) in l),
        r["restarts"], r["batches"]) for r in runs))


def test_a_savepoint_or_migration_whose_publication_fails_or_loses_its_answer_is_written_again(tmp_path):
    """A step of a savepoint's or a migration's publication fails, or acts and loses its
    answer: a lost answer is absorbed (the output is published), a failure fails the call and
    asking again writes it; every output resumes with exact results."""
    lines = run_phase(tmp_path, "filesystem", "publish", [])
    attempts = {l["target"]: l for l in lines if "target" in l}
    assert set(attempts) == {"sp-rename-after", "sp-create-before", "sp-note-delete-after", "mig-rename-after",
                             "mig-state-rename-after"}
    # The publication's own steps: a lost answer is absorbed.
    for name in ("sp-rename-after", "sp-note-delete-after", "mig-rename-after"):
        assert attempts[name]["first"] is None, attempts[name]
    # A failure inside the output fails the call; asked again, it writes the output anew.
    for name in ("sp-create-before", "mig-state-rename-after"):
        assert "Injected fault" in attempts[name]["first"], attempts[name]
        assert attempts[name]["again"] is None, attempts[name]
    resumed = {l["resumed"]: l for l in lines if "resumed" in l}
    assert set(resumed) == set(attempts)
    for name, r in resumed.items():
        assert r["error"] is None and r["exact"], (name, r)
    injected = (tmp_path / "faults" / "injected.log").read_text()
    for name in attempts:
        assert "/." + name + "." in injected, name
    # Nothing half-written is left beside the targets.
    assert not [n for n in os.listdir(tmp_path / "runs" / "publish") if n.startswith(".")]


def test_a_query_whose_storage_stalls_holds_back_no_other_query(tmp_path):
    """Every pack write of query a stalls 8 s; query b of the same driver goes on committing
    batches meanwhile, none of them waiting for a's stall."""
    stall_ms = 8000
    (line,) = run_phase(tmp_path, "filesystem", "neighbour", [], stall_ms=stall_ms)
    print("batch times of b alone: %s ms; beside a stalled neighbour: %s ms"
          % (sorted(line["alone"]), sorted(line["beside_stall"])))
    assert line["stalls"] >= 1, line
    assert len(line["alone"]) >= 4, line
    # b kept committing during a's stall, and no batch of b took a stall's time.
    assert len(line["beside_stall"]) >= 2, line
    assert max(line["beside_stall"]) < stall_ms, line
