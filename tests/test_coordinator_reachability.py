"""The coordinator stays reachable after a driver stall: a driver JVM frozen (SIGSTOP) past
``spark.rpc.lookupTimeout`` and ``spark.rpc.askTimeout`` while its executors commit state,
on ``local-cluster``, with each storage (tests/frozen_driver.py runs the driver).

Spark's own ``PluginContext.ask`` keeps a failed first lookup of the driver for the
executor's life ("Driver endpoint is not known." on every later message); the executors'
messages here go through a connection that looks the driver up again after any failure, so:

- a freeze exactly while the executors make their first state commit: the commits inside it
  fail in our words (the driver did not answer within the named timeout), Spark retries the
  tasks after it, and both queries finish with results equal to the batch computation, in
  their first run (no query restart);
- the same freeze in the middle of a running query, several times;
- an executor started after a freeze (one killed; Spark starts another) runs state tasks and
  commits: its first lookup of the driver is not one Spark keeps failing.
"""
import json
import os
import re
import sys
from collections import defaultdict

import pytest

from conftest import Subprocess, assert_ok

TESTS = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.cluster

STORAGES = ["driver", "filesystem"]
#: the RPC timeouts of the session, and each freeze: past both, so the commits inside fail
TIMEOUT_S = 4
FREEZE_S = 12

_DRIVER = """
    import sys
    sys.path.insert(0, %r)
    import frozen_driver
    frozen_driver.main(["frozen_driver.py", %r])
"""


def start_frozen_driver(tmp_path, storage: str, attempt: int):
    """Starts tests/frozen_driver.py for ``storage`` (its ``attempt``): (work folder, Started)."""
    work = tmp_path / storage / ("work-%d" % attempt)
    work.mkdir(parents=True)
    spec = {"work": str(work), "storage": storage, "timeout_s": TIMEOUT_S, "freeze_s": FREEZE_S,
            "mid_run_freezes": 2, "steps": ["first_freeze", "freezes", "new_executor"]}
    (work / "spec.json").write_text(json.dumps(spec))
    return work, Subprocess(tmp_path).start_python(_DRIVER % (TESTS, str(work / "spec.json")), "driver", work)


@pytest.fixture(scope="module")
def frozen_runs(tmp_path_factory) -> dict:
    """Each storage's run (storage -> what its driver saw), both drivers side by side: each
    freezes its own JVM, and a freeze is mostly waiting."""
    tmp_path = tmp_path_factory.mktemp("frozen")
    running = {storage: (1,) + start_frozen_driver(tmp_path, storage, 1) for storage in STORAGES}
    results = {}
    try:
        while running:
            for storage, (attempt, work, started) in list(running.items()):
                result = started.finish(900)
                del running[storage]
                # A driver that failed before its first batch is started again, up to twice: on a
                # busy machine local-cluster's own start can outlast the low ask timeout this test
                # sets (the master's first ask). One that failed in the scenario fails its test.
                if result.returncode != 0 and "STEP first_freeze" not in result.stderr and attempt < 3:
                    running[storage] = (attempt + 1,) + start_frozen_driver(tmp_path, storage, attempt + 1)
                else:
                    results[storage] = (work, result)
    finally:
        for _, _, started in running.values():
            started.proc.kill()
    return results


def frozen_run(frozen_runs, storage: str) -> dict:
    """What ``storage``'s driver saw (fails showing its output if it failed)."""
    work, result = frozen_runs[storage]
    assert_ok(result)
    with open(work / "result.json") as f:
        out = json.load(f)
    out["driver_log"] = result.stderr
    # The executors' own logs: local-cluster's workers write them under Spark's home.
    import pyspark
    app_dir = os.path.join(os.path.dirname(pyspark.__file__), "work", out["application_id"])
    out["executor_logs"] = "".join(
        open(os.path.join(d, n), errors="replace").read()
        for d, _, names in os.walk(app_dir) for n in names if n == "stderr")
    return out


def step_logs(driver_log: str) -> dict:
    """The driver's log cut at each step's first line (``STEP <name> batch <b>``)."""
    parts = re.split(r"^STEP (\w+) batch \d+$", driver_log, flags=re.M)
    logs = defaultdict(str)
    for name, text in zip(parts[1::2], parts[2::2]):
        logs[name] += text
    return logs


def lost_tasks(log: str) -> list:
    """Each lost task the driver logged: its line and the stack trace that follows it."""
    entries = re.split(r"\n(?=\d\d/\d\d/\d\d \d\d:\d\d:\d\d |STEP |FROZE |THAWED )", log)
    return [e for e in entries if "Lost task" in e.split("\n", 1)[0]]


def lost_tasks_by_step(log: str) -> dict:
    """Each step's lost tasks, a headline each (time, task, executor, error): what a failed
    assertion prints, to tell a freeze's failures from those of a busy machine."""
    return {step: [t.split("\n", 1)[0][:260] for t in lost_tasks(text)]
            for step, text in step_logs(log).items()}


OURS = "io.sparkcheckpointstorage.coordinator.CoordinatorUnreachableException: " \
       "The checkpoint coordinator on the driver"
#: Spark 3.5's file sink wraps whatever fails in a task that writes rows, the state commit
#: of the operator feeding it included, in its own error: ours is then the cause.
FILE_SINK_WRAPPER = "[TASK_WRITE_FAILED] Task failed while writing rows"


@pytest.mark.parametrize("storage", STORAGES)
def test_a_driver_frozen_past_the_rpc_timeouts_loses_no_state_and_needs_no_restart(frozen_runs, storage):
    out = frozen_run(frozen_runs, storage)
    log = out["driver_log"]

    # Every freeze happened, inside a batch.
    assert len(out["freezes"]) == 3 and all(not f.get("missed") for f in out["freezes"]), out["freezes"]
    assert all(f["seconds"] >= FREEZE_S for f in out["freezes"]), out["freezes"]

    # No query failed, none was restarted: one run each, every batch committed.
    assert out["query_exceptions"] == {}, (lost_tasks_by_step(log), out["query_exceptions"])
    for name, runs in out["run_ids"].items():
        assert len(runs) == 1, "%s ran %d times" % (name, len(runs))
    # Every file read (a query may split one file's arrival over two batches).
    assert all(b >= out["last_fed"] for b in out["last_batch"].values()), (out["last_batch"], out["last_fed"])

    # The results equal the batch computation over the whole input.
    expected = defaultdict(lambda: [0, 0])
    for r in out["input"]:
        expected[r["k"]][0] += 1
        expected[r["k"]][1] += r["v"]
    latest = {}
    for batch in sorted(out["counts"], key=int):
        for k, n, total, _ in out["counts"][batch]:
            latest[k] = [n, total]
    assert latest == {k: v for k, v in expected.items()}
    dedup_keys = [k for k, _ in out["dedup"]]
    assert sorted(dedup_keys) == sorted(expected), "each key once in the file sink's output"

    # The freezes met state commits: tasks failed, in our words, and were retried.
    steps = step_logs(log)
    first = [t for t in lost_tasks(steps["first_freeze"]) if OURS in t]
    assert first, "no state commit met the first freeze:\n" + "\n".join(
        t.split("\n", 1)[0] for t in lost_tasks(steps["first_freeze"]))
    ours = [t for t in lost_tasks(log) if OURS in t]
    for t in ours:
        headline = t.split("\n", 1)[0]
        # Our words first (not as the cause of Spark's generic commit failure), naming the
        # timeout; only a file sink's own wrapper stands before them.
        assert OURS in headline or FILE_SINK_WRAPPER in headline, headline
        assert ("within spark.rpc.lookupTimeout=%ds" % TIMEOUT_S in t
                or "within spark.rpc.askTimeout=%ds" % TIMEOUT_S in t), t[:2000]
    # Never Spark's cached failure, on the driver or in any executor's log.
    for text in (log, out["executor_logs"]):
        assert "Driver endpoint is not known" not in text
        assert "Failed to create driver plugin endpoint ref" not in text
    assert out["executor_logs"], "the executors' logs were found"

    # The executor started after the kill computed rows of the last batch in state tasks,
    # which committed without a failure of ours.
    (killed_pid,) = out["killed_executor"].values()
    new_pids = {p for e, p in out["executors_after_kill"].items()
                if e not in out["executors_at_start"]}
    assert new_pids, out["executors_after_kill"]
    computed_by = {pid for b in out["batches_after_kill"] for _, _, _, pid in out["counts"][str(b)]}
    assert new_pids & computed_by, (new_pids, computed_by)
    assert killed_pid not in computed_by
    # Outside a freeze, a failure of ours is a driver busier than the low timeouts here allow
    # (several Spark tests beside this one): the new executor's commits reached the driver
    # all the same, as the rows it computed show. Spark's cached lookup failure, the bug this
    # step is for, is refused above in every log.
    for t in lost_tasks(steps["new_executor"]):
        if OURS in t:
            assert "did not answer" in t and "Driver endpoint is not known" not in t, t[:2000]
