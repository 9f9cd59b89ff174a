"""
Migration between state store providers (``spark_checkpoint_storage.migration``) against
the only alternative Spark users have: re-running the query from scratch over the same input
on the new provider.

Shape (issue #13): 1M keys in 8 state partitions. The query is the workloads' one
(``groupBy(key).agg(count, sum)``, update mode, noop sink, one parquet file per trigger);
its history is ``--files`` input files, each a permutation of all keys (so the state holds
every key from the first batch on). The source checkpoint is written by Spark's default
provider (``HDFSBackedStateStoreProvider``, Spark's file manager); then, for each target:

- migrate: ``migrate(SRC, DST, to=target)``: wall time, and the bytes and files of DST;
- re-run: a new query on the target provider over all the input files from scratch: wall
  time (one batch per file, as the original ran), and the bytes and files of its checkpoint.

Everything runs in this process's one driver (``local[2]``, 1 GiB driver heap unless
``--driver-memory``), one after the other. Ratios are printed (migrate / re-run); absolute
times drift on shared machines. A benchmark, never a test: nothing fails on a number.

    .venv/bin/python benchmarks/migration.py                     # 1M keys, 8 partitions, 5 files
    .venv/bin/python benchmarks/migration.py --keys 100000 --files 3 --targets heap
"""
import argparse
import json
import os
import shutil
import sys
import time
from typing import Dict, List

from spark_checkpoint_storage import jvm_names

PROVIDERS = jvm_names.MIGRATION_TARGETS
SPARK_FILE_MANAGER = jvm_names.spark_file_manager_class()


def write_inputs(folder: str, keys: int, files: int) -> List[str]:
    """``files`` parquet files, each every key once in a random order (pyarrow: no JVM)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    os.makedirs(folder, exist_ok=True)
    paths = []
    rng = np.random.default_rng(13)
    for i in range(files):
        path = os.path.join(folder, "part-%03d.parquet" % i)
        if not os.path.exists(path):
            k = rng.permutation(keys).astype("int64")
            tmp = path + ".tmp"
            pq.write_table(pa.table({"key": k, "value": (k % 1000) + i}), tmp)
            os.rename(tmp, path)
        paths.append(path)
    return paths


def size_of(path: str) -> Dict[str, int]:
    n, b = 0, 0
    for d, _, names in os.walk(path):
        for name in names:
            n += 1
            b += os.path.getsize(os.path.join(d, name))
    return {"files": n, "bytes": b}


def run_query(spark, inputs: List[str], source: str, checkpoint: str) -> float:
    """Feeds the input files one per batch to a new query; returns its wall time."""
    from pyspark.sql import functions as F
    shutil.rmtree(source, ignore_errors=True)
    os.makedirs(source)
    started = time.time()
    query = (spark.readStream.schema("key long, value long").option("maxFilesPerTrigger", 1)
             .parquet(source).groupBy("key")
             .agg(F.count("*").alias("n"), F.sum("value").alias("s"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint).start())
    try:
        for path in inputs:
            os.link(path, os.path.join(source, os.path.basename(path)))
            query.processAllAvailable()
    finally:
        query.stop()
    return time.time() - started


def session(app: str, driver_memory: str, partitions: int):
    """The benchmark's session: ``local[2]``, no UI, ``partitions`` state partitions,
    configured by ``configure_spark_with_checkpoint_storage``."""
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
    builder = (SparkSession.builder.master("local[2]").appName(app)
               .config("spark.driver.memory", driver_memory)
               .config("spark.sql.shuffle.partitions", partitions)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_results(path: str, results: Dict) -> int:
    """Writes ``results`` as JSON to ``path`` and says where; the exit status of a run."""
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
    print("results: %s" % path)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--files", type=int, default=5, help="input files (batches) of the history")
    parser.add_argument("--targets", default="heap,rocksdb")
    parser.add_argument("--driver-memory", default="1g")
    parser.add_argument("--workdir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "results", "migration"))
    args = parser.parse_args(argv)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]

    from spark_checkpoint_storage.migration import migrate

    work = args.workdir
    inputs = write_inputs(os.path.join(work, "inputs-%dk-%d" % (args.keys // 1000, args.files)),
                          args.keys, args.files)
    for name in ("src", "dst", "rerun", "source"):
        shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    spark = session("migration-benchmark", args.driver_memory, args.partitions)

    # The user's query so far: Spark's defaults (provider and file manager).
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", PROVIDERS["hdfs"])
    spark.conf.set("spark.sql.streaming.checkpointFileManagerClass", SPARK_FILE_MANAGER)
    src = os.path.join(work, "src")
    source_seconds = run_query(spark, inputs, os.path.join(work, "source"), src)
    print("source: %d keys, %d partitions, %d batches on HDFSBackedStateStoreProvider in %.1f s, "
          "checkpoint %s" % (args.keys, args.partitions, len(inputs), source_seconds,
                             size_of(src)), flush=True)

    results = {"keys": args.keys, "partitions": args.partitions, "files": len(inputs),
               "source_seconds": source_seconds, "source": size_of(src), "targets": {}}
    for target in targets:
        dst = os.path.join(work, "dst", target)
        started = time.time()
        result = migrate(src, dst, to=target, spark=spark)
        migrate_seconds = time.time() - started
        assert result.rows == args.keys, result
        migrated = size_of(dst)
        print("migrate -> %s: %.1f s (job %.1f s), %s" % (target, migrate_seconds, result.seconds,
                                                        migrated), flush=True)
        # The alternative: the query from scratch on the target provider, as a user would run
        # it (ours through this package's file manager and storage).
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", PROVIDERS[target])
        if target == "heap":
            spark.conf.set("spark.sql.streaming.checkpointFileManagerClass",
                           "io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager")
        else:
            spark.conf.set("spark.sql.streaming.checkpointFileManagerClass", SPARK_FILE_MANAGER)
        rerun = os.path.join(work, "rerun", target)
        rerun_seconds = run_query(spark, inputs, os.path.join(work, "source"), rerun)
        rerun_size = size_of(rerun)
        print("re-run on %s from scratch: %.1f s, %s" % (target, rerun_seconds, rerun_size),
              flush=True)
        results["targets"][target] = {
            "migrate_seconds": migrate_seconds, "migrate_job_seconds": result.seconds,
            "migrate": migrated, "rerun_seconds": rerun_seconds, "rerun": rerun_size,
            "time_ratio": migrate_seconds / rerun_seconds,
            "bytes_ratio": migrated["bytes"] / max(1, rerun_size["bytes"])}
    spark.stop()

    print()
    print("%d keys, %d partitions, history of %d batches (source on HDFSBackedStateStoreProvider: "
          "%.1f s)" % (args.keys, args.partitions, len(inputs), source_seconds))
    print("%-8s %12s %12s %8s %14s %14s %8s" % ("target", "migrate s", "re-run s", "ratio",
                                                "migrate bytes", "re-run bytes", "ratio"))
    for target, r in results["targets"].items():
        print("%-8s %12.1f %12.1f %7.2fx %14d %14d %7.2fx" % (
            target, r["migrate_seconds"], r["rerun_seconds"], r["time_ratio"],
            r["migrate"]["bytes"], r["rerun"]["bytes"], r["bytes_ratio"]))
    return write_results(os.path.join(work, "migration-results.json"), results)


if __name__ == "__main__":
    sys.exit(main())
