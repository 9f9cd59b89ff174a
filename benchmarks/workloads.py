"""
The benchmark workloads (docs/benchmarks.md, "Workloads") and their parquet input files.

Every workload is the same query: a parquet file source read one file per trigger
(``maxFilesPerTrigger=1``), ``groupBy(key).agg(count, sum)``, update mode, noop sink, on
``local[2]`` with the default 1 GiB driver heap. They differ in shape:

- W1: 200 shuffle partitions, 10k keys, 10 batches x 10k rows
- W2: 8 shuffle partitions, 100k keys, 10 batches x 100k rows
- W4: W1's shape with the checkpoint on ``s3a://`` (a SeaweedFS server on 127.0.0.1)
- W3: 4 shuffle partitions, a preload batch holding each of K keys once, then 10 batches of
  20k updates of existing keys, then a restart (a new query on the same checkpoint) timed
  on its first batch; K = 100k, 1M, 3M

W1 and W2 batches are permutations of all keys (each batch updates every key once when
rows == keys), so the state has its full size from the first batch on and later batches
are steady state. W3 update batches are 20k distinct keys drawn at random from the K.

Input files are written with pyarrow (no JVM involved, so no provider's JVM pays for them),
once per shape, under ``<workdir>/inputs/`` and reused by every provider and later runs.
"""
import os
import shutil
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

#: Bump when the generated data changes, so that cached inputs are rewritten.
INPUT_FORMAT = 2


@dataclass(frozen=True)
class Workload:
    name: str  # W1, W2, W3
    partitions: int
    keys: int
    #: timed batches after the first (W1/W2: all batches; W3: update batches after the preload)
    batches: int
    rows_per_batch: int
    #: W3: batch 0 holds every key once, later batches update existing keys.
    preload: bool = False
    #: W3: after the batches, stop the query, start a new one on the checkpoint, time its
    #: batch 1; then the same again in a new driver JVM.
    restart: bool = False
    quick: bool = False
    #: True when a command-line override changed the workload's shape (targets then indicative).
    custom: bool = False
    #: where the checkpoint lives: "local", "hdfs" (MiniDFSCluster) or "s3a" (SeaweedFS)
    checkpoint_fs: str = "local"

    @property
    def label(self) -> str:
        """W1, W2, or W3-1M: what the progress lines and result files are called."""
        label = "%s-%s" % (self.name, human(self.keys)) if self.name == "W3" else self.name
        if self.checkpoint_fs != REMOTE_FS.get(self.name, "local"):
            label += "-" + self.checkpoint_fs
        return label

    @property
    def total_batches(self) -> int:
        """Batches of the first query run (the restart's batch not included)."""
        return self.batches + (1 if self.preload else 0)

    @property
    def input_files(self) -> int:
        return self.total_batches + (2 if self.restart else 0)

    def describe(self) -> str:
        extra = (" [quick]" if self.quick else "") + (" [custom shape]" if self.custom else "")
        if self.preload:
            return ("%s: %d partitions, preload %s keys, then %d batches of %s updates, then a restart%s"
                    % (self.label, self.partitions, human(self.keys), self.batches,
                       human(self.rows_per_batch), extra))
        return ("%s: %d partitions, %s keys, %d batches x %s rows%s%s"
                % (self.label, self.partitions, human(self.keys), self.batches,
                   human(self.rows_per_batch), extra,
                   "" if self.checkpoint_fs == "local" else ", checkpoint on %s://" % self.checkpoint_fs))

    def as_dict(self) -> Dict:
        d = asdict(self)
        d["label"] = self.label
        d["total_batches"] = self.total_batches
        return d


#: The workloads' shapes: (partitions, keys, batches, rows per batch).
SHAPES = {
    "W1": (200, 10_000, 10, 10_000),
    "W2": (8, 100_000, 10, 100_000),
    "W3": (4, 100_000, 10, 20_000),
    # W1 with the checkpoint on s3a:// (SeaweedFS on 127.0.0.1): run.py starts the server.
    "W4": (200, 10_000, 10, 10_000),
}
#: Workloads whose checkpoint is on a remote file system by definition.
REMOTE_FS = {"W4": "s3a"}
#: The W3 key counts.
W3_KEYS = [100_000, 1_000_000, 3_000_000]


def parse_count(text: str) -> int:
    """'100k' -> 100000, '3M' -> 3000000, '2500' -> 2500."""
    t = text.strip().lower().replace("_", "")
    mult = 1
    if t.endswith("k"):
        mult, t = 1000, t[:-1]
    elif t.endswith("m"):
        mult, t = 1_000_000, t[:-1]
    value = float(t) * mult
    if value <= 0 or value != int(value):
        raise ValueError("not a positive whole count: %r" % text)
    return int(value)


def human(n: int) -> str:
    if n >= 1_000_000 and n % 100_000 == 0:
        return ("%.1fM" % (n / 1e6)).replace(".0M", "M")
    if n >= 1000 and n % 100 == 0:
        return ("%.1fk" % (n / 1e3)).replace(".0k", "k")
    return str(n)


def workload(name: str, keys: Optional[int] = None, quick: bool = False,
             partitions: Optional[int] = None, batches: Optional[int] = None,
             rows: Optional[int] = None, checkpoint_fs: Optional[str] = None) -> Workload:
    """The shape of ``name``; ``quick`` divides keys and rows by 10 and runs 3 batches."""
    if name not in SHAPES:
        raise ValueError("unknown workload %s (one of %s)" % (name, ", ".join(SHAPES)))
    p, k, b, r = SHAPES[name]
    custom = False
    if keys is not None:
        # W3's key count is its parameter, not a change of shape (quick still divides it).
        custom = custom or (name != "W3" and keys != k)
        k = keys
    if quick:
        k, r, b = max(k // 10, 1), max(r // 10, 1), 3
    if partitions is not None:
        custom, p = custom or partitions != p, partitions
    if batches is not None:
        custom, b = custom or batches != b, batches
    if rows is not None:
        custom, r = custom or rows != r, rows
    fs = checkpoint_fs or REMOTE_FS.get(name, "local")
    if name == "W3":
        r = min(r, k)  # updates are distinct existing keys
        return Workload("W3", p, k, b, r, preload=True, restart=True, quick=quick, custom=custom,
                        checkpoint_fs=fs)
    return Workload(name, p, k, b, r, quick=quick, custom=custom, checkpoint_fs=fs)


def input_dir(workdir: str, w: Workload) -> str:
    return os.path.join(workdir, "inputs", "%s-k%d-b%d-r%d-v%d" % (
        w.name, w.keys, w.input_files, w.rows_per_batch, INPUT_FORMAT))


def write_inputs(w: Workload, folder: str) -> List[str]:
    """
    Writes the workload's input files (one per trigger, ``batch-NNN.parquet``, columns
    ``key long, amount long``) unless they are there already; returns their paths in order.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = os.path.join(folder, "_complete")
    if not os.path.exists(done):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        rng = np.random.default_rng(20261122)
        for b in range(w.input_files):
            if w.preload and b == 0:
                keys = rng.permutation(w.keys)
            elif w.preload:
                keys = rng.choice(w.keys, size=w.rows_per_batch, replace=False)
            else:
                # W1/W2: the rows cycle through every key; each batch is shuffled.
                keys = rng.permutation(np.arange(w.rows_per_batch) % w.keys)
            amount = rng.integers(0, 100, size=len(keys))
            table = pa.table({"key": pa.array(keys, pa.int64()), "amount": pa.array(amount, pa.int64())})
            tmp = os.path.join(folder, "_batch-%03d.parquet.tmp" % b)
            pq.write_table(table, tmp)
            os.rename(tmp, os.path.join(folder, "batch-%03d.parquet" % b))
        open(done, "w").close()
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if f.startswith("batch-") and f.endswith(".parquet"))
    if len(files) != w.input_files:
        raise RuntimeError("%s holds %d input files, expected %d; delete it" % (folder, len(files), w.input_files))
    return files
