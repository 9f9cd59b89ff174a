"""Every stateful operator a third-party state store provider can run, end to end on real
Spark, checked exactly against the same computation in batch mode over the same input.

The three scenarios are links of one chain of driver processes on one set of checkpoints
(``CHAIN``), each checked in its own tests:

- ``executor_killed``: the first driver, on ``local-cluster[2,1,1024]`` (executors in their
  own JVMs), SIGKILLs an executor JVM inside a running batch, twice; Spark starts new
  executors and the state is restored on them; the driver then stops its queries cleanly;
- ``restart``: a new driver process starts the queries again on the same checkpoints;
- ``driver_killed``: that driver, on ``local-cluster``, is SIGKILLed right after its sinks
  wrote a batch, before its ``commits/N``; a third driver (``local[2]``) resumes and feeds the
  rest. The ``foreachBatch`` sinks skip a batch id they wrote without reading it (Spark's
  exactly-once pattern, as Delta's sink does), so the resumed batch runs no stateful task:
  its state must have been durable when its stage ended.

Each link has a batch before it and a batch after it, and the results are checked once the
chain ends, so each scenario's results carry the other two's interruptions as well.

Every driver runs all operators' queries side by side (tests/support/stateful_operators.py),
once per provider, with the other storages' queries (``STORAGE_VARIANTS``) beside them; the
tests then compare operator by operator.

The provider comes from ``SCS_TEST_PROVIDER``: ``heap`` (default, ours), ``hdfs`` (Spark's
``HDFSBackedStateStoreProvider``), ``rocksdb``, a class name, or several, comma-separated.
``SCS_TEST_FILE_MANAGER=spark`` runs them on Spark's checkpoint file manager instead of
ours. The scenarios run on local-cluster, so they are marked ``cluster`` (``-m "not cluster"``
skips them).
"""
import json
import os

import pytest

from conftest import assert_ok, run_operators_driver
from support import stateful_operators as so

# Every test is on the chain, whose drivers run on local-cluster but the last; the first test
# the module runs runs the whole chain.
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1200)]

PROVIDER_NAMES = [p.strip() for p in os.environ.get("SCS_TEST_PROVIDER", "heap").split(",")
                  if p.strip()]
FILE_MANAGER = os.environ.get("SCS_TEST_FILE_MANAGER") or None
OPERATORS = list(so.OPERATORS)
WATERMARKED = {"window_append", "drop_duplicates_within_watermark", "join_inner",
               "join_left_outer", "join_right_outer", "apply_in_pandas_with_state",
               "session_window"}

LOCAL = "local[2]"
CLUSTER = "local-cluster[2,1,1024]"

#: The chain of driver processes the scenarios of this module are links of, on one checkpoint
#: set: executor_killed (both executors of the start SIGKILLed inside running batches, after
#: files 1 and 2), then a clean stop; restart (a new driver on the same checkpoints), which
#: is killed once every query has committed the state of the batch that reads file 3 and
#: before Spark writes that batch's commits/N (driver_killed); a third driver resumes.
CHAIN = [dict(master=CLUSTER, feed=[0, 1, 2], kill_executor_after=[1, 2]),
         dict(master=CLUSTER, feed=[3], kill_driver_at=3, expect_exit=so.DRIVER_KILLED_EXIT),
         dict(master=LOCAL, feed=[4, "flush"])]
#: scenario -> the driver processes it runs, one after the other, on one checkpoint set:
#: this module's chain, and the executor kill alone (what other modules run beside theirs)
SCENARIOS = {
    "chain": CHAIN,
    "executor_killed": [dict(master=CLUSTER, feed=[0, 1, 2, 3, "flush"],
                             kill_executor_after=[1, 2])],
}

#: The chain runs on the default storage, the file system one (the query's checkpoint
#: location is known). Other storages run it too, with one operator of each kind of state
#: (aggregation, deduplication, a stream-stream join), as variants beside those queries in
#: the same drivers, through the same kills (support/stateful_operators.py: a variant's
#: queries start with its settings): the driver storage with a checkpoint path, and the file
#: system storage with every state file a file of its own, written in the background
#: (``asyncStateWrites``).
STORAGE_OPERATORS = ["aggregation_update", "drop_duplicates", "join_inner"]
ASYNC_STORAGE = "filesystem-async"
ASYNC_STATE_WRITES = {"spark.sql.streaming.checkpointStorage.fileStateSizeThreshold": "0",
                      "spark.sql.streaming.checkpointStorage.asyncStateWrites": "true"}
DRIVER_VARIANT = {"label": "driver", "storage": "driver", "operators": STORAGE_OPERATORS}
ASYNC_VARIANT = {"label": ASYNC_STORAGE, "storage": "filesystem", "operators": STORAGE_OPERATORS,
                 "spark_conf": ASYNC_STATE_WRITES}
STORAGE_VARIANTS = [DRIVER_VARIANT, ASYNC_VARIANT]
#: the links of the chain, each checked by tests of its own
CHAIN_SCENARIOS = ["restart", "executor_killed", "driver_killed"]


class ScenarioFailed(Exception):
    pass


def run_scenario(root, provider: str, scenario: str, storage=None, operators=None,
                 steps=None, extra=None) -> dict:
    """Runs a scenario's driver processes; ``steps`` replaces ``SCENARIOS[scenario]`` and
    ``extra`` adds to every step's spec (e.g. ``checkpoint_root``, ``spark_conf``)."""
    work = root / "work"
    steps = steps or SCENARIOS[scenario]
    operators = operators or OPERATORS
    after_kill = None
    for i, step in enumerate(steps):
        spec = dict(step, work=str(work), provider=provider, file_manager=FILE_MANAGER,
                    storage=storage, operators=operators, results=(i == len(steps) - 1),
                    **(extra or {}))
        expect_exit = spec.pop("expect_exit", 0)
        result = run_operators_driver(root / ("driver-%d" % i), spec)
        if expect_exit and result.returncode == expect_exit:
            after_kill = {"killed_in": json.loads((work / "driver-killed.json").read_text())}
            continue
        try:
            assert_ok(result)
        except AssertionError as e:
            raise ScenarioFailed("%s, driver %d of %d: %s" % (scenario, i + 1, len(steps), e))
    results = json.loads((work / "results.json").read_text())
    results["work"] = str(work)
    results["variants"] = [v["label"] for v in (extra or {}).get("variants", [])]
    if after_kill is not None:
        # The offset and commit logs the killed driver left, as the next driver found them
        # before starting its queries (read through Hadoop: local or remote alike).
        after_kill["commit_logs"] = results["log"]["commit_logs_at_start"]
    results["after_kill"] = after_kill
    return results


def variant_results(results: dict, label=None) -> dict:
    """The results of one variant's queries (``label``; None: the step's own operators), keyed
    by operator as a scenario of their own would be; the log's kills stay whole."""
    if label is not None and label not in results.get("variants", []):
        raise KeyError("the scenario ran no variant %r (it ran %s)" % (label, results.get("variants")))
    prefix = "" if label is None else label + "/"

    def own(by_key: dict) -> dict:
        return {k[len(prefix):]: v for k, v in by_key.items()
                if (k.startswith(prefix) if prefix else "/" not in k)}
    log = dict(results["log"])
    for part in ("batches", "state_rows_removed", "commit_logs_at_start"):
        if part in log:
            log[part] = own(log[part])
    view = dict(results, operators=own(results["operators"]), log=log)
    if label is not None:
        view["work"] = os.path.join(results["work"], label)
    if results["after_kill"] is not None:
        view["after_kill"] = {"killed_in": own(results["after_kill"]["killed_in"]),
                              "commit_logs": own(results["after_kill"]["commit_logs"])}
    return view


def cached_scenarios(run):
    """``get(*key)``: ``run(*key)`` once per key, its results shared by the tests that ask; a
    scenario that failed fails each of them with its message."""
    cache = {}

    def get(*key):
        if key not in cache:
            try:
                cache[key] = run(*key)
            except ScenarioFailed as e:
                cache[key] = e
        if isinstance(cache[key], ScenarioFailed):
            pytest.fail(str(cache[key]), pytrace=False)
        return cache[key]
    return get


@pytest.fixture(scope="module")
def scenario_results(tmp_path_factory):
    """(provider, scenario[, storage variant]) -> results of the chain the scenario is a link
    of, run once per provider for all its operators, with the first provider's storage
    variants beside them."""
    def run(provider):
        folder = tmp_path_factory.mktemp("%s-chain" % provider)
        variants = STORAGE_VARIANTS if provider == PROVIDER_NAMES[0] else []
        return run_scenario(folder, provider, "chain", extra={"variants": variants})
    get = cached_scenarios(run)

    def results(provider, scenario, storage=None):
        assert scenario in CHAIN_SCENARIOS, scenario
        return variant_results(get(provider), storage)
    return results


def check(results, provider, name):
    op = so.operator(name)
    r = results["operators"][name]
    got, expected = [tuple(x) for x in r["got"]], [tuple(x) for x in r["expected"]]
    # The input is built so that every operator has something to show.
    assert expected, "batch computation of %s is empty: the input does not exercise it" % name
    if name in ("join_left_outer", "join_right_outer"):
        unmatched = 2 if name == "join_left_outer" else 1  # rid or lid null
        assert any(row[unmatched] is None for row in expected)
        assert any(row[unmatched] is not None for row in expected)
    if got != expected:
        missing = sorted(set(expected) - set(got), key=str)
        extra = sorted(set(got) - set(expected), key=str)
        pytest.fail("%s (%s) differs from the batch computation %s: %d rows, expected %d;\n"
                    "missing %s\nextra %s\n(rows with other multiplicity are neither)" % (
                        name, op.mode, tuple(op.columns), len(got), len(expected),
                        missing[:20], extra[:20]), pytrace=False)
    # The query really ran on the provider under test: Spark records it in the checkpoint.
    assert '"spark.sql.streaming.stateStore.providerClass":"%s"' % so.provider_class(
        provider) in r["checkpoint"]["offsets"]


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_restart_in_new_driver(scenario_results, provider, name):
    results = scenario_results(provider, "restart")
    check(results, provider, name)
    if name in WATERMARKED:
        # the watermark removed state along the way (in the second driver), not only at the end
        assert results["log"]["state_rows_removed"][name] > 0


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_executor_killed(scenario_results, provider, name):
    results = scenario_results(provider, "executor_killed")
    log = results["log"]
    killed = [k["executor"] for k in log["killed"]]
    assert killed == ["0", "1"], log  # both executors of the start, one after the other
    for k in log["killed"]:
        assert not os.path.exists("/proc/%d" % k["pid"])
        # Killed inside a running batch (its sink called, its job not yet run), of any
        # query of the driver, a storage variant's too.
        assert k["query"].rsplit("/", 1)[-1] in OPERATORS and k["batch"] >= 0, log
    # Spark replaced them: the executors once the queries stopped are new ones.
    assert log["executors_after_kills"] and not set(log["executors_after_kills"]) & set(killed), log
    check(results, provider, name)


def check_killed_between_state_commit_and_commit_log(results, name):
    """The first driver died where intended: the batch it was killed in has its offsets
    but no commits entry."""
    after = results["after_kill"]
    assert after is not None, "the first driver was not killed"
    batch = after["killed_in"].get(name)
    assert batch is not None, "%s never reached its sink before the kill: %s" % (name, after)
    offsets, commits = after["commit_logs"][name]
    assert offsets == batch and commits == batch - 1, (
        "%s: killed in batch %s, found offsets/%s and commits/%s" % (name, batch, offsets, commits))


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_driver_killed_before_commit_log(scenario_results, provider, name):
    """Default (file system) storage, all operators."""
    results = scenario_results(provider, "driver_killed")
    if FILE_MANAGER is None:
        assert "FileSystemCheckpointStorage" in storage_of(results, name)
    check_killed_between_state_commit_and_commit_log(results, name)
    check(results, provider, name)


def storage_of(results, name) -> str:
    """The storage marker the checkpoint holds (read by the last driver)."""
    return results["operators"][name]["checkpoint"]["storage"] or ""


@pytest.mark.parametrize("name", STORAGE_OPERATORS)
@pytest.mark.parametrize("scenario", CHAIN_SCENARIOS)
def test_driver_storage(scenario_results, scenario, name):
    """The driver storage with a checkpoint path (packs under the query's checkpoint) in the
    failure scenarios; the file system storage runs them in the tests above."""
    provider = PROVIDER_NAMES[0]
    results = scenario_results(provider, scenario, "driver")
    assert "DriverCheckpointStorage" in storage_of(results, name)
    if scenario == "driver_killed":
        check_killed_between_state_commit_and_commit_log(results, name)
    if scenario == "executor_killed":
        assert [k["executor"] for k in results["log"]["killed"]] == ["0", "1"], results["log"]
    check(results, provider, name)


@pytest.mark.parametrize("name", STORAGE_OPERATORS)
@pytest.mark.parametrize("scenario", ["executor_killed", "driver_killed"])
def test_async_state_writes(scenario_results, scenario, name):
    """State files written in the background by the executors: an executor killed inside a
    batch, or the driver killed before a batch's commit log, loses nothing and the results
    are exact; the state is in files of their own (the threshold is 0)."""
    provider = PROVIDER_NAMES[0]
    results = scenario_results(provider, scenario, ASYNC_STORAGE)
    state = os.path.join(results["work"], "checkpoints", name, "state")
    own = [f for _, _, fs in os.walk(state) for f in fs if f.endswith((".heap-delta", ".delta", ".changelog"))]
    assert own, "no state file of its own under %s" % state
    if scenario == "driver_killed":
        check_killed_between_state_commit_and_commit_log(results, name)
    else:
        assert [k["executor"] for k in results["log"]["killed"]] == ["0", "1"], results["log"]
    check(results, provider, name)
