"""The workloads of shared/DESIGN.md section 8, and their input files."""
import os
import shutil
from dataclasses import dataclass
from typing import List


@dataclass(frozen=True)
class Workload:
    name: str
    partitions: int
    keys: int
    batches: int
    rows_per_batch: int
    #: W3: the first batch holds every key once (the preload), later batches update keys.
    preload: bool = False
    restart: bool = False

    def describe(self) -> str:
        if self.preload:
            return ("%s: %d partitions, preload %d keys, then %d batches of %d updates, then a restart"
                    % (self.name, self.partitions, self.keys, self.batches, self.rows_per_batch))
        return ("%s: %d partitions, %d keys, %d batches x %d rows"
                % (self.name, self.partitions, self.keys, self.batches, self.rows_per_batch))


def workload(name: str, keys: int = 0, quick: bool = False) -> Workload:
    scale = 10 if quick else 1
    if name == "W1":
        return Workload("W1", 200, 10000 // scale, 3 if quick else 10, 10000 // scale)
    if name == "W2":
        return Workload("W2", 8, 100000 // scale, 3 if quick else 10, 100000 // scale)
    if name == "W3":
        k = keys or 100000
        return Workload("W3-%dk" % (k // 1000), 4, k // scale, 3 if quick else 5, 20000 // scale,
                        preload=True, restart=True)
    raise ValueError("unknown workload %s" % name)


def write_inputs(spark, w: Workload, folder: str) -> List[str]:
    """One parquet file per trigger, written once per workload and reused by every variant."""
    from pyspark.sql import functions as F

    done = os.path.join(folder, "_complete")
    if os.path.exists(done):
        return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".parquet"))
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    batches = w.batches + (2 if w.preload else 0)  # preload + updates + one after the restart
    for b in range(batches):
        if w.preload and b == 0:
            df = spark.range(w.keys).select(F.col("id").alias("key"), (F.col("id") % 100).alias("amount"))
        else:
            n = w.rows_per_batch
            df = spark.range(n).select(
                ((F.col("id") * 7919 + F.lit(b) * 104729) % w.keys).alias("key"),
                (F.col("id") % 100).alias("amount"))
        tmp = os.path.join(folder, "tmp")
        df.coalesce(1).write.parquet(tmp)
        part = [f for f in os.listdir(tmp) if f.endswith(".parquet")][0]
        os.rename(os.path.join(tmp, part), os.path.join(folder, "batch-%03d.parquet" % b))
        shutil.rmtree(tmp)
    open(done, "w").close()
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".parquet"))
