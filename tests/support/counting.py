"""The counting query of the migration and rescale tests (tests/test_migration.py,
tests/test_rescale.py), run in the test's own session: ``groupBy(k).agg(count, sum)`` over a
parquet folder in update mode, each batch's output written to parquet; and a command SIGKILLed
while it writes a new checkpoint or savepoint."""
import os
import signal
import subprocess
import sys
import time
from typing import Dict, List

from support import stateful_operators as so

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
COUNTS = "k long, v long"


def count_query(spark, source, checkpoint, out):
    """``groupBy(k).agg(count, sum)`` in update mode, each batch's output appended to parquet."""
    from pyspark.sql import functions as F

    def sink(df, batch_id):
        df.write.mode("overwrite").parquet(os.path.join(out, "batch=%d" % batch_id))

    return (spark.readStream.schema(COUNTS).parquet(source)
            .groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s"))
            .writeStream.outputMode("update").foreachBatch(sink)
            .option("checkpointLocation", checkpoint).start())


def add_file(spark, source, df):
    df.coalesce(1).write.mode("append").parquet(source)


def run_batches(spark, provider, source, checkpoint, out, files):
    """Starts the counting query on ``provider`` (recorded in a new checkpoint), feeds
    ``files`` (DataFrames), one batch each, and stops it; the session's provider is ours
    again afterwards."""
    os.makedirs(source, exist_ok=True)
    spark.conf.set(PROVIDER_CONF, so.provider_class(provider))
    try:
        query = count_query(spark, source, checkpoint, out)
        try:
            for df in files:
                add_file(spark, source, df)
                query.processAllAvailable()
        finally:
            query.stop()
    finally:
        spark.conf.set(PROVIDER_CONF, so.provider_class("heap"))


def small_checkpoint(spark, root, provider, keys, rows):
    """The counting query's checkpoint on ``provider`` after two batches of ``rows`` rows over
    ``keys`` keys, at ``root``/src (its input in ``root``/source, its output in ``root``/out)."""
    source, src, out = (os.path.join(str(root), n) for n in ("source", "src", "out"))
    files = [spark.createDataFrame([(k % keys, b) for k in range(rows)], COUNTS) for b in range(2)]
    run_batches(spark, provider, source, src, out, files)
    return src


def resume(spark, source, checkpoint, out, more=None):
    """Runs the counting query from ``checkpoint`` over what ``source`` holds (and ``more``,
    added first), then stops it."""
    query = count_query(spark, source, checkpoint, out)
    try:
        if more is not None:
            add_file(spark, source, more)
        query.processAllAvailable()
    finally:
        query.stop()


def final_counts(spark, out):
    """The last update of each key (counts only grow, so the largest)."""
    from pyspark.sql import functions as F
    return (spark.read.parquet(out).groupBy("k")
            .agg(F.max("n").alias("n"), F.max_by("s", "n").alias("s")))


def expected_counts(spark, source):
    """The batch computation over all of ``source``."""
    from pyspark.sql import functions as F
    return spark.read.schema(COUNTS).parquet(source).groupBy("k").agg(
        F.count("*").alias("n"), F.sum("v").alias("s"))


def assert_counts_match(spark, source, out, keys=None):
    """The sinks' last counts equal the batch computation (over ``keys`` keys, given)."""
    got, expected = final_counts(spark, out), expected_counts(spark, source)
    if keys is not None:
        assert got.count() == keys
    assert got.exceptAll(expected).count() == 0 and expected.exceptAll(got).count() == 0


def tree(path) -> Dict[str, bytes]:
    """Every file under ``path`` with its bytes, to prove a source untouched."""
    files = {}
    for d, _, names in os.walk(path):
        for name in names:
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                files[os.path.relpath(p, path)] = f.read()
    return files


def kill_while_writing(code: str, folder, sibling_prefix: str, env: Dict[str, str],
                       inside: str = "state") -> List[str]:
    """Runs ``code`` (Python) in a process of its own and SIGKILLs it, with its driver JVM,
    once a hidden sibling of ``folder`` whose name starts with ``sibling_prefix`` holds
    ``inside``: the writer is then in the middle of its output. Returns the siblings found."""
    script = os.path.join(str(folder), "killed.py")
    with open(script, "w") as f:
        f.write(code)
    proc = subprocess.Popen([sys.executable, script], start_new_session=True, env=env,
                            cwd=str(folder), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    leftovers = []
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            leftovers = [n for n in os.listdir(str(folder)) if n.startswith(sibling_prefix)]
            if leftovers and os.path.exists(os.path.join(str(folder), leftovers[0], inside)):
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the process ended before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the Python process and its driver JVM
        proc.wait()
    return leftovers
