"""
W6: rescaling a query's state (``migrate(..., num_partitions=N)``) against Spark 4.2+'s own
offline repartition (``StreamingCheckpointManager.repartition``) on the same RocksDB
checkpoint, and against re-running the query from scratch over the same input at the new
number of partitions.

Shape: 1M keys in 8 state partitions, rescaled to 32. The query is the workloads' one
(``groupBy(key).agg(count, sum)``, update mode, noop sink, one parquet file per trigger); its
history is ``--files`` input files, each every key once (benchmarks/migration.py's inputs).
The source checkpoint is written by Spark's RocksDB provider on Spark's file manager (Spark's
repartition reads RocksDB checkpoints only). Then, each step in this one driver (``local[2]``,
1 GiB driver heap unless ``--driver-memory``), one after the other:

- ours: ``migrate(SRC, DST, to="rocksdb", num_partitions=32)``, and the same into ``heap``;
- Spark: ``spark._streamingCheckpointManager.repartition(COPY, 32)`` on a copy of SRC (it
  rewrites the checkpoint in place);
- re-run: a new query at 32 partitions on RocksDB over all the input files from scratch.

For each: wall time, and the driver's peak heap while it ran above the heap after a GC before
it (``MemoryMXBean`` sampled every 50 ms). Ratios against Spark's repartition and the re-run
are printed; absolute times drift on shared machines. A benchmark, never a test.

    .venv/bin/python benchmarks/rescale.py                           # 1M keys, 8 -> 32
    .venv/bin/python benchmarks/rescale.py --keys 100000 --files 1
"""
import argparse
import os
import shutil
import sys
import threading
import time
from typing import Callable, Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from migration import (PROVIDERS, SPARK_FILE_MANAGER, run_query, session, size_of,  # noqa: E402
                       write_inputs, write_results)


class HeapPeak(object):
    """The driver JVM's heap in use, sampled every ``interval`` seconds while a step runs."""

    def __init__(self, spark, interval: float = 0.05):
        self._jvm = spark._jvm
        self._interval = interval

    def _used(self) -> int:
        return int(self._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
                   .getHeapMemoryUsage().getUsed())

    def measure(self, step: Callable[[], None]) -> Dict[str, float]:
        self._jvm.java.lang.System.gc()
        time.sleep(0.5)
        base = self._used()
        peak = [base]
        done = threading.Event()

        def sample():
            while not done.wait(self._interval):
                peak[0] = max(peak[0], self._used())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.time()
        try:
            step()
        finally:
            seconds = time.time() - started
            done.set()
            sampler.join()
        return {"seconds": seconds, "heap_base_mb": base / 2 ** 20,
                "heap_peak_above_base_mb": (peak[0] - base) / 2 ** 20}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--to-partitions", type=int, default=32)
    parser.add_argument("--files", type=int, default=2, help="input files (batches) of the history")
    parser.add_argument("--driver-memory", default="1g")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of the three rescales, each round in another order (the first "
                             "one run in a JVM pays its warm-up); the table shows each one's fastest")
    parser.add_argument("--workdir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "results", "rescale"))
    args = parser.parse_args(argv)

    from spark_checkpoint_storage.migration import migrate

    work = args.workdir
    n = args.to_partitions
    inputs = write_inputs(os.path.join(work, "inputs-%dk-%d" % (args.keys // 1000, args.files)),
                          args.keys, args.files)
    for name in ("src", "spark", "ours-rocksdb", "ours-heap", "rerun", "source"):
        shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    spark = session("rescale-benchmark", args.driver_memory, args.partitions)
    heap = HeapPeak(spark)

    spark.conf.set("spark.sql.streaming.stateStore.providerClass", PROVIDERS["rocksdb"])
    spark.conf.set("spark.sql.streaming.checkpointFileManagerClass", SPARK_FILE_MANAGER)
    src = os.path.join(work, "src")
    source_seconds = run_query(spark, inputs, os.path.join(work, "source"), src)
    print("[1/%d] source: %d keys, %d partitions, %d batches on RocksDB in %.1f s, checkpoint %s"
          % (2 + 3 * args.rounds, args.keys, args.partitions, len(inputs), source_seconds, size_of(src)),
          flush=True)
    steps = {}

    def progress(p):
        print("      %s" % p, flush=True)

    def ours(target):
        def step():
            result = migrate(src, os.path.join(work, "ours-" + target), to=target, num_partitions=n,
                             spark=spark, progress=progress, progress_interval=2.0)
            assert result.rows == args.keys, result
        return step

    def spark_repartition():
        copy = os.path.join(work, "spark")
        shutil.copytree(src, copy)
        spark._streamingCheckpointManager.repartition(copy, n, False)

    rescales = [("ours-rocksdb", "ours -> rocksdb", ours("rocksdb")),
                ("ours-heap", "ours -> heap", ours("heap")),
                ("spark", "Spark's repartition", spark_repartition)]
    runs: Dict[str, list] = {name: [] for name, _, _ in rescales}
    total = 1 + len(rescales) * args.rounds + 1
    done = 1
    for r in range(args.rounds):
        for name, label, step in rescales[r % len(rescales):] + rescales[:r % len(rescales)]:
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
            measured = heap.measure(step)
            runs[name].append(measured)
            done += 1
            print("[%d/%d] round %d, %s to %d: %.1f s, driver heap peak +%.0f MiB"
                  % (done, total, r + 1, label, n, measured["seconds"],
                     measured["heap_peak_above_base_mb"]), flush=True)
    for name, measured in runs.items():
        steps[name] = dict(min(measured, key=lambda m: m["seconds"]),
                           heap_peak_above_base_mb=max(m["heap_peak_above_base_mb"] for m in measured),
                           all_seconds=[m["seconds"] for m in measured])

    spark.conf.set("spark.sql.shuffle.partitions", n)
    rerun = os.path.join(work, "rerun")
    steps["rerun"] = heap.measure(
        lambda: run_query(spark, inputs, os.path.join(work, "source"), rerun))
    print("[%d/%d] re-run at %d from scratch: %.1f s, driver heap peak +%.0f MiB"
          % (total, total, n, steps["rerun"]["seconds"], steps["rerun"]["heap_peak_above_base_mb"]), flush=True)
    version = spark.version
    spark.stop()

    print()
    print("Spark %s, %d keys, %d -> %d partitions, history of %d batches; each rescale's fastest of "
          "%d rounds (heap: the highest peak)" % (version, args.keys, args.partitions, n, len(inputs), args.rounds))
    print("%-22s %9s %13s %15s %13s" % ("step", "seconds", "vs Spark's", "vs re-run",
                                        "heap peak MiB"))
    for name, s in steps.items():
        print("%-22s %9.1f %12.2fx %14.2fx %13.0f" % (
            name, s["seconds"], s["seconds"] / steps["spark"]["seconds"],
            s["seconds"] / steps["rerun"]["seconds"], s["heap_peak_above_base_mb"]))
    results = {"spark": version, "keys": args.keys, "partitions": args.partitions,
               "to_partitions": n, "files": len(inputs), "rounds": args.rounds, "source_seconds": source_seconds,
               "steps": steps}
    return write_results(os.path.join(work, "rescale-results.json"), results)


if __name__ == "__main__":
    sys.exit(main())
