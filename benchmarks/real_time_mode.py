"""Real-Time Mode latency (Spark 4.3): end-to-end latency of a Kafka -> ``groupBy(k).count()``
-> Kafka query under ``trigger(realTime="5 seconds")``, update mode, on Spark's RocksDB
provider with changelog checkpointing, in three variants run one after the other in one
driver: on Spark's own file manager (``rocksdb-changelog``), and on this package's file
manager through each checkpoint storage (``rocksdb-fs``, ``rocksdb-driver``), as in W7.

Kafka's console producer writes records into the variant's input topic at a steady rate
for ``--seconds``; each output record carries the newest input timestamp of its key
(``max(timestamp)``), so its latency is its own Kafka timestamp minus that one. Both are
Kafka CreateTime stamps taken on this machine. Before the measured stream, one record is
sent and awaited in the output, so that the query's tasks are running; the run checks that
every key's last count equals its number of input records. A real Kafka broker
(tests/support/realfs.py's KafkaBroker) and Spark's Kafka connector of the running line
(dev/realfs/pom-kafka-spark<line>.xml) as in the tests.

    .venv/bin/python benchmarks/real_time_mode.py                  # 30 s per variant, 200 records/s
    .venv/bin/python benchmarks/real_time_mode.py --seconds 10 --rate 50
"""
import argparse
import os
import sys
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pyspark  # noqa: E402
from remote_servers import realfs  # noqa: E402
from variants import VARIANTS  # noqa: E402

NAMES = ["rocksdb-changelog", "rocksdb-fs", "rocksdb-driver"]
KEYS = 16


def progress(message: str) -> None:
    print("[%s] %s" % (time.strftime("%H:%M:%S"), message), flush=True)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30, help="input duration per variant")
    parser.add_argument("--rate", type=int, default=200, help="input records per second")
    parser.add_argument("--warmup", type=float, default=0,
                        help="seconds of input left out at the start of the measured stream")
    args = parser.parse_args()

    line = ".".join(pyspark.__version__.split(".")[:2])
    if tuple(int(p) for p in line.split(".")) < (4, 3):
        sys.exit("Real-Time Mode is Spark 4.3's; this is pyspark %s" % pyspark.__version__)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    work = tempfile.mkdtemp(prefix="rtm-bench-")
    progress("Kafka broker and connector jars (work folder %s)" % work)
    jars = realfs.jar_list("kafka-spark" + line)
    broker = realfs.KafkaBroker(os.path.join(work, "kafka"))
    try:
        # A Real-Time Mode stage group needs all its tasks' slots at once (2 source partitions,
        # 2 shuffle partitions) beside the producer's jobs; the admission check stays off as in
        # tests/test_real_time_mode.py, where it counted no slot free with slots to spare.
        builder = (SparkSession.builder.master("local[8]")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.jars", ",".join(jars))
                   .config("spark.scheduler.pipelinedGroup.slotCheck.enabled", "false")
                   .config("spark.sql.shuffle.partitions", 2))
        spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        results = {}
        for name in NAMES:
            results[name] = run_variant(spark, F, broker, work, name, args)
        print()
        print("| variant (Spark %s, %d records/s, %.0f s, RTM 5 s batches) | records | p50 ms | p99 ms | p50 vs RocksDB | p99 vs RocksDB |"
              % (pyspark.__version__, args.rate, args.seconds))
        print("|---|---|---|---|---|---|")
        base = results[NAMES[0]]
        for name in NAMES:
            r = results[name]
            print("| %s | %d | %.0f | %.0f | %.2fx | %.2fx |" % (
                VARIANTS[name]["label"], r["n"], r["p50"], r["p99"],
                r["p50"] / max(base["p50"], 1), r["p99"] / max(base["p99"], 1)))
        spark.stop()
    finally:
        broker.stop()


def run_variant(spark, F, broker, work, name, args):
    folder = os.path.join(work, name)
    topics = {"in": name + "-in", "out": name + "-out"}
    broker.create_topics({topics["in"]: 2, topics["out"]: 2})
    for key, value in VARIANTS[name]["conf"].items():
        spark.conf.set(key, value.format(checkpoint=os.path.join(folder, "storage")))
    progress("%s: starting the query" % name)
    counts = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", topics["in"]).option("startingOffsets", "earliest").load()
              .groupBy(F.col("key").cast("string").alias("k"))
              .agg(F.count("*").alias("n"), F.max("timestamp").alias("newest")))
    query = (counts.select(F.col("k").alias("key"), F.concat_ws(
                               ",", F.col("n").cast("string"),
                               (F.col("newest").cast("double") * 1000).cast("long").cast("string")).alias("value"))
             .writeStream.format("kafka").outputMode("update")
             .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topics["out"])
             .option("checkpointLocation", os.path.join(folder, "checkpoint"))
             .queryName(name).trigger(realTime="5 seconds").start())

    # Kafka's console producer in a JVM of its own, fed a line at a time: a steady stream,
    # each record stamped (CreateTime) when sent, and no Spark job in the driver per write.
    producer = subprocess.Popen(
        ["java", "-cp", broker.classpath, "org.apache.kafka.tools.ConsoleProducer",
         "--bootstrap-server", broker.bootstrap, "--topic", topics["in"],
         "--property", "parse.key=true", "--property", "key.separator=,",
         "--producer-property", "linger.ms=0"],
        stdin=subprocess.PIPE, text=True, stdout=subprocess.DEVNULL)
    # One record first, its count awaited in the output: the query is running (its tasks
    # started, the first batch under way) before the measured stream starts.
    producer.stdin.write("prime,0\n")
    producer.stdin.flush()
    deadline = time.time() + 120
    while "prime" not in {key for key, _, _, _ in read(spark, F, broker, topics["out"])}:
        if query.exception() is not None:
            raise query.exception()
        if time.time() > deadline:
            sys.exit("%s: the query wrote nothing in 120 s" % name)
        time.sleep(1)
    progress("%s: running; producing %d records/s for %.0f s" % (name, args.rate, args.seconds))
    sent, started, reported = 0, time.time(), time.time()
    while time.time() - started < args.seconds:
        due = int((time.time() - started) * args.rate)
        producer.stdin.write("".join("k%d,%d\n" % (i % KEYS, i) for i in range(sent, due)))
        producer.stdin.flush()
        sent = due
        if query.exception() is not None:
            raise query.exception()
        if time.time() - reported >= 10:
            progress("%s: %d records produced" % (name, sent))
            reported = time.time()
        time.sleep(0.01)
    producer.stdin.close()
    producer.wait(60)
    progress("%s: %d records produced" % (name, sent))
    # Until every key's last count is its number of input records: all input processed.
    expected = dict({("k%d" % k): len(range(k, sent, KEYS)) for k in range(KEYS)}, prime=1)
    deadline = time.time() + 120
    while True:
        rows = read(spark, F, broker, topics["out"])
        last = {key: n for key, n, _, _ in rows}
        if query.exception() is not None:
            raise query.exception()
        if last == expected:
            break
        if time.time() > deadline:
            sys.exit("%s: the output did not catch up with the input in 120 s" % name)
        time.sleep(2)
    query.stop()
    since = started * 1000 + args.warmup * 1000
    latencies = [out_ts - in_ts for key, _, in_ts, out_ts in rows if key != "prime" and in_ts >= since]
    if not latencies:
        sys.exit("%s: no input after the %.0f s warm-up; run longer (--seconds)" % (name, args.warmup))
    marker = os.path.exists(os.path.join(folder, "checkpoint", "checkpoint-storage"))
    progress("%s: %d input records, %d output records (%d measured), every count exact, "
             "storage marker %s" % (name, sent, len(rows), len(latencies),
                                    "present" if marker else "absent"))
    return {"n": len(latencies), "p50": percentile(latencies, 50), "p99": percentile(latencies, 99)}


def read(spark, F, broker, topic):
    """(key, count, newest input timestamp, output timestamp) of every output record, a key's
    records in the order written (all in one partition)."""
    out = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
           .option("subscribe", topic).option("startingOffsets", "earliest")
           .option("endingOffsets", "latest").load()
           .select(F.col("key").cast("string").alias("k"), F.col("value").cast("string").alias("v"),
                   (F.col("timestamp").cast("double") * 1000).cast("long").alias("t"),
                   "partition", "offset").orderBy("partition", "offset"))
    rows = []
    for r in out.collect():
        n, newest = r["v"].split(",")
        rows.append((r["k"], int(n), int(newest), r["t"]))
    return rows


if __name__ == "__main__":
    main()
