"""Every stateful operator a third-party state store provider can run, as streaming queries
over one file source, with the same computation done in batch mode as the expectation.

Imported by the driver subprocesses that tests/test_stateful_operators.py starts (one
driver JVM per process; conftest.run_operators_driver) as ``support.stateful_operators``. Nothing here
asserts: a driver writes what every query produced and what the batch computation gives,
and the tests compare them.

Input: batch ``b`` is one parquet file of the rows with ids ``30*b .. 30*b+29`` (plus
duplicates, see :func:`batch_rows`), event time ``T0 + 100*b + 0..29`` seconds, so event time
advances by batch and no row is ever behind the watermark (delay 40.5 s): every streaming
result equals the batch result, and watermarks still evict state batch after batch. A
final "flush" file holds one row per join side under key ``-1`` far in the future: the
watermark jumps past everything, so windows, sessions, outer-join rows and timeouts all
close. Key ``-1`` is left out of both sides of every comparison.
"""
import json
import os
import signal
import threading
import time
from typing import Callable, Dict, List, Optional

from spark_checkpoint_storage import jvm_names

from support import add_to_python_workers, executors

PROVIDERS = jvm_names.MIGRATION_TARGETS

#: ``SCS_TEST_FILE_MANAGER=spark`` runs the provider on Spark's own checkpoint file manager
#: instead of ours (what ``configure_spark_with_checkpoint_storage`` sets).
FILE_MANAGERS = {"spark": jvm_names.spark_file_manager_class()}

STORAGE_CONF = "spark.sql.streaming.checkpointStorage"

#: Exit status of a driver process that killed itself on purpose (``kill_driver_at``).
DRIVER_KILLED_EXIT = 86

SOURCE_SCHEMA = "id long, k long, v long, side string, t long"
ROWS_PER_BATCH = 30
SECONDS_PER_BATCH = 100
WATERMARK = "40.5 seconds"  # never equal to a whole-second event time or window bound
T0 = 1_000_000_000  # event times in seconds; Spark takes an event time of 0 as late
FLUSH_T = T0 + 1_000_000
FLUSH_KEY = -1


def provider_class(name: str) -> str:
    return PROVIDERS.get(name, name)


def row(id_: int):
    """The one row an id stands for: duplicates of an id are identical rows."""
    b, j = divmod(id_, ROWS_PER_BATCH)
    return (id_, (id_ * id_) % 17, (id_ * 11) % 97, "R" if id_ % 3 == 0 else "L",
            T0 + b * SECONDS_PER_BATCH + j)


def batch_rows(b: int) -> List[tuple]:
    """Rows of input file ``b``: ids 30b..30b+29, the first 8 of them again (duplicates in
    one batch) and the last 5 ids of batch b-1 again (duplicates one batch apart, still
    within the watermark's reach)."""
    ids = list(range(b * ROWS_PER_BATCH, (b + 1) * ROWS_PER_BATCH))
    ids += ids[:8]
    if b > 0:
        ids += list(range(b * ROWS_PER_BATCH - 5, b * ROWS_PER_BATCH))
    return [row(i) for i in ids]


def flush_rows() -> List[tuple]:
    return [(-1, FLUSH_KEY, 0, "L", FLUSH_T), (-2, FLUSH_KEY, 0, "R", FLUSH_T)]


# --------------------------------------------------------------------------------------
# The operators. ``build(events)`` works on a streaming and on a batch DataFrame alike
# (withWatermark is a no-op in batch); ``expected(events)`` is the batch computation.

class Operator:
    def __init__(self, name: str, build: Callable, mode: str, columns: List[str],
                 expected: Optional[Callable] = None, key: Optional[List[str]] = None):
        self.name = name
        self.build = build
        self.mode = mode  # append | update | complete
        self.columns = columns
        self.expected = expected or build
        #: update mode: the columns naming a row of the result (the last update wins)
        self.key = key


def _agg(events):
    from pyspark.sql import functions as F
    return events.groupBy("k", "side").agg(F.count("*").alias("n"), F.sum("v").alias("s"))


def _join(how):
    def build(events):
        from pyspark.sql import functions as F
        left = events.where("side = 'L'").select(
            F.col("id").alias("lid"), F.col("k").alias("lk"), F.col("ts").alias("lts"))
        right = events.where("side = 'R'").select(
            F.col("id").alias("rid"), F.col("k").alias("rk"), F.col("ts").alias("rts"))
        left = left.withWatermark("lts", WATERMARK)
        right = right.withWatermark("rts", WATERMARK)
        cond = F.expr("lk = rk AND rts BETWEEN lts - INTERVAL 8 SECONDS AND lts + INTERVAL 8 SECONDS")
        return left.join(right, cond, how).select(
            F.coalesce("lk", "rk").alias("k"), "lid", "rid", "lts", "rts")
    return build


def _session_window(events):
    from pyspark.sql import functions as F
    return (events.withWatermark("ts", WATERMARK)
            .groupBy(F.session_window("ts", "10 seconds"), "k")
            .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
            .select("k", "session_window.start", "session_window.end", "n", "s"))


def _window(events):
    from pyspark.sql import functions as F
    return (events.withWatermark("ts", WATERMARK)
            .groupBy(F.window("ts", "10 seconds"), "k")
            .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
            .select("k", "window.start", "window.end", "n", "s"))


def _totals_on_timeout(key, pdfs, state):
    """flatMapGroupsWithState in Python: count and sum per key in state, kept until the
    key has been quiet for 30 s of event time, then emitted once and removed."""
    import pandas as pd
    if state.hasTimedOut:
        n, s = state.get
        state.remove()
        yield pd.DataFrame({"k": [key[0]], "n": [n], "s": [s]})
        return
    n, s = state.get if state.exists else (0, 0)
    latest = None
    for pdf in pdfs:
        n += len(pdf)
        s += int(pdf["v"].sum())
        m = pdf["ts"].max()
        latest = m if latest is None or m > latest else latest
    state.update((n, s))
    state.setTimeoutTimestamp(int(pd.Timestamp(latest).timestamp() * 1000) + 30_000)


def _apply_in_pandas_with_state(events):
    from pyspark.sql.streaming.state import GroupStateTimeout
    return (events.withWatermark("ts", WATERMARK).groupBy("k")
            .applyInPandasWithState(_totals_on_timeout, "k long, n long, s long",
                                    "n long, s long", "append", GroupStateTimeout.EventTimeTimeout))


def _totals(events):
    from pyspark.sql import functions as F
    return events.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s"))


OPERATORS: Dict[str, Operator] = {op.name: op for op in [
    Operator("aggregation_update", _agg, "update", ["k", "side", "n", "s"], key=["k", "side"]),
    Operator("aggregation_complete", _agg, "complete", ["k", "side", "n", "s"]),
    Operator("window_append", _window, "append", ["k", "start", "end", "n", "s"]),
    Operator("drop_duplicates", lambda e: e.dropDuplicates(["k", "v"]).select("k", "v"),
             "append", ["k", "v"]),
    Operator("drop_duplicates_within_watermark",
             lambda e: e.withWatermark("ts", WATERMARK)
                        .dropDuplicatesWithinWatermark(["id"]).select("k", "id", "v"),
             "append", ["k", "id", "v"],
             expected=lambda e: e.dropDuplicates(["id"]).select("k", "id", "v")),
    Operator("join_inner", _join("inner"), "append", ["k", "lid", "rid", "lts", "rts"]),
    Operator("join_left_outer", _join("left_outer"), "append", ["k", "lid", "rid", "lts", "rts"]),
    Operator("join_right_outer", _join("right_outer"), "append", ["k", "lid", "rid", "lts", "rts"]),
    Operator("apply_in_pandas_with_state", _apply_in_pandas_with_state, "append",
             ["k", "n", "s"], expected=_totals),
    Operator("session_window", _session_window, "append", ["k", "start", "end", "n", "s"]),
]}



def _transform_with_state(events):
    """transformWithStateInPandas (Spark 4.0+, RocksDB only): count and sum per key in a
    value state, the key's totals emitted on every batch that brings it rows."""
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor

    class Totals(StatefulProcessor):
        def init(self, handle):
            self.totals = handle.getValueState("totals", "n long, s long")

        def handleInputRows(self, key, rows, timerValues):
            n, s = tuple(self.totals.get()) if self.totals.exists() else (0, 0)
            for pdf in rows:
                n += len(pdf)
                s += int(pdf["v"].sum())
            self.totals.update((n, s))
            yield pd.DataFrame({"k": [key[0]], "n": [n], "s": [s]})

        def close(self):
            pass

    return events.groupBy("k").transformWithStateInPandas(
        Totals(), outputStructType="k long, n long, s long", outputMode="Update", timeMode="None")


#: operators only Spark's RocksDB provider runs (not in OPERATORS, which every provider runs)
ROCKSDB_OPERATORS: Dict[str, Operator] = {op.name: op for op in [
    Operator("transform_with_state", _transform_with_state, "update", ["k", "n", "s"], key=["k"],
             expected=_totals),
]}


def operator(name: str) -> Operator:
    """The operator named ``name``, of OPERATORS or ROCKSDB_OPERATORS."""
    return OPERATORS.get(name) or ROCKSDB_OPERATORS[name]


# --------------------------------------------------------------------------------------
# Results as plain data: rows of strings (None for null), sorted.

def sort_rows(rows):
    return sorted((tuple(r) for r in rows), key=lambda r: tuple((x is None, x or "") for x in r))


def as_strings(df, columns):
    from pyspark.sql import functions as F
    return [tuple(r) for r in df.select(*[F.col(c).cast("string").alias(c) for c in columns])
            .collect()]


def final_result(op: Operator, batches: Dict[int, list]) -> list:
    """What a sink would hold at the end: every appended row; the last update of each
    key; the last complete output."""
    if op.mode == "append":
        rows = [r for b in sorted(batches) for r in batches[b]]
    elif op.mode == "complete":
        rows = batches[max(batches)] if batches else []
    else:
        key_idx = [op.columns.index(c) for c in op.key]
        last = {}
        for b in sorted(batches):
            for r in batches[b]:
                last[tuple(r[i] for i in key_idx)] = r
        rows = list(last.values())
    k = op.columns.index("k")
    return sort_rows(r for r in rows if r[k] != str(FLUSH_KEY))


# --------------------------------------------------------------------------------------
# The driver side: one SparkSession, all operators' queries running side by side.

class Driver:
    """Runs the queries of one scenario step in this process's driver JVM.

    ``spec`` keys: ``work`` (directory shared by the steps of a scenario), ``master``,
    ``provider``, ``file_manager`` (optional), ``storage`` (optional: ``filesystem``, or
    ``driver`` with a checkpoint path, so that its packs persist), ``operators``, ``feed``
    (list of batch numbers, or ``"flush"``), ``kill_executor_after`` (batch numbers: SIGKILL
    one executor JVM inside the first batch to run after writing that file), ``kill_driver_at`` (a batch number: see
    :meth:`kill_driver`), ``results`` (write results.json at the end), ``checkpoint_root``
    (optional: a file system URI for the queries' checkpoints and the driver storage's packs,
    e.g. ``hdfs://...`` or ``s3a://...``; default ``<work>``), ``spark_conf`` (optional: more
    settings for the session, e.g. what reaches that file system), ``input_glob`` (optional:
    read the input folder through a glob), ``migrate_from`` and ``migrate_to`` (optional:
    before starting the queries, migrate each one's checkpoint under
    that checkpoint root to this one's with ``spark_checkpoint_storage.migration.migrate``, to
    that provider; with ``via_canonical_savepoint``, through a canonical savepoint of it;
    with ``migrate_partitions``, rescaled to that many partitions, and where each state row
    lies then recorded), ``check_placement`` (record where each state row lies at the end),
    ``variants`` (optional: more queries beside the operators', each variant a dict with
    ``label``, ``operators`` and, optionally, ``storage``, ``provider`` and ``spark_conf``,
    set on the session for its queries' start only, and ``checkpoint_root``; a variant's
    checkpoints are under ``<its checkpoint root, else the step's>/<label>`` and its queries
    named ``<label>/<operator>``: several storages, providers or file systems through the
    same kills in one driver, one Spark start for all)."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.work = spec["work"]
        self.source = os.path.join(self.work, "source")
        os.makedirs(self.source, exist_ok=True)
        self.operators = [operator(n) for n in spec["operators"]]
        #: (variant, operator) of every query of the step: the step's own (variant None), then
        #: each variant's
        self.members = [(None, op) for op in self.operators] + [
            (v, operator(n)) for v in spec.get("variants") or [] for n in v["operators"]]
        self.queries = {}
        #: executors killed by every driver of the scenario so far (a killed driver's own
        #: log is lost, so kills are also kept in a file of the work folder)
        self.killed_file = os.path.join(self.work, "executors-killed.json")
        killed = []
        if os.path.exists(self.killed_file):
            with open(self.killed_file) as f:
                killed = json.load(f)
        self.log = {"killed": killed, "batches": {}, "state_rows_removed": {}, "seconds": []}
        #: the executors Spark ran once the driver that killed executors stopped its queries
        #: (kept in a file too: a later driver of the scenario reports them)
        self.replaced_file = os.path.join(self.work, "executors-after-kills.json")
        if os.path.exists(self.replaced_file):
            with open(self.replaced_file) as f:
                self.log["executors_after_kills"] = json.load(f)
        #: set when the driver is to die in the queries' next batch (see kill_driver)
        self.kill_armed = threading.Event()
        self.kill_barrier = threading.Barrier(len(self.members))
        self.killed_batches = {}
        #: set by the first sink to run once an executor kill is pending (see kill_an_executor):
        #: the (query, batch id) whose batch is running then
        self.batch_running = threading.Event()
        self.running_batch = None
        self.kill_pending = False
        self.checkpoint_root = spec.get("checkpoint_root") or self.work

    def root(self, variant: Optional[dict] = None) -> str:
        """Where the checkpoints of ``variant``'s queries (and its driver storage's packs) are:
        the checkpoint root, or a folder named after the variant in the variant's own
        ``checkpoint_root`` (another file system's, say) or else in the step's."""
        if variant is None:
            return self.checkpoint_root.rstrip("/")
        base = (variant.get("checkpoint_root") or self.checkpoint_root).rstrip("/")
        return "%s/%s" % (base, variant["label"])

    def checkpoint(self, op: Operator, variant: Optional[dict] = None) -> str:
        return "%s/checkpoints/%s" % (self.root(variant), op.name)

    @staticmethod
    def key(op: Operator, variant: Optional[dict] = None) -> str:
        """The query's name, and its key in the log and the results."""
        return op.name if variant is None else "%s/%s" % (variant["label"], op.name)

    def variant_settings(self, variant: dict) -> Dict[str, str]:
        """The session settings ``variant``'s queries start with."""
        settings = {}
        if variant.get("provider"):
            settings["spark.sql.streaming.stateStore.providerClass"] = provider_class(variant["provider"])
        if variant.get("storage"):
            settings[STORAGE_CONF] = variant["storage"]
            if variant["storage"] == "driver":
                settings[STORAGE_CONF + ".checkpointPath"] = self.root(variant) + "/driver-storage"
        settings.update(variant.get("spark_conf") or {})
        return settings

    # -- session

    def session(self):
        from pyspark.sql import SparkSession
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        builder = (SparkSession.builder.master(self.spec["master"])
                   .appName("stateful-operators")
                   .config("spark.sql.shuffle.partitions", 4)
                   .config("spark.default.parallelism", 2)
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.streaming.stateStore.providerClass",
                           provider_class(self.spec["provider"]))
                   # Snapshots and cleanup while the queries run, so restores read a
                   # snapshot plus deltas, not only deltas.
                   .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", 2)
                   .config("spark.sql.streaming.stateStore.maintenanceInterval", "2s")
                   .config("spark.sql.streaming.minBatchesToRetain", 3)
                   # Spark 4.3 refuses a foreachBatch function that skips a batch run again
                   # without reading it; 3.5-4.2, Delta's sink and data source V2 sinks do not
                   # check: the sinks above skip as users' do on those.
                   .config("spark.sql.streaming.stateStore.commitValidation.enabled", "false"))
        storage = self.spec.get("storage")
        if storage:
            builder = builder.config(STORAGE_CONF, storage)
            if storage == "driver":
                builder = builder.config(STORAGE_CONF + ".checkpointPath",
                                         self.checkpoint_root.rstrip("/") + "/driver-storage")
        for k, v in (self.spec.get("spark_conf") or {}).items():
            builder = builder.config(k, v)
        fm = self.spec.get("file_manager")
        if fm:
            builder = builder.config("spark.sql.streaming.checkpointFileManagerClass",
                                     FILE_MANAGERS.get(fm, fm))
        self.spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        # Python workers unpickle the pandas function by reference to this module.
        add_to_python_workers(self.spark.sparkContext)
        return self.spark

    # -- input

    def write_file(self, name: str, rows: List[tuple]):
        import pyarrow as pa
        import pyarrow.parquet as pq
        cols = list(zip(*rows))
        table = pa.table({
            "id": pa.array(cols[0], pa.int64()), "k": pa.array(cols[1], pa.int64()),
            "v": pa.array(cols[2], pa.int64()), "side": pa.array(cols[3], pa.string()),
            "t": pa.array(cols[4], pa.int64())})
        tmp = os.path.join(self.source, ".%s.tmp" % name)  # hidden: the source skips it
        pq.write_table(table, tmp)
        os.rename(tmp, os.path.join(self.source, "%s.parquet" % name))

    def add_input(self, b):
        """Writes input file ``b``: batch ``b``'s rows, or the flush rows for ``"flush"``."""
        if b == "flush":
            self.write_file("flush", flush_rows())
        else:
            self.write_file("batch-%03d" % b, batch_rows(b))

    def events(self, df):
        from pyspark.sql import functions as F
        return df.withColumn("ts", F.timestamp_seconds("t"))

    def all_input(self) -> List[tuple]:
        rows = []
        for name in sorted(os.listdir(self.source)):
            if name.startswith("batch-"):
                rows += batch_rows(int(name[len("batch-"):-len(".parquet")]))
            elif name.startswith("flush"):
                rows += flush_rows()
        return rows

    # -- queries

    def start(self, op: Operator, variant: Optional[dict] = None):
        key = self.key(op, variant)
        out = os.path.join(self.work, "out", *key.split("/"))
        os.makedirs(out, exist_ok=True)
        columns = op.columns

        def sink(df, batch_id):
            # Spark's exactly-once pattern for foreachBatch (as Delta's sink and any sink
            # idempotent by batch id do): a batch id already written is skipped without
            # reading the DataFrame, so its stateful tasks never run again. After the driver
            # killed right after this sink (kill_driver), the batch's state must be durable.
            final = os.path.join(out, "%d.json" % batch_id)
            if os.path.exists(final):
                return
            if self.kill_pending and not self.batch_running.is_set():
                # Before the batch's job runs: its tasks, state commits and commit log entry
                # all come after this point.
                self.running_batch = (key, batch_id)
                self.batch_running.set()
            rows = as_strings(df, columns)
            tmp = os.path.join(out, ".%d.tmp" % batch_id)
            with open(tmp, "w") as f:
                json.dump(rows, f)
            os.rename(tmp, final)
            if self.kill_armed.is_set():
                self.kill_driver(key, batch_id)

        # With ``input_glob``, the source reads a glob of the folder: Spark's file source then
        # sets no base path, and a copy of the checkpoint resumes over a folder elsewhere
        # (on restart it lists the last batch's files again, and a plain folder refuses
        # those outside itself).
        path = os.path.join(self.source, "*.parquet") if self.spec.get("input_glob") else self.source
        stream = self.events(self.spark.readStream.schema(SOURCE_SCHEMA).parquet(path))
        writer = (op.build(stream).writeStream.queryName(key).outputMode(op.mode)
                  .foreachBatch(sink).trigger(processingTime="100 milliseconds")
                  .option("checkpointLocation", self.checkpoint(op, variant)))
        if variant is None:
            return writer.start()
        # A streaming query keeps the settings of its start (Spark clones the session):
        # the variant's are set for it alone.
        conf = self.spark.conf
        settings = self.variant_settings(variant)
        before = {k: conf.get(k, None) for k in settings}
        try:
            for k, v in settings.items():
                conf.set(k, v)
            return writer.start()
        finally:
            for k, v in before.items():
                if v is None:
                    conf.unset(k)
                else:
                    conf.set(k, v)

    def outputs(self, op: Operator, variant: Optional[dict] = None) -> Dict[int, list]:
        out = os.path.join(self.work, "out", *self.key(op, variant).split("/"))
        batches = {}
        for name in os.listdir(out):
            if name.endswith(".json"):
                with open(os.path.join(out, name)) as f:
                    batches[int(name[:-5])] = [tuple(r) for r in json.load(f)]
        return batches

    def process_all(self):
        for name, q in self.queries.items():
            q.processAllAvailable()
            if q.exception() is not None:
                raise RuntimeError("query %s failed: %s" % (name, q.exception()))
            self.log["batches"][name] = q.lastProgress["batchId"] if q.lastProgress else None

    # -- the driver

    def kill_driver(self, name: str, batch_id: int):
        """Called by each query's sink once its batch's output is written: by then every
        state store of the batch has committed, and Spark writes ``commits/<batch_id>`` only
        after the sink returns. All queries meet here, then the driver JVM is SIGKILLed and
        this process exits: every query is caught exactly between the state commit of a
        batch and its commit log entry."""
        self.killed_batches[name] = batch_id
        try:
            killer = self.kill_barrier.wait(timeout=120) == 0
        except threading.BrokenBarrierError:
            killer = True  # another query is stuck: kill anyway, the test sees who was missing
        if not killer:
            time.sleep(3600)  # the killer thread ends this process
        path = os.path.join(self.work, "driver-killed.json")
        with open(path + ".tmp", "w") as f:
            json.dump(dict(self.killed_batches), f)
        os.rename(path + ".tmp", path)
        print("KILLING driver in batches %s" % self.killed_batches, flush=True)
        os.kill(self.jvm_pid, signal.SIGKILL)
        os._exit(DRIVER_KILLED_EXIT)

    # -- executors

    def executor_pids(self) -> Dict[str, int]:
        """Executor id -> pid of this driver's executor JVMs (its child processes)."""
        return executors.executor_pids(executors.driver_pid(self.spark))

    def arm_executor_kill(self):
        """Makes the next batch of any query announce itself to :meth:`kill_an_executor`."""
        self.batch_running.clear()
        self.running_batch = None
        self.kill_pending = True

    def kill_an_executor(self, timeout: float = 120):
        """SIGKILL the oldest executor JVM still alive, once a batch is running (after
        :meth:`arm_executor_kill`): a query's sink has been called and its job not yet run,
        so the kill lands inside that batch, never between two."""
        if not self.batch_running.wait(timeout):
            raise RuntimeError("no batch started within %d s of arming the executor kill" % timeout)
        self.kill_pending = False
        pids = self.executor_pids()
        executor_id = min(pids, key=int)
        os.kill(pids[executor_id], signal.SIGKILL)
        query, batch_id = self.running_batch
        self.log["killed"].append({"executor": executor_id, "pid": pids[executor_id],
                                   "query": query, "batch": batch_id})
        with open(self.killed_file + ".tmp", "w") as f:
            json.dump(self.log["killed"], f)
        os.rename(self.killed_file + ".tmp", self.killed_file)
        print("KILLED executor %s pid %d" % (executor_id, pids[executor_id]), flush=True)

    def wait_for_executors(self, n: int, timeout: float = 60):
        pids = executors.wait_for_executors(executors.driver_pid(self.spark), n, timeout=timeout)
        return sorted(pids, key=int)

    # -- the step

    def run(self):
        started = time.time()
        spark = self.session()
        self.jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        print("SESSION in %.1f s" % (time.time() - started), flush=True)
        if self.spec["master"].startswith("local-cluster"):
            self.log["executors_at_start"] = self.wait_for_executors(2)
        # What the previous driver left (read through Hadoop: any file system).
        if self.spec.get("migrate_from"):
            self.migrate()
        self.log["commit_logs_at_start"] = {self.key(op, v): self.commit_log(op, v)
                                            for v, op in self.members}
        for v, op in self.members:
            self.queries[self.key(op, v)] = self.start(op, v)
        try:
            for b in self.spec["feed"]:
                if b == self.spec.get("kill_driver_at"):
                    self.kill_armed.set()
                if b in self.spec.get("kill_executor_after", []):
                    self.arm_executor_kill()
                self.add_input(b)
                started = time.time()
                if b in self.spec.get("kill_executor_after", []):
                    self.kill_an_executor()
                self.process_all()
                self.log["seconds"].append((b, round(time.time() - started, 1)))
                print("FED %s in %.1f s" % (b, time.time() - started), flush=True)
            for name, q in self.queries.items():
                self.log["state_rows_removed"][name] = sum(
                    sum(op.get("numRowsRemoved", 0) for op in p.get("stateOperators", []))
                    for p in q.recentProgress)
        finally:
            for q in self.queries.values():
                q.stop()
        if self.spec["master"].startswith("local-cluster"):
            self.log["executors_at_end"] = self.wait_for_executors(2)
            if self.spec.get("kill_executor_after"):
                self.log["executors_after_kills"] = self.log["executors_at_end"]
                with open(self.replaced_file, "w") as f:
                    json.dump(self.log["executors_at_end"], f)
        if self.spec.get("results"):
            self.write_results(spark)
        spark.stop()

    def migrate(self):
        migrated = {}
        # Reading a source whose state is partly in packs needs our file manager; the queries
        # resumed afterwards run on the one the step asked for.
        fm_key = "spark.sql.streaming.checkpointFileManagerClass"
        step_fm = self.spark.conf.get(fm_key, None)
        self.spark.conf.set(fm_key, "io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager")
        try:
            self.migrate_each(migrated)
        finally:
            if step_fm is None:
                self.spark.conf.unset(fm_key)
            else:
                self.spark.conf.set(fm_key, step_fm)
        self.log["migrations"] = migrated

    def migrate_each(self, migrated: dict):
        from spark_checkpoint_storage.migration import migrate
        for op in self.operators:
            source = "%s/checkpoints/%s" % (self.spec["migrate_from"].rstrip("/"), op.name)
            started = time.time()
            if self.spec.get("via_canonical_savepoint"):
                # Through a provider-neutral savepoint: its rows restored by the target.
                from spark_checkpoint_storage.savepoints import savepoint
                source = savepoint(source, os.path.join(self.work, "canonical", op.name),
                                   format="canonical")
            result = migrate(source, self.checkpoint(op), to=self.spec["migrate_to"],
                             num_partitions=self.spec.get("migrate_partitions"), spark=self.spark)
            migrated[op.name] = dict(result.to_dict(), wall_seconds=round(time.time() - started, 1),
                                     state_files=self.state_file_kinds(self.checkpoint(op)),
                                     source_state_files=self.state_file_kinds(
                                         "%s/checkpoints/%s" % (self.spec["migrate_from"], op.name)))
            if self.spec.get("migrate_partitions"):
                migrated[op.name]["placement"] = self.state_placement(self.checkpoint(op))
            print("MIGRATED %s: %r" % (op.name, result), flush=True)

    def state_placement(self, checkpoint: str) -> dict:
        """Per store of the checkpoint's operator 0: its state rows, the partitions holding
        them, and the rows outside the partition Spark's shuffle gives their key (SQL's
        ``pmod(hash(keys), n)``, n as the offset log records it); None on Spark 3.5, which
        has no state data source. The keys hashed are the
        operator's partitioning keys: a join's ``keyWithIndexToValue`` key without its index,
        a session window's key without the session's start."""
        from pyspark.sql import functions as F
        if int(self.spark.version.split(".")[0]) < 4:
            return None  # Spark 3.5 has no state data sources to read the rows back with
        meta = self.spark.read.format("state-metadata").load(checkpoint).collect()
        n = meta[0].numPartitions
        placement = {"numPartitions": n, "stores": {}}
        for m in meta:
            reader = self.spark.read.format("statestore").option("operatorId", m.operatorId)
            if m.stateStoreName != "default":
                reader = reader.option("storeName", m.stateStoreName)
            df = reader.load(checkpoint)
            fields = [f.name for f in df.schema["key"].dataType.fields]
            # Both keys end with a field the shuffle does not hash: the value's index, the
            # session window's start.
            if (m.stateStoreName.endswith("keyWithIndexToValue")
                    or m.operatorName == "sessionWindowStateStoreSaveExec"):
                fields = fields[:-1]
            expected = F.expr("pmod(hash(%s), %d)" % (", ".join("key.`%s`" % f for f in fields), n))
            rows = df.select("partition_id", expected.alias("expected")).collect()
            placement["stores"][m.stateStoreName] = {
                "rows": len(rows),
                "partitions": sorted({r.partition_id for r in rows}),
                "misplaced": sum(1 for r in rows if r.partition_id != r.expected),
                "hashed": fields,
            }
        return placement

    @staticmethod
    def state_file_kinds(checkpoint: str) -> list:
        """The kinds of files on disk under a local checkpoint's state/ (``delta``, ``zip``,
        ...); none for a remote checkpoint."""
        path = checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint
        kinds = set()
        for _, _, names in os.walk(os.path.join(path, "state")):
            kinds.update(n.rsplit(".", 1)[-1] for n in names if "." in n and not n.startswith("."))
        return sorted(kinds)

    def commit_log(self, op: Operator, variant: Optional[dict] = None) -> list:
        """(newest offsets/N, newest commits/N) of the query's checkpoint, None where empty."""
        from support.realfs import HadoopFiles
        files = HadoopFiles(self.spark)
        newest = lambda d: max((int(n) for n in files.list(d) if n.isdigit()), default=None)  # noqa: E731
        checkpoint = self.checkpoint(op, variant)
        return [newest(checkpoint + "/offsets"), newest(checkpoint + "/commits")]

    def checkpoint_facts(self, op: Operator, variant: Optional[dict] = None) -> dict:
        """The provider recorded in the newest offset log entry; the storage marker."""
        from support.realfs import HadoopFiles
        files = HadoopFiles(self.spark)
        offsets = self.checkpoint(op, variant) + "/offsets"
        latest = max((n for n in files.list(offsets) if n.isdigit()), key=int)
        marker = self.checkpoint(op, variant) + "/checkpoint-storage"
        return {"offsets": files.read(offsets + "/" + latest).decode(),
                "storage": files.read(marker).decode() if files.exists(marker) else None}

    def write_results(self, spark):
        from pyspark.sql import functions as F
        batch_df = self.events(spark.createDataFrame(self.all_input(), SOURCE_SCHEMA))
        results = {}
        expected = {}
        for v, op in self.members:
            if op.name not in expected:
                expected[op.name] = sort_rows(as_strings(
                    op.expected(batch_df).where(F.col("k") != FLUSH_KEY), op.columns))
            key, outputs, checkpoint = self.key(op, v), self.outputs(op, v), self.checkpoint(op, v)
            results[key] = {
                "got": final_result(op, outputs),
                "expected": expected[op.name],
                "output_batches": len(outputs),
                "checkpoint": self.checkpoint_facts(op, v),
                "state_files": self.state_file_kinds(checkpoint),
            }
            if self.spec.get("check_placement"):
                results[key]["placement"] = self.state_placement(checkpoint)
        with open(os.path.join(self.work, "results.json"), "w") as f:
            json.dump({"operators": results, "log": self.log}, f)


def main(argv):
    with open(argv[1]) as f:
        spec = json.load(f)
    Driver(spec).run()
