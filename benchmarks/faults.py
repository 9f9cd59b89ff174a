"""
W10, storage faults: a share of the checkpoint file system's operations fail, and each
state store set-up ("variant") copes as it can.

The query is W1's (``groupBy(key).agg(count, sum)``, update mode, noop sink, one parquet file
per trigger) in a smaller shape: 8 state partitions (``--partitions``; W2's count), 20 batches
(``--batches``) of 2,000 rows over 1,000 keys (``--rows``, ``--keys``), on ``local[2]`` (a task
is not retried: a fault a task meets fails its batch) with the default 1 GiB driver heap. Its
checkpoint (and, for our storages, the storage's ``checkpointPath``: the same folder) is on the
fault-injecting file system of the JVM test sources (``faulty:``, the local file system whose
operations a plan fails; ``dev/build-jar`` builds it into
``target/fault-file-system/fault-file-system.jar``); the input files stay on the local file
system, untouched by faults.

Each variant runs, each run in a Python process and driver JVM of its own:

- once fault-free: the rules file's ``random 1.0 SEED stall=0 REGEX`` makes every operation on
  the checkpoint a fault of kind "stall of 0 ms", which does nothing but is logged, so the log
  counts the file system operations of each batch; its wall time is the fault-free time;
- once per share (``--shares``, default 0.01,0.05): ``random SHARE SEED before,after REGEX``
  fails that share of every operation on the checkpoint (create, close, rename, delete,
  listStatus, open, mkdirs, getFileStatus), before it acts or after it acted with its answer
  lost.

One input file is fed at a time (hard-linked into the source folder once the batch before it
committed), and ``processAllAvailable()`` waits for its batch. Whenever the query dies it is
started again on its checkpoint in the same application, up to ``--max-restarts`` (100)
times; a run that reaches the cap before its last batch commits is reported as "no
progress" (``--max-idle-restarts N`` also gives up after N restarts in a row without a
committed batch). Then, faults disarmed, the state (``spark.read.format("statestore")``) is
compared key by key (count and sum) with the batch computation over the committed batches'
input files; "batches lost" is the committed batches minus the batches' worth of rows the
state holds (every batch holds each key rows/keys times).

    .venv/bin/python benchmarks/faults.py                        # about 15 minutes on 2 cores
    .venv/bin/python benchmarks/faults.py --variants hdfs,heap-fs --shares 0.01 --batches 5

Prints a line per committed batch and per restart (the fault that stopped the query, or the
error when no fault did), then a markdown table; writes ``target/benchmarks/faults-<time>.json``
(every run's batches, restarts and their causes, faults by operation, the check) and ``.md``.
A benchmark, never a test.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import traceback
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from child_process import emit, feed, run_with_events  # noqa: E402
import variants as variants_mod  # noqa: E402
from workloads import INPUT_FORMAT, Workload, write_inputs  # noqa: E402

#: The fault-injecting file system (jvm/src/test/java/io/sparkcheckpointstorage/faults).
FAULT_JAR = os.path.join(ROOT, "target", "fault-file-system", "fault-file-system.jar")
FAULT_PACKAGE = "io.sparkcheckpointstorage.faults"
DEFAULT_VARIANTS = "hdfs,rocksdb-changelog,heap-fs,heap-driver"
#: The anchor of the ratios: Spark's default provider on Spark's file manager.
ANCHOR = "hdfs"
OUT = os.path.join(ROOT, "target", "benchmarks")


# -- the fault-injecting file system -------------------------------------------------------

def faulty_uri(local_path: str) -> str:
    """``local_path`` on the fault-injecting file system (``faulty:///tmp/x`` is ``/tmp/x``)."""
    return "faulty://" + os.path.abspath(local_path)


def fault_conf(folder: str) -> Dict[str, str]:
    """The session settings that register the ``faulty:`` file system, its rules file, the
    folder where counted rules claim their firings, and the log of every fault injected."""
    return {
        "spark.driver.extraClassPath": FAULT_JAR,
        "spark.executor.extraClassPath": FAULT_JAR,
        "spark.hadoop.fs.faulty.impl": FAULT_PACKAGE + ".FaultInjectingFileSystem",
        "spark.hadoop.fs.faulty.impl.disable.cache": "true",
        "spark.hadoop.fs.AbstractFileSystem.faulty.impl": FAULT_PACKAGE + ".FaultInjectingFs",
        "spark.hadoop.fs.faulty.rules.file": os.path.join(folder, "rules"),
        "spark.hadoop.fs.faulty.state.dir": os.path.join(folder, "fired"),
        "spark.hadoop.fs.faulty.log": os.path.join(folder, "injected.log"),
    }


def write_rules(folder: str, *rules: str) -> None:
    """Replaces the rules (the file system reads the file again whenever it changes)."""
    path = os.path.join(folder, "rules")
    with open(path + ".tmp", "w") as f:
        f.write("".join(r + "\n" for r in rules))
    os.replace(path + ".tmp", path)


def log_lines(folder: str, under: str) -> List[Tuple[str, str, str]]:
    """The faults logged on paths under ``under``: (op, kind, path)."""
    path = os.path.join(folder, "injected.log")
    if not os.path.exists(path):
        return []
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t", 2)
            if len(parts) == 3 and (parts[2] == under or parts[2].startswith(under + "/")):
                out.append((parts[0], parts[1], parts[2]))
    return out


def count_lines(path: str) -> int:
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        return f.read().count(b"\n")


# -- the child: one variant and share in this process and its driver JVM ---------------------

def committed_batches(checkpoint_dir: str) -> int:
    """Batches committed: the highest batch id in the commit log, plus one."""
    try:
        ids = [int(n) for n in os.listdir(os.path.join(checkpoint_dir, "commits")) if n.isdigit()]
    except FileNotFoundError:
        return 0
    return max(ids) + 1 if ids else 0


def first_line(e: BaseException) -> str:
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    return (lines[0] if lines else type(e).__name__)[:300]


INJECTED = re.compile(r"Injected fault: (\w+) of (\S+) failed (before acting|after acting)")


def cause_of(e: BaseException) -> Dict[str, str]:
    """What stopped the query: the injected fault named in the exception or its JVM stack
    trace (``op kind path``), else the error's condition or first line (a failure that no
    fault of this restart caused, e.g. a file an earlier fault left behind)."""
    text = str(e) + "\n" + str(getattr(e, "_stackTrace", "") or "")
    m = INJECTED.search(text)
    if m:
        return {"fault": "%s %s" % (m.group(1), m.group(3).split()[0]), "path": m.group(2),
                "error": first_line(e)}
    condition = None
    try:
        condition = e.getCondition()  # pyspark's captured exceptions
    except Exception:  # noqa: BLE001
        pass
    inner = re.search(r"\[([A-Z_]+(?:\.[A-Z_]+)?)\]", str(e)[40:]) if condition == "STREAM_FAILED" else None
    return {"fault": None, "condition": inner.group(1) if inner else condition, "error": first_line(e)}


def child(params_file: str) -> int:
    with open(params_file) as f:
        p = json.load(f)
    run_dir, share, n = p["run_dir"], p["share"], p["batches"]
    inputs: List[str] = p["inputs"][:n]
    faults_dir = os.path.join(run_dir, "faults")
    source = os.path.join(run_dir, "source")
    checkpoint_dir = os.path.join(run_dir, "checkpoint")
    checkpoint = faulty_uri(checkpoint_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(source)
    os.makedirs(faults_dir)
    write_rules(faults_dir)
    log_file = os.path.join(faults_dir, "injected.log")

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    builder = (SparkSession.builder.master("local[2]")
               .appName("faults %s %s" % (p["variant"], share))
               .config("spark.sql.shuffle.partitions", str(p["partitions"]))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    for k, v in list(p["conf"].items()) + list(fault_conf(faults_dir).items()):
        builder = builder.config(k, v.replace("{checkpoint}", checkpoint).replace("{run_dir}", run_dir))
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    emit(event="jvm", spark_version=spark.version,
         provider=spark.conf.get(variants_mod.PROVIDER, None),
         file_manager=spark.conf.get(variants_mod.FILE_MANAGER, None))

    def start():
        stream = (spark.readStream.schema("key long, amount long")
                  .option("maxFilesPerTrigger", 1).parquet(source))
        return (stream.groupBy("key").agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
                .writeStream.outputMode("update").format("noop")
                .option("checkpointLocation", checkpoint)
                .queryName("faults_" + re.sub(r"\W", "_", p["variant"])).start())

    # Every operation on the checkpoint folder (its logs, state files and packs, temporary
    # files included) and on the folder itself; the path is the URI's path.
    regex = "%s(/.*)?" % re.escape(os.path.abspath(checkpoint_dir))
    if share == 0:
        write_rules(faults_dir, "random 1.0 %d stall=0 %s" % (p["seed"], regex))
    else:
        write_rules(faults_dir, "random %s %d before,after %s" % (share, p["seed"], regex))

    query = None
    restarts, errors = 0, []
    committed = idle = 0  # idle: restarts since the last batch committed
    status = "finished"
    batch_ops: List[int] = []
    t0 = time.perf_counter()
    batch_t0, ops0 = t0, 0
    try:
        while committed < n:
            feed(inputs[committed], source)
            try:
                if query is None:
                    query = start()
                query.processAllAvailable()
            except Exception as e:  # noqa: BLE001 - the query died (or failed to start)
                cause = cause_of(e)
                errors.append(cause)
                try:
                    if query is not None:
                        query.stop()
                except Exception:  # noqa: BLE001
                    pass
                query = None
                now_committed = committed_batches(checkpoint_dir)
                idle = idle + 1 if now_committed == committed else 1
                what = ("%s of %s" % (cause["fault"], cause["path"]) if cause["fault"]
                        else "not a fault: %s" % (cause.get("condition") or cause["error"]))
                if restarts >= p["max_restarts"] or 0 < p["max_idle_restarts"] < idle:
                    committed = now_committed
                    status = "no progress"
                    gave_up = ("%d restarts" % restarts if restarts >= p["max_restarts"]
                               else "%d restarts in a row without a batch" % (idle - 1))
                    emit(event="restart", restarts=restarts, committed=committed, error=what, gave_up=gave_up)
                    break
                restarts += 1
                emit(event="restart", restarts=restarts, committed=now_committed, error=what)
            now = committed_batches(checkpoint_dir)
            for b in range(committed, now):
                t = time.perf_counter()
                ops = count_lines(log_file)
                batch_ops.append(ops - ops0)
                emit(event="batch", batch=b + 1, total=n, restarts=restarts,
                     seconds=round(t - batch_t0, 3), ops=ops - ops0)
                batch_t0, ops0 = t, ops
            if now > committed:
                idle = 0
            committed = max(committed, now)
        wall = time.perf_counter() - t0
        if query is not None:
            query.stop()
            query = None
    except BaseException as e:  # noqa: BLE001 - reported, then the exit code says it failed
        emit(event="error", first_line=first_line(e), traceback=traceback.format_exc()[-4000:])
        return 2
    finally:
        # Disarmed: the check below reads the checkpoint without faults.
        write_rules(faults_dir)

    met = log_lines(faults_dir, os.path.abspath(checkpoint_dir))
    result = {"status": status, "committed": committed, "restarts": restarts, "wall_s": round(wall, 2),
              "deaths_without_fault": sum(1 for c in errors if not c["fault"]),
              "faults_met": len(met) if share else 0, "operations": len(met) if not share else None,
              "batch_ops": batch_ops if not share else None, "errors": errors}
    if share:
        by: Dict[str, int] = {}
        for op, kind, _ in met:
            by["%s %s" % (op, kind)] = by.get("%s %s" % (op, kind), 0) + 1
        result["faults_by_op"] = dict(sorted(by.items(), key=lambda kv: -kv[1]))
    result.update(check(spark, F, checkpoint, inputs[:committed], p["rows"]))
    emit(event="done", **result)
    spark.stop()
    return 0


def check(spark, F, checkpoint: str, files: List[str], rows_per_batch: int) -> Dict:
    """The state against the batch computation over ``files`` (the committed batches' input):
    every key's count and sum; the committed batches whose input the state does not hold."""
    if not files:
        return {"exact": None, "batches_lost": None, "check": "no batch committed"}
    expected = {r[0]: (r[1], r[2]) for r in spark.read.parquet(*files).groupBy("key")
                .agg(F.count("*"), F.sum("amount")).collect()}
    try:
        rows = spark.read.format("statestore").load(checkpoint).collect()
    except Exception as e:  # noqa: BLE001 - reported as a result
        return {"exact": False, "batches_lost": None, "check": "state unreadable: " + first_line(e)}
    got = {r.key[0]: (r.value[0], r.value[1]) for r in rows}
    wrong = sorted(k for k in set(expected) | set(got) if expected.get(k) != got.get(k))
    rows_in_state = sum(c for c, _ in got.values())
    # Every batch holds the same number of rows: what the state holds in batches.
    reflected = rows_in_state / rows_per_batch
    return {"exact": not wrong, "keys_wrong": len(wrong), "keys_expected": len(expected), "keys_in_state": len(got),
            "rows_in_state": rows_in_state, "rows_expected": rows_per_batch * len(files),
            "batches_lost": round(len(files) - reflected, 2), "check": "ok"}


# -- the parent -------------------------------------------------------------------------------

def pct(share: float) -> str:
    return "fault-free" if not share else ("%g%%" % (share * 100))


def run_child(args, variant: str, conf: Dict[str, str], share: float, inputs: List[str]) -> Dict:
    """One variant at one share, in a fresh Python process and driver JVM; never raises."""
    tag = "[faults] %s %s" % (variant, pct(share))
    name = "%s-%s" % (variant, "0" if not share else ("%g" % share))
    run_dir = os.path.join(args.workdir, "runs", name)
    params_file = os.path.join(args.workdir, "runs", name + ".params.json")
    log_file = os.path.join(args.workdir, "logs", name + ".log")
    os.makedirs(os.path.dirname(log_file), exist_ok=True)
    os.makedirs(os.path.dirname(params_file), exist_ok=True)
    with open(params_file, "w") as f:
        json.dump({"variant": variant, "conf": conf, "share": share, "seed": args.seed, "run_dir": run_dir,
                   "inputs": inputs, "batches": args.batches, "rows": args.rows,
                   "partitions": args.partitions, "max_restarts": args.max_restarts,
                   "max_idle_restarts": args.max_idle_restarts}, f, indent=1)
    result: Dict = {"variant": variant, "share": share, "status": "failed", "log": os.path.relpath(log_file, ROOT),
                    "checkpoint": os.path.relpath(os.path.join(run_dir, "checkpoint"), ROOT), "batches": []}
    started = time.time()

    def on_event(kind: str, e: Dict) -> None:
        if kind == "jvm":
            result["spark"] = e["spark_version"]
        elif kind == "batch":
            result["batches"].append(e)
            print("%s: batch %d/%d, restarts %d (%.1f s%s)" % (
                tag, e["batch"], e["total"], e["restarts"], e["seconds"],
                ", %d operations" % e["ops"] if not share else ""), flush=True)
        elif kind == "restart":
            print("%s: batch %d/%d, restarts %d%s: %s" % (
                tag, e["committed"], args.batches, e["restarts"],
                " (no progress: %s)" % e["gave_up"] if e.get("gave_up") else "", e["error"][:200]), flush=True)
        elif kind == "error":
            result["error"] = e["first_line"]
            result["traceback"] = e["traceback"]
        elif kind == "done":
            result.update(e)

    with open(log_file, "w") as log:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", params_file]
        rc, timed_out = run_with_events(cmd, log, ROOT, started + args.timeout, on_event, log.write)
    result["elapsed_s"] = round(time.time() - started, 1)
    if timed_out:
        result["status"] = "timeout"
        result["error"] = "killed after %d s (--timeout)" % args.timeout
    elif rc != 0 and result["status"] in ("finished", "no progress"):
        result["status"] = "failed"
    if result["status"] not in ("finished", "no progress"):
        if "error" not in result:
            result["error"] = "exit code %d" % rc
        print("%s: %s: %s (log %s)" % (tag, result["status"], result["error"], result["log"]), flush=True)
    else:
        print("%s: %s, %d/%d batches, %d restarts, %s faults, exact %s, %.1f s" % (
            tag, result["status"], result["committed"], args.batches, result["restarts"],
            result["faults_met"] if share else "no", yes_no(result.get("exact")), result["wall_s"]), flush=True)
    return result


def yes_no(v) -> str:
    return "-" if v is None else ("yes" if v else "no")


def ops_per_batch(base: Optional[Dict]) -> Optional[float]:
    """Operations a batch makes, fault-free: the mean over the batches after the first (which
    also starts the query)."""
    if not base or not base.get("batch_ops"):
        return None
    ops = base["batch_ops"][1:] or base["batch_ops"]
    return sum(ops) / len(ops)


def summarize(results: List[Dict], variants: Dict[str, Dict], args) -> Tuple[List[Dict], str]:
    """One row per variant and share (the fault-free run too), and the markdown table."""
    base = {r["variant"]: r for r in results if not r["share"]}
    rows: List[Dict] = []
    for r in results:
        ok = r["status"] in ("finished", "no progress")
        b = base.get(r["variant"])
        row = {"variant": r["variant"], "label": variants[r["variant"]]["label"], "share": r["share"],
               "status": r["status"], "committed": r.get("committed"), "restarts": r.get("restarts"),
               "deaths_without_fault": r.get("deaths_without_fault"),
               "faults_met": r.get("faults_met") if r["share"] else 0,
               "ops_per_batch": ops_per_batch(b), "exact": r.get("exact"),
               "batches_lost": r.get("batches_lost"), "wall_s": r.get("wall_s") if ok else None,
               "fault_free_wall_s": b.get("wall_s") if b and b["status"] == "finished" else None}
        row["restarts_per_100"] = (100.0 * r["restarts"] / r["committed"]) if ok and r.get("committed") else None
        if ok and r["share"] and r["status"] == "finished" and row["fault_free_wall_s"] and row["faults_met"]:
            row["extra_s_per_fault"] = (r["wall_s"] - row["fault_free_wall_s"]) / row["faults_met"]
        else:
            row["extra_s_per_fault"] = None
        rows.append(row)
    anchor = {row["share"]: row for row in rows if row["variant"] == ANCHOR}
    for row in rows:
        a = anchor.get(row["share"])
        row["restarts_vs_hdfs"] = None
        row["ops_vs_hdfs"] = None
        if a and row["ops_per_batch"] is not None and a["ops_per_batch"]:
            row["ops_vs_hdfs"] = row["ops_per_batch"] / a["ops_per_batch"]
        if a and row["share"] and row["restarts_per_100"] is not None and a["restarts_per_100"]:
            row["restarts_vs_hdfs"] = row["restarts_per_100"] / a["restarts_per_100"]
    order = {n: i for i, n in enumerate(args.variant_names)}
    rows.sort(key=lambda row: (row["share"], order.get(row["variant"], 99)))

    def f(v, fmt):
        return "-" if v is None else fmt % v

    lines = ["| variant | faults | batches committed | restarts | restarts per 100 batches | faults met | "
             "deaths without a fault | operations per batch | batches lost | exact | wall time | "
             "extra s per fault | restarts / HDFSBacked's | operations / HDFSBacked's |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        result = {"finished": "%d/%d" % (row["committed"] or 0, args.batches),
                  "no progress": "%d/%d: no progress" % (row["committed"] or 0, args.batches)
                  }.get(row["status"], row["status"])
        anchor_row = anchor.get(row["share"])
        if row["share"] and row["restarts_vs_hdfs"] is None and row["variant"] != ANCHOR and anchor_row \
                and anchor_row["status"] == "no progress":
            vs = "(HDFSBacked: no progress)"
        else:
            vs = f(row["restarts_vs_hdfs"], "%.2fx") if row["share"] else ""
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["label"], pct(row["share"]), result, f(row["restarts"], "%d") if row["share"] else "",
            f(row["restarts_per_100"], "%.0f") if row["share"] else "",
            row["faults_met"] if row["share"] else "",
            f(row["deaths_without_fault"], "%d") if row["share"] else "", f(row["ops_per_batch"], "%.1f"),
            f(row["batches_lost"], "%g"), yes_no(row["exact"]), f(row["wall_s"], "%.1f s"),
            f(row["extra_s_per_fault"], "%.2f") if row["share"] else "", vs, f(row["ops_vs_hdfs"], "%.2fx")))
    return rows, "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", metavar="PARAMS.json", help=argparse.SUPPRESS)
    parser.add_argument("--variants", "--providers", dest="variants", default=DEFAULT_VARIANTS,
                        help="comma-separated variants of benchmarks/variants.py (default %s)" % DEFAULT_VARIANTS)
    parser.add_argument("--shares", default="0.01,0.05", help="shares of operations that fail (default 0.01,0.05)")
    parser.add_argument("--partitions", type=int, default=8,
                        help="state partitions (default 8, W2's; W1 has 200)")
    parser.add_argument("--batches", type=int, default=20, help="batches of a run (default 20)")
    parser.add_argument("--rows", type=int, default=2000, help="rows per batch (default 2,000)")
    parser.add_argument("--keys", type=int, default=1000, help="keys (default 1,000; every batch holds each "
                        "key rows/keys times)")
    parser.add_argument("--seed", type=int, default=10, help="the fault plan's seed (default 10)")
    parser.add_argument("--max-restarts", type=int, default=100,
                        help="restarts of a run before it counts as no progress (default 100)")
    parser.add_argument("--max-idle-restarts", type=int, default=0,
                        help="restarts in a row without a committed batch before a run counts as no "
                        "progress (default 0: no such limit, only --max-restarts)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run before it is killed (default 900)")
    parser.add_argument("--workdir", default=os.path.join(OUT, "faults-work"),
                        help="inputs, checkpoints, fault logs, Spark logs (default target/benchmarks/faults-work)")
    parser.add_argument("--out", default=OUT, help="where results go (default target/benchmarks)")
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child)
    if not os.path.isfile(FAULT_JAR):
        sys.exit("%s is missing: dev/build-jar builds it" % FAULT_JAR)
    try:
        shares = [float(s) for s in args.shares.split(",") if s.strip()]
    except ValueError:
        parser.error("--shares: comma-separated numbers between 0 and 1")
    if any(not 0 < s < 1 for s in shares):
        parser.error("--shares: each share between 0 and 1 (exclusive)")
    if args.rows % args.keys:
        parser.error("--rows must be a multiple of --keys (every batch holds each key as often)")
    args.variant_names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in args.variant_names if n not in variants_mod.VARIANTS
               or variants_mod.VARIANTS[n].get("reference")]
    if unknown:
        parser.error("unknown variant(s) %s" % ", ".join(unknown))
    args.workdir = os.path.abspath(args.workdir)
    variants = {n: variants_mod.VARIANTS[n] for n in args.variant_names}

    w = Workload("W10", args.partitions, args.keys, args.batches, args.rows, custom=True)
    inputs = write_inputs(w, os.path.join(args.workdir, "inputs", "k%d-b%d-r%d-v%d" % (
        args.keys, args.batches, args.rows, INPUT_FORMAT)))
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:
        load = None
    host = {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "load_at_start": load}
    try:
        host["git_head"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                          text=True).stdout.strip()
    except OSError:
        pass
    print("W10 (storage faults): variants %s; shares %s; %d partitions, %d batches x %d rows over %d keys; "
          "up to %d restarts a run; seed %d; %d cores, load average %s" % (
              ", ".join(args.variant_names), ", ".join(pct(s) for s in shares), args.partitions, args.batches,
              args.rows, args.keys, args.max_restarts, args.seed, host["cores"], load), flush=True)
    results: List[Dict] = []
    t_start = time.time()
    try:
        for name in args.variant_names:
            for share in [0.0] + shares:
                results.append(run_child(args, name, variants[name]["conf"], share, inputs))
    except KeyboardInterrupt:
        print("\ninterrupted: reporting what was measured", flush=True)
    if not results:
        return 1
    rows, table = summarize(results, variants, args)
    try:
        host["load_at_end"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "faults-%s" % stamp)
    doc = {"benchmark": "W10", "started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
           "command": sys.argv, "host": host, "elapsed_s": round(time.time() - t_start, 1),
           "shape": {"partitions": args.partitions, "batches": args.batches, "rows": args.rows, "keys": args.keys},
           "shares": shares, "seed": args.seed, "max_restarts": args.max_restarts,
           "max_idle_restarts": args.max_idle_restarts,
           "variants": variants, "results": results, "summary": rows}
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1, default=str)
    header = ("W10 storage faults, %s, %d cores, load average %s-%s; `%s`\n\n"
              % (started, host["cores"] or 0, host["load_at_start"], host.get("load_at_end"),
                 " ".join(["benchmarks/faults.py"] + sys.argv[1:])))
    with open(base + ".md", "w") as f:
        f.write(header + table)
    print("\n" + table, flush=True)
    print("%d runs in %.1f minutes" % (len(results), doc["elapsed_s"] / 60), flush=True)
    print("written: %s.json, %s.md" % (os.path.relpath(base, ROOT), os.path.relpath(base, ROOT)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
