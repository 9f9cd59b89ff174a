"""The checkpoint storages on a remote file system (HDFS or S3), in one driver process:
run as ``python support/remote_storage_checks.py <spec.json>`` by tests/test_real_filesystems.py,
which asserts on the ``results.json`` written here (nothing here asserts).

``spec``: ``work`` (a local folder: inputs, results), ``root`` (the remote folder, e.g.
``s3a://bucket/run-1``), ``spark_conf`` (what reaches the file system), ``checks`` (names
of the functions below, run in order); or ``runs``, a list of such ``work``, ``root`` and
``checks``, one per file system, run one after the other in this driver (``spark_conf``
reaching them all). Each check records what the test needs: state read
back, files found on the remote file system, error messages.

Every query is the aggregation of the storage tests (support/aggregation.py: input files are
local, checkpoints remote); results are compared with its ``expected``.
"""
import json
import os
import sys
import time
import traceback

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)

from support.realfs import HadoopFiles, read_counters  # noqa: E402
from support.aggregation import expected, run_aggregation, state_of  # noqa: E402

STORAGE = "spark.sql.streaming.checkpointStorage"
PARTITIONS = 4
#: requests_per_batch: batches before its window, and in it (Spark's purged log entries are
#: deleted ten at a time: a window of ten holds one such request for each log).
WARMUP_BATCHES = 4
MEASURED_BATCHES = 10


def session(spec):
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
    builder = (SparkSession.builder.master("local[2]")
               .config("spark.sql.shuffle.partitions", PARTITIONS)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # Maintenance (snapshots, cleanup of old versions) every second, so retention
               # shows within a few batches.
               .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s"))
    for k, v in spec.get("spark_conf", {}).items():
        builder = builder.config(k, v)
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Checks:
    def __init__(self, spark, spec):
        self.spark = spark
        self.spec = spec
        self.work = spec["work"]
        self.root = spec["root"].rstrip("/")
        self.files = HadoopFiles(spark)
        self.results = {}

    def remote(self, *parts):
        return "/".join([self.root] + list(parts))

    def local(self, *parts):
        return os.path.join(self.work, *parts)

    def with_storage(self, storage, body, **settings):
        """Runs ``body()`` with a storage set on the session, then unsets it."""
        conf = {STORAGE: "filesystem" if storage == "filesystem" else "driver"}
        if storage == "driver":
            conf[STORAGE + ".checkpointPath"] = self.remote("driver-storage")
        conf.update({STORAGE + k: str(v) for k, v in settings.items()})
        for k, v in conf.items():
            self.spark.conf.set(k, v)
        try:
            return body()
        finally:
            for k in conf:
                self.spark.conf.unset(k)

    def error_of(self, body) -> str:
        try:
            body()
        except Exception as e:  # noqa: BLE001 - the test reads the message
            return str(e)
        return ""

    def eventually(self, condition, seconds=60.0):
        """Polls a condition of background work (maintenance, cleanup) until it holds."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if condition():
                return True
            time.sleep(0.2)
        return bool(condition())

    # -- the checks

    def restart(self):
        """Both storages: 3 batches, the query stopped, 2 more batches by a new run of it
        (the driver reloads the inline state from the packs on the remote file system)."""
        for storage in ("filesystem", "driver"):
            name = "restart-" + storage
            checkpoint = self.remote(name, "checkpoint")

            def body():
                run_aggregation(self.spark, self.local(name), batches=3, checkpoint=checkpoint)
                run_aggregation(self.spark, self.local(name), batches=2, start_batch=3,
                                checkpoint=checkpoint)
                return state_of(self.spark, checkpoint)
            state = self.with_storage(storage, body)
            self.results[name] = {
                "state_equal": state == expected(5), "rows": len(state),
                "files": self.files.walk(checkpoint),
                "driver_storage_files": self.files.walk(self.remote("driver-storage")),
                "marker": self.files.read(checkpoint + "/checkpoint-storage").decode()}

    def damaged_packs(self):
        """A corrupt, a truncated and a missing pack fail the restart naming the pack."""
        for damage in ("corrupt", "truncated", "missing"):
            name = "damaged-" + damage
            checkpoint = self.remote(name, "checkpoint")
            packs_dir = checkpoint + "/state-packs"

            def body():
                run_aggregation(self.spark, self.local(name), batches=3, checkpoint=checkpoint)
                packs = sorted(self.files.list(packs_dir), key=lambda n: int(n.split(".")[0]))
                victim = "%s/%s" % (packs_dir, packs[-2] if damage == "missing" else packs[-1])
                data = bytearray(self.files.read(victim))
                if damage == "corrupt":
                    data[len(data) // 2] ^= 0x5A
                    self.files.write(victim, bytes(data))
                elif damage == "truncated":
                    self.files.write(victim, bytes(data[:-7]))
                else:
                    self.files.delete(victim)
                message = self.error_of(lambda: run_aggregation(
                    self.spark, self.local(name), batches=1, start_batch=3, checkpoint=checkpoint))
                return {"packs": packs, "victim": victim.rsplit("/", 1)[1], "message": message}
            self.results[name] = self.with_storage("filesystem", body)

    def retention(self):
        """minBatchesToRetain=2: old offset and commit log entries, old state versions and
        the packs that held only them are deleted from the remote file system (maintenance
        and pack cleanup run in the background: batches go on until they did, at most 16);
        the latest state stays exact."""
        name = "retention"
        checkpoint = self.remote(name, "checkpoint")
        packs_dir = checkpoint + "/state-packs"
        settings = {"spark.sql.streaming.minBatchesToRetain": "2",
                    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2"}
        for k, v in settings.items():
            self.spark.conf.set(k, v)

        def cleaned() -> bool:
            return ("1.pack" not in self.files.list(packs_dir)
                    and "0" not in self.files.list(checkpoint + "/offsets")
                    and "0" not in self.files.list(checkpoint + "/commits"))
        try:
            def body():
                batches = 0
                while batches < 16 and not (batches >= 4 and cleaned()):
                    run_aggregation(self.spark, self.local(name), batches=2, start_batch=batches,
                                    checkpoint=checkpoint)
                    batches += 2
                return {"gone": cleaned(), "batches": batches, "packs": self.files.list(packs_dir),
                        "offsets": self.files.list(checkpoint + "/offsets"),
                        "commits": self.files.list(checkpoint + "/commits"),
                        "state_equal": state_of(self.spark, checkpoint) == expected(batches)}
            self.results[name] = self.with_storage("filesystem", body)
        finally:
            for k in settings:
                self.spark.conf.unset(k)

    def savepoint(self):
        """A savepoint from the remote checkpoint of `restart` to another remote folder; a
        query resumed from it (after the original is gone) continues exactly."""
        from spark_checkpoint_storage.savepoints import savepoint
        checkpoint = self.remote("restart-filesystem", "checkpoint")
        target = self.remote("savepoints", "sp-1")
        path = savepoint(checkpoint, target)
        copied = self.files.walk(target)
        self.files.delete(checkpoint)
        resumed = self.with_storage("filesystem", lambda: (
            run_aggregation(self.spark, self.local("restart-filesystem"), batches=1, start_batch=5,
                            checkpoint=target),
            state_of(self.spark, target))[1])
        self.results["savepoint"] = {"path": path, "files": copied,
                                     "state_equal": resumed == expected(6)}

    def inspection(self):
        """inspect_checkpoint of a remote location, in the driver."""
        from spark_checkpoint_storage.inspection import inspect_checkpoint
        info = inspect_checkpoint(self.remote("restart-driver", "checkpoint"))
        self.results["inspection"] = {
            "committed_batches": info.committed_batches, "retained_range": list(info.retained_range),
            "partitions": sorted(set(info.stores.to_pandas()["partition"])),
            "inline_bytes": info.total_inline_bytes, "file_bytes": info.total_file_bytes,
            "json": info.to_dict()}

    def another_writer(self):
        """A log entry another driver wrote first: the query's own write of it is refused
        (S3: the conditional PUT's 412; HDFS: the rename that never replaces), in Spark's
        words for two queries on one checkpoint, and the other driver's entry stays."""
        from support.aggregation import SCHEMA
        name = "another-writer"
        checkpoint = self.remote(name, "checkpoint")
        source = self.local(name, "source")
        os.makedirs(source, exist_ok=True)

        def feed(b):
            self.spark.createDataFrame([(k, b) for k in range(10)], SCHEMA).coalesce(1) \
                .write.mode("append").parquet(source)

        def body():
            query = (self.spark.readStream.schema(SCHEMA).parquet(source).groupBy("k").count()
                     .writeStream.outputMode("update").format("noop")
                     .option("checkpointLocation", checkpoint).start())
            try:
                for b in range(2):
                    feed(b)
                    query.processAllAvailable()
                theirs = checkpoint + "/offsets/2"
                written = self.files.read(checkpoint + "/offsets/1")
                self.files.write(theirs, written)
                feed(2)
                message = self.error_of(query.processAllAvailable)
                return {"message": message[:3000], "kept": self.files.read(theirs) == written,
                        "log": checkpoint + "/offsets"}
            finally:
                query.stop()
        self.results[name] = self.with_storage("filesystem", body)

    def delete_on_cancellation(self):
        """Needs a session started with DELETE_ON_CANCELLATION (spec spark_conf)."""
        name = "delete-on-cancellation"
        checkpoint = self.remote(name, "checkpoint")

        def body():
            run_aggregation(self.spark, self.local(name), batches=2, checkpoint=checkpoint)
            # No file left (on S3 an empty "directory" marker object may stay behind).
            deleted = self.eventually(lambda: self.files.walk(checkpoint) == [])
            return {"deleted": deleted, "left": self.files.walk(checkpoint),
                    "folder_left": self.files.exists(checkpoint)}
        self.results[name] = self.with_storage("filesystem", body)


    def requests_per_batch(self):
        """The file system's own count of the requests of steady batches (spec ``counters``,
        see realfs.describe), for an aggregation at 40 state partitions and a deduplication
        at 5, with each storage: a rate source, a 250 ms trigger, a noop sink. Maintenance
        runs every second (the session's setting), so its listings and cleanups count too,
        and Spark keeps 2 batches (``minBatchesToRetain``): every batch of the window purges
        its logs' oldest entries and the state versions no batch needs, as a query past its
        first 100 batches does. The window starts after the warm-up (the start's listing and
        reads, the first maintenance) and spans MEASURED batches."""
        from pyspark.sql import functions as F
        counters = self.spec["counters"]
        for storage in ("filesystem", "driver"):
            # 40 partitions: a LIST, HEAD and LIST of each store's folder by maintenance would
            # add about 30 requests a batch, far past the bound, at a fifth of 200's tasks.
            for name, partitions in (("aggregation", 40), ("deduplication", 5)):
                label = "requests-%s-%s" % (name, storage)

                def body():
                    self.spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
                    self.spark.conf.set("spark.sql.streaming.minBatchesToRetain", "2")
                    rows = self.spark.readStream.format("rate").option("rowsPerSecond", 200).load()
                    keyed = rows.select((F.col("value") % 100).alias("k"))
                    df = keyed.groupBy("k").count() if name == "aggregation" else keyed.dropDuplicates(["k"])
                    q = (df.writeStream.format("noop").outputMode("update" if name == "aggregation" else "append")
                         .trigger(processingTime="250 milliseconds")
                         .option("checkpointLocation", self.remote(label, "checkpoint")).start())

                    def last_batch():
                        p = q.lastProgress
                        return -1 if p is None else p["batchId"]
                    try:
                        self.eventually(lambda: last_batch() >= WARMUP_BATCHES, seconds=300)
                        first, before = last_batch(), read_counters(counters)
                        self.eventually(lambda: last_batch() >= first + MEASURED_BATCHES, seconds=300)
                        last, after = last_batch(), read_counters(counters)
                    finally:
                        q.stop()
                        self.spark.conf.set("spark.sql.shuffle.partitions", str(PARTITIONS))
                        self.spark.conf.unset("spark.sql.streaming.minBatchesToRetain")
                    return {"partitions": partitions, "batches": last - first,
                            "requests": {k: after.get(k, 0) - before.get(k, 0) for k in after}}
                self.results[label] = self.with_storage(storage, body)


def main(argv):
    with open(argv[1]) as f:
        spec = json.load(f)
    spark = session(spec)
    # One run of checks per file system the spec names (``runs``: each its own ``work``,
    # ``root`` and ``checks``), all in this one driver; or the spec's own.
    for run in spec.get("runs") or [spec]:
        checks = Checks(spark, run)
        for name in run["checks"]:
            started = time.time()
            try:
                getattr(checks, name)()
            except Exception:  # noqa: BLE001 - recorded for the test, which names the check
                checks.results.setdefault("errors", {})[name] = traceback.format_exc()[-6000:]
            checks.results.setdefault("seconds", {})[name] = round(time.time() - started, 1)
            print("CHECK %s %s in %.1f s" % (run["root"], name, time.time() - started), flush=True)
        with open(os.path.join(run["work"], "results.json"), "w") as f:
            json.dump(checks.results, f, default=str)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv)
