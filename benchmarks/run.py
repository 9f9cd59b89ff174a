"""
The benchmarks of docs/benchmarks.md: one workload run with Spark's built-in state store
providers and ours, side by side in one run, each provider in its own fresh Python process
and driver JVM (local[2], default 1 GiB heap).

    .venv/bin/python benchmarks/run.py --workload W2
    .venv/bin/python benchmarks/run.py --workload W1 --providers hdfs,rocksdb-changelog,heap-fs
    .venv/bin/python benchmarks/run.py --workload W3 --keys 100k,1M,3M
    .venv/bin/python benchmarks/run.py --workload W2 --quick            # smoke test, ~10x smaller
    .venv/bin/python benchmarks/run.py --workload W2 --providers hdfs,big \\
        --variant big=heap-fs:spark.sql.streaming.checkpointStorage.fileStateSizeThreshold=1m

Results: per-batch lines while running, then a summary (means, ratios against the best
built-in of the same run, targets PASS/MISS); benchmarks/results/<label>-<time>.json,
.md and .png. See benchmarks/README.md.
"""
import argparse
import json
import os
import platform
import re
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from child_process import run_with_events  # noqa: E402
from remote_servers import realfs as remote_fs  # noqa: E402
import report  # noqa: E402
import variants as variants_mod  # noqa: E402
from workloads import W3_KEYS, Workload, input_dir, parse_count, workload, write_inputs  # noqa: E402

OOM_MARKERS = ("OutOfMemoryError", "Java heap space", "GC overhead limit exceeded")


def _load() -> Optional[float]:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _fmt_s(ms) -> str:
    return "-" if ms is None else "%.2f s" % (ms / 1000)


def _first_cause(text: str) -> Optional[str]:
    """The root cause of a JVM stack trace: its last 'Caused by:' line, else its first exception line."""
    causes = re.findall(r"Caused by: ([^\n]+)", text)
    if causes:
        return causes[-1].strip()[:300]
    m = re.search(r"^\s*((?:[a-z]\w*\.)+\w*(?:Exception|Error)\b[^\n]*)", text, re.M)
    return m.group(1).strip()[:300] if m else None


def _progress_line(tag: str, b: Dict) -> str:
    what = "batch %d/%d%s" % (b["batch"] + 1, b["total"], " (preload)" if b.get("preload") else "")
    packs = " (%d of them packs)" % b["pack_files"] if b["pack_files"] else ""
    line = ("[%s] %s: %s, addBatch %s, commit %s, %d state files%s, %d rows, mem %.1f MB, GC %d ms"
            % (tag, what, _fmt_s(b["ms"]), _fmt_s(b["addBatch_ms"]), _fmt_s(b["commitTimeMs"]),
               b["state_files"] + b["pack_files"], packs, b["numRowsTotal"], b["memoryUsedBytes"] / 1e6, b["gc_ms"]))
    if b.get("requests"):
        line += "; requests: " + ", ".join("%s %d" % (k, v) for k, v in sorted(b["requests"].items()) if v)
        line += "; %d objects created" % b.get("objects_created", 0)
    elif b.get("namenode"):
        line += "; namenode: %d RPCs, %d files created" % (b["namenode"].get("rpc", 0),
                                                           b["namenode"].get("files_created", 0))
    return line


def _run_child(params_file: str, log_file: str, mode: str, deadline: float,
               on_event: Callable[[str, Dict], None]) -> Tuple[int, bool]:
    """Runs measure.py on ``params_file`` and hands each of its events to ``on_event``;
    returns (exit code, timed out). Spark's output goes to ``log_file`` (opened with ``mode``)."""
    cmd = [sys.executable, os.path.join(HERE, "measure.py"), params_file]
    other: List[str] = []
    with open(log_file, mode) as log:
        rc, timed_out = run_with_events(cmd, log, os.path.dirname(HERE), deadline, on_event, other.append)
        if other:
            log.write("\n--- child stdout ---\n" + "".join(other))
    return rc, timed_out


def run_variant(args, name: str, variant: Dict, w: Workload, inputs: List[str], extra_conf: Dict,
                remote: Optional[Dict] = None) -> Dict:
    """Runs one variant in a fresh Python process (and so a fresh driver JVM); never raises."""
    tag = "%s %s" % (w.label, name)
    run_dir = os.path.join(args.workdir, "runs", "%s-%s" % (w.label, name))
    logs = os.path.join(args.workdir, "logs")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    params_file = os.path.join(args.workdir, "runs", "%s-%s.params.json" % (w.label, name))
    log_file = os.path.join(logs, "%s-%s.log" % (w.label, name))
    with open(params_file, "w") as f:
        json.dump({"workload": w.as_dict(), "variant": dict(variant, name=name), "inputs": inputs,
                   "run_dir": run_dir, "extra_conf": extra_conf, "remote": remote,
                   "heap_warmup": not args.no_heap_warmup, "profile": args.profile}, f, indent=1)
    result: Dict = {"variant": name, "label": variant["label"], "builtin": variant["builtin"],
                    # "stateful" (the floor provider), "stateless" (no state store), or False
                    "reference": variant.get("reference") or False,
                    "conf": variant["conf"], "workload": w.as_dict(), "status": "ok", "batches": [],
                    "log": log_file, "load_before": _load()}
    started = time.time()
    deadline = started + args.timeout

    def on_event(kind: str, e: Dict) -> None:
        if kind == "jvm":
            result.setdefault("jvm", e)
            print("[%s] driver JVM pid %d, max heap %.0f MiB, Spark %s, provider %s"
                  % (tag, e["pid"], e["max_heap"] / 2**20, e["spark_version"],
                     e["conf"].get(variants_mod.PROVIDER)), flush=True)
        elif kind == "batch":
            result["batches"].append(e)
            print(_progress_line(tag, e), flush=True)
        elif kind == "heap":
            result["heap"] = e
            rss = (e["rss_after_preload"] - e["rss_before"]) / 1e6 if e.get("rss_before") else None
            print("[%s] heap: %.0f B/key after the preload, %.0f B/key after the updates (JVM used heap "
                  "growth), %.0f B/key (memoryUsedBytes), %s B/key freed on stop; driver RSS +%s MB; stores %s"
                  % (tag, e["jvm_heap_per_key"], e["jvm_heap_per_key_after_updates"], e["reported_per_key"],
                     "%.0f" % e["released_per_key"] if e.get("released_per_key") is not None else "-",
                     "%.0f" % rss if rss is not None else "-", e.get("unload")), flush=True)
        elif kind in ("restart", "restart_new_driver"):
            result[kind] = e
            print("[%s] %s: first batch %s (query start to batch done %s), commit %s, "
                  "%d rows, %d state files" % (tag, "restart" if kind == "restart" else "restart in a new driver",
                                               _fmt_s(e["ms"]), _fmt_s(e["start_to_done_ms"]),
                                               _fmt_s(e["commitTimeMs"]), e["numRowsTotal"],
                                               e["state_files"] + e["pack_files"]), flush=True)
        elif kind == "profile":
            result["profile"] = e
            print("[%s] profile: %d CPU samples over %d batches (%s)" % (tag, e["samples"], e["batches"], e["jfr"]),
                  flush=True)
        elif kind == "error":
            result["child_error"] = e
        elif kind == "done":
            result["done"] = True

    rc, timed_out = _run_child(params_file, log_file, "w", deadline, on_event)
    if w.restart and rc == 0 and not timed_out and result.get("done"):
        # The restart a production query sees after a redeploy or a driver failure: a new
        # driver JVM with no state store, local working copy or cache left from the run.
        with open(params_file) as f:
            params = json.load(f)
        params["phase"] = "new_driver_restart"
        restart_params = params_file.replace(".params.json", ".restart.params.json")
        with open(restart_params, "w") as f:
            json.dump(params, f, indent=1)
        result["done"] = False
        rc, timed_out = _run_child(restart_params, log_file, "a", deadline, on_event)
    result["returncode"] = rc
    result["elapsed_s"] = round(time.time() - started, 1)
    result["load_after"] = _load()
    with open(log_file, errors="replace") as f:
        log_text = f.read()
    err = result.get("child_error") or {}
    if timed_out:
        result["status"] = "timeout"
        result["error"] = "killed after %d s (--timeout)" % args.timeout
    elif rc != 0 or not result.get("done"):
        haystack = log_text + "\n" + err.get("message", "")
        result["status"] = "OOM" if any(m in haystack for m in OOM_MARKERS) or rc == 52 else "failed"
        first = err.get("first_line")
        if result["status"] == "OOM":
            first = next((l.strip() for l in haystack.splitlines() if any(m in l for m in OOM_MARKERS)), first)
        if not first:
            first = next((l.strip() for l in log_text.splitlines() if "Error" in l or "Exception" in l),
                         "exit code %s" % rc)
        result["error"] = first[:500]
        result["cause"] = _first_cause(err.get("message", "") + "\n" + log_text)
    if result["status"] != "ok":
        print("[%s] %s after %.0f s: %s" % (tag, result["status"], result["elapsed_s"], result["error"]), flush=True)
        if result.get("cause") and result["cause"] not in result["error"]:
            print("[%s]   cause: %s" % (tag, result["cause"]), flush=True)
        print("[%s]   log: %s" % (tag, log_file), flush=True)
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=["W1", "W2", "W3", "W4"])
    parser.add_argument("--checkpoint-fs", choices=["local", "hdfs", "s3a"], default=None,
                        help="where the checkpoints go: local (default; W4: s3a), hdfs (a "
                        "MiniDFSCluster) or s3a (SeaweedFS), both started on 127.0.0.1 for the run")
    parser.add_argument("--report", metavar="RESULTS.json",
                        help="print the summary of an earlier run's JSON again (nothing is run)")
    parser.add_argument("--providers", "--variants", dest="providers", default=None,
                        help="comma-separated variants, run in this order (default: %s; predefined: %s)"
                        % (",".join(variants_mod.DEFAULT), ", ".join(variants_mod.VARIANTS)))
    parser.add_argument("--variant", action="append", default=[], metavar="NAME[=BASE]:k=v,...",
                        help="define another variant (repeatable); name it in --providers to run it")
    parser.add_argument("--conf", action="append", default=[], metavar="k=v",
                        help="Spark setting for every variant's session (repeatable)")
    parser.add_argument("--keys", default=None,
                        help="W3: comma-separated K (e.g. 100k,1M,3M; default all three); W1/W2: key count")
    parser.add_argument("--quick", action="store_true", help="10x fewer keys and rows, 3 batches: a smoke test")
    parser.add_argument("--partitions", type=int, help="override the shuffle partitions (custom shape)")
    parser.add_argument("--batches", type=int, help="override the number of timed batches (custom shape)")
    parser.add_argument("--rows", type=int, help="override rows per batch (custom shape)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="leading batches left out of the means (default 1: query start / W3 preload)")
    parser.add_argument("--timeout", type=int, default=None,
                        help="seconds per variant run before it is killed (default 1800; W3 3600)")
    parser.add_argument("--workdir", default=os.path.join(HERE, "results", "work"),
                        help="inputs, checkpoints, logs (default benchmarks/results/work)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"), help="where results go")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="record the measured batches with the JDK Flight Recorder and print where "
                        "each variant's CPU time goes, per batch and per state task (benchmarks/batch_profile.py)")
    parser.add_argument("--no-heap-warmup", action="store_true",
                        help="W3: take the heap baseline without first running a one-batch warm-up query")
    args = parser.parse_args(argv)
    if args.report:
        with open(args.report) as f:
            doc = json.load(f)
        text, _, _ = report.summarize(doc["results"], doc.get("warmup", 1), doc["workload"])
        print(text)
        return 0
    if not args.workload:
        parser.error("--workload is required")
    args.workdir = os.path.abspath(args.workdir)
    if args.timeout is None:
        args.timeout = 3600 if args.workload == "W3" else 1800

    try:
        default = variants_mod.DEFAULT_BY_WORKLOAD.get(args.workload, variants_mod.DEFAULT)
        names = [n.strip() for n in (args.providers or ",".join(default)).split(",") if n.strip()]
        all_variants = variants_mod.resolve(names, args.variant)
        extra_conf: Dict[str, str] = {}
        for c in args.conf:
            extra_conf.update(variants_mod.parse_confs(c))
        if args.keys and args.workload == "W3":
            key_list = [parse_count(k) for k in args.keys.split(",")]
        elif args.keys:
            key_list = [parse_count(args.keys)]
        else:
            key_list = W3_KEYS if args.workload == "W3" else [None]
        shapes = [workload(args.workload, k, args.quick, args.partitions, args.batches, args.rows,
                           args.checkpoint_fs) for k in key_list]
    except ValueError as e:
        parser.error(str(e))
    if "spark.driver.memory" in extra_conf:
        print("WARNING: --conf spark.driver.memory changes the workloads' set-up (default 1 GiB heap)", flush=True)

    started = time.strftime("%Y-%m-%d %H:%M:%S")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    host = {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "load_at_start": _load()}
    try:
        with open("/proc/meminfo") as f:
            host["mem_total_kb"] = int(f.readline().split()[1])
    except OSError:
        pass
    print("%s benchmark, variants %s, one fresh driver JVM each; %d cores, load average %s"
          % (args.workload, ", ".join(names), host["cores"], host["load_at_start"]), flush=True)
    if host["load_at_start"] and host["cores"] and host["load_at_start"] > host["cores"]:
        print("WARNING: the machine is busy (load %.1f on %d cores): absolute times will be high; "
              "compare ratios within this run" % (host["load_at_start"], host["cores"]), flush=True)

    results: List[Dict] = []
    servers: Dict[str, object] = {}
    try:
        for w in shapes:
            print("\n" + w.describe(), flush=True)
            inputs = write_inputs(w, input_dir(args.workdir, w))
            remote = None
            if w.checkpoint_fs != "local":
                if w.checkpoint_fs not in servers:
                    servers[w.checkpoint_fs] = remote_fs.start(
                        w.checkpoint_fs, os.path.join(args.workdir, "servers", "%s-%s" % (w.checkpoint_fs, stamp)))
                    print("%s server up: %s" % (w.checkpoint_fs, servers[w.checkpoint_fs].uri), flush=True)
                remote = remote_fs.describe(servers[w.checkpoint_fs])
            for name in names:
                results.append(run_variant(args, name, all_variants[name], w, inputs, extra_conf, remote))
    except KeyboardInterrupt:
        print("\ninterrupted: reporting what was measured", flush=True)
    finally:
        for server in servers.values():
            server.stop()

    if not results:
        return 1
    os.makedirs(args.out, exist_ok=True)
    label = args.workload + ("-quick" if args.quick else "")
    base = os.path.join(args.out, "%s-%s" % (label, stamp))
    loads = [r.get("load_before") for r in results] + [r.get("load_after") for r in results]
    host["load_max_seen"] = max([l for l in loads if l is not None], default=None)
    doc = {"workload": args.workload, "quick": args.quick, "started": started,
           "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "command": sys.argv, "host": host,
           "warmup": args.warmup, "extra_conf": extra_conf,
           "variants": {n: all_variants[n] for n in names}, "results": results}

    def save():
        with open(base + ".json", "w") as f:
            json.dump(doc, f, indent=1, default=str)

    save()  # the measurements are kept even if the report below fails
    text, markdown, doc["summary"] = report.summarize(results, args.warmup, args.workload)
    save()
    print("\n" + text, flush=True)
    header = ("Benchmark %s, %s, %d cores, load average %s-%s; `%s`\n\n"
              % (label, started, host["cores"] or 0, host["load_at_start"], host["load_max_seen"],
                 " ".join(["benchmarks/run.py"] + sys.argv[1:])))
    with open(base + ".md", "w") as f:
        f.write(header + markdown)
    written = [base + ".json", base + ".md"]
    if not args.no_plot and report_plot(results, base + ".png", "%s (%s)" % (label, started)):
        written.append(base + ".png")
    print("\nwritten: " + ", ".join(os.path.relpath(p) for p in written), flush=True)
    if args.workload == "W4":
        line = report.headline(doc["summary"]["shapes"], results, args.warmup)
        doc["headline"] = line
        save()
        # The last line: FileSystemCheckpointStorage (heap-fs) against HDFSBacked.
        print(json.dumps(line if line else {"workload": "W4", "error": "heap-fs or hdfs did not run"}), flush=True)
    return 0


def report_plot(results: List[Dict], path: str, title: str) -> bool:
    try:
        import plot
        return plot.plot(results, path, title)
    except Exception as e:  # noqa: BLE001 - a plot is optional
        print("no plot: %s" % e, flush=True)
        return False


if __name__ == "__main__":
    sys.exit(main())
