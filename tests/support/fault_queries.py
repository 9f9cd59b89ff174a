"""The driver of tests/test_storage_faults.py, one Spark application a run: a ``dropDuplicates``
into the parquet sink (an exactly-once sink: Spark never runs a batch again once it committed
it), its checkpoint and storage on the fault-injecting file system (support/faults.py).

``phase: "faults"``: for every scenario, two checkpoints. Each runs three batches, then the
scenario's fault is armed and the fourth batch must fail. Checkpoint ``same-app`` is restarted
in this application (the failed batch again, one more); ``new-app`` is left for the next.
``phase: "resume"``: every checkpoint resumes in this (new) application and runs one more batch;
with ``after`` (a file the test writes once the faults' application ended), each scenario
waits until that application has finished it, so both applications may run side by side.
``phase: "random"``: a share of every operation on the checkpoints fails at random for a whole
run of an aggregation and a deduplication, each restarted (in this application) whenever it
dies, with our provider and storage (with asyncStateWrites too), Spark's RocksDB provider
(changelog on) on our file manager,
or Spark's default provider and file manager (the anchor);
prints one JSON line per run: {"variant", "query", "restarts", "exact", "batches"}.
``phase: "publish"``: a savepoint and a migration written while a step of their publication
fails or loses its answer; each is asked again where it failed, then a query resumes from it.
``phase: "neighbour"``: a query's batch times alone, then beside a query of the same driver
whose every pack write stalls.
After each run the sink's rows are compared with the batch computation of its input. Prints
one JSON line per run: {"scenario", "checkpoint", "step", "error", "keys", "expected"}."""
import json
import os
import re
import sys

from pyspark.sql import SparkSession

from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from support.faults import Faults, uri  # noqa: E402

SCHEMA = "k long, v long"


def F_col(name):
    from pyspark.sql import functions as F
    return F.col(name)


def rows_of(batch):
    """Input file ``batch``: 20 keys, half of them new."""
    return [(k, batch) for k in range(batch * 10, batch * 10 + 20)]


def skipping_written_batches(sink):
    """A ``foreachBatch`` function as Spark's guide writes one for exactly-once output: a batch
    id it already wrote is skipped without reading the DataFrame, so Spark's tasks of a batch
    run again after a failure never run (as with Delta's sink, or any sink idempotent by batch
    id). Each batch's rows go to a folder of their own, then the batch id is marked written."""
    def write(df, batch_id):
        marker = os.path.join(sink, "_written", str(batch_id))
        if os.path.exists(marker):
            return
        df.write.mode("overwrite").parquet(os.path.join(sink, "batch=%d" % batch_id))
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker, "w"):
            pass
    return write


class Query:
    """``sink``: "parquet" (Spark's file sink), "foreachBatch" (skipping_written_batches) or
    "delta" (Delta Lake's streaming sink: a batch id its log holds is skipped, its tasks never
    run again; the session needs Delta's jars, tests/test_delta_sink.py)."""
    def __init__(self, spark, folder, faults, sink="parquet"):
        self.spark, self.folder, self.faults, self.sink_kind = spark, folder, faults, sink
        self.source = os.path.join(folder, "source")
        self.sink = os.path.join(folder, "sink")
        self.checkpoint = uri(os.path.join(folder, "checkpoint"))
        os.makedirs(self.source, exist_ok=True)

    def add_input(self):
        batch = len([f for f in os.listdir(self.source) if f.startswith("in-")])
        self.spark.createDataFrame(rows_of(batch), SCHEMA).coalesce(1).write.parquet(
            os.path.join(self.source, "in-%d" % batch))

    def run(self, new_inputs):
        """Runs the query until it has processed every input; returns the error, if any."""
        writer = (self.spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
                  .option("recursiveFileLookup", "true").parquet(self.source)
                  .dropDuplicates(["k"]).writeStream.option("checkpointLocation", self.checkpoint))
        if self.sink_kind == "foreachBatch":
            writer = writer.foreachBatch(skipping_written_batches(self.sink))
        else:
            writer = writer.format(self.sink_kind).option("path", self.sink)
        query = writer.start()
        try:
            query.processAllAvailable()
            for _ in range(new_inputs):
                self.add_input()
                query.processAllAvailable()
            return None
        except Exception as e:  # the fault, or what a lost state would give
            # Whole: behind foreachBatch, the cause follows the Python traceback's lines.
            return str(e)[:20000]
        finally:
            query.stop()

    def check(self):
        """(keys in the sink, each once; the batch computation's keys)."""
        inputs = len([f for f in os.listdir(self.source) if f.startswith("in-")])
        expected = sorted({k for b in range(inputs) for k, _ in rows_of(b)})
        if self.sink_kind == "foreachBatch":
            if not os.path.exists(os.path.join(self.sink, "_written")):
                return [], expected
            written = os.listdir(os.path.join(self.sink, "_written"))
            got = [r.k for r in self.spark.read.schema(SCHEMA).parquet(
                *[os.path.join(self.sink, "batch=%s" % b) for b in written]).select("k").collect()]
            return sorted(got), expected
        if self.sink_kind == "delta":
            if not os.path.exists(os.path.join(self.sink, "_delta_log")):
                return [], expected
            got = [r.k for r in self.spark.read.format("delta").load(self.sink).select("k").collect()]
            return sorted(got), expected
        if not os.path.exists(os.path.join(self.sink, "_spark_metadata")):
            return [], expected
        got = [r.k for r in self.spark.read.schema(SCHEMA).parquet(self.sink).select("k").collect()]
        return sorted(got), expected


HDFS_BACKED = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STORAGE = "spark.sql.streaming.checkpointStorage"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
#: the random phase's variants: the settings each changes from the session's start (None:
#: unset, Spark's default); the others are the session's (our provider, file manager and the
#: storage the spec names)
VARIANTS = {
    # every state file a file of its own, written by the executor's background writer
    "async": {STORAGE + ".fileStateSizeThreshold": "0", STORAGE + ".asyncStateWrites": "true"},
    "rocksdb": {PROVIDER: ROCKSDB, CHANGELOG: "true"},
    "hdfs": {PROVIDER: HDFS_BACKED, FILE_MANAGER: None},
    "driver": {STORAGE: "driver"},
}
VARIANT_KEYS = sorted({key for conf in VARIANTS.values() for key in conf})
#: the storage name of a scenario run on Spark's default provider and file manager
SPARK_DEFAULT = "spark-default"


def checkpoints_of(scenario):
    """The checkpoints a scenario runs: both by default, or those it names."""
    return scenario.get("checkpoints", ("same-app", "new-app"))


def random_run(spark, faults, folder, variant, query_kind, inputs, share, seed, max_restarts):
    """One query over ``inputs`` files under random faults, restarted until it processed them
    all; the state (aggregation) or the sink (deduplication) is then compared with the batch
    computation."""
    from pyspark.sql import functions as F
    source = os.path.join(folder, "source")
    sink = os.path.join(folder, "sink")
    checkpoint = uri(os.path.join(folder, "checkpoint"))
    for b in range(inputs):
        spark.createDataFrame(rows_of(b), SCHEMA).coalesce(1).write.parquet(os.path.join(source, "in-%d" % b))
    faults.arm("random %s %d before,after %s/checkpoint.*" % (share, seed, re.escape(folder)))
    restarts, errors = 0, []
    while True:
        stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
                  .option("recursiveFileLookup", "true").parquet(source))
        if query_kind == "aggregation":
            # Complete mode: the last batch's output is the whole state (Spark 3.5 has no state
            # data source to read it with); overwriting makes a rerun's output the same.
            writer = (stream.groupBy("k").agg(F.count("*").alias("n")).writeStream.outputMode("complete")
                      .foreachBatch(lambda df, _: df.write.mode("overwrite").parquet(sink)))
        else:
            writer = stream.dropDuplicates(["k"]).writeStream.format("parquet").option("path", sink)
        try:
            query = writer.option("checkpointLocation", checkpoint).start()
            try:
                query.processAllAvailable()
            finally:
                query.stop()
            break
        except Exception as e:
            restarts += 1
            errors.append(str(e).split("\n")[0][:300])
            if restarts > max_restarts:
                break
    faults.disarm()
    expected_counts = {}
    for b in range(inputs):
        for k, _ in rows_of(b):
            expected_counts[k] = expected_counts.get(k, 0) + 1
    if query_kind == "aggregation":
        got = {r.k: r.n for r in spark.read.parquet(sink).collect()}
        exact = got == expected_counts
    else:
        keys = sorted(r.k for r in spark.read.schema(SCHEMA).parquet(sink).select("k").collect())
        exact = keys == sorted(expected_counts)
    commits = [n for n in os.listdir(os.path.join(folder, "checkpoint", "commits")) if n.isdigit()]
    return {"variant": variant, "query": query_kind, "restarts": restarts, "exact": exact,
            "batches": len(commits), "errors": errors[-5:]}


def resume_from(spark, query, checkpoint, name):
    """Runs ``query``'s deduplication once more from ``checkpoint`` (a savepoint, a migration's
    output) into a copy of its sink, with one new input; (error, keys, expected)."""
    import shutil
    sink = os.path.join(query.folder, "sink-" + name)
    shutil.copytree(query.sink, sink)
    other = Query(spark, query.folder, query.faults)
    other.sink, other.checkpoint = sink, checkpoint
    error = other.run(0)
    # The copy's log names the original's files, which a read of the copy leaves out (they lie
    # outside it): the original's rows, then the new batch's.
    before, _ = query.check()
    new, expected = other.check()
    return error, sorted(before + new), expected


def publish_phase(spark, faults, base, report_line):
    from spark_checkpoint_storage.migration import migrate
    from spark_checkpoint_storage.savepoints import savepoint
    folder = os.path.join(base, "publish")
    query = Query(spark, os.path.join(folder, "query"), faults)
    assert query.run(3) is None
    targets = {}

    def attempt(name, call, rule):
        target = uri(os.path.join(folder, name))
        faults.arm(rule.replace("{dir}", re.escape(folder)).replace("{name}", name))
        try:
            call(target)
            first = None
        except Exception as e:
            first = str(e).split("\n")[0][:1000]
        faults.disarm()
        again = None
        if first is not None:
            try:
                call(target)
            except Exception as e:
                again = str(e).split("\n")[0][:1000]
        targets[name] = target
        report_line({"target": name, "first": first, "again": again})

    attempt("sp-rename-after", lambda t: savepoint(query.checkpoint, t), r"rename after {dir}/\.{name}\.saving-[^/]+")
    attempt("sp-create-before", lambda t: savepoint(query.checkpoint, t),
            r"create before {dir}/\.{name}\.saving-[^/]+/commits/.*")
    attempt("sp-note-delete-after", lambda t: savepoint(query.checkpoint, t),
            r"delete after {dir}/\.{name}\.saving-[^/]+/[^/]+")
    attempt("mig-rename-after", lambda t: migrate(query.checkpoint, t, to="heap"),
            r"rename after {dir}/\.{name}\.migrating-[^/]+")
    attempt("mig-state-rename-after", lambda t: migrate(query.checkpoint, t, to="heap"),
            r"rename after {dir}/\.{name}\.migrating-[^/]+/state/.*")
    query.add_input()
    for name, target in targets.items():
        error, keys, expected = resume_from(spark, query, target, name)
        report_line({"resumed": name, "error": error, "exact": keys == expected,
                     "missing": sorted(set(expected) - set(keys)), "twice": len(keys) - len(set(keys))})


def neighbour_phase(spark, faults, base, stall_ms, report_line):
    import time
    from datetime import datetime

    def start(name):
        return (spark.readStream.format("rate").option("rowsPerSecond", 200).load()
                .groupBy((F_col("value") % 20).alias("k")).count().writeStream.outputMode("update")
                .format("noop").trigger(processingTime="500 milliseconds").queryName(name)
                .option("checkpointLocation", uri(os.path.join(base, "neighbour", name, "checkpoint"))).start())

    def durations(query, since, until):
        out = []
        for p in query.recentProgress:
            at = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
            if since <= at <= until and "triggerExecution" in p["durationMs"]:
                out.append(p["durationMs"]["triggerExecution"])
        return out

    def await_batches(query, n, since, timeout_s):
        deadline = time.time() + timeout_s
        while time.time() < deadline and len(durations(query, since, time.time())) < n:
            time.sleep(0.2)

    b = start("b")
    await_batches(b, 2, 0, 180)  # its first batches (planning, the first pack) before the baseline
    t = time.time()
    await_batches(b, 4, t, 120)
    alone = durations(b, t, time.time())
    faults.arm("create stall=%d %s/neighbour/a/checkpoint/state-packs/.* *" % (stall_ms, re.escape(base)))
    a = start("a")
    deadline = time.time() + 120
    while time.time() < deadline and not any("/neighbour/a/" in f[2] for f in faults.injected()):
        time.sleep(0.2)
    stalled_at = time.time()
    time.sleep(stall_ms / 1000.0 - 1)
    beside = durations(b, stalled_at, time.time())
    for q in (a, b):
        q.stop()
    faults.disarm()
    report_line({"alone": alone, "beside_stall": beside, "stall_ms": stall_ms,
                 "stalls": sum(1 for f in faults.injected() if "/neighbour/a/" in f[2])})


def main(spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    # A phase that waits for another application's (``after``) keeps the rules it arms.
    faults = Faults(spec["faults"], reset=not spec.get("after"))
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               # Spark 4.3 refuses a foreachBatch function that skips a batch run again without
               # reading it; 3.5-4.2 and every other sink (Delta's, data source V2) do not check:
               # the scenarios of such a sink need what those lines do.
               .config("spark.sql.streaming.stateStore.commitValidation.enabled", "false")
               .config("spark.sql.streaming.checkpointStorage", spec["storage"])
               .config("spark.sql.streaming.checkpointStorage.checkpointPath",
                       uri(os.path.join(spec["base"], "storage"))))
    for key, value in dict(faults.spark_conf(), **spec.get("spark_conf", {})).items():
        builder = builder.config(key, value)
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()

    def report(scenario, checkpoint, step, error, query, storage=spec["storage"]):
        keys, expected = query.check()
        print(json.dumps({"storage": storage, "scenario": scenario, "checkpoint": checkpoint,
                          "step": step, "error": error, "keys": keys, "expected": expected}),
              flush=True)

    def report_line(d):
        print(json.dumps(d), flush=True)

    if spec["phase"] in ("publish", "neighbour"):
        if spec["phase"] == "publish":
            publish_phase(spark, faults, spec["base"], report_line)
        else:
            neighbour_phase(spark, faults, spec["base"], spec["stall_ms"], report_line)
        spark.stop()
        return
    if spec["phase"] == "random":
        # Each variant's settings from those the session started with: one variant's never
        # reach the next.
        initial = {key: spark.conf.get(key, None) for key in VARIANT_KEYS}
        for variant in spec["variants"]:
            for key, value in dict(initial, **VARIANTS.get(variant, {})).items():
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)
            for n, query_kind in enumerate(("aggregation", "deduplication")):
                folder = os.path.join(spec["base"], variant, query_kind)
                print(json.dumps(random_run(spark, faults, folder, variant, query_kind, spec["inputs"],
                                            spec["share"], spec["seed"] + n, spec["max_restarts"])), flush=True)
        spark.stop()
        return
    # Each storage's scenarios in turn, in this one application (the storage is a setting of
    # the session, read when a query starts), each in a folder of its own.
    # The storage "spark-default" is the anchor: Spark's default provider on Spark's file
    # manager, its scenarios' faults on its own state files.
    storages = spec.get("storages") or {spec["storage"]: {"base": spec["base"],
                                                           "scenarios": spec["scenarios"]}}
    ours = {key: spark.conf.get(key, None) for key in (PROVIDER, FILE_MANAGER)}
    for storage, plan in storages.items():
        for key, value in (VARIANTS["hdfs"] if storage == SPARK_DEFAULT else ours).items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        if storage != SPARK_DEFAULT:
            spark.conf.set(STORAGE, storage)
        spark.conf.set(STORAGE + ".checkpointPath", uri(os.path.join(plan["base"], "storage")))
        for scenario in plan["scenarios"]:
            done = os.path.join(plan["base"], scenario["name"], ".phase-done")
            if spec.get("after"):
                wait_for_scenario(done, spec["after"])
            run_scenario(spark, faults, spec["phase"], storage, plan["base"], scenario,
                         spec.get("batches_before", 3),
                         lambda *step, storage=storage: report(*step, storage=storage))
            with open(done, "w"):  # for an application waiting for this scenario's phase
                pass
    spark.stop()


def wait_for_scenario(done, ended):
    """Until the previous phase's application finished the scenario (``done``); fails once
    that application ended (``ended`` exists) without it."""
    import time
    while not os.path.exists(done):
        if os.path.exists(ended):
            if os.path.exists(done):
                break
            raise RuntimeError("the previous phase never finished %s: its application ended" % done)
        time.sleep(0.2)


def run_scenario(spark, faults, phase, storage, base, scenario, batches_before, report):
    threshold = STORAGE + ".fileStateSizeThreshold"
    if storage == "filesystem" and "threshold" in scenario:
        spark.conf.set(threshold, scenario["threshold"])
    else:
        spark.conf.unset(threshold)
    for checkpoint in checkpoints_of(scenario):
        query = Query(spark, os.path.join(base, scenario["name"], checkpoint), faults,
                      scenario.get("sink", "parquet"))
        if phase == "faults":
            first = scenario.get("first_batch_fails", False)
            if not first:
                report(scenario["name"], checkpoint, "before", query.run(batches_before), query)
            # The rules name this checkpoint's files: each checkpoint meets its own fault.
            folder = re.escape(os.path.join(base, scenario["name"], checkpoint))
            faults.arm(*[r.replace("{cp}", folder) for r in scenario["rules"]])
            report(scenario["name"], checkpoint, "fault", query.run(1), query)
            faults.disarm()
            if checkpoint == "same-app":
                report(scenario["name"], checkpoint, "restart", query.run(1), query)
        else:
            report(scenario["name"], checkpoint, "resume", query.run(1), query)


if __name__ == "__main__":
    main(sys.argv[1])
