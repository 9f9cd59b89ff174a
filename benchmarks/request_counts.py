"""Requests a steady micro-batch makes to the checkpoint's file system, by the server's own
count: S3 requests by type (SeaweedFS, through Hadoop's S3A) and HDFS NameNode RPCs (a
MiniDFSCluster), per state store variant and state partition count, with the monthly cost of
the S3 requests at S3's list prices for one query with a 1 s trigger. For our storages also how
long the stateful stage's last task waited for the stage's state to be made durable (p50, p99
and the longest of the window's batches: the driver's ``coordinator.stageEndWaitMs``), on
these file systems and on the local disk (``--filesystems local``: no request count there).

The query is a rate source (``--rate`` rows a second) counted per key (100 keys) into a noop
sink, with a ``--trigger-ms`` trigger; ``no-state`` is the same source and sink through a
projection on Spark's own file manager (what the logs alone cost). State store maintenance
runs every ``--maintenance-s`` seconds, so its listings, snapshots and cleanups are in the
window. Each variant runs after the one before it stopped, in one driver JVM
(``local[2]``); the file systems are started by the run (tests/support/realfs.py). After
``--warmup`` batches (the start's listings and reads), the counters are read, then again after
``--batches`` more (or after ``--max-seconds``, for a variant too slow for that many).

    .venv/bin/python benchmarks/request_counts.py                                     # S3 and HDFS, 5/200/1,000 partitions
    .venv/bin/python benchmarks/request_counts.py --filesystems s3 --partitions 5 --variants heap-fs,no-state
    .venv/bin/python benchmarks/request_counts.py --min-batches-to-retain 10 --warmup 15   # with Spark's log purge
    .venv/bin/python benchmarks/request_counts.py --filesystems local,s3 --partitions 5,200 --variants hdfs,heap-fs,heap-driver
"""
import argparse
import json
import os
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pyspark  # noqa: E402
from remote_servers import realfs  # noqa: E402
from variants import VARIANTS  # noqa: E402

DEFAULT_VARIANTS = "hdfs,rocksdb-changelog,heap-fs,heap-driver,no-state"
KEYS = 100
#: S3 Standard list prices (us-east-1), dollars per 1,000 requests: PUT, COPY, POST and LIST
#: at one price, GET and every other request (HEAD) at another; DELETE is free.
PRICE_TIER1 = 0.005
PRICE_TIER2 = 0.0004
TIER1 = ("PUT", "COPY", "POST", "LIST")
FREE = ("DELETE",)
SECONDS_A_MONTH = 30 * 24 * 3600
FS_NAMES = {"file": "local disk", "s3a": "S3 (SeaweedFS)", "hdfs": "HDFS"}


def progress(message: str) -> None:
    print("[%s] %s" % (time.strftime("%H:%M:%S"), message), flush=True)


def monthly_cost(per_batch: Dict[str, float]) -> float:
    """Dollars a month of one query making ``per_batch`` S3 requests a batch, one batch a second."""
    tier1 = sum(v for k, v in per_batch.items() if k in TIER1)
    tier2 = sum(v for k, v in per_batch.items() if k not in TIER1 and k not in FREE and k != "total")
    return SECONDS_A_MONTH * (tier1 * PRICE_TIER1 + tier2 * PRICE_TIER2) / 1000.0


class LocalDisk(realfs.RemoteFs):
    """The local disk, as the remote file systems are used here: a folder, no server, no counts."""

    scheme = "file"

    def __init__(self, folder: str):
        os.makedirs(folder, exist_ok=True)
        self.uri = "file://" + folder

    def spark_conf(self) -> Dict[str, str]:
        return {}

    def stop(self):
        pass


def coordinator_of(spark):
    """The driver's checkpoint coordinator (its ``stageEndWaits`` histogram counts the stateful
    stages whose last task waited for their state to be durable; ``recentStageEndWaitsMs(n)``
    gives the newest ``n`` of those waits, oldest first)."""
    return spark._jvm.io.sparkcheckpointstorage.coordinator.DriverRuntime.currentCoordinator()


def percentile(values: List[int], q: float) -> int:
    """The nearest-rank percentile ``q`` (0-100) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 100)) - 1))]


def run_variant(spark, F, fs, name: str, partitions: int, args) -> Dict:
    variant = VARIANTS[name]
    folder = fs.path("requests-%s-%d-%d" % (name, partitions, int(time.time() * 1000)))
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    for key, value in variant["conf"].items():
        spark.conf.set(key, value.format(checkpoint=folder + "/storage", run_dir=folder))
    rows = spark.readStream.format("rate").option("rowsPerSecond", args.rate).load()
    keyed = rows.select((F.col("value") % KEYS).alias("k"))
    stateless = variant.get("query") == "stateless"
    df = keyed.repartition("k") if stateless else keyed.groupBy("k").count()
    stream = (df.writeStream.format("noop").outputMode("append" if stateless else "update")
              .trigger(processingTime="%d milliseconds" % args.trigger_ms)
              .option("checkpointLocation", folder + "/checkpoint").start())
    description = realfs.describe(fs)

    def last_batch() -> int:
        p = stream.lastProgress
        return -1 if p is None else p["batchId"]

    def wait_for(batch: int, deadline: float) -> None:
        while last_batch() < batch and time.time() < deadline and stream.isActive:
            time.sleep(0.1)
    try:
        started = time.time()
        wait_for(args.warmup, started + args.max_seconds)
        first, before = fresh_counters(description, last_batch)
        coordinator = coordinator_of(spark)
        waits_before = coordinator.stageEndWaits().getCount()
        wait_for(first + args.batches, time.time() + args.max_seconds)
        last, after = fresh_counters(description, last_batch)
        waited = list(coordinator.recentStageEndWaitsMs(coordinator.stageEndWaits().getCount() - waits_before))
        if stream.exception() is not None:
            raise RuntimeError(str(stream.exception()))
    finally:
        stream.stop()
        for key in variant["conf"]:
            spark.conf.unset(key)
    batches = last - first
    counted = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    if fs.scheme == "hdfs":
        # The namenode's RPCs, and the operations among them that touch the namespace.
        counted = {k: counted.get(k, 0) for k in ("rpc", "create", "file_info", "get_listing",
                                                  "files_renamed", "files_deleted", "get_block_locations")}
        counted["total"] = counted.pop("rpc")
    per_batch = {k: v / batches for k, v in counted.items() if v} if batches > 0 else {}
    result = {"variant": name, "label": variant["label"], "filesystem": fs.scheme, "partitions": partitions,
              "batches": batches, "first_batch": first, "counted": counted, "per_batch": per_batch}
    if fs.scheme == "s3a" and batches > 0:
        result["monthly_cost_1s_trigger"] = monthly_cost(per_batch)
    if waited:
        result["stage_end_wait_ms"] = {"stages": len(waited), "p50": percentile(waited, 50),
                                       "p99": percentile(waited, 99), "max": max(waited)}
    progress("%s, %d partitions, %s: %s over %d batches%s" % (
        name, partitions, fs.scheme, "no request count" if fs.scheme == "file" else
        "%.1f a batch" % per_batch.get("total", 0) if batches > 0 else "no batch",
        max(batches, 0), "; stage-end wait p50 %(p50)d ms, p99 %(p99)d ms" % result["stage_end_wait_ms"]
        if waited else ""))
    return result


def fresh_counters(description: Dict, last_batch) -> tuple:
    """(the last batch, the counters) read together. The namenode's counters are refreshed
    once a second (tests/support/realfs.py sets Hadoop's metrics period): they are taken just
    after a refresh, when they are current. S3's are always current."""
    if description["scheme"] == "file":
        return last_batch(), {}
    counters = realfs.read_counters(description)
    if description["scheme"] == "hdfs":
        deadline = time.time() + 3
        previous = counters
        while counters == previous and time.time() < deadline:
            time.sleep(0.05)
            counters = realfs.read_counters(description)
    return last_batch(), counters


def by_type(per_batch: Dict[str, float]) -> str:
    kinds = sorted(((v, k) for k, v in per_batch.items() if k != "total"), reverse=True)
    return ", ".join("%s %.1f" % (k, v) for v, k in kinds)


def table(results: List[Dict]) -> List[str]:
    lines = []
    for scheme, title in (("s3a", "S3 requests a steady batch (SeaweedFS's count)"),
                          ("hdfs", "NameNode RPCs a steady batch (the MiniDFSCluster's count)")):
        rows = [r for r in results if r["filesystem"] == scheme]
        if not rows:
            continue
        lines += ["", "### " + title, ""]
        cost = " monthly cost, 1 s trigger |" if scheme == "s3a" else ""
        lines += ["| variant | state partitions | batches measured | a batch | by type |" + cost,
                  "|---|---|---|---|---|" + ("---|" if cost else "")]
        for r in rows:
            if r["batches"] <= 0:
                lines.append("| %s | %d | 0 | (no batch within the time limit) | |%s" % (
                    r["label"], r["partitions"], " |" if cost else ""))
                continue
            lines.append("| %s | %d | %d | %.1f | %s |%s" % (
                r["label"], r["partitions"], r["batches"], r["per_batch"].get("total", 0), by_type(r["per_batch"]),
                " $%.2f |" % r["monthly_cost_1s_trigger"] if cost else ""))
    waits = [r for r in results if "stage_end_wait_ms" in r]
    if waits:
        lines += ["", "### How long a stateful stage's last task waited for the stage's state to be durable (ms)",
                  "", "| file system | variant | state partitions | stages | p50 | p99 | longest |",
                  "|---|---|---|---|---|---|---|"]
        for r in waits:
            w = r["stage_end_wait_ms"]
            lines.append("| %s | %s | %d | %d | %d | %d | %d |" % (
                FS_NAMES.get(r["filesystem"], r["filesystem"]), r["label"], r["partitions"], w["stages"],
                w["p50"], w["p99"], w["max"]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--filesystems", default="s3,hdfs", help="s3, hdfs and local, comma-separated")
    parser.add_argument("--partitions", default="5,200,1000", help="state partitions, comma-separated")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--rate", type=int, default=500, help="rows a second")
    parser.add_argument("--trigger-ms", type=int, default=500)
    parser.add_argument("--maintenance-s", type=int, default=5,
                        help="state store maintenance interval (Spark's default is 60 s)")
    parser.add_argument("--min-batches-to-retain", type=int, default=100,
                        help="spark.sql.streaming.minBatchesToRetain: from this many batches on, every batch "
                             "also deletes an old entry of each log, old state files and packs (with a --warmup "
                             "past it, the window shows that regime)")
    parser.add_argument("--warmup", type=int, default=4, help="batches before the window")
    parser.add_argument("--batches", type=int, default=10, help="batches in the window")
    parser.add_argument("--max-seconds", type=float, default=240,
                        help="time limit of the warm-up, and again of the window, per variant")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error("unknown variants: %s" % ", ".join(unknown))
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    work = tempfile.mkdtemp(prefix="requests-bench-")
    started: List = []
    results: List[Dict] = []
    try:
        for kind in args.filesystems.split(","):
            progress("starting %s (work folder %s)" % (kind, work))
            started.append(LocalDisk(os.path.join(work, kind)) if kind == "local"
                           else realfs.start({"s3": "s3a"}.get(kind, kind), os.path.join(work, kind)))
        builder = (SparkSession.builder.master("local[2]")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.streaming.stateStore.maintenanceInterval", "%ds" % args.maintenance_s)
                   .config("spark.sql.streaming.minBatchesToRetain", str(args.min_batches_to_retain)))
        for key, value in realfs.spark_settings_of_all(started).items():
            builder = builder.config(key, value)
        spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        for fs in started:
            for partitions in [int(p) for p in args.partitions.split(",")]:
                for name in names:
                    progress("%s, %d partitions, %s" % (name, partitions, fs.scheme))
                    try:
                        results.append(run_variant(spark, F, fs, name, partitions, args))
                    except Exception as e:  # noqa: BLE001 - one variant's failure ends no other's run
                        progress("%s FAILED: %s" % (name, str(e).splitlines()[0][:300]))
                    # A stopped query's stores stay loaded on the executor until a maintenance
                    # round finds them inactive, and that round (listings, with Spark's
                    # providers: a LIST per store) would fall in the next variant's window.
                    time.sleep(args.maintenance_s + 1)
        spark.stop()
    finally:
        for fs in started:
            fs.stop()
    title = ("Spark %s, local[2], %d rows/s counted over %d keys, %d ms trigger, maintenance every %d s, "
             "minBatchesToRetain %d, %d batches after %d" % (
                 pyspark.__version__, args.rate, KEYS, args.trigger_ms, args.maintenance_s,
                 args.min_batches_to_retain, args.batches, args.warmup))
    lines = ["Requests a steady batch: " + title] + table(results)
    print("\n".join([""] + lines))
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "requests-%s" % time.strftime("%Y%m%d-%H%M%S"))
    with open(base + ".json", "w") as f:
        json.dump({"command": " ".join(sys.argv), "title": title, "results": results}, f)
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("written: %s.json, %s.md" % (base, base))


if __name__ == "__main__":
    main()
