"""The aggregation of the storage tests (tests/test_storages.py,
tests/test_checkpoint_config.py, support/remote_storage_checks.py), run in the caller's
session: ``groupBy(k).agg(count, sum)`` in update mode into the no-op sink, input file ``b``
holding ``(k, b)`` for every key, so that the state after ``n`` files is known exactly."""
import os

SCHEMA = "k long, v long"


def run_aggregation(spark, root, batches, keys=50, start_batch=0, checkpoint=None):
    """Runs the aggregation over ``batches`` new input files (under ``root``); its
    checkpoint is ``checkpoint`` (any Hadoop URI), by default ``<root>/checkpoint``."""
    from pyspark.sql import functions as F
    source = os.path.join(str(root), "source")
    checkpoint = checkpoint or os.path.join(str(root), "checkpoint")
    os.makedirs(source, exist_ok=True)
    query = (spark.readStream.schema(SCHEMA).parquet(source).groupBy("k")
             .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", checkpoint).start())
    try:
        for b in range(start_batch, start_batch + batches):
            rows = [(k, b) for k in range(keys)]
            spark.createDataFrame(rows, SCHEMA).coalesce(1).write.mode("append").parquet(source)
            query.processAllAvailable()
    finally:
        query.stop()
    return checkpoint


def state_of(spark, checkpoint):
    """(key, count, sum) of every state row, read back by Spark's state data source."""
    return sorted((r.key[0], r.value[0], r.value[1])
                  for r in spark.read.format("statestore").load(checkpoint).collect())


def expected(batches, keys=50):
    """What :func:`state_of` gives after ``batches`` input files."""
    return sorted((k, batches, sum(range(batches))) for k in range(keys))


def files_under(path):
    """Every file under the local folder ``path``, relative to it, sorted."""
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, fs in os.walk(path) for f in fs)
