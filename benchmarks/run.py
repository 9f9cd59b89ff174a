"""
Benchmarks of shared/DESIGN.md section 8: each workload run with Spark's built-in state store
providers and with ours, side by side in one run, one fresh driver JVM per variant.

    .venv/bin/python benchmarks/run.py --workload W2
    .venv/bin/python benchmarks/run.py --workload W1 --variants hdfs,rocksdb-changelog,heap-fs
    .venv/bin/python benchmarks/run.py --workload W3 --keys 3000000
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from variants import VARIANTS  # noqa: E402
from workloads import Workload, workload, write_inputs  # noqa: E402
import report  # noqa: E402


def _count_files(path: str, under=("state", "state-packs")) -> int:
    total = 0
    for sub in under:
        for _, _, files in os.walk(os.path.join(path, sub)):
            total += len(files)
    return total


def child(args) -> int:
    """Runs one variant in this process and prints one JSON line per event."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    w = workload(args.workload, args.keys, args.quick)
    variant = VARIANTS[args.variant]
    builder = (SparkSession.builder.master("local[2]").appName("bench %s %s" % (w.name, args.variant))
               .config("spark.sql.shuffle.partitions", w.partitions)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    for k, v in variant["conf"].items():
        builder = builder.config(k, v)
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    inputs = write_inputs(spark, w, os.path.join(args.workdir, "input-%s-%dk-%dx%d" % (
        w.name, w.keys // 1000, w.batches, w.rows_per_batch)))
    run_dir = os.path.join(args.workdir, "run-%s-%s" % (w.name, args.variant))
    shutil.rmtree(run_dir, ignore_errors=True)
    source, checkpoint = os.path.join(run_dir, "source"), os.path.join(run_dir, "checkpoint")
    os.makedirs(source)
    jvm = spark.sparkContext._jvm

    def used_heap() -> int:
        for _ in range(3):
            jvm.java.lang.System.gc()
            time.sleep(0.2)
        rt = jvm.java.lang.Runtime.getRuntime()
        return rt.totalMemory() - rt.freeMemory()

    def start():
        stream = (spark.readStream.schema("key long, amount long")
                  .option("maxFilesPerTrigger", 1).parquet(source))
        return (stream.groupBy("key").agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
                .writeStream.outputMode("update").format("noop")
                .option("checkpointLocation", checkpoint).start())

    def emit(**event):
        print("@@" + json.dumps(event), flush=True)

    heap_before = used_heap()
    query = start()
    updates = w.batches + (1 if w.preload else 0)
    for i, f in enumerate(inputs[:updates]):
        files_before = _count_files(checkpoint)
        shutil.copy(f, os.path.join(source, os.path.basename(f)))
        query.processAllAvailable()
        p = query.lastProgress
        op = p["stateOperators"][0]
        emit(event="batch", batch=i, ms=p["durationMs"].get("triggerExecution", 0),
             commit_ms=op.get("commitTimeMs", 0), keys=op["numRowsTotal"],
             memory=op["memoryUsedBytes"], state_files=_count_files(checkpoint) - files_before,
             preload=w.preload and i == 0)
    if w.preload:
        heap_after = used_heap()
        emit(event="heap", keys=w.keys, jvm_heap_per_key=(heap_after - heap_before) / w.keys,
             reported_per_key=op["memoryUsedBytes"] / max(op["numRowsTotal"], 1))
    query.stop()
    if w.restart:
        # A new run of the query loads all state before its first batch completes.
        query = start()
        shutil.copy(inputs[updates], os.path.join(source, os.path.basename(inputs[updates])))
        t = time.time()
        query.processAllAvailable()
        p = query.lastProgress
        emit(event="restart", ms=p["durationMs"].get("triggerExecution", 0),
             wall_ms=int((time.time() - t) * 1000), keys=p["stateOperators"][0]["numRowsTotal"])
        query.stop()
    spark.stop()
    return 0


def run_variant(args, name: str, w: Workload) -> Dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--variant", name,
           "--workload", args.workload, "--workdir", args.workdir, "--keys", str(args.keys)]
    if args.quick:
        cmd.append("--quick")
    label = "%s %s" % (w.name, name)
    result: Dict = {"variant": name, "batches": [], "status": "ok"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    total = w.batches + (1 if w.preload else 0)
    for line in proc.stdout:
        if not line.startswith("@@"):
            continue
        event = json.loads(line[2:])
        if event["event"] == "batch":
            result["batches"].append(event)
            print("[%s] batch %d/%d%s: %6.2f s, commit %6.3f s, %8d keys, %4d state files"
                  % (label, event["batch"] + 1, total, " (preload)" if event["preload"] else "",
                     event["ms"] / 1000, event["commit_ms"] / 1000, event["keys"],
                     event["state_files"]), flush=True)
        elif event["event"] == "heap":
            result["heap"] = event
            print("[%s] heap: %.0f bytes/key (JVM heap growth), %.0f bytes/key (reported)"
                  % (label, event["jvm_heap_per_key"], event["reported_per_key"]), flush=True)
        elif event["event"] == "restart":
            result["restart"] = event
            print("[%s] restart: first batch %.2f s" % (label, event["ms"] / 1000), flush=True)
    err = proc.stderr.read()
    proc.wait()
    if proc.returncode != 0:
        result["status"] = "OOM" if "OutOfMemoryError" in err else "failed"
        lines = [l for l in err.splitlines() if "Error" in l or "Exception" in l]
        result["error"] = lines[0][:300] if lines else err[-300:]
        print("[%s] %s: %s" % (label, result["status"], result["error"]), flush=True)
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", required=True, choices=["W1", "W2", "W3"])
    parser.add_argument("--variants", default=None,
                        help="comma-separated, of: " + ", ".join(VARIANTS))
    parser.add_argument("--keys", type=int, default=0, help="W3: number of preloaded keys")
    parser.add_argument("--quick", action="store_true", help="10x smaller, 3 batches: a smoke test")
    parser.add_argument("--workdir", default=os.path.join(HERE, "results", "work"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)

    w = workload(args.workload, args.keys, args.quick)
    default = ["hdfs", "rocksdb", "rocksdb-changelog", "heap", "heap-fs", "heap-driver"]
    names = args.variants.split(",") if args.variants else default
    print(w.describe(), flush=True)
    results = [run_variant(args, n, w) for n in names]
    text, markdown = report.summarize(w, results)
    print("\n" + text)
    out = os.path.join(HERE, "results")
    os.makedirs(out, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(out, "%s-%s.json" % (w.name, stamp)), "w") as f:
        json.dump({"workload": w.__dict__, "results": results}, f, indent=1)
    with open(os.path.join(out, "%s-%s.md" % (w.name, stamp)), "w") as f:
        f.write(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
