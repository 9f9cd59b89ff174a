"""Summary tables: means per variant, ratios against the built-ins, DESIGN targets."""
from typing import Dict, List, Optional, Tuple

from variants import VARIANTS


def _mean(values: List[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def _stats(r: Dict) -> Dict:
    # Batch 1 plans the query and warms the JVM; W3's batch 1 is the preload: leave it out.
    steady = [b for b in r["batches"][1:]]
    return {
        "ms": _mean([b["ms"] for b in steady]),
        "commit_ms": _mean([b["commit_ms"] for b in steady]),
        "files": _mean([b["state_files"] for b in steady]),
        "preload_ms": r["batches"][0]["ms"] if r["batches"] and r["batches"][0].get("preload") else None,
        "restart_ms": r.get("restart", {}).get("ms"),
        "bytes_per_key": r.get("heap", {}).get("reported_per_key"),
        "jvm_bytes_per_key": r.get("heap", {}).get("jvm_heap_per_key"),
    }


def _fmt(v: Optional[float], unit: str = "") -> str:
    if v is None:
        return "-"
    if unit == "s":
        return "%.2f s" % (v / 1000)
    return "%.1f" % v


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return "%.2fx" % (a / b)


def summarize(w, results: List[Dict]) -> Tuple[str, str]:
    stats = {r["variant"]: _stats(r) for r in results if r["status"] == "ok"}
    builtins = [n for n in stats if VARIANTS[n]["builtin"]]
    best = lambda field: min((stats[n][field] for n in builtins if stats[n][field] is not None), default=None)
    header = ["variant", "batch", "commit", "state files/batch", "ratio batch", "ratio commit",
              "ratio files"]
    if w.preload:
        header += ["preload", "restart", "B/key (reported)", "B/key (JVM heap)"]
    rows = []
    for r in results:
        name = r["variant"]
        if r["status"] != "ok":
            rows.append([VARIANTS[name]["label"], r["status"]] + [""] * (len(header) - 2))
            continue
        s = stats[name]
        row = [VARIANTS[name]["label"], _fmt(s["ms"], "s"), _fmt(s["commit_ms"], "s"), _fmt(s["files"]),
               _ratio(s["ms"], best("ms")), _ratio(s["commit_ms"], best("commit_ms")),
               _ratio(s["files"], best("files"))]
        if w.preload:
            row += [_fmt(s["preload_ms"], "s"), _fmt(s["restart_ms"], "s"), _fmt(s["bytes_per_key"]),
                    _fmt(s["jvm_bytes_per_key"])]
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(n) for c, n in zip(cells, widths))
    text = [w.describe(), "means per batch after the first; ratios against the best built-in "
            "(%s) measured in this run" % ", ".join(builtins or ["none"]), line(header),
            line(["-" * n for n in widths])] + [line(r) for r in rows]
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
         ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    text += [""] + _targets(w, stats, best)
    return "\n".join(text), "\n".join(md) + "\n"


def _targets(w, stats: Dict, best) -> List[str]:
    lines = []

    def check(what: str, value: Optional[float], limit: float):
        if value is None:
            lines.append("  %-55s    -" % what)
        else:
            lines.append("  %-55s %5.2f  %s (target <= %.2f)" % (what, value, "PASS" if value <= limit else "MISS", limit))

    for name in stats:
        if VARIANTS[name]["builtin"]:
            continue
        s = stats[name]
        lines.append("targets for %s:" % VARIANTS[name]["label"])
        ratio = lambda a, b: None if a is None or b in (None, 0) else a / b
        if w.name == "W1":
            check("batch time / best built-in", ratio(s["ms"], best("ms")), 0.5)
            check("commit time / best built-in", ratio(s["commit_ms"], best("commit_ms")), 0.1)
            check("state files / best built-in", ratio(s["files"], best("files")), 0.01)
        elif w.name == "W2":
            check("batch time / best built-in", ratio(s["ms"], best("ms")), 0.6)
            check("commit time / best built-in", ratio(s["commit_ms"], best("commit_ms")), 0.25)
        else:
            rocks = [n for n in stats if n.startswith("rocksdb")]
            rbest = lambda f: min((stats[n][f] for n in rocks if stats[n][f] is not None), default=None)
            check("batch time / best RocksDB", ratio(s["ms"], rbest("ms")), 0.5)
            check("restart time / best RocksDB", ratio(s["restart_ms"], rbest("restart_ms")), 0.3)
            if s["bytes_per_key"] is not None:
                lines.append("  %-55s %5.0f  %s (target <= 80)" % (
                    "heap bytes per key (reported)", s["bytes_per_key"],
                    "PASS" if s["bytes_per_key"] <= 80 else "MISS"))
    return lines
