"""The "Checkpoints" tab on ``local-cluster`` and in Spark's History Server (issue 31): a driver
of its own on ``local-cluster[2,1,1024]`` (executor JVMs of their own) runs a short streaming
query across a restart with the event log on, reads its live tab's JSON, and stops; Spark's
History Server, started here with nothing but pyspark's jars and ours on its class path,
rebuilds the tab from the event log. Both show the batches ``inspect`` reads from the
checkpoint."""
import json
import os
import re
import subprocess
import sys
import textwrap
import urllib.request

import pytest

from spark_checkpoint_storage.bundled_jar import bundled_jar_path
from support.batch_times import assert_row_agrees
from support.realfs import _stop, _wait, free_ports, pyspark_jars

#: The driver runs on local-cluster: executor JVMs of their own, started by the driver.
pytestmark = pytest.mark.cluster

#: The driver (local-cluster[2,1,1024], its web UI on): 3 batches of a grouped count on file storage with threshold 0 for batch 2 only
#: (a restart in between: the tab's restored batch), the event log on; writes its live tab's
#: JSON once the query stopped, what inspect reads and the application's id to out.json, then
#: stops its session (the event log is then complete).
DRIVER = """
    import json, os, sys, time, urllib.request
    from pyspark.sql import SparkSession, functions as F
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
    from spark_checkpoint_storage.checkpoint_config import get_checkpoint_config
    from spark_checkpoint_storage.checkpoint_storage import FileSystemCheckpointStorage
    from spark_checkpoint_storage.inspection import inspect_checkpoint

    root, logs = sys.argv[1], sys.argv[2]
    spark = configure_spark_with_checkpoint_storage(
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.ui.enabled", "true")
        .config("spark.ui.port", "0")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", "file://" + logs)).getOrCreate()
    src, checkpoint = os.path.join(root, "source"), os.path.join(root, "checkpoint")
    config = get_checkpoint_config(spark)

    def start():
        return (spark.readStream.schema("k long, v long").parquet(src).groupBy("k")
                .agg(F.count("*").alias("n")).writeStream.queryName("history_q")
                .outputMode("update").format("noop").option("checkpointLocation", checkpoint).start())

    def batch(query, b):
        spark.createDataFrame([(k, b) for k in range(20)], "k long, v long").coalesce(1) \\
            .write.mode("append").parquet(src)
        query.processAllAvailable()

    config.set_checkpoint_storage(FileSystemCheckpointStorage(os.path.join(root, "cp")))
    os.makedirs(src)
    query = start()
    batch(query, 0)
    batch(query, 1)
    query.stop()
    config.set_checkpoint_storage(FileSystemCheckpointStorage(os.path.join(root, "cp"), 0))
    query = start()
    batch(query, 2)
    query.stop()
    executors = len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1
    url = spark.sparkContext.uiWebUrl.rstrip("/") + "/checkpoints/query/json?id=" + str(query.id)
    deadline = time.monotonic() + 60
    while True:  # the tab's facts arrive asynchronously
        with urllib.request.urlopen(url, timeout=30) as r:
            live = json.loads(r.read().decode("utf-8"))
        if (live.get("status") == "stopped" and len(live.get("history", [])) == 3) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    out = {"appId": spark.sparkContext.applicationId, "queryId": str(query.id),
           "runId": str(query.runId), "inspect": inspect_checkpoint(checkpoint).to_dict(),
           "live": live, "executors": executors}
    spark.stop()
    with open(os.path.join(root, "out.json"), "w") as f:
        json.dump(out, f)
"""


#: the History Server's spark.sql.streaming.numRecentProgressUpdates: 2 of the query's 3 batches
HISTORY = 2


class HistoryServer:
    """Spark's History Server in a JVM of its own on a free port of 127.0.0.1, reading
    ``log_dir``; its class path is pyspark's jars and this package's jar, nothing else."""

    def __init__(self, log_dir: str, work: str):
        self.port = free_ports(1)[0]
        self.log = os.path.join(work, "history-server.log")
        cp = "%s/*:%s" % (pyspark_jars(), bundled_jar_path())
        cmd = ["java", "-Xmx512m", "-cp", cp,
               "-Dspark.history.fs.logDirectory=file://" + log_dir,
               "-Dspark.history.fs.update.interval=1s",
               "-Dspark.history.ui.port=%d" % self.port,
               # The replay keeps as many batches per query as the History Server's bound says.
               "-Dspark.sql.streaming.numRecentProgressUpdates=%d" % HISTORY,
               "org.apache.spark.deploy.history.HistoryServer"]
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")  # its web UI binds there only
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                                         start_new_session=True, env=env)
        self.url = "http://127.0.0.1:%d" % self.port

    def get(self, path: str):
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            assert r.status == 200, path
            return r.read().decode("utf-8")

    def wait_for_app(self, app_id: str, timeout: float = 60):
        def listed():
            try:
                return any(a["id"] == app_id for a in json.loads(self.get("/api/v1/applications")))
            except (OSError, ValueError):
                return False
        _wait(self.proc, listed, "the History Server listing " + app_id, self.log, timeout)

    def stop(self):
        _stop(self.proc)


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    """The driver's run: its folder, its out.json, and the History Server on its event logs
    (started first: it starts while the driver runs)."""
    root = tmp_path_factory.mktemp("history")
    logs = root / "event-logs"
    logs.mkdir()
    script = root / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    server = HistoryServer(str(logs), str(root))
    try:
        result = subprocess.run([sys.executable, str(script), str(root), str(logs)], capture_output=True,
                                text=True, timeout=300, cwd=str(root))
        assert result.returncode == 0, result.stderr[-4000:]
        with open(str(root / "out.json")) as f:
            out = json.load(f)
        yield server, out
    finally:
        server.stop()


def assert_tab_agrees_with_inspect(tab, out, batch_ids):
    """The query page's JSON ``tab`` shows the query's run, restart and ``batch_ids`` as inspect
    read them from the checkpoint: each batch's state files, inline and file bytes, commit time,
    offsets-to-commit time and pack."""
    info = out["inspect"]
    assert info["lastCommittedBatch"] == 2
    by_batch = {b["batchId"]: b for b in info["batches"]}
    packs = {p["batchId"]: p for p in info["packs"]}

    assert tab["ours"] is True
    assert tab["name"] == "history_q"
    assert tab["status"] == "stopped"
    assert tab["runId"] == out["runId"]
    assert tab["storage"].startswith("FileSystemCheckpointStorage")
    assert tab["provider"].endswith("HeapStateStoreProvider")
    assert tab["statePartitions"] == 2
    # The second run restored batch 1.
    assert tab["restoredBatchId"] == 1
    assert tab["restoredBatchCommittedAtMs"] == by_batch[1]["committedAtMs"]
    assert tab["batchesCommitted"] == 3
    assert tab["failures"] == 0
    assert [r["batchId"] for r in tab["history"]] == batch_ids
    for row in tab["history"]:
        assert_row_agrees(row, by_batch)
        if row["batchId"] <= 1:  # packed
            assert row["inlineBytes"] > 0 and row["fileBytes"] == 0
            assert (row["packName"], row["packBytes"]) == (packs[row["batchId"]]["name"], packs[row["batchId"]]["bytes"])
        else:  # in files of its own (threshold 0)
            assert row["inlineBytes"] == 0 and row["fileBytes"] > 0
            assert (row["packName"], row["packBytes"]) == ("", 0)
    settings = {s["key"]: (s["value"], s["source"]) for s in tab["settings"]}
    assert settings["spark.sql.streaming.checkpointStorage.app.fileStateSizeThreshold"] == ("0", "session")


def test_live_tab_on_local_cluster_agrees_with_inspect(driven):
    _, out = driven
    # State written by 2 executor JVMs; the tab gathered on the driver: every batch.
    assert out["executors"] == 2
    assert_tab_agrees_with_inspect(out["live"], out, [0, 1, 2])


def test_history_server_rebuilds_the_tab(driven):
    server, out = driven
    server.wait_for_app(out["appId"])
    app = "/history/%s" % out["appId"]
    tab = json.loads(server.get(app + "/checkpoints/query/json?id=" + out["queryId"]))
    # Bounded by the History Server's numRecentProgressUpdates (2), not the driver's (100).
    assert_tab_agrees_with_inspect(tab, out, [1, 2])

    overview = json.loads(server.get(app + "/checkpoints/json"))
    assert [q["queryId"] for q in overview["queries"]] == [out["queryId"]]
    assert overview["queries"][0]["latestBatch"]["batchId"] == 2

    html = server.get(app + "/checkpoints/")
    assert "checkpoints-queries" in html and "history_q" in html and out["queryId"] in html
    page = server.get(app + "/checkpoints/query/?id=" + out["queryId"])
    history = page.split('id="checkpoints-history"')[1].split('id="checkpoints-settings"')[0]
    rows = re.findall(r"<tr>\s*<td>\s*(\d+)\s*</td>\s*<td>\s*\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\s*</td>", history)
    assert rows == ["2", "1"]
