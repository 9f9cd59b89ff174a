"""Golden checkpoints: checkpoints and savepoints written by this package on one Spark line,
kept under ``tests/golden/spark-<line>/``, and resumed by every later line's tests.

Each golden folder holds one scenario (a storage, a provider, a restore kind) and its
``expected.json``: how to resume it and what the resumed queries write. The queries are
those of :mod:`support.stateful_operators` (one file source, deterministic input), run with
its :class:`~support.stateful_operators.Driver` in the caller's own Spark session, so one
session writes or resumes every scenario.

Written: input batches 0 to 2 (``WRITTEN_BATCHES``). Resumed: batch 3 and the flush file
(``RESUME_FEED``), in a new folder, so the file source sees new paths. Batch 3 repeats ids
of batch 2, and the flush closes every join row and times out every group of
``applyInPandasWithState``: what the resumed queries write depends on the state of batches
0 to 2, which only a correct read of the golden files brings back.

Used by ``tests/golden/generate.py`` (writes the goldens of the running line),
``tests/test_golden_checkpoints.py`` (resumes them) and ``tests/test_spark_upgrade.py``
(writes on one line and resumes on another, through :func:`main`).
"""
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional

from spark_checkpoint_storage import jvm_names

from support import stateful_operators as so

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(TESTS, "golden")

#: the session every golden is written and resumed in (what a restore needs from the
#: session: the rest, such as the number of partitions, the checkpoint records)
SPARK_CONF: Dict[str, Any] = {
    "spark.sql.shuffle.partitions": 2,
    "spark.default.parallelism": 2,
    "spark.sql.session.timeZone": "UTC",  # timestamps of the results are compared as text
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Snapshots and cleanup while the queries run: the goldens hold snapshots, and packs
    # that record deleted files.
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": 2,
    "spark.sql.streaming.stateStore.maintenanceInterval": "1s",
    "spark.sql.streaming.minBatchesToRetain": 2,
}

WRITTEN_BATCHES: List[Any] = [0, 1, 2]
RESUME_FEED: List[Any] = [3, "flush"]

STORAGE = so.STORAGE_CONF
PROVIDER = jvm_names.PROVIDER_CLASS_CONF
FILE_MANAGER = jvm_names.FILE_MANAGER_CLASS_CONF
OURS = {"filesystem": {STORAGE: "filesystem"},
        "driver": {STORAGE: "driver", STORAGE + ".checkpointPath": "{work}/driver-storage"}}

#: every operator of the goldens' four kinds
ALL_OPERATORS = ["aggregation_update", "drop_duplicates", "join_inner",
                 "apply_in_pandas_with_state"]


@dataclass
class Scenario:
    """One golden folder. ``conf``: session settings while it is written and resumed
    (``{work}`` is the folder of the run); ``write_conf``: more settings while it is written
    (the provider, a file manager). ``derive`` makes it from scenario ``source``'s
    checkpoints instead of running queries: ``savepoint``, ``canonical`` (a savepoint of
    each format) or ``migrate`` (to our provider); ``restore`` is how a user resumes it:
    ``checkpoint`` (start on it), ``canonical`` (migrate the canonical savepoint, then start).
    """
    name: str
    operators: List[str]
    conf: Dict[str, str]
    write_conf: Dict[str, str] = field(default_factory=dict)
    source: Optional[str] = None
    derive: Optional[str] = None
    restore: str = "checkpoint"


SCENARIOS: List[Scenario] = [
    # Deltas above 300 bytes are files of their own, written in the background; the others
    # go to packs.
    Scenario("filesystem", ALL_OPERATORS,
             dict(OURS["filesystem"], **{STORAGE + ".fileStateSizeThreshold": "300",
                                         STORAGE + ".asyncStateWrites": "true"})),
    # Persistent driver storage: every state file in packs, read by a new application.
    Scenario("driver", ALL_OPERATORS, OURS["driver"]),
    # Spark's RocksDB provider on our file manager: changelogs packed, zips and SST files of
    # their own.
    Scenario("rocksdb", ["aggregation_update", "drop_duplicates"], OURS["filesystem"],
             write_conf={PROVIDER: jvm_names.ROCKSDB_PROVIDER_CLASS,
                         jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF: "true"}),
    Scenario("savepoint", ["aggregation_update", "drop_duplicates"], OURS["filesystem"],
             source="filesystem", derive="savepoint"),
    Scenario("canonical-savepoint", ["aggregation_update", "apply_in_pandas_with_state"],
             OURS["driver"], source="filesystem", derive="canonical", restore="canonical"),
    # A query of Spark's default provider and file manager, as users run them before the
    # plugin; migrated to ours, resumed on the file system storage.
    Scenario("hdfs-source", ["aggregation_update", "drop_duplicates"], {},
             write_conf={PROVIDER: jvm_names.HDFS_PROVIDER_CLASS,
                         FILE_MANAGER: jvm_names.spark_file_manager_class()}),
    Scenario("migrated", ["aggregation_update", "drop_duplicates"], OURS["filesystem"],
             source="hdfs-source", derive="migrate"),
]

#: scenarios that exist only to be derived from, not kept
SOURCES_ONLY = {"hdfs-source"}


def line_key(line: str) -> tuple:
    return tuple(int(p) for p in line.split("."))


def golden_lines() -> List[str]:
    """The Spark lines with goldens under tests/golden, oldest first."""
    names = os.listdir(GOLDEN) if os.path.isdir(GOLDEN) else []
    return sorted((n[len("spark-"):] for n in names if n.startswith("spark-")), key=line_key)


def golden_folders(line: str) -> List[str]:
    """The scenario folders of one line's goldens: every folder with an expected.json, also
    of scenarios SCENARIOS no longer writes (each says how to resume it)."""
    root = os.path.join(GOLDEN, "spark-" + line)
    return sorted(os.path.join(root, n) for n in os.listdir(root)
                  if os.path.isfile(os.path.join(root, n, "expected.json")))


# --------------------------------------------------------------------------------------
# Running queries in the caller's session

def session(extra: Optional[Dict[str, Any]] = None):
    """A local session with the plugin and ``SPARK_CONF`` (for the driver processes; a
    pytest module gets the same from conftest's ``spark`` fixture)."""
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
    builder = SparkSession.builder.master("local[2]").appName("golden-checkpoints")
    for k, v in dict(SPARK_CONF, **(extra or {})).items():
        builder = builder.config(k, v)
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    prepare(spark)
    return spark


def prepare(spark) -> None:
    """Ships support/ to the session's Python workers, once per session (Spark refuses a
    second file of the same name): applyInPandasWithState's function lives there."""
    from support import add_to_python_workers
    if spark.conf.get("spark.scs.test.golden.prepared", "false") != "true":
        add_to_python_workers(spark.sparkContext)
        spark.conf.set("spark.scs.test.golden.prepared", "true")


class Settings:
    """Session settings for one step, put back afterwards (the session runs every scenario;
    unsetting the provider or the file manager would fall back to Spark's, not ours)."""

    def __init__(self, spark, conf: Dict[str, str], work: str):
        self.spark = spark
        self.conf = {k: v.replace("{work}", work) for k, v in conf.items()}
        self.before: Dict[str, Optional[str]] = {}

    def __enter__(self):
        for k, v in self.conf.items():
            self.before[k] = self.spark.conf.get(k, None)
            self.spark.conf.set(k, v)

    def __exit__(self, *exc):
        for k, v in self.before.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)


def run_queries(spark, work: str, operators: List[str], feed: List[Any]) -> so.Driver:
    """Starts the operators' queries on ``<work>/checkpoints/<operator>``, feeds them the
    input files of ``feed`` one at a time (each processed before the next is written), stops
    them; the driver holds what each query wrote (``outputs``)."""
    driver = so.Driver({"work": work, "operators": operators, "input_glob": True})
    driver.spark = spark
    for op in driver.operators:
        driver.queries[op.name] = driver.start(op)
    try:
        for b in feed:
            driver.add_input(b)
            driver.process_all()
    finally:
        for q in driver.queries.values():
            q.stop()
    return driver


def copy_tree(source: str, target: str) -> None:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("expected.json"))


def resume(spark, folder: str, work: str) -> Dict[str, Any]:
    """Resumes the golden ``folder`` (copied into ``work``) as a user would, with batch 3 and
    the flush: per operator, the first batch the resumed query ran and its final rows."""
    with open(os.path.join(folder, "expected.json")) as f:
        how = json.load(f)["resume"]
    os.makedirs(work)
    copy_tree(folder, os.path.join(work, "golden"))
    checkpoints = os.path.join(work, "checkpoints")
    if how["restore"] == "canonical":
        from spark_checkpoint_storage.migration import migrate
        for op in how["operators"]:
            migrate(os.path.join(work, "golden", "savepoints", op), os.path.join(checkpoints, op),
                    to="heap", spark=spark)
    else:
        # A savepoint is started on directly, wherever it was moved to.
        shutil.move(os.path.join(work, "golden", how["layout"]), checkpoints)
    with Settings(spark, how["conf"], work):
        driver = run_queries(spark, work, how["operators"], how["feed"])
    return {op.name: {"first_batch": min(driver.outputs(op)),
                      "rows": so.final_result(op, driver.outputs(op))}
            for op in driver.operators}


# --------------------------------------------------------------------------------------
# Writing the goldens

def write(spark, out: str, names: Optional[List[str]] = None,
          operators: Optional[List[str]] = None) -> Dict[str, Any]:
    """Writes the scenarios ``names`` (default all) of the running line into ``out``, one
    folder each with its expected.json; returns what each expected.json holds. With
    ``operators``, each scenario runs only those of its operators."""
    from spark_checkpoint_storage import __version__
    tmp = tempfile.mkdtemp(prefix="golden-")
    scenarios = [replace(s, operators=[o for o in s.operators if o in operators])
                 if operators else s for s in SCENARIOS]
    wanted = [s for s in scenarios if names is None or s.name in names]
    needed = {s.source for s in wanted if s.source} | {s.name for s in wanted}
    written: Dict[str, so.Driver] = {}
    expected = {}
    for s in scenarios:
        if s.name not in needed:
            continue
        started = time.time()
        work = os.path.join(tmp, "write", s.name)
        target = os.path.join(out, s.name)
        if s.derive is None:
            with Settings(spark, dict(s.conf, **s.write_conf), work):
                written[s.name] = run_queries(spark, work, s.operators, WRITTEN_BATCHES)
            layout = "checkpoints"
        else:
            written[s.name] = written[s.source]
            layout = derive(spark, s, os.path.join(tmp, "write", s.source, "checkpoints"), target)
        if s.name in SOURCES_ONLY or s.name not in [w.name for w in wanted]:
            continue
        if s.derive is None:
            shutil.copytree(os.path.join(work, "checkpoints"), os.path.join(target, layout))
        how = {"restore": s.restore, "layout": layout, "operators": s.operators,
               "conf": s.conf, "feed": RESUME_FEED}
        with open(os.path.join(target, "expected.json"), "w") as f:
            json.dump({"resume": how}, f)
        got = resume(spark, target, os.path.join(tmp, "resume", s.name))
        check_against_batch(spark, written[s.name], got)
        expected[s.name] = {"written_by": {"spark": spark.version, "package": __version__},
                            "resume": how, "operators": got}
        with open(os.path.join(target, "expected.json"), "w") as f:
            json.dump(expected[s.name], f, indent=1)
        print("%s: written and resumed in %.0f s" % (s.name, time.time() - started), flush=True)
    shutil.rmtree(tmp)
    return expected


def derive(spark, s: Scenario, checkpoints: str, target: str) -> str:
    """Writes scenario ``s`` from the checkpoints of its source into ``target``; returns the
    folder of ``target`` holding one entry per operator."""
    for op in s.operators:
        source = os.path.join(checkpoints, op)
        if s.derive == "migrate":
            from spark_checkpoint_storage.migration import migrate
            # Reading the source needs no setting: the migration opens the provider and
            # file manager its offset log records.
            migrate(source, os.path.join(target, "checkpoints", op), to="heap", spark=spark)
        else:
            from spark_checkpoint_storage.savepoints import savepoint
            fmt = "native" if s.derive == "savepoint" else "canonical"
            savepoint(source, os.path.join(target, "savepoints", op), format=fmt)
    return "checkpoints" if s.derive == "migrate" else "savepoints"


def check_against_batch(spark, written: so.Driver, resumed: Dict[str, Any]) -> None:
    """Refuses to keep a golden whose expected results are wrong: what the queries wrote
    before the golden and after its resume must together equal the batch computation over
    all their input."""
    for name, got in resumed.items():
        op = so.operator(name)
        before = {b: r for b, r in written.outputs(op).items() if b < got["first_batch"]}
        # The resumed rows are already final (the last update of each key): one batch.
        final = so.final_result(op, {**before, got["first_batch"]: got["rows"]})
        want = batch_result(spark, written, op, WRITTEN_BATCHES + RESUME_FEED)
        if final != want:
            raise AssertionError("%s: the queries' results %s differ from the batch "
                                 "computation %s" % (name, final, want))
        # A golden whose resumed results a query without its state would give as well
        # could not tell whether the state was read.
        if got["rows"] == batch_result(spark, written, op, RESUME_FEED):
            raise AssertionError("%s: the resumed results do not depend on the state" % name)


def batch_result(spark, driver: so.Driver, op: so.Operator, feed: List[Any]) -> list:
    """The operator's batch computation over the input files of ``feed``, as final rows."""
    from pyspark.sql import functions as F
    rows = [r for b in feed for r in (so.flush_rows() if b == "flush" else so.batch_rows(b))]
    batch_df = driver.events(spark.createDataFrame(rows, so.SOURCE_SCHEMA))
    return so.sort_rows(so.as_strings(op.expected(batch_df).where(F.col("k") != so.FLUSH_KEY),
                                      op.columns))


# --------------------------------------------------------------------------------------
# The command line of tests/golden/generate.py and tests/test_spark_upgrade.py's processes

def main(argv: List[str]) -> None:
    """``write OUT [SCENARIO...] [--operators OP,...]``: writes goldens of the running line
    into OUT. ``resume FOLDER... --results FILE``: resumes each golden folder in a work
    folder beside FILE, and writes {folder: resumed results} to FILE."""
    command, args = argv[0], argv[1:]
    spark = session()
    if command == "write":
        operators = None
        if "--operators" in args:
            i = args.index("--operators")
            operators, args = args[i + 1].split(","), args[:i] + args[i + 2:]
        write(spark, args[0], args[1:] or None, operators)
    elif command == "resume":
        results_file = args[args.index("--results") + 1]
        folders = [a for a in args if a != "--results" and a != results_file]
        work = tempfile.mkdtemp(prefix="golden-resume-", dir=os.path.dirname(results_file))
        results = {f: resume(spark, f, os.path.join(work, str(i))) for i, f in enumerate(folders)}
        with open(results_file, "w") as f:
            json.dump(results, f)
    else:
        raise SystemExit("unknown command %r" % command)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
