"""Micro-batch latency on Kafka: end-to-end latency of Kafka -> ``groupBy(k).count()`` ->
Kafka and Kafka -> ``dropDuplicates(k)`` -> Kafka, micro-batches back to back
(``trigger(processingTime="0 seconds")``), per state store variant, each in a driver JVM of
its own (``local[*]``; ``--shared-jvm``: all in one), as ``run.py`` runs each variant in a fresh
process, on a real Kafka broker (tests/support/realfs.py's ``KafkaBroker``, Spark's Kafka
connector of the running line).

Variants, one after the other: Spark's ``HDFSBackedStateStoreProvider`` and RocksDB with
changelog checkpointing, ours with each checkpoint storage, the stateful floor (the same query
on a provider that writes and reads nothing, from the benchmarks jar), the same query without state
(a projection: every record out once), and, on Spark 4.3, Real-Time Mode on RocksDB
(``trigger(realTime=...)``).

Kafka's console producer (a JVM of its own) writes ``--rate`` records a second into an input
topic of 5 partitions for ``--warmup`` + ``--seconds``; each record is stamped (Kafka
CreateTime) when sent. A record's latency is its output record's Kafka timestamp minus its
input record's: for the count, the output of its key whose count first covers it (a key's
records share one input partition, so its n-th record is the one the count reaches n with);
for the deduplication (each key sent twice, the second ten records later) and the projection,
the output carrying its key. Records sent during the warm-up are left out. The run checks
every key's last count and every deduplicated key: nothing lost, nothing twice.

With ``--checkpoints s3`` every query's checkpoint (and the driver storage's path) is on S3, a
SeaweedFS server the run starts (tests/support/realfs.py's ``SeaweedS3``, Hadoop's S3A client);
each variant then also reports the S3 requests a batch makes, by the server's own count.

    .venv/bin/python benchmarks/latency.py                         # 1,000 records/s, 60 s per variant after 40 s
    .venv/bin/python benchmarks/latency.py --seconds 10 --warmup 5 --rate 200 --variants heap-fs,no-state
    .venv/bin/python benchmarks/latency.py --checkpoints s3 --variants hdfs,rocksdb-changelog,heap-fs,no-state
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pyspark  # noqa: E402
from remote_servers import realfs  # noqa: E402
import jvm_jars  # noqa: E402
from variants import VARIANTS  # noqa: E402

DEFAULT_VARIANTS = "hdfs,rocksdb-changelog,heap-fs,heap-driver,floor,no-state,rtm"
INPUT_PARTITIONS = 5
COUNT_KEYS = 100
#: Real-Time Mode: Spark's RocksDB provider (changelog on) on Spark's own file manager.
RTM = {"label": "Real-Time Mode on RocksDB + changelog", "conf": VARIANTS["rocksdb-changelog"]["conf"]}


def progress(message: str) -> None:
    print("[%s] %s" % (time.strftime("%H:%M:%S"), message), flush=True)


def percentile(values: List[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def read(spark, F, bootstrap: str, topic: str) -> List[Tuple[int, int, str, str, int]]:
    """(partition, offset, key, value, Kafka timestamp in ms) of every record of ``topic``."""
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("endingOffsets", "latest").load()
            .select("partition", "offset", F.col("key").cast("string").alias("k"),
                    F.col("value").cast("string").alias("v"),
                    (F.col("timestamp").cast("double") * 1000).cast("long").alias("t"))
            .collect())
    return sorted((r["partition"], r["offset"], r["k"], r["v"], r["t"]) for r in rows)


def build(spark, F, bootstrap: str, topic_in: str, query: str):
    source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic_in).option("startingOffsets", "earliest").load()
              .select(F.col("key").cast("string").alias("k"), F.col("value").cast("string").alias("v")))
    if query == "count":
        return source.groupBy("k").count().select(F.col("k").alias("key"),
                                                  F.col("count").cast("string").alias("value")), "update"
    if query == "dedup":
        return source.dropDuplicates(["k"]).select(F.col("k").alias("key"), F.col("v").alias("value")), "append"
    return source.select(F.col("k").alias("key"), F.col("v").alias("value")), "append"


def records(query: str, start: int, end: int) -> List[Tuple[str, str]]:
    """The input records ``start`` to ``end`` of a query's stream, as (key, value)."""
    if query == "count":
        return [("k%d" % (i % COUNT_KEYS), str(i)) for i in range(start, end)]
    if query == "dedup":
        # Records 20j..20j+9 and 20j+10..20j+19 carry the same ten keys: each key twice, ten records apart.
        return [("d%d" % ((i // 20) * 10 + i % 10), str(i)) for i in range(start, end)]
    return [("p%d" % i, str(i)) for i in range(start, end)]


def latencies(query: str, inputs, outputs, since_ms: float) -> List[float]:
    if query == "count":
        by_key: Dict[str, List[int]] = {}
        for _, _, k, _, t in inputs:  # sorted by partition and offset: a key's records in order
            by_key.setdefault(k, []).append(t)
        out: List[float] = []
        covered: Dict[str, int] = {}
        for _, _, k, v, t in outputs:
            n = int(v)
            for j in range(covered.get(k, 0), n):
                if by_key[k][j] >= since_ms:
                    out.append(t - by_key[k][j])
            covered[k] = max(covered.get(k, 0), n)
        return out
    sent = {}
    for _, _, k, v, t in inputs:
        sent.setdefault(k, (v, t))  # the first record of a key: the one a deduplication keeps
    return [t - sent[k][1] for _, _, k, v, t in outputs if sent[k][1] >= since_ms]


def check(query: str, inputs, outputs) -> str:
    keys = {k for _, _, k, _, _ in inputs}
    if query == "count":
        last = {}
        for _, _, k, v, _ in outputs:
            last[k] = max(last.get(k, 0), int(v))
        expected = {}
        for _, _, k, _, _ in inputs:
            expected[k] = expected.get(k, 0) + 1
        return "" if last == expected else "the last counts differ from the input's"
    out_keys = [k for _, _, k, _, _ in outputs]
    if len(out_keys) != len(set(out_keys)):
        return "a key was written twice"
    return "" if set(out_keys) == keys else "%d keys missing" % len(keys - set(out_keys))


def run_variant(spark, F, broker, s3, work: str, name: str, query: str, args) -> Dict:
    variant = RTM if name == "rtm" else VARIANTS[name]
    q_kind = "project" if name == "no-state" else query
    folder = s3.path("%s-%s" % (name, query)) if s3 else os.path.join(work, "%s-%s" % (name, query))
    topic_in, topic_out = "%s-%s-in" % (name, query), "%s-%s-out" % (name, query)
    broker.create_topics({topic_in: INPUT_PARTITIONS, topic_out: INPUT_PARTITIONS})
    for key, value in variant["conf"].items():
        spark.conf.set(key, value.format(checkpoint=os.path.join(folder, "storage")))
    df, mode = build(spark, F, broker.bootstrap, topic_in, q_kind)
    if name == "rtm":
        mode = "update"  # Real-Time Mode takes no append mode (Spark 4.3); a deduplication's rows are the same
    writer = (df.writeStream.format("kafka").outputMode(mode)
              .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic_out)
              .option("checkpointLocation", os.path.join(folder, "checkpoint"))
              .queryName(("%s_%s" % (name, query)).replace("-", "_")))
    writer = writer.trigger(realTime="5 seconds") if name == "rtm" else writer.trigger(processingTime="0 seconds")
    stream = writer.start()
    producer = subprocess.Popen(
        ["java", "-cp", broker.classpath, "org.apache.kafka.tools.ConsoleProducer",
         "--bootstrap-server", broker.bootstrap, "--topic", topic_in,
         "--property", "parse.key=true", "--property", "key.separator=,",
         "--producer-property", "linger.ms=0"],
        stdin=subprocess.PIPE, text=True, stdout=subprocess.DEVNULL)
    total = args.warmup + args.seconds
    progress("%s %s: producing %d records/s for %.0f s (%.0f s warm-up)" % (name, q_kind, args.rate, total, args.warmup))
    load_before = os.getloadavg()[0]
    sent, started, reported = 0, time.time(), time.time()
    # S3 requests are counted over the measured part only: a query's start (its checkpoint's
    # metadata, the first offsets) is not a batch's cost.
    window = None
    while time.time() - started < total:
        if s3 and window is None and time.time() - started >= args.warmup:
            window = (s3.request_counts(), last_batch(stream))
        due = int((time.time() - started) * args.rate)
        producer.stdin.write("".join("%s,%s\n" % r for r in records(q_kind, sent, due)))
        producer.stdin.flush()
        sent = due
        if stream.exception() is not None:
            raise stream.exception()
        if time.time() - reported >= 10:
            progress("%s %s: %d records produced, last batch %s" % (
                name, q_kind, sent, (stream.lastProgress or {}).get("batchId")))
            reported = time.time()
        time.sleep(0.005)
    requests = None
    if s3:
        after, last = s3.request_counts(), last_batch(stream)
        requests = {k: after.get(k, 0) - window[0].get(k, 0) for k in after}
        requests["batches"] = last - window[1]
    producer.stdin.close()
    producer.wait(60)
    inputs = read(spark, F, broker.bootstrap, topic_in)
    deadline = time.time() + 180
    while True:
        outputs = read(spark, F, broker.bootstrap, topic_out)
        problem = check(q_kind, inputs, outputs)
        if not problem:
            break
        if stream.exception() is not None:
            raise stream.exception()
        if time.time() > deadline:
            raise RuntimeError("%s %s: the output did not catch up with the input in 180 s: %s" % (name, q_kind, problem))
        time.sleep(2)
    batches = last_batch(stream) + 1
    stream.stop()
    since = (started + args.warmup) * 1000
    lat = latencies(q_kind, inputs, outputs, since)
    r = {"variant": name, "label": variant["label"], "query": q_kind, "records": len(inputs),
         "measured": len(lat), "p50": percentile(lat, 50), "p99": percentile(lat, 99), "max": max(lat),
         "batches": batches, "latencies": lat, "s3_requests": requests,
         # The 1-minute load average around the measured part: a busy machine lengthens batches.
         "load": (round(load_before, 1), round(os.getloadavg()[0], 1))}
    progress("%s %s: %d records in, every output exact; p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d records%s"
             % (name, q_kind, len(inputs), r["p50"], r["p99"], r["max"], r["measured"],
                "; %.1f S3 requests a batch over %d measured batches" % (requests_per_batch(r), requests["batches"])
                if s3 else ""))
    return r


def last_batch(stream) -> int:
    """The id of the query's last completed batch (ids count from 0 in a new checkpoint;
    recentProgress keeps only the last 100); -1 before the first."""
    return (stream.lastProgress or {}).get("batchId", -1)


def requests_per_batch(r: Dict) -> float:
    return r["s3_requests"]["total"] / max(1, r["s3_requests"]["batches"])


def requests_by_type(r: Dict) -> str:
    """The S3 requests of a measured batch by type, most frequent first: ``PUT 3.1, GET 2.0, ...``."""
    n = max(1, r["s3_requests"]["batches"])
    kinds = sorted(((v, k) for k, v in r["s3_requests"].items() if k not in ("total", "batches") and v),
                   reverse=True)
    return ", ".join("%s %.1f" % (k, v / n) for v, k in kinds)


def table(results: List[Dict]) -> List[str]:
    lines = []
    on_s3 = any(r.get("s3_requests") for r in results)
    for query in ("count", "dedup"):
        rows = [r for r in results if r["query"] in (query, "project")]
        if not rows:
            continue
        floor = next((r for r in rows if r["query"] == "project"), None)
        stateful_floor = next((r for r in rows if r["variant"] == "floor"), None)
        rocks = next((r for r in rows if r["variant"] == "rocksdb-changelog"), None)
        lines += ["", "%s (%s):" % ("groupBy(k).count()" if query == "count" else "dropDuplicates(k)",
                                    "update mode" if query == "count" else "append mode"),
                  "| variant | records measured | p50 ms | p99 ms | max ms | p99 / no state | p99 / stateful floor | p99 / RocksDB + changelog | load |"
                  + (" measured batches | S3 requests a batch | by type |" if on_s3 else ""),
                  "|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if on_s3 else "")]
        for r in rows:
            lines.append("| %s | %d | %.0f | %.0f | %.0f | %s | %s | %s | %s |" % (
                r["label"], r["measured"], r["p50"], r["p99"], r["max"],
                "%.2fx" % (r["p99"] / floor["p99"]) if floor else "-",
                "%.2fx" % (r["p99"] / stateful_floor["p99"]) if stateful_floor else "-",
                "%.2fx" % (r["p99"] / rocks["p99"]) if rocks else "-",
                "%.1f-%.1f" % tuple(r["load"]) if r.get("load") else "-")
                + (" %d | %.1f | %s |" % (r["s3_requests"]["batches"], requests_per_batch(r), requests_by_type(r))
                   if r.get("s3_requests") else ""))
    return lines


def plot(results: List[Dict], path: str, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    queries = [q for q in ("count", "dedup") if any(r["query"] == q for r in results)]
    fig, axes = plt.subplots(1, len(queries), figsize=(7 * len(queries), 4.5), squeeze=False)
    # One colour per variant in every panel, so that the panels read side by side.
    colours = {v: "C%d" % i for i, v in enumerate(dict.fromkeys(r["variant"] for r in results))}
    for ax, query in zip(axes[0], queries):
        for r in results:
            if r["query"] not in (query, "project"):
                continue
            xs = sorted(r["latencies"])
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.plot(xs, ys, ":" if r["query"] == "project" else "-", label=r["variant"], color=colours[r["variant"]])
        ax.set_xscale("log")
        ax.set_xlabel("end-to-end latency, ms (log)")
        ax.set_ylabel("fraction of records")
        ax.set_title("groupBy(k).count()" if query == "count" else "dropDuplicates(k)", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def new_driver_jvm(spark) -> None:
    """Stops ``spark`` and its driver JVM, so that the next session starts a JVM of its own: a
    variant's leftovers (RocksDB's native threads and memory, a stopped query's state stores
    until maintenance unloads them, the heap it grew) must not slow the variant after it."""
    from pyspark import SparkContext
    spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        # PySpark's gateway JVM exits when its standard input closes.
        proc.stdin.close()
        proc.wait(120)
    SparkContext._gateway = None
    SparkContext._jvm = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="measured input per variant")
    parser.add_argument("--warmup", type=float, default=40,
                        help="input before the measured part (a new driver JVM's compiler settles in about 40 s)")
    parser.add_argument("--rate", type=int, default=1000, help="input records per second")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--queries", default="count,dedup")
    parser.add_argument("--partitions", type=int, default=INPUT_PARTITIONS,
                        help="state partitions (spark.sql.shuffle.partitions; default: the input's 5)")
    parser.add_argument("--checkpoints", choices=["local", "s3"], default="local",
                        help="where the checkpoints go: the local disk, or S3 (a SeaweedFS server the run starts)")
    parser.add_argument("--shared-jvm", action="store_true",
                        help="run every variant in one driver JVM (each runs after the one before it stopped, "
                             "warmed up by it and slowed by what it left behind) instead of one JVM each")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    names = args.variants.split(",")
    if "rtm" in names and tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 3):
        progress("Real-Time Mode is Spark 4.3's; leaving out rtm on pyspark %s" % pyspark.__version__)
        names.remove("rtm")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    work = tempfile.mkdtemp(prefix="latency-bench-")
    progress("Kafka broker and connector jars (work folder %s)" % work)
    broker = realfs.KafkaBroker(os.path.join(work, "kafka"))
    s3 = None
    results: List[Dict] = []
    try:
        if args.checkpoints == "s3":
            progress("SeaweedFS with its S3 gateway")
            s3 = realfs.SeaweedS3(os.path.join(work, "seaweedfs"))
        # Real-Time Mode needs every task of its stage group at once (5 source partitions, the
        # state partitions): slots to spare, the admission check off as in the tests.
        jars = realfs.kafka_connector_jars()
        if any(VARIANTS.get(n, {}).get("benchmarks_jar") for n in names):
            jars.append(jvm_jars.benchmarks_jar("latency"))  # the stateful floor's provider
        def session():
            builder = (SparkSession.builder.master("local[%d]" % max(8, 2 * args.partitions + 2))
                       .config("spark.ui.enabled", "false")
                       .config("spark.ui.showConsoleProgress", "false")
                       .config("spark.jars", ",".join(jars))
                       .config("spark.scheduler.pipelinedGroup.slotCheck.enabled", "false")
                       .config("spark.sql.shuffle.partitions", args.partitions))
            for key, value in (realfs.spark_settings(s3) if s3 else {}).items():
                builder = builder.config(key, value)
            spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
            return spark

        spark = None
        for query in args.queries.split(","):
            for name in names:
                if name == "no-state" and any(r["query"] == "project" for r in results):
                    continue  # the floor is the same projection for both queries
                if spark is None:
                    progress("%s %s: a new driver JVM" % (name, query))
                    spark = session()
                try:
                    results.append(run_variant(spark, F, broker, s3, work, name, query, args))
                except Exception as e:  # noqa: BLE001 - one variant's failure ends no other's run
                    progress("%s %s FAILED: %s" % (name, query, str(e).splitlines()[0][:300]))
                    for q in spark.streams.active:
                        q.stop()
                if not args.shared_jvm:
                    new_driver_jvm(spark)
                    spark = None
        if spark is not None:
            spark.stop()
    finally:
        broker.stop()
        if s3:
            s3.stop()
    title = "Spark %s, %d records/s over %d partitions, %.0f s per variant (after %.0f s warm-up), %d state partitions%s" % (
        pyspark.__version__, args.rate, INPUT_PARTITIONS, args.seconds, args.warmup, args.partitions,
        ", checkpoints on S3 (SeaweedFS)" if s3 else "")
    lines = ["Micro-batch latency: " + title] + table(results)
    print("\n".join([""] + lines))
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "latency-%s%s" % ("s3-" if s3 else "", time.strftime("%Y%m%d-%H%M%S")))
    with open(base + ".json", "w") as f:
        json.dump({"command": " ".join(sys.argv), "title": title, "results": results}, f)
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    if plot(results, base + ".png", "Latency CDF: " + title):
        print("written: %s.json, %s.md, %s.png" % (base, base, base))


if __name__ == "__main__":
    main()
