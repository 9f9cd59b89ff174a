"""A driver whose JVM is frozen (SIGSTOP) while its executors commit state: run by
tests/test_coordinator_reachability.py as ``python frozen_driver.py <spec.json>``, one
driver JVM per process, on ``local-cluster`` (executors in JVMs of their own).

Two queries run side by side on our provider and the storage the spec names: a running
count and sum per key (update mode, ``foreachBatch``) and a deduplication into a parquet
file sink. Both shuffle by key and then pace each row, in the same stage as the state store
(after the shuffle and the store's load, before its commit): through Spark's ``reflect`` the
executor sleeps, and for the deduplication marks the row with an empty temporary file, so
each state task runs more than a second before it commits. A thread of this driver freezes
the driver's JVM as soon as a mark appears: that task's commit falls inside the freeze, which outlasts
``spark.rpc.lookupTimeout`` and ``spark.rpc.askTimeout`` (set low), so it fails and Spark
retries the task after the freeze.

Steps (``spec["steps"]``, in order):
- ``first_freeze``: the first batch, the executors' first message to the driver inside a
  freeze;
- ``freezes``: ``spec["mid_run_freezes"]`` more batches, each with a freeze inside it;
- ``new_executor``: one executor JVM SIGKILLed between batches, then batches (at most 3)
  once Spark has started and registered another, until that one has computed rows; the
  counts' output names the executor JVM that computed each row.

Nothing here asserts: the driver writes what it saw to ``result.json`` (each query's output,
the input, the executors, whether a query failed) and the test compares.
"""
import json
import os
import signal
import sys
import threading
import time
from typing import Dict, List

from support import executors

PARTITIONS = 4
ROWS_PER_BATCH = 40
KEYS_PER_BATCH = 20
#: milliseconds each row waits in a state store's stage: about 1.5 s per task
PACE_MS = 150


def batch_rows(b: int) -> List[dict]:
    """Input file ``b``: 40 rows over 20 keys, each key twice; keys 10 apart from one batch
    to the next, so half of them are new in each batch and half seen before."""
    return [{"k": 10 * b + (i % KEYS_PER_BATCH), "v": 100 * b + i} for i in range(ROWS_PER_BATCH)]


class FrozenDriver:
    def __init__(self, spec: dict):
        self.spec = spec
        self.work = spec["work"]
        self.source = os.path.join(self.work, "source")
        for d in (self.source, os.path.join(self.work, "out", "counts")):
            os.makedirs(d, exist_ok=True)
        self.result = {"freezes": [], "steps": [], "query_exceptions": {}}
        self.fed = []

    def session(self):
        from pyspark.sql import SparkSession
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage, jvm_names

        storage = self.spec["storage"]
        builder = (SparkSession.builder.master("local-cluster[2,1,1024]")
                   .appName("frozen-driver")
                   .config("spark.sql.shuffle.partitions", PARTITIONS)
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config(jvm_names.PROVIDER_CLASS_CONF, jvm_names.HEAP_PROVIDER_CLASS)
                   .config("spark.rpc.askTimeout", "%ds" % self.spec["timeout_s"])
                   .config("spark.rpc.lookupTimeout", "%ds" % self.spec["timeout_s"])
                   # Any free executor takes any task: the executor started after a kill
                   # runs state tasks without waiting for the survivor's to run out.
                   .config("spark.locality.wait", "0")
                   # A thawed driver first works off what queued while it was stopped: on a
                   # loaded machine a retried commit can meet it still busy and time out
                   # again. The test is about reaching it at all, so Spark may retry more
                   # often than its default 4 before it calls the query failed.
                   .config("spark.task.maxFailures", "8")
                   .config("spark.sql.streaming.checkpointStorage", storage))
        if storage == "driver":
            builder = builder.config("spark.sql.streaming.checkpointStorage.checkpointPath",
                                     os.path.join(self.work, "driver-storage"))
        self.spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
        # The lost tasks' reasons are WARN lines of the driver's log, read by the test.
        self.spark.sparkContext.setLogLevel("WARN")
        self.jvm_pid = int(self.spark._jvm.java.lang.ProcessHandle.current().pid())
        # The executors' temporary folder is the driver's: one machine, one JDK default.
        self.mark_dir = self.spark._jvm.java.lang.System.getProperty("java.io.tmpdir")
        self.mark_prefix = "scs-frozen-driver-%d-" % self.jvm_pid
        return self.spark

    def marks(self) -> List[str]:
        return [n for n in os.listdir(self.mark_dir) if n.startswith(self.mark_prefix)]

    def clear_marks(self):
        for n in self.marks():
            os.remove(os.path.join(self.mark_dir, n))

    # -- input and queries

    def feed(self, b: int):
        tmp = os.path.join(self.source, ".%d.tmp" % b)  # hidden: the source skips it
        with open(tmp, "w") as f:
            for r in batch_rows(b):
                f.write(json.dumps(r) + "\n")
        os.rename(tmp, os.path.join(self.source, "batch-%03d.json" % b))
        self.fed.append(b)

    def start_queries(self):
        from pyspark.sql import functions as F

        # Shuffled by key once: the state operators find the distribution they need, so the
        # pace (a filter that keeps every row) runs in their stage, before their commit. Only
        # the deduplication marks its rows: its stage has one state store, loaded before the
        # rows arrive, so from its first mark to its commit the task asks the driver nothing
        # of Spark's (an aggregation's second store reads a broadcast from the driver there).
        sleep = "length(reflect('java.lang.Thread', 'sleep', bigint(%d)))" % PACE_MS
        mark = "length(reflect('java.io.File', 'createTempFile', '%s', '.mark'))" % self.mark_prefix
        rows = (self.spark.readStream.schema("k long, v long").json(self.source)
                .repartition(PARTITIONS, "k"))
        events = rows.where(F.expr(sleep + " >= 0"))
        marked_events = rows.where(F.expr("%s + %s >= 0" % (mark, sleep)))
        counts_out = os.path.join(self.work, "out", "counts")
        # The pid of the executor JVM that computed a row (ProcessHandle's text is its pid).
        pid = F.expr("reflect('java.lang.ProcessHandle', 'current')")

        def write_counts(df, batch_id):
            rows = [[r["k"], r["n"], r["total"], int(r["pid"])] for r in df.collect()]
            tmp = os.path.join(counts_out, ".%d.tmp" % batch_id)
            with open(tmp, "w") as f:
                json.dump(rows, f)
            os.rename(tmp, os.path.join(counts_out, "%d.json" % batch_id))

        self.queries = {
            "counts": (events.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("total"))
                       .withColumn("pid", pid)
                       .writeStream.queryName("counts").outputMode("update")
                       .foreachBatch(write_counts).trigger(processingTime="100 milliseconds")
                       .option("checkpointLocation", os.path.join(self.work, "checkpoints", "counts"))
                       .start()),
            "dedup": (marked_events.dropDuplicates(["k"]).writeStream.queryName("dedup")
                      .format("parquet").trigger(processingTime="100 milliseconds")
                      .option("path", os.path.join(self.work, "out", "dedup"))
                      .option("checkpointLocation", os.path.join(self.work, "checkpoints", "dedup"))
                      .start()),
        }

    def process_all(self):
        for q in self.queries.values():
            try:
                q.processAllAvailable()
            except Exception as e:  # noqa: BLE001 - recorded for the test
                self.result["query_exceptions"][q.name] = str(e)[:4000]

    # -- the freeze

    def freeze_inside_next_batch(self):
        """A thread that freezes this driver's JVM for ``freeze_s`` seconds as soon as a
        state task has loaded its store and processes rows."""
        self.clear_marks()

        def freeze():
            deadline = time.time() + 300
            while not self.marks():
                if time.time() > deadline:
                    self.result["freezes"].append({"missed": True})
                    return
                time.sleep(0.01)
            started = time.time()
            os.kill(self.jvm_pid, signal.SIGSTOP)
            print("FROZE driver at %s" % time.strftime("%H:%M:%S"), file=sys.stderr, flush=True)
            time.sleep(self.spec["freeze_s"])
            os.kill(self.jvm_pid, signal.SIGCONT)
            print("THAWED driver after %.1f s at %s" % (time.time() - started, time.strftime("%H:%M:%S")),
                  file=sys.stderr, flush=True)
            self.result["freezes"].append({"seconds": round(time.time() - started, 1)})

        t = threading.Thread(target=freeze, daemon=True)
        t.start()
        return t

    # -- executors

    def executor_pids(self) -> Dict[str, int]:
        return executors.executor_pids(self.jvm_pid)

    def wait_for_executors(self, n: int, exclude=(), timeout: float = 120) -> Dict[str, int]:
        return executors.wait_for_executors(self.jvm_pid, n, exclude, timeout)

    def wait_for_registration(self, executor_ids, timeout: float = 120):
        """Until the driver has registered every executor of ``executor_ids``."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            registered = set(str(self.spark._jsc.sc().getExecutorIds().mkString(",")).split(","))
            if executor_ids <= registered:
                return
            time.sleep(0.5)

    def read_counts(self) -> Dict[int, list]:
        counts_out = os.path.join(self.work, "out", "counts")
        out = {}
        for n in os.listdir(counts_out):
            if n.endswith(".json"):
                with open(os.path.join(counts_out, n)) as f:
                    out[int(n[:-5])] = json.load(f)
        return out

    # -- the run

    def batch(self, step: str, b: int, freeze: bool):
        print("STEP %s batch %d" % (step, b), file=sys.stderr, flush=True)
        freezer = self.freeze_inside_next_batch() if freeze else None
        self.feed(b)
        if not self.queries:
            self.start_queries()
        self.process_all()
        if freezer is not None:
            freezer.join(timeout=300)
        self.clear_marks()
        self.result["steps"].append({"step": step, "batch": b})

    def run(self):
        self.session()
        self.queries = {}
        self.result["executors_at_start"] = self.wait_for_executors(2)
        self.result["application_id"] = self.spark.sparkContext.applicationId
        b = 0
        for step in self.spec["steps"]:
            if step == "first_freeze":
                self.batch(step, b, freeze=True)
                b += 1
            elif step == "freezes":
                for _ in range(self.spec["mid_run_freezes"]):
                    self.batch(step, b, freeze=True)
                    b += 1
            elif step == "new_executor":
                before = self.executor_pids()
                victim = min(before, key=int)
                os.kill(before[victim], signal.SIGKILL)
                new = self.wait_for_executors(1, exclude=set(before))
                self.wait_for_registration(set(new))
                self.result["killed_executor"] = {victim: before[victim]}
                self.result["executors_after_kill"] = self.executor_pids()
                # Until the new executor has run state tasks (at most 3 batches; Spark hands
                # a free executor any task, spark.locality.wait being 0).
                self.result["batches_after_kill"] = []
                for _ in range(3):
                    self.batch(step, b, freeze=False)
                    self.result["batches_after_kill"].append(b)
                    b += 1
                    pids = {row[3] for row in self.read_counts().get(b - 1, [])}
                    if pids & set(new.values()):
                        break
        for name, q in self.queries.items():
            if q.exception() is not None and name not in self.result["query_exceptions"]:
                self.result["query_exceptions"][name] = str(q.exception())[:4000]
            self.result.setdefault("last_batch", {})[name] = (
                q.lastProgress["batchId"] if q.lastProgress else None)
            self.result.setdefault("run_ids", {})[name] = sorted(
                {p["runId"] for p in q.recentProgress})
            q.stop()
        self.result["input"] = [r for fed in self.fed for r in batch_rows(fed)]
        self.result["counts"] = self.read_counts()
        self.result["last_fed"] = b - 1
        self.result["dedup"] = [[r["k"], r["v"]] for r in
                                self.spark.read.parquet(os.path.join(self.work, "out", "dedup")).collect()]
        with open(os.path.join(self.work, "result.json"), "w") as f:
            json.dump(self.result, f)
        self.spark.stop()


def main(argv):
    with open(argv[1]) as f:
        spec = json.load(f)
    FrozenDriver(spec).run()


if __name__ == "__main__":
    main(sys.argv)
