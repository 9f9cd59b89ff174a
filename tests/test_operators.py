"""Every stateful operator a third-party provider can run, on our provider and storages,
checked against the same computation in batch mode; also across a restart."""
import os

import pytest
from pyspark.sql import functions as F


EVENTS = "id long, k long, v long, ts timestamp"

#: storage set-ups each operator runs with
SETUPS = {
    "filesystem": {"spark.sql.streaming.checkpointStorage": "filesystem"},
    "driver": {"spark.sql.streaming.checkpointStorage": "driver",
               "spark.sql.streaming.checkpointStorage.checkpointPath": "ROOT/cp"},
}


#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {"spark.sql.shuffle.partitions": 4}


def events(batch):
    """Events of one batch: keys repeat across batches, timestamps advance, some duplicates."""
    import datetime
    base = datetime.datetime(2026, 1, 1)
    rows = []
    for i in range(30):
        n = batch * 30 + i
        rows.append((n % 45, n % 7, n, base + datetime.timedelta(seconds=10 * batch + i % 10)))
    return rows


def collect(spark, path):
    return rows_of(spark.read.parquet(path), spark.read.parquet(path).columns) if os.path.exists(path) else []


def run(spark, tmp_path, build, expected, mode="append", batches=4, restart_at=2):
    """Feeds `batches` files (restarting the query after `restart_at`), writes the output to
    parquet via foreachBatch, and returns (output rows, expected rows)."""
    source = str(tmp_path / "source")
    out = str(tmp_path / "out")
    checkpoint = str(tmp_path / "checkpoint")
    os.makedirs(source, exist_ok=True)
    all_rows = []

    def sink(df, batch_id):
        df.write.mode("append").parquet(os.path.join(out, "batch=%d" % batch_id))

    def start():
        stream = spark.readStream.schema(EVENTS).parquet(source)
        return (build(stream).writeStream.outputMode(mode).foreachBatch(sink)
                .option("checkpointLocation", checkpoint).start())

    q = start()
    try:
        for b in range(batches):
            if b == restart_at:
                q.stop()
                q = start()
            rows = events(b)
            all_rows += rows
            spark.createDataFrame(rows, EVENTS).coalesce(1).write.mode("append").parquet(source)
            q.processAllAvailable()
    finally:
        q.stop()
    batch_df = spark.createDataFrame(all_rows, EVENTS)
    return spark.read.parquet(out) if os.path.exists(out) else None, expected(batch_df)


def _none_last(row):
    return tuple((x is None, x if x is not None else 0) for x in row)


def rows_of(df, cols):
    if df is None:
        return []
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=_none_last)


@pytest.fixture(params=sorted(SETUPS))
def setup(request, spark, tmp_path):
    for k, v in SETUPS[request.param].items():
        spark.conf.set(k, v.replace("ROOT", str(tmp_path)))
    yield request.param
    for k in SETUPS[request.param]:
        spark.conf.unset(k)


def test_aggregation_update_mode(spark, tmp_path, setup):
    out, expected = run(
        spark, tmp_path, lambda s: s.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s")),
        lambda df: df.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s")), mode="update")
    # The last update of each key is the final aggregate.
    last = out.withColumn("b", F.input_file_name()).groupBy("k").agg(
        F.max_by(F.struct("n", "s"), F.col("n")).alias("x")).select("k", "x.n", "x.s")
    assert rows_of(last, ["k", "n", "s"]) == rows_of(expected, ["k", "n", "s"])


def test_drop_duplicates(spark, tmp_path, setup):
    out, expected = run(spark, tmp_path, lambda s: s.dropDuplicates(["id"]).select("id"),
                        lambda df: df.dropDuplicates(["id"]).select("id"))
    assert rows_of(out, ["id"]) == rows_of(expected, ["id"])


def test_drop_duplicates_within_watermark(spark, tmp_path, setup):
    out, expected = run(
        spark, tmp_path,
        lambda s: s.withWatermark("ts", "1 hour").dropDuplicatesWithinWatermark(["id"]).select("id"),
        lambda df: df.dropDuplicates(["id"]).select("id"))
    assert rows_of(out, ["id"]) == rows_of(expected, ["id"])


def test_stream_stream_inner_and_left_outer_join(spark, tmp_path, setup):
    def join(s, how):
        left = s.where("v % 2 = 0").select(F.col("id").alias("lid"), F.col("k").alias("lk"),
                                           F.col("ts").alias("lts")).withWatermark("lts", "20 seconds")
        right = s.where("v % 3 = 0").select(F.col("id").alias("rid"), F.col("k").alias("rk"),
                                            F.col("ts").alias("rts")).withWatermark("rts", "20 seconds")
        cond = F.expr("lk = rk AND rts BETWEEN lts - INTERVAL 5 SECONDS AND lts + INTERVAL 5 SECONDS")
        return left.join(right, cond, how).select("lid", "rid")

    out, expected = run(spark, tmp_path / "inner", lambda s: join(s, "inner"), lambda df: join(df, "inner"))
    assert rows_of(out, ["lid", "rid"]) == rows_of(expected, ["lid", "rid"])
    assert len(rows_of(out, ["lid", "rid"])) > 10
    out, expected = run(spark, tmp_path / "outer", lambda s: join(s, "left_outer"),
                        lambda df: join(df, "left_outer"), batches=6, restart_at=3)
    got = rows_of(out, ["lid", "rid"])
    # Unmatched left rows are emitted once the watermark passes them: every one emitted so
    # far must be right, and every matched pair must be there.
    matched = [r for r in rows_of(expected, ["lid", "rid"]) if r[1] is not None]
    assert [r for r in got if r[1] is not None] == matched
    unmatched = {r for r in got if r[1] is None}
    assert unmatched and unmatched <= set(rows_of(expected, ["lid", "rid"]))


def test_session_window(spark, tmp_path, setup):
    def sessions(s):
        return (s.withWatermark("ts", "5 seconds").groupBy(F.session_window("ts", "3 seconds"), "k")
                .agg(F.count("*").alias("n")).select("k", "session_window.start", "session_window.end", "n"))

    out, expected = run(spark, tmp_path, sessions, sessions, batches=5, restart_at=2)
    got = rows_of(out, ["k", "start", "end", "n"])
    # Append mode emits closed sessions: all of them must equal the batch result's. (Which
    # ones are closed when the query stops is not a plain watermark rule: with Spark's own
    # HDFSBackedStateStoreProvider too, sessions that the last data batch extended stay open
    # even where the recorded watermark has passed their end.)
    assert got and set(got) <= set(rows_of(expected, ["k", "start", "end", "n"]))


def test_apply_in_pandas_with_state(spark, tmp_path, setup):
    import pandas as pd
    from pyspark.sql.streaming.state import GroupStateTimeout

    def count(key, pdfs, state):
        n = state.get[0] if state.exists else 0
        for pdf in pdfs:
            n += len(pdf)
        state.update((n,))
        yield pd.DataFrame({"k": [key[0]], "n": [n]})

    def build(s):
        return s.groupBy("k").applyInPandasWithState(count, "k long, n long", "n long", "update",
                                                      GroupStateTimeout.NoTimeout)

    out, expected = run(spark, tmp_path, build,
                        lambda df: df.groupBy("k").agg(F.count("*").alias("n")), mode="update")
    final = out.groupBy("k").agg(F.max("n").alias("n"))
    assert rows_of(final, ["k", "n"]) == rows_of(expected, ["k", "n"])
