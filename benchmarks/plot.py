"""PNG of batch and commit time per batch, one line per variant (matplotlib, Agg backend)."""
from typing import Dict, List


def plot(results: List[Dict], path: str, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return False
    labels: List[str] = []
    for r in results:
        if r["workload"]["label"] not in labels:
            labels.append(r["workload"]["label"])
    fig, axes = plt.subplots(len(labels), 2, figsize=(13, 3.6 * len(labels)), squeeze=False)
    for row, lab in enumerate(labels):
        runs = [r for r in results if r["workload"]["label"] == lab]
        preload = runs[0]["workload"]["preload"]
        for col, (key, what) in enumerate([("ms", "batch time (triggerExecution)"),
                                          ("commitTimeMs", "commit time (sum over tasks)")]):
            ax = axes[row][col]
            for r in runs:
                pts = [(b["batch"] + 1, b[key] / 1000) for b in r.get("batches", [])
                       if not (preload and b.get("preload"))]
                if r.get("restart"):
                    pts.append((r["restart"]["batch"] + 1, r["restart"][key] / 1000))
                if not pts:
                    continue
                xs, ys = zip(*pts)
                style = "-" if r["builtin"] else "--"
                suffix = "" if r["status"] == "ok" else " (%s)" % r["status"]
                ax.plot(xs, ys, style, marker="o", markersize=3, label=r["variant"] + suffix)
            ax.set_title("%s: %s%s" % (lab, what, "; preload not shown, last point = restart" if preload else ""),
                         fontsize=9)
            ax.set_xlabel("batch")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel("s")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
