"""
The demo behind ``python -m spark_checkpoint_storage demo``: the same stateful streaming
aggregation run side by side with Spark's default state store provider and with ours, with a
line per micro-batch and a comparison at the end.
"""
import os
import shutil
import tempfile
import time
from typing import Dict, List, Optional

from spark_checkpoint_storage._version import __version__
from spark_checkpoint_storage import jvm_names

BUILT_IN = jvm_names.HDFS_PROVIDER_CLASS
HEAP = jvm_names.HEAP_PROVIDER_CLASS
#: Spark's own file manager on the running Spark line: the baseline runs as in plain Spark.
SPARK_FILE_MANAGER = jvm_names.spark_file_manager_class()
OUR_FILE_MANAGER = jvm_names.FILE_MANAGER_CLASS
PROVIDER = jvm_names.PROVIDER_CLASS_CONF
FILE_MANAGER = jvm_names.FILE_MANAGER_CLASS_CONF
STORAGE = jvm_names.STORAGE

#: (label, session settings of the run); the first is the baseline.
RUNS = [
    ("Spark default (HDFSBacked)", {PROVIDER: BUILT_IN, FILE_MANAGER: SPARK_FILE_MANAGER}),
    ("FileSystemCheckpointStorage", {PROVIDER: HEAP, FILE_MANAGER: OUR_FILE_MANAGER,
                                     STORAGE: "filesystem"}),
    ("DriverCheckpointStorage", {PROVIDER: HEAP, FILE_MANAGER: OUR_FILE_MANAGER,
                                 STORAGE: "driver"}),
]


def _count_files(path: str) -> int:
    return sum(len(files) for _, _, files in os.walk(path)) if os.path.isdir(path) else 0


def _state_files(checkpoint: str) -> int:
    """Files holding state: per-partition files and packs (Hadoop's .crc files included)."""
    return (_count_files(os.path.join(checkpoint, "state"))
            + _count_files(os.path.join(checkpoint, "state-packs")))


def _run_query(spark, label: str, settings: Dict[str, str], source: str, checkpoint: str,
               files: List[str], staging: str) -> List[Dict]:
    from pyspark.sql import functions as F

    for key, value in settings.items():
        spark.conf.set(key, value)
    stream = (spark.readStream.schema("key long, amount long")
              .option("maxFilesPerTrigger", 1).parquet(source))
    counts = stream.groupBy("key").agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
    query = (counts.writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint).start())
    batches = []
    state_dir = checkpoint
    try:
        for i, name in enumerate(files):
            files_before = _state_files(state_dir)
            shutil.copy(os.path.join(staging, name), os.path.join(source, name))
            query.processAllAvailable()
            progress = query.lastProgress
            op = progress["stateOperators"][0]
            row = {
                "batch": progress["batchId"],
                "ms": progress["durationMs"].get("triggerExecution", 0),
                "commit_ms": op.get("commitTimeMs", 0),
                "keys": op["numRowsTotal"],
                "memory": op["memoryUsedBytes"],
                "state_files": _state_files(state_dir) - files_before,
            }
            batches.append(row)
            print("[%s] batch %d/%d: %5d ms, commit %4d ms, %7d keys, %6.1f MiB state in heap, "
                  "%3d state files written"
                  % (label, i + 1, len(files), row["ms"], row["commit_ms"], row["keys"],
                     row["memory"] / 2 ** 20, row["state_files"]), flush=True)
    finally:
        query.stop()
        for key in settings:
            spark.conf.unset(key)
    return batches


def _mean(rows: List[Dict], field: str) -> float:
    # The first batch also plans the query and warms the JVM: leave it out.
    rest = rows[1:] or rows
    return sum(r[field] for r in rest) / len(rest)


def run_demo(batches: int = 6, keys: int = 20000, rows_per_batch: int = 20000,
             partitions: int = 200, workdir: Optional[str] = None) -> int:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from spark_checkpoint_storage.session import configure_spark_with_checkpoint_storage
    from spark_checkpoint_storage.java_gateway import get_gateway

    builder = (SparkSession.builder.master("local[*]").appName("spark-checkpoint-storage demo")
               .config("spark.sql.shuffle.partitions", partitions)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    root = workdir or tempfile.mkdtemp(prefix="scs-demo-")
    try:
        info = get_gateway().jvm.io.sparkcheckpointstorage.BuildInfo
        print("spark-checkpoint-storage %s (jar %s, built for Spark %s) on Spark %s"
              % (__version__, info.version(), info.sparkVersion(), spark.version))
        print("jar: %s" % info.jarLocation())
        print("workload: groupBy(key).agg(count, sum), update mode, %d keys, %d batches x %d rows, "
              "%d state partitions\n" % (keys, batches, rows_per_batch, partitions))

        staging = os.path.join(root, "staging")
        for b in range(batches):
            # Batch 0 touches every key; later batches update a sliding subset.
            (spark.range(rows_per_batch)
             .select(((F.col("id") * 7919 + b * 104729) % keys).alias("key"),
                     (F.col("id") % 100).alias("amount"))
             .coalesce(1).write.parquet(os.path.join(staging, "tmp")))
            part = [f for f in os.listdir(os.path.join(staging, "tmp")) if f.endswith(".parquet")][0]
            os.rename(os.path.join(staging, "tmp", part), os.path.join(staging, "batch-%03d.parquet" % b))
            shutil.rmtree(os.path.join(staging, "tmp"))
        files = sorted(f for f in os.listdir(staging) if f.endswith(".parquet"))

        results = {}
        for label, settings in RUNS:
            source = os.path.join(root, label.split()[0], "source")
            os.makedirs(source)
            started = time.time()
            results[label] = _run_query(spark, label, settings, source,
                                        os.path.join(root, label.split()[0], "checkpoint"),
                                        files, staging)
            print("[%s] %d batches in %.1f s\n" % (label, len(files), time.time() - started))

        base = results[RUNS[0][0]]
        print("%-30s %12s %12s %14s %12s" % ("mean per batch (after the 1st)", "batch ms",
                                             "commit ms", "heap MiB", "state files"))
        for label, rows in results.items():
            print("%-30s %12.0f %12.0f %14.1f %12.1f" % (
                label, _mean(rows, "ms"), _mean(rows, "commit_ms"), rows[-1]["memory"] / 2 ** 20,
                _mean(rows, "state_files")))
        print()
        same = True
        for label, _ in RUNS[1:]:
            ours = results[label]
            print("%s vs Spark's default: batch time %.2fx, commit time %.2fx, state files %.3fx, "
                  "state memory %.2fx"
                  % (label, _mean(ours, "ms") / max(_mean(base, "ms"), 1),
                     _mean(ours, "commit_ms") / max(_mean(base, "commit_ms"), 1),
                     _mean(ours, "state_files") / max(_mean(base, "state_files"), 1),
                     ours[-1]["memory"] / max(base[-1]["memory"], 1)))
            same = same and [r["keys"] for r in ours] == [r["keys"] for r in base]
        print("same state (keys per batch) in every run: %s" % ("yes" if same else "NO"))
        return 0 if same else 1
    finally:
        spark.stop()
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
