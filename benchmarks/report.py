"""
Summary of a benchmark run: means per variant, ratios of ours against the built-ins measured
in the same run, and the workload's targets (PASS/MISS, docs/benchmarks.md), as text and as markdown.
"""
import statistics
from typing import Callable, Dict, List, Optional, Tuple

from variants import PROVIDER, ROCKSDB

#: S3 request types counted per batch (the server's own count), in table order. SeaweedFS
#: counts a HEAD as a GET (its type label is the same), so GET here is GET + HEAD.
REQUEST_TYPES = ["PUT", "GET", "LIST", "DELETE", "COPY"]
#: Namenode counters per batch (its JMX): (key, column title).
NAMENODE_FIELDS = [("rpc", "namenode RPCs"), ("files_created", "files created"), ("create", "creates"),
                   ("get_listing", "listings"), ("file_info", "file infos"), ("files_renamed", "renames"),
                   ("files_deleted", "deletes")]

#: The metrics compared as ratios: (key in stats, column title).
RATIO_METRICS = [("ms", "batch"), ("commit_ms", "commit"), ("files", "state files")]


def _mean(values: List[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def _median(values: List[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def stats(run: Dict, warmup: int) -> Dict:
    """Means over the steady batches (those after the first ``warmup``: query start, JIT, preload)."""
    batches = run.get("batches", [])
    steady = batches[warmup:]
    col = lambda key: [b[key] for b in steady if b.get(key) is not None]  # noqa: E731
    files = [b["state_files"] + b["pack_files"] for b in steady]
    last = batches[-1] if batches else {}
    heap, restart = run.get("heap") or {}, run.get("restart") or {}
    new_driver = run.get("restart_new_driver") or {}
    first = batches[0] if batches else {}
    remote: Dict = {}
    if any(b.get("requests") for b in steady):
        for t in REQUEST_TYPES + ["total"]:
            remote["req_" + t] = _mean([b["requests"].get(t, 0) for b in steady if b.get("requests") is not None])
        remote["objects_created"] = _mean(col("objects_created"))
    if any(b.get("namenode") for b in steady):
        for key, _ in NAMENODE_FIELDS:
            remote["nn_" + key] = _mean([b["namenode"].get(key, 0) for b in steady if b.get("namenode") is not None])
        remote["objects_created"] = _mean(col("objects_created"))
    return {
        **remote,
        "steady_batches": len(steady),
        "ms": _mean(col("ms")), "ms_median": _median(col("ms")), "ms_max": max(col("ms"), default=None),
        "addBatch_ms": _mean(col("addBatch_ms")),
        "commit_ms": _mean(col("commitTimeMs")), "commit_ms_median": _median(col("commitTimeMs")),
        # Our provider's own timers of the commit's two steps (absent for other providers).
        "delta_write_ms": _mean([b["customMetrics"]["heapStateDeltaWriteTimeMs"] for b in steady
                                 if "heapStateDeltaWriteTimeMs" in (b.get("customMetrics") or {})]),
        "apply_ms": _mean([b["customMetrics"]["heapStateApplyTimeMs"] for b in steady
                           if "heapStateApplyTimeMs" in (b.get("customMetrics") or {})]),
        "wall_ms": _mean(col("wall_ms")),
        "files": _mean(files), "state_files": _mean(col("state_files")), "pack_files": _mean(col("pack_files")),
        "gc_ms": _mean(col("gc_ms")),
        "first_ms": first.get("ms"),
        "numRowsTotal": last.get("numRowsTotal"), "memoryUsedBytes": last.get("memoryUsedBytes"),
        "files_total": last.get("files_total"),
        "preload_ms": first.get("ms") if first.get("preload") else None,
        "restart_ms": restart.get("ms"), "restart_wall_ms": restart.get("start_to_done_ms"),
        "restart_commit_ms": restart.get("commitTimeMs"),
        "restart_new_driver_ms": new_driver.get("ms"),
        "restart_new_driver_wall_ms": new_driver.get("start_to_done_ms"),
        "jvm_bytes_per_key": heap.get("jvm_heap_per_key"),
        "jvm_bytes_per_key_end": heap.get("jvm_heap_per_key_after_updates"),
        "reported_bytes_per_key": heap.get("reported_per_key"),
        "released_bytes_per_key": heap.get("released_per_key"),
        "rss_growth": (heap["rss_after_preload"] - heap["rss_before"])
        if heap.get("rss_after_preload") and heap.get("rss_before") else None,
    }


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _s(v: Optional[float]) -> str:
    return "-" if v is None else "%.2f s" % (v / 1000)


def _n(v: Optional[float], fmt: str = "%.1f") -> str:
    return "-" if v is None else fmt % v


def _x(v: Optional[float]) -> str:
    return "-" if v is None else "%.2fx" % v


def _mb(v: Optional[float]) -> str:
    return "-" if v is None else "%.1f MB" % (v / 1e6)


def _table(header: List[str], rows: List[List[str]]) -> Tuple[List[str], List[str]]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = lambda cells: "  ".join(str(c).ljust(n) for c, n in zip(cells, widths)).rstrip()  # noqa: E731
    text = [fmt(header), fmt(["-" * n for n in widths])] + [fmt(r) for r in rows]
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
         ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return text, md


class Shape:
    """The runs of one workload shape (W1, W2, or one K of W3) and their statistics."""

    def __init__(self, runs: List[Dict], warmup: int):
        self.runs = runs
        self.w = runs[0]["workload"]
        self.ok = {r["variant"]: r for r in runs if r["status"] == "ok"}
        self.stats = {name: stats(r, warmup) for name, r in self.ok.items()}
        self.builtins = [n for n in self.ok if self.ok[n]["builtin"]]
        self.ours = [r["variant"] for r in runs if not r["builtin"] and not r.get("reference")]
        self.references = [n for n in self.ok if self.ok[n].get("reference")]

    def best(self, field: str, names: Optional[List[str]] = None) -> Tuple[Optional[float], Optional[str]]:
        cands = [(self.stats[n][field], n) for n in (self.builtins if names is None else names)
                 if n in self.stats and self.stats[n][field] is not None]
        return min(cands) if cands else (None, None)

    def rocksdb(self) -> List[str]:
        return [n for n in self.builtins if self.ok[n]["conf"].get(PROVIDER) == ROCKSDB]


def summarize(results: List[Dict], warmup: int, workload_name: str) -> Tuple[str, str, Dict]:
    """Text for the terminal, markdown for results/*.md, and the computed summary for the JSON."""
    text: List[str] = []
    md: List[str] = []
    summary: Dict = {"shapes": {}, "targets": []}
    labels = []
    for r in results:
        if r["workload"]["label"] not in labels:
            labels.append(r["workload"]["label"])
    shapes = {lab: Shape([r for r in results if r["workload"]["label"] == lab], warmup) for lab in labels}

    for lab, sh in shapes.items():
        w = sh.w
        text += ["", "=" * 100, _describe(w)]
        md += ["", "### " + _describe(w), ""]
        note = ("means over batches %d-%d (left out: %s); commit and the other operator times are "
                "sums over the %d state store tasks; state files = new files under checkpoint "
                "state/ + state-packs/ per batch, .crc included"
                % (warmup + 1, w["total_batches"],
                   "batch 1, the preload" if w["preload"] and warmup == 1 else
                   "batch 1: query start, JIT warm-up" if warmup == 1 else
                   "batches 1-%d: query start, JIT warm-up%s" % (warmup, ", preload" if w["preload"] else ""),
                   w["partitions"]))
        text.append(note + "; load = the machine's 1-minute load average before and after the variant's run")
        md += ["_" + note + "; load = 1-minute load average before-after the run_", ""]
        header = ["variant", "status", "batch", "p50", "addBatch", "commit", "files/batch", "packs/batch",
                  "GC/batch", "rows", "memoryUsed"]
        if w["preload"]:
            header += ["preload", "restart", "restart wall", "new driver", "new driver wall", "B/key heap",
                       "B/key heap end", "B/key reported",
                       "B/key released"]
        else:
            header += ["batch 1"]
        header += ["load"]
        rows, failures = [], []
        for r in sh.runs:
            name = r["variant"]
            if r["status"] != "ok":
                rows.append([name, r["status"]] + ["-"] * (len(header) - 2))
                failures.append("%s %s: %s%s" % (name, r["status"], r.get("error") or "",
                                                 ("\n    cause: " + r["cause"]) if r.get("cause")
                                                 and r["cause"] not in (r.get("error") or "") else ""))
                continue
            s = sh.stats[name]
            row = [name, "ok", _s(s["ms"]), _s(s["ms_median"]), _s(s["addBatch_ms"]), _s(s["commit_ms"]),
                   _n(s["files"]), _n(s["pack_files"]), _n(s["gc_ms"], "%.0f ms"), _n(s["numRowsTotal"], "%d"),
                   _mb(s["memoryUsedBytes"])]
            if w["preload"]:
                row += [_s(s["preload_ms"]), _s(s["restart_ms"]), _s(s["restart_wall_ms"]),
                        _s(s["restart_new_driver_ms"]), _s(s["restart_new_driver_wall_ms"]),
                        _n(s["jvm_bytes_per_key"], "%.0f"), _n(s["jvm_bytes_per_key_end"], "%.0f"),
                        _n(s["reported_bytes_per_key"], "%.0f"), _n(s["released_bytes_per_key"], "%.0f")]
            else:
                row += [_s(s["first_ms"])]
            row += ["%s-%s" % (r.get("load_before"), r.get("load_after"))]
            rows.append(row)
        t, m = _table(header, rows)
        text += t
        md += m
        if failures:
            text += ["  " + f for f in failures]
            md += [""] + ["- " + f.replace("\n    ", " ") for f in failures]
        if w["preload"]:
            note = ("B/key heap: driver JVM used heap (after System.gc()) after the preload minus "
                    "before the query started (after a one-batch warm-up query), / K; heap end: "
                    "the same after the last update batch; reported: memoryUsedBytes after the "
                    "preload / K; released: heap freed by stopping the query and closing its "
                    "stores, / K. RocksDB keeps its state off-heap (not in these figures). Below "
                    "~1M keys, a few MB of other heap churn moves these by tens of bytes per key.")
            text.append(note)
            md += ["", "_" + note + "_"]
        t, m = _remote_table(sh)
        if t:
            text += [""] + t
            md += [""] + m
        # Ratios: ours against the built-ins of this shape.
        summary["shapes"][lab] = {"stats": sh.stats, "ratios": {}}
        if sh.ours and sh.builtins:
            header = ["ours", "against"] + [title for _, title in RATIO_METRICS]
            if w["preload"]:
                header += ["restart", "new driver restart"]
            rows = []
            for ours in sh.ours:
                if ours not in sh.stats:
                    rows.append([ours, "(%s)" % next(r["status"] for r in sh.runs if r["variant"] == ours)]
                                + ["-"] * (len(header) - 2))
                    continue
                s = sh.stats[ours]
                fields = [f for f, _ in RATIO_METRICS] + (["restart_ms", "restart_new_driver_ms"]
                                                          if w["preload"] else [])
                against: List[Tuple[str, Callable[[str], Tuple[Optional[float], Optional[str]]]]] = [
                    ("best built-in", lambda f: sh.best(f))]
                against += [(b, (lambda b: lambda f: (sh.stats[b][f], b))(b)) for b in sh.builtins]
                ratios = {}
                for what, fn in against:
                    cells, rr = [], {}
                    for f in fields:
                        v, who = fn(f)
                        x = _ratio(s[f], v)
                        rr[f] = {"ratio": x, "against": who}
                        cells.append(_x(x) + (" (%s)" % who if what == "best built-in" and who else ""))
                    ratios[what] = rr
                    rows.append([ours, what] + cells)
                summary["shapes"][lab]["ratios"][ours] = ratios
            t, m = _table(header, rows)
            text += ["", "ratios, ours / built-in (same run; < 1 is better):"] + t
            md += ["", "Ratios, ours / built-in (same run; < 1 is better):", ""] + m
        elif not sh.ours:
            text += ["", "no variant of ours in this run: ratios against hdfs instead"]
            if "hdfs" in sh.stats:
                header = ["variant"] + ["%s / hdfs" % t for _, t in RATIO_METRICS]
                rows = [[n] + [_x(_ratio(sh.stats[n][f], sh.stats["hdfs"][f])) for f, _ in RATIO_METRICS]
                        for n in sh.stats]
                t, m = _table(header, rows)
                text += t
                md += ["", "Ratios against hdfs:", ""] + m
        t, m = _floor_table(sh, summary["shapes"][lab])
        text += t
        md += m
        t, m = _commit_steps_table(sh)
        text += t
        md += m
        profiles = {r["variant"]: r["profile"] for r in sh.runs if r.get("profile")}
        if profiles:
            import batch_profile
            t = batch_profile.table(profiles)
            what = "where the CPU time of the measured batches goes (JFR samples; ms per batch, ms per state task):"
            text += ["", what] + t
            md += ["", what[0].upper() + what[1:], ""] + t
            summary["shapes"][lab]["profile"] = profiles
        for ref in sh.references:
            if w["preload"]:
                # A restart's first batch has fixed costs no state store removes (a new
                # driver: class loading, JIT, code generation): about the floor of restart ratios.
                for field, what in (("restart_ms", "restart, same JVM"),
                                    ("restart_new_driver_ms", "restart, new driver")):
                    rb, rwho = sh.best(field, sh.rocksdb())
                    rx = _ratio(sh.stats[ref][field], rb)
                    if rx is None:
                        continue
                    line = ("%s: %s %s, %s of the best RocksDB (%s)"
                            % (ref, what, _s(sh.stats[ref][field]), _x(rx), rwho))
                    summary["shapes"][lab].setdefault("floor", {}).setdefault(ref, {})[field] = {
                        "ms": sh.stats[ref][field], "ratio": rx, "against": rwho}
                    text += [line]
                    md += ["", "_" + line + "_"]

    lines, checks = _targets(workload_name, shapes)
    summary["targets"] = checks
    if lines:
        text += ["", "=" * 100, "Targets" + (" (quick/custom sizes: indicative only)" if any(
            sh.w["quick"] or sh.w["custom"] for sh in shapes.values()) else "")] + lines
        md += ["", "Targets:", ""] + ["- " + l.strip() for l in lines]
    return "\n".join(text).lstrip("\n"), "\n".join(md).lstrip("\n") + "\n", summary


def _commit_steps_table(sh: "Shape") -> Tuple[List[str], List[str]]:
    """Where our commit's time goes, by the provider's own timers (sums over the state tasks),
    and the apply of the previous batch's changes, which the next store's open does."""
    rows = [[v, _s(st["commit_ms"]), _s(st["delta_write_ms"]),
             _s(st["commit_ms"] - st["delta_write_ms"]), _s(st["apply_ms"])]
            for v, st in sh.stats.items()
            if st.get("delta_write_ms") is not None and st.get("apply_ms") is not None and st.get("commit_ms") is not None]
    if not rows:
        return [], []
    what = ("our commit, by the provider's own timers (means per batch, sums over the state tasks): "
            "the delta's encoding and file (handed over, with asyncStateWrites), the rest of "
            "Spark's commit time; and, outside the commit, applying the previous batch's changes "
            "to the in-memory state when the store is opened")
    t, m = _table(["variant", "commit", "delta write", "rest of commit", "apply at open"], rows)
    return ["", what + ":"] + t, ["", what[0].upper() + what[1:] + ":", ""] + m


def _floor_table(sh: "Shape", out: Dict) -> Tuple[List[str], List[str]]:
    """Each variant's batch against the three references of the run: the best built-in, the
    stateful floor (a provider that writes nothing) and the query without state; and its cost
    per state task above the stateful floor, in ms (the batch's difference over the
    partitions: what a provider's own state handling costs a task)."""
    # Results of runs before the stateful floor name their one reference True: no state.
    floors = {(sh.ok[n]["reference"] if isinstance(sh.ok[n]["reference"], str) else "stateless"): n
              for n in sh.references}
    stateful, stateless = floors.get("stateful"), floors.get("stateless")
    if not stateful and not stateless:
        return [], []
    best, who = sh.best("ms")
    parts = sh.w["partitions"]
    header = ["variant", "batch", "/ best built-in", "/ stateful floor", "/ no state",
              "ms per task above the stateful floor"]
    rows = []
    out["floor"] = {}
    for name in sh.stats:
        if name == stateless:
            continue
        ms = sh.stats[name]["ms"]
        above = (ms - sh.stats[stateful]["ms"]) / parts if stateful and ms is not None else None
        ratios = {"best_builtin": _ratio(ms, best),
                  "stateful_floor": _ratio(ms, sh.stats[stateful]["ms"]) if stateful else None,
                  "no_state": _ratio(ms, sh.stats[stateless]["ms"]) if stateless else None,
                  "ms_per_task_above_stateful_floor": above}
        out["floor"][name] = ratios
        rows.append([name, _s(ms), _x(ratios["best_builtin"]), _x(ratios["stateful_floor"]),
                     _x(ratios["no_state"]), "-" if name == stateful or above is None else "%+.2f" % above])
    t, m = _table(header, rows)
    note = ("references of this run: %s; best built-in %s; %d state partitions"
            % (", ".join("%s %s (%s)" % (kind, n, _s(sh.stats[n]["ms"])) for kind, n in sorted(floors.items())),
               who or "-", parts))
    return (["", "against the floors (batch means; < 1 is faster):"] + t + [note],
            ["", "Against the floors (batch means; < 1 is faster):", ""] + m + ["", "_" + note + "_"])


def _remote_table(sh: "Shape") -> Tuple[List[str], List[str]]:
    """Per-batch requests to the remote checkpoint file system (means over the steady
    batches), each variant's and its ratio against hdfs (Spark's default)."""
    names = [n for n in sh.stats if "req_total" in sh.stats[n] or "nn_rpc" in sh.stats[n]]
    if not names:
        return [], []
    s3 = "req_total" in sh.stats[names[0]]
    fields = ([("req_" + t, "GET+HEAD" if t == "GET" else t) for t in REQUEST_TYPES]
              + [("req_total", "all requests")] if s3
              else [("nn_" + k, title) for k, title in NAMENODE_FIELDS])
    fields += [("objects_created", "objects created" if s3 else "files in checkpoint created")]
    base = sh.stats.get("hdfs")
    header = ["variant"] + [title for _, title in fields] + ["batch", "commit"]
    rows = []
    for n in names:
        st = sh.stats[n]
        rows.append([n] + [_n(st.get(f)) for f, _ in fields] + [_s(st["ms"]), _s(st["commit_ms"])])
        if base is not None and n != "hdfs":
            rows.append(["  / hdfs"] + [_x(_ratio(st.get(f), base.get(f))) for f, _ in fields]
                        + [_x(_ratio(st["ms"], base["ms"])), _x(_ratio(st["commit_ms"], base["commit_ms"]))])
    t, m = _table(header, rows)
    title = ("S3 requests per batch (the server's count, means over the steady batches; ratios "
             "against hdfs, Spark's default)" if s3 else
             "HDFS namenode work per batch (its JMX counters, means over the steady batches; ratios "
             "against hdfs, Spark's default)")
    return [title + ":"] + t, [title + ":", ""] + m


def headline(summary_shapes: Dict, results: List[Dict], warmup: int, ours: str = "heap-fs") -> Optional[Dict]:
    """W4's one-line result: ``ours`` against HDFSBacked (PUTs, all requests, batch, commit)."""
    sh = Shape([r for r in results], warmup)
    if ours not in sh.stats or "hdfs" not in sh.stats or "req_total" not in sh.stats[ours]:
        return None
    a, b = sh.stats[ours], sh.stats["hdfs"]
    r = lambda f: None if _ratio(a.get(f), b.get(f)) is None else round(_ratio(a.get(f), b.get(f)), 4)  # noqa: E731
    return {"workload": "W4", "put_ratio": r("req_PUT"), "request_ratio": r("req_total"),
            "batch_ratio": r("ms"), "commit_ratio": r("commit_ms")}


def _describe(w: Dict) -> str:
    extra = (" [quick]" if w["quick"] else "") + (" [custom shape]" if w["custom"] else "")
    if w["preload"]:
        return "%s: %d partitions, preload %d keys, then %d batches of %d updates, then a restart%s" % (
            w["label"], w["partitions"], w["keys"], w["batches"], w["rows_per_batch"], extra)
    return "%s: %d partitions, %d keys, %d batches x %d rows%s" % (
        w["label"], w["partitions"], w["keys"], w["batches"], w["rows_per_batch"], extra)


def _targets(name: str, shapes: Dict[str, "Shape"]) -> Tuple[List[str], List[Dict]]:
    lines: List[str] = []
    checks: List[Dict] = []
    ours = []
    for sh in shapes.values():
        ours += [o for o in sh.ours if o not in ours]
    if not ours:
        return ["  no variant of ours in this run: nothing to check"], checks

    def check(variant: str, what: str, value: Optional[float], limit: float, unit: str = "x",
              why_missing: str = "not measured"):
        if value is None:
            verdict, shown = "-", "(%s)" % why_missing
        else:
            verdict = "PASS" if value <= limit else "MISS"
            shown = {"x": "%.2fx", "ms": "%.2f ms"}.get(unit, "%.0f") % value
        lim = "<= " + {"x": "%.2fx", "ms": "%.2f ms"}.get(unit, "%.0f") % limit
        lines.append("  %-4s %-18s %-62s %-12s target %s" % (verdict, variant, what, shown, lim))
        checks.append({"variant": variant, "target": what, "value": value, "limit": limit, "verdict": verdict})

    def status(sh: "Shape", v: str) -> str:
        return next((r["status"] for r in sh.runs if r["variant"] == v), "not run")

    for v in ours:
        if name == "W4":
            sh = list(shapes.values())[0]
            if v not in sh.stats or "hdfs" not in sh.stats:
                lines.append("  MISS %-18s run %s (or no hdfs run)" % (v, status(sh, v)))
                checks.append({"variant": v, "target": "run", "verdict": "MISS", "value": status(sh, v)})
                continue
            s, h = sh.stats[v], sh.stats["hdfs"]
            for f, title, lim in [("req_PUT", "PUT requests per batch / HDFSBacked", 0.01),
                                  ("req_total", "all requests per batch / HDFSBacked", 0.05),
                                  ("ms", "batch time / HDFSBacked", 0.3),
                                  ("commit_ms", "commit time / HDFSBacked", 0.05)]:
                check(v, title, _ratio(s.get(f), h.get(f)), lim, why_missing="not measured")
            continue
        if name in ("W1", "W2"):
            sh = list(shapes.values())[0]
            if v not in sh.stats:
                lines.append("  MISS %-18s run %s" % (v, status(sh, v)))
                checks.append({"variant": v, "target": "run", "verdict": "MISS", "value": status(sh, v)})
                continue
            s = sh.stats[v]
            limits = {"W1": [("ms", 0.5), ("commit_ms", 0.1), ("files", 0.01)],
                      "W2": [("ms", 0.6), ("commit_ms", 0.25)]}[name]
            for f, lim in limits:
                best, who = sh.best(f)
                title = dict(RATIO_METRICS)[f]
                check(v, "%s time / best built-in (%s)" % (title, who) if f != "files"
                      else "state files per batch / best built-in (%s)" % who,
                      _ratio(s[f], best), lim, why_missing="no built-in measured")
            # Against the stateful floor of the same run (a provider that writes nothing).
            floor = next((n for n in sh.references if sh.ok[n]["reference"] == "stateful"), None)
            if floor is not None:
                check(v, "batch time / stateful floor", _ratio(s["ms"], sh.stats[floor]["ms"]), 1.1)
                if name == "W1":
                    above = (s["ms"] - sh.stats[floor]["ms"]) / sh.w["partitions"] if s["ms"] is not None else None
                    check(v, "ms per task above the stateful floor", above, 0.5, unit="ms")
            if name == "W2" and "hdfs" in sh.stats:
                check(v, "commit time / HDFSBacked", _ratio(s["commit_ms"], sh.stats["hdfs"]["commit_ms"]), 0.2)
        else:
            by_k = {sh.w["keys"]: sh for sh in shapes.values()}
            ks = sorted(by_k)
            big = max(ks)
            # "no OOM at 3M" (at the largest K of this run when 3M was not run).
            st = status(by_k[big], v)
            what = "runs at K=%d without OOM" % big
            lines.append("  %-4s %-18s %-62s %-12s target ok" % ("PASS" if st == "ok" else "MISS", v, what, st))
            checks.append({"variant": v, "target": what, "value": st, "verdict": "PASS" if st == "ok" else "MISS"})
            small = min(ks)
            if small != big and v in by_k[big].stats and v in by_k[small].stats:
                check(v, "batch at K=%d / batch at K=%d" % (big, small),
                      _ratio(by_k[big].stats[v]["ms"], by_k[small].stats[v]["ms"]), 1.2)
            for k in ks:
                sh = by_k[k]
                if v not in sh.stats:
                    continue
                s = sh.stats[v]
                rb, rwho = sh.best("ms", sh.rocksdb())
                check(v, "K=%d batch / best RocksDB (%s)" % (k, rwho), _ratio(s["ms"], rb), 0.5,
                      why_missing="no RocksDB run")
                rr, rrwho = sh.best("restart_ms", sh.rocksdb())
                check(v, "K=%d restart, same JVM / best RocksDB (%s)" % (k, rrwho), _ratio(s["restart_ms"], rr),
                      0.3, why_missing="no RocksDB run")
                rn, rnwho = sh.best("restart_new_driver_ms", sh.rocksdb())
                check(v, "K=%d restart, new driver / best RocksDB (%s)" % (k, rnwho),
                      _ratio(s["restart_new_driver_ms"], rn), 0.3, why_missing="no RocksDB run")
                check(v, "K=%d heap bytes per key (JVM heap growth, preload)" % k, s["jvm_bytes_per_key"], 80,
                      unit="B")
                check(v, "K=%d heap bytes per key (JVM heap growth, end)" % k, s["jvm_bytes_per_key_end"], 80,
                      unit="B")
                check(v, "K=%d heap bytes per key (memoryUsedBytes)" % k, s["reported_bytes_per_key"], 80,
                      unit="B")
    return lines, checks
