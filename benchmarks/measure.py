"""
One provider variant, one workload, in this (fresh) Python process and its own driver JVM.

Started by run.py as ``python benchmarks/measure.py PARAMS_JSON_FILE``; reports to its parent
through stdout lines ``@@{json}`` (events ``jvm``, ``batch``, ``heap``, ``restart``,
``restart_new_driver``, ``error``, ``done``). Spark's own output goes to stderr, which the parent keeps in a log file.

Per batch it feeds the query exactly one new input file (hard-linked into the source folder,
so it appears whole), waits with ``processAllAvailable()``, then reads that batch's
``StreamingQueryProgress`` and lists the checkpoint's ``state/`` and ``state-packs/`` folders
(every file, ``.crc`` included) to count the files the batch wrote.
"""
import json
import os
import shutil
import sys
import time
import traceback
from typing import Dict, List, Optional, Set

from child_process import emit, feed

#: Progress fields copied from the state operator (all of them are summed over its tasks).
OPERATOR_FIELDS = ("numRowsTotal", "numRowsUpdated", "numRowsRemoved", "numRowsDroppedByWatermark",
                   "allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs", "memoryUsedBytes",
                   "numShufflePartitions", "numStateStoreInstances")


def list_files(root: str) -> Set[str]:
    """Every file under ``root`` (relative paths); a folder deleted meanwhile is skipped."""
    found: Set[str] = set()
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for f in files:
            found.add(os.path.join(rel, f))
    return found


class Jvm:
    """Heap, GC and RSS readings of the driver JVM (which, on local[2], is also the executor)."""

    def __init__(self, spark):
        self.jvm = spark.sparkContext._jvm
        self.mf = self.jvm.java.lang.management.ManagementFactory
        self.pid = int(self.jvm.java.lang.ProcessHandle.current().pid())

    def max_heap(self) -> int:
        return int(self.jvm.java.lang.Runtime.getRuntime().maxMemory())

    def used_heap(self, gc: bool) -> int:
        """Used heap bytes; with ``gc``, after full collections until the figure settles."""
        if not gc:
            return int(self.mf.getMemoryMXBean().getHeapMemoryUsage().getUsed())
        last = None
        for _ in range(5):
            self.jvm.java.lang.System.gc()
            time.sleep(0.3)
            used = int(self.mf.getMemoryMXBean().getHeapMemoryUsage().getUsed())
            if last is not None and abs(used - last) < 1 << 20:
                return min(used, last)
            last = used
        return last

    def gc_ms(self) -> int:
        return sum(int(b.getCollectionTime()) for b in self.mf.getGarbageCollectorMXBeans())

    def rss(self) -> Optional[int]:
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def unload_state_stores(self) -> str:
        """
        Closes every state store provider loaded in this JVM, as a new executor would start
        without them: a stopped query's providers otherwise stay loaded until Spark's
        maintenance task (every ``maintenanceInterval``, 60 s) unloads them.
        """
        state = self.jvm.org.apache.spark.sql.execution.streaming.state
        try:
            state.StateStore.stop()  # unloads and closes all providers, stops maintenance
            return "StateStore.stop()"
        except Exception as e:  # noqa: BLE001
            return "not unloaded (%s)" % str(e).splitlines()[0][:200]


def progress_of(query, batch_id: int) -> Dict:
    """The progress report of batch ``batch_id`` (not that of an idle trigger)."""
    for _ in range(50):
        for p in reversed(query.recentProgress):
            d = p if isinstance(p, dict) else json.loads(p.json)  # pyspark 3.5: dicts
            if d.get("batchId") == batch_id and "addBatch" in d.get("durationMs", {}):
                return d
        time.sleep(0.1)  # the report is posted just after the batch ends
    raise RuntimeError("no progress report for batch %d" % batch_id)


def operator_metrics(p: Dict) -> Dict:
    ops = p.get("stateOperators") or []
    out: Dict = {f: sum(int(op.get(f) or 0) for op in ops) for f in OPERATOR_FIELDS}
    custom: Dict = {}
    for op in ops:
        for k, v in (op.get("customMetrics") or {}).items():
            custom[k] = custom.get(k, 0) + v
    out["customMetrics"] = custom
    out["operators"] = [op.get("operatorName") for op in ops]
    return out


def main(params_file: str) -> int:
    with open(params_file) as f:
        params = json.load(f)
    shape, variant = params["workload"], params["variant"]
    inputs: List[str] = params["inputs"]
    run_dir = params["run_dir"]
    #: "run": the workload from a fresh checkpoint; "new_driver_restart" (W3, after "run"):
    #: one more batch of the query on the run's checkpoint, in this new driver JVM.
    phase = params.get("phase", "run")
    #: a remote checkpoint file system (run.py started its server): see tests/support/realfs.py
    remote = params.get("remote")
    source, checkpoint = os.path.join(run_dir, "source"), os.path.join(run_dir, "checkpoint")
    if remote:
        checkpoint = "%s/%s/checkpoint" % (remote["uri"].rstrip("/"), os.path.basename(run_dir))
    if phase == "run":
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(source)
    state_dirs = [os.path.join(checkpoint, "state"), os.path.join(checkpoint, "state-packs")]

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    # Deliberately no spark.driver.memory: the workloads run on the default 1 GiB heap.
    builder = (SparkSession.builder.master("local[2]")
               .appName("bench %s %s" % (shape["label"], variant["name"]))
               .config("spark.sql.shuffle.partitions", str(shape["partitions"]))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    for k, v in list((remote or {}).get("spark_conf", {}).items()) + \
            list(variant["conf"].items()) + list(params["extra_conf"].items()):
        builder = builder.config(k, v.replace("{checkpoint}", checkpoint).replace("{run_dir}", run_dir))
    if params.get("profile"):
        import batch_profile
        builder = builder.config("spark.driver.extraJavaOptions", batch_profile.JAVA_OPTIONS)
    builder = configure_spark_with_checkpoint_storage(builder)
    if variant.get("benchmarks_jar"):
        # The benchmark-only classes (the stateful floor) come from the benchmarks jar.
        import jvm_jars
        builder = builder.config("spark.jars", builder._options["spark.jars"] + "," + jvm_jars.benchmarks_jar())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = Jvm(spark)
    if remote:
        from remote_servers import realfs
        remote_files = realfs.HadoopFiles(spark)

        def checkpoint_files() -> Set[str]:
            """Every file of the checkpoint, relative to it (a listing of the remote folder)."""
            return set(remote_files.walk(checkpoint))

        def counters() -> Dict[str, int]:
            return realfs.read_counters(remote)
    else:
        def checkpoint_files() -> Set[str]:
            """The files of the checkpoint's state/ and state-packs/, relative to it."""
            return {os.path.relpath(os.path.join(d, f), checkpoint) for d in state_dirs for f in list_files(d)}
    conf = {k: spark.conf.get(k, None) for k in sorted(set(variant["conf"]) | set(params["extra_conf"]) | {
        "spark.sql.streaming.stateStore.providerClass", "spark.sql.streaming.checkpointFileManagerClass",
        "spark.plugins", "spark.sql.shuffle.partitions"})}
    emit(event="jvm", pid=jvm.pid, max_heap=jvm.max_heap(), spark_version=spark.version,
         driver_memory=spark.sparkContext.getConf().get("spark.driver.memory", "(default 1g)"),
         conf=conf)

    def aggregate(df):
        return df.groupBy("key").agg(F.count("*").alias("n"), F.sum("amount").alias("total"))

    def start(src: str = source, chk: str = checkpoint, name: str = "bench"):
        stream = (spark.readStream.schema("key long, amount long")
                  .option("maxFilesPerTrigger", 1).parquet(src))
        if variant.get("query") == "stateless":
            # The same read, the same shuffle by key into the same partitions, the same sink:
            # no state store and no aggregation.
            return (stream.repartition(shape["partitions"], "key")
                    .writeStream.outputMode("append").format("noop")
                    .option("checkpointLocation", chk)
                    .queryName("%s_%s" % (name, variant["name"].replace("-", "_").replace(".", "_")))
                    .start())
        return (aggregate(stream)
                .writeStream.outputMode("update").format("noop")
                .option("checkpointLocation", chk)
                .queryName("%s_%s" % (name, variant["name"].replace("-", "_").replace(".", "_")))
                .start())

    def warm_up() -> Dict:
        """
        One batch of the same query on its own source and checkpoint, then stopped and its
        stores closed: the JVM has then paid the query's fixed heap costs (classes, generated
        code, caches) before the heap baseline is taken, so the baseline's difference is the
        measured query's state, not the first query's set-up (~20 MB, 200 B/key at 100k keys).
        """
        wsrc, wchk = os.path.join(run_dir, "warmup-source"), os.path.join(run_dir, "warmup-checkpoint")
        os.makedirs(wsrc)
        t0 = time.perf_counter()
        q = start(wsrc, wchk, "warmup")
        try:
            feed(inputs[-1], wsrc)
            q.processAllAvailable()
        finally:
            q.stop()
        return {"warmup_ms": round((time.perf_counter() - t0) * 1000), "unload": jvm.unload_state_stores()}

    def run_batch(query, batch_id: int, input_file: str) -> Dict:
        """Feeds one file and waits for its batch. On a remote checkpoint the server's
        counters (S3 requests by type, or namenode RPCs and file operations) are read right
        before the file is fed and right after the batch's progress report, and the
        checkpoint is listed outside that window: this harness's listings are not counted."""
        before = checkpoint_files()
        c0 = counters() if remote else None
        gc0 = jvm.gc_ms()
        feed(input_file, source)
        t0 = time.perf_counter()
        query.processAllAvailable()
        wall_ms = (time.perf_counter() - t0) * 1000
        p = progress_of(query, batch_id)
        c1 = counters() if remote else None
        after = checkpoint_files()
        new = after - before
        b = batch_record(p, batch_id, wall_ms, gc0, {f for f in new if f.startswith("state/")},
                         {f for f in new if f.startswith("state-packs/")}, before - after, after)
        if remote:
            delta = {k: c1.get(k, 0) - c0.get(k, 0) for k in set(c0) | set(c1)}
            b["requests" if remote["scheme"] == "s3a" else "namenode"] = delta
            b["objects_created"] = len(new)
        return b

    def batch_record(p: Dict, batch_id: int, wall_ms: float, gc0: int, new_state: Set[str],
                     new_packs: Set[str], deleted: Set[str], after: Set[str]) -> Dict:
        d = p.get("durationMs", {})
        return {"batch": batch_id, "ms": d.get("triggerExecution", 0), "addBatch_ms": d.get("addBatch", 0),
                "wall_ms": round(wall_ms, 1), "durationMs": d, "numInputRows": p.get("numInputRows"),
                "state_files": len(new_state), "pack_files": len(new_packs),
                "files_deleted": len(deleted), "files_total": len(after),
                "gc_ms": jvm.gc_ms() - gc0, "heap_used": jvm.used_heap(gc=False),
                **operator_metrics(p)}

    query = None

    def restart(batch_id: int, event: str) -> None:
        """Starts a new run of the query on the checkpoint and times its first batch."""
        nonlocal query
        t0 = time.perf_counter()
        query = start()
        r = run_batch(query, batch_id, inputs[batch_id])
        r["start_to_done_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        emit(event=event, **r)
        query.stop()
        query = None

    try:
        if phase == "new_driver_restart":
            # Batches 0..total-1 ran in the first query run, batch total in its restart.
            restart(shape["total_batches"] + 1, "restart_new_driver")
            emit(event="done")
            return 0
        preload = shape["preload"]
        heap: Dict = {"keys": shape["keys"]}
        if preload:
            if params.get("heap_warmup", True):
                heap["warmup"] = warm_up()
            heap["before"] = jvm.used_heap(gc=True)
            heap["rss_before"] = jvm.rss()
        query = start()
        total = shape["batches"] + (1 if preload else 0)
        recording = None
        for i in range(total):
            if params.get("profile") and i == 1:
                # After the first batch (query start, JIT warm-up): the batches the means cover.
                import batch_profile
                recording = batch_profile.start(spark)
            b = run_batch(query, i, inputs[i])
            b["preload"] = bool(preload and i == 0)
            emit(event="batch", total=total, **b)
            if preload and i == 0:
                heap["after_preload"] = jvm.used_heap(gc=True)
                heap["rss_after_preload"] = jvm.rss()
                heap["memoryUsedBytes_after_preload"] = b["memoryUsedBytes"]
                heap["numRowsTotal_after_preload"] = b["numRowsTotal"]
        if recording is not None:
            jfr = batch_profile.stop(spark, recording, os.path.join(run_dir, "batches.jfr"))
            emit(event="profile", jfr=jfr, **batch_profile.breakdown(jfr, total - 1, shape["partitions"]))
        if preload:
            heap["after_updates"] = jvm.used_heap(gc=True)
            heap["rss_after_updates"] = jvm.rss()
            heap["memoryUsedBytes"] = b["memoryUsedBytes"]
            k = max(shape["keys"], 1)
            heap["jvm_heap_per_key"] = (heap["after_preload"] - heap["before"]) / k
            heap["jvm_heap_per_key_after_updates"] = (heap["after_updates"] - heap["before"]) / k
            heap["reported_per_key"] = heap["memoryUsedBytes_after_preload"] / k
            heap["reported_per_key_after_updates"] = b["memoryUsedBytes"] / k
        query.stop()
        query = None
        if shape["restart"]:
            heap["unload"] = jvm.unload_state_stores()
            heap["after_stop"] = jvm.used_heap(gc=True)
            if preload:
                heap["released_per_key"] = (heap["after_updates"] - heap["after_stop"]) / max(shape["keys"], 1)
        if preload:
            emit(event="heap", **heap)
        if shape["restart"]:
            # A new run of the query: its first batch loads every partition's state from the
            # checkpoint (the stopped run's providers were closed above).
            restart(total, "restart")
        emit(event="done")
        return 0
    except BaseException as e:  # noqa: BLE001 - reported to the parent, then exit non-zero
        text = str(e)
        lines = [l.strip() for l in text.splitlines() if l.strip()]
        emit(event="error", type=type(e).__name__, first_line=(lines[0] if lines else repr(e))[:500],
             message=text[:4000], traceback=traceback.format_exc()[-4000:])
        return 2
    finally:
        try:
            if query is not None:
                query.stop()
            spark.stop()
        except BaseException:  # noqa: BLE001 - the JVM may be gone (OOM)
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
