"""
The partition sweep: W1's shape (10k keys, batches of 10k rows, each a permutation of every
key) at several state partition counts, every variant side by side at each count (a run of
``run.py`` per count), then one table and one line plot of batch time against partitions.

    .venv/bin/python benchmarks/sweep.py                                   # 50, 200, 1000, 2000
    .venv/bin/python benchmarks/sweep.py --partitions 50,200 --batches 4   # a shorter sweep

What it answers: how a variant's batch grows with partitions, against the stateful floor's
(a provider that writes nothing: Spark's per-task cost) and the query without state. The
slope column is the batch's growth per 1,000 partitions between the smallest and largest
count, by least squares over every count.
"""
import argparse
import glob
import json
import os
import sys
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402

DEFAULT_VARIANTS = "hdfs,rocksdb-changelog,heap-fs,heap-driver,floor,no-state"


def slope(points: List[tuple]) -> Optional[float]:
    """Least-squares growth of y per unit of x."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else None


def table(batch_ms: Dict[str, Dict[int, float]], counts: List[int]) -> List[str]:
    header = ["variant"] + ["%d partitions" % c for c in counts] + ["s per 1,000 partitions",
                                                                   "/ stateful floor's slope"]
    floor_slope = slope(sorted(batch_ms.get("floor", {}).items()))
    rows = []
    for v, by_count in batch_ms.items():
        s = slope(sorted(by_count.items()))
        rows.append([v] + ["%.2f s" % (by_count[c] / 1000) if c in by_count else "-" for c in counts]
                    + ["-" if s is None else "%.2f" % s,
                       "-" if s is None or not floor_slope else "%.2fx" % (s / floor_slope)])
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows]


def plot(batch_ms: Dict[str, Dict[int, float]], path: str, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(9, 5))
    for v, by_count in batch_ms.items():
        xs = sorted(by_count)
        style = ":" if v in ("floor", "no-state") else "-"
        ax.plot(xs, [by_count[x] / 1000 for x in xs], style, marker="o", label=v)
    ax.set_xscale("log")
    ax.set_xticks(sorted({c for b in batch_ms.values() for c in b}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.get_xaxis().set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("state partitions (spark.sql.shuffle.partitions)")
    ax.set_ylabel("batch time, s (mean)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", default="50,200,1000,2000")
    parser.add_argument("--providers", default=DEFAULT_VARIANTS)
    parser.add_argument("--batches", type=int, default=None, help="timed batches per run (default W1's)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.partitions.split(",")]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs_out = os.path.join(args.out, "sweep-%s" % stamp)
    os.makedirs(runs_out, exist_ok=True)
    batch_ms: Dict[str, Dict[int, float]] = {}
    for i, count in enumerate(counts):
        print("[sweep] %d/%d: W1 at %d partitions" % (i + 1, len(counts), count), flush=True)
        cmd = ["--workload", "W1", "--partitions", str(count), "--providers", args.providers,
               "--out", runs_out, "--no-plot"]
        if args.batches:
            cmd += ["--batches", str(args.batches)]
        before = set(glob.glob(os.path.join(runs_out, "*.json")))
        run.main(cmd)
        (result_file,) = set(glob.glob(os.path.join(runs_out, "*.json"))) - before
        with open(result_file) as f:
            shapes = json.load(f)["summary"]["shapes"]
        for stats in shapes.values():
            for v, s in stats["stats"].items():
                if s.get("ms") is not None:
                    batch_ms.setdefault(v, {})[count] = s["ms"]
    lines = table(batch_ms, counts)
    print("\n".join(["", "W1's shape, batch time (mean) per partition count:"] + lines))
    base = os.path.join(args.out, "sweep-%s" % stamp)
    with open(base + ".json", "w") as f:
        json.dump({"partitions": counts, "batch_ms": batch_ms, "command": " ".join(sys.argv)}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    if plot(batch_ms, base + ".png", "W1's shape: batch time against state partitions"):
        print("written: %s.json, %s.md, %s.png" % (base, base, base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
