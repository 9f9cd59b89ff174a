"""
Benchmark W5 (docs/benchmarks.md): the driver's checkpoint coordinator at scale.

Simulated executors (threads in executor JVMs of their own, on ``local-cluster``) send state
files of 1-64 KiB (log-uniform, mean ~15 KiB) to one driver through the real plugin RPC, as
the tasks of 1, 10 and 50 queries of 200 partitions would (one store per partition, and four
for joins); after each round (a batch) the driver commits every query, writing its pack.
Reports puts/s, MB/s, put latency p50/p99, the commit (pack write) time of a query's batch,
the driver CPU it took, and the driver heap per held byte (driver storage: bytes kept in
heap). Never a test: nothing fails, the summary compares with the targets.

    .venv/bin/python benchmarks/coordinator_rpc.py                   # the whole matrix
    .venv/bin/python benchmarks/coordinator_rpc.py --queries 1 --stores 1 --rounds 2
    .venv/bin/python benchmarks/coordinator_rpc.py --quick           # smoke test

The JVM half is ``io.sparkcheckpointstorage.benchmarks.CoordinatorLoad``, in the benchmarks jar
(``jvm/src/bench/scala``): this script rebuilds the plugin jar and the running Spark line's
benchmarks jar when the JVM sources are newer, and ships it to the executors with ``spark.jars``.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import jvm_jars

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {"putsPerSecond": 20000, "mbPerSecond": 200, "p99Ms": 5.0, "commitMs": 50.0}


BATCH_SETTING = "spark.sql.streaming.checkpointStorage.executor.maxRequestBatchSize"


def session(executors: int, batch: str):
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    builder = (SparkSession.builder.master("local-cluster[%d,1,1024]" % executors)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config(BATCH_SETTING, batch))
    builder = configure_spark_with_checkpoint_storage(builder)
    jars = builder._options["spark.jars"] + "," + jvm_jars.benchmarks_jar("W5")
    spark = builder.config("spark.jars", jars).getOrCreate()
    sc = spark.sparkContext
    # Every executor JVM registered before the clock starts.
    deadline = time.time() + 120
    while sc._jsc.sc().getExecutorMemoryStatus().size() < executors + 1 and time.time() < deadline:
        time.sleep(0.5)
    return spark


def run_one(spark, work: str, queries: int, stores: int, args, keep_in_heap: bool,
            in_process: bool, batch: str) -> dict:
    sc = spark.sparkContext
    load = sc._jvm.io.sparkcheckpointstorage.benchmarks.CoordinatorLoad
    folder = tempfile.mkdtemp(prefix="w5-q%d-s%d-" % (queries, stores), dir=work)
    batch = "-" if in_process else batch  # the driver-threads mode sends no messages to batch
    print("[W5] %s, %s=%s: %d queries x %d partitions x %d stores, %d rounds, %d senders%s" % (
        "threads" if in_process else "rpc", BATCH_SETTING.split(".")[-1], batch, queries, args.partitions,
        stores, args.rounds, args.executors * args.senders,
        ", bytes kept in driver heap" if keep_in_heap else ""), file=sys.stderr, flush=True)
    result = json.loads(load.run(sc._jsc.sc(), folder, queries, args.partitions, stores, args.rounds,
                                 args.executors, args.senders, keep_in_heap, args.wave_mb << 20, in_process))
    result["batch"] = batch
    subprocess.run(["rm", "-rf", folder])
    return result


def verdict(value: float, target: float, higher_is_better: bool) -> str:
    ratio = value / target
    met = ratio >= 1 if higher_is_better else ratio <= 1
    return "%.2fx target, %s" % (ratio, "MET" if met else "MISSED")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", default="1,10,50")
    parser.add_argument("--stores", default="1,4", help="stores per partition (4: a stream-stream join)")
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="batches; the first is left out as warm-up")
    parser.add_argument("--executors", type=int, default=2, help="executor JVMs (local-cluster)")
    parser.add_argument("--senders", type=int, default=32, help="sender threads per executor JVM")
    parser.add_argument("--wave-mb", type=int, default=150,
                        help="at most this much state in flight per wave of queries (driver heap)")
    parser.add_argument("--modes", default="rpc,threads",
                        help="rpc: senders in executor JVMs through the plugin RPC; threads: sender "
                             "threads in the driver JVM queued to one thread running the endpoint "
                             "(codec and coordinator on one core, no network, no batching)")
    parser.add_argument("--batching", default="1m,0",
                        help="values of %s to compare, each in a Spark application of its own "
                             "(0: every request on its own)" % BATCH_SETTING)
    parser.add_argument("--quick", action="store_true", help="1 and 2 queries of 20 partitions, 2 rounds")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks/results"))
    args = parser.parse_args()
    if args.quick:
        args.queries, args.partitions, args.rounds = "1,2", 20, 2
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="w5-", dir=os.path.join(ROOT, "benchmarks/results"))

    rows = []
    heap = None
    try:
        for batch in args.batching.split(","):
            spark = session(args.executors, batch)
            try:
                one_round = argparse.Namespace(**{**vars(args), "rounds": 1})
                # Warm-up, not measured: the RPC connections, and the JIT, which otherwise takes
                # more driver CPU than the coordinator in the first rows.
                warm_up = argparse.Namespace(**{**vars(args), "rounds": 2})
                for in_process in (False, True, False):
                    run_one(spark, work, 10, 1, warm_up, False, in_process, batch)
                # Batching saves messages on the network; the driver-threads mode has none, so it
                # runs once, its senders calling the endpoint thread directly.
                for mode in [m for m in args.modes.split(",") if m == "rpc" or batch == args.batching.split(",")[0]]:
                    for stores in [int(s) for s in args.stores.split(",")]:
                        for queries in [int(q) for q in args.queries.split(",")]:
                            rows.append(run_one(spark, work, queries, stores, args, False, mode == "threads",
                                                batch))
                            print(json.dumps(rows[-1]), flush=True)
                if heap is None:
                    heap = run_one(spark, work, min(10, max(int(q) for q in args.queries.split(","))), 1,
                                   one_round, True, False, batch)
                    print(json.dumps(heap), flush=True)
            finally:
                spark.stop()
    finally:
        subprocess.run(["rm", "-rf", work])

    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(args.out, "W5-%s.json" % stamp), "w") as f:
        json.dump({"rows": rows, "heap": heap}, f, indent=1)
    print("\nW5: %d executor JVMs x %d sender threads = %d concurrent senders, state files 1-64 KiB "
          "(log-uniform), %d partitions per query, %d rounds" % (
              args.executors, args.senders, args.executors * args.senders, args.partitions, args.rounds))
    print("| senders | batch | queries | stores | puts | puts/s | MB/s | p50 put | p99 put | driver CPU (cores) | "
          "endpoint thread: puts / MB per CPU second | puts per driver CPU second (JIT left out) | commit p50 / max per query | pack |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %d | %d | %d | %.0f | %.0f | %.2f ms | %.2f ms | %.2f | %.0f / %.0f | %s | %.1f / %.1f ms | %.1f MB |" % (
            "executor JVMs (RPC)" if r["mode"] == "rpc" else "driver threads, one RPC thread", r["batch"],
            r["queries"], r["stores"], r["puts"], r["putsPerSecond"], r["mbPerSecond"], r["p50Ms"],
            r["p99Ms"], r["driverCpuCores"], r["putsPerEndpointCpuSecond"], r["mbPerEndpointCpuSecond"],
            "%.0f (%.0f)" % (r["putsPerDriverCpuSecond"], r["putsPerDriverCpuSecondWithoutJit"])
            if r["mode"] == "rpc" else "-", r["commitP50Ms"], r["commitMaxMs"], r["packMbMean"]))
    print("\nDriver heap per held byte (driver storage, %d queries, %.0f MB held): %.2f" % (
        heap["queries"], heap["heldBytes"] / 1e6, heap["heapPerHeldByte"]))
    for batch in args.batching.split(","):
        summary(args, [r for r in rows if r["mode"] == "rpc" and r["batch"] == batch], "rpc", batch)
    summary(args, [r for r in rows if r["mode"] == "threads"], "threads", "-")


def summary(args, rows, mode: str, batch: str) -> None:
    # A query of one round sends 200 puts in a fraction of a second: too few to time a rate.
    rows = [r for r in rows if r["queries"] >= 10] or rows
    if not rows:
        return
    best = lambda key, pick: pick(r[key] for r in rows)  # noqa: E731
    single = [r for r in rows if r["stores"] == 1]
    print("\nAgainst the targets, %s (worst case over the rows of 10 queries and more; commit: one store per partition):" % (
        "senders in executor JVMs through the plugin RPC, %s=%s" % (BATCH_SETTING.split(".")[-1], batch)
        if mode == "rpc" else "sender threads in the driver, one thread serving them"))
    print("- puts/s >= %d: %.0f (%s)" % (TARGETS["putsPerSecond"], best("putsPerSecond", min),
                                        verdict(best("putsPerSecond", min), TARGETS["putsPerSecond"], True)))
    print("- MB/s >= %d: %.0f (%s)" % (TARGETS["mbPerSecond"], best("mbPerSecond", min),
                                      verdict(best("mbPerSecond", min), TARGETS["mbPerSecond"], True)))
    print("- p99 put <= %.0f ms at %d senders: %.2f ms (%s)" % (
        TARGETS["p99Ms"], args.executors * args.senders, best("p99Ms", max),
        verdict(best("p99Ms", max), TARGETS["p99Ms"], False)))
    commit = max(r["commitMaxMs"] for r in single) if single else float("nan")
    print("- commit of a %d-partition batch <= %.0f ms: %.1f ms max (%s)" % (
        args.partitions, TARGETS["commitMs"], commit, verdict(commit, TARGETS["commitMs"], False)))
    print("- driver CPU while sending: %.2f cores at most (the RPC thread, Netty and the coordinator)"
          % best("driverCpuCores", max))
    print("- on one driver core running the endpoint (its thread's CPU time): %.0f puts/s, %.0f MB/s at least" % (
        best("putsPerEndpointCpuSecond", min), best("mbPerEndpointCpuSecond", min)))
    if mode == "rpc":
        print("- per second of driver CPU (every driver thread): %.0f puts at least, %.0f with the JIT's "
              "compiler threads left out" % (best("putsPerDriverCpuSecond", min),
                                             best("putsPerDriverCpuSecondWithoutJit", min)))
        print("- driver CPU seconds by thread, the row with most puts: %s" % ", ".join(
            "%s %.2f" % kv for kv in max(rows, key=lambda r: r["puts"])["driverCpuSecondsByThread"].items()))


if __name__ == "__main__":
    main()
