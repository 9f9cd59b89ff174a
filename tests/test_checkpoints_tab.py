"""The "Checkpoints" tab of Spark's live UI and the plugin's metrics, on a running local[2]
session: the tab's pages and their JSON fetched over HTTP agree with what ``inspect`` reads
from the checkpoint, a restart shows the batch it restored, a refused state commit shows as a
failure, a query on Spark's own file manager shows why it has no entry, and Spark's CSV
metrics sink and its JMX sink carry the same values."""
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest
from pyspark.sql import functions as F
from pyspark.sql.utils import StreamingQueryException

from spark_checkpoint_storage.checkpoint_config import get_checkpoint_config
from spark_checkpoint_storage.checkpoint_storage import (
    DriverCheckpointStorage,
    FileSystemCheckpointStorage,
)
from spark_checkpoint_storage.inspection import inspect_checkpoint
from spark_checkpoint_storage.jvm_names import spark_file_manager_class
from support.batch_times import assert_row_agrees

SCHEMA = "k long, v long"
HISTORY = 4
METRICS_DIR = tempfile.mkdtemp(prefix="scs-metrics-")
PLUGIN = "io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin"
APP_PREFIX = "spark.sql.streaming.checkpointStorage.app."

#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {
    "spark.ui.enabled": "true",
    "spark.ui.port": "0",
    "spark.sql.shuffle.partitions": "2",
    # The tab keeps as many batches per query as Spark keeps progress updates.
    "spark.sql.streaming.numRecentProgressUpdates": str(HISTORY),
    # No snapshots: a batch's state files are then exactly the deltas its commit wrote.
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "1000",
    "spark.sql.streaming.checkpointStorage.driver.maxTotalInlineSize": "4m",
    "spark.metrics.conf.*.sink.csv.class": "org.apache.spark.metrics.sink.CsvSink",
    "spark.metrics.conf.*.sink.csv.period": "1",
    "spark.metrics.conf.*.sink.csv.unit": "seconds",
    "spark.metrics.conf.*.sink.csv.directory": METRICS_DIR,
    "spark.metrics.conf.*.sink.jmx.class": "org.apache.spark.metrics.sink.JmxSink",
}


def get(spark, path):
    url = spark.sparkContext.uiWebUrl.rstrip("/") + path
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200, url
        return r.read().decode("utf-8")


def get_json(spark, path):
    return json.loads(get(spark, path))


def wait_for(what, fn, deadline_s=60):
    """fn() until it returns a true value; the tab's facts are posted asynchronously."""
    end = time.monotonic() + deadline_s
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError("waited in vain for " + what)
        time.sleep(0.2)


def query_json(spark, query_id):
    return get_json(spark, "/checkpoints/query/json?id=" + query_id)


def start(spark, root, name, source="source"):
    src = os.path.join(str(root), source)
    os.makedirs(src, exist_ok=True)
    return (spark.readStream.schema(SCHEMA).parquet(src).groupBy("k")
            .agg(F.count("*").alias("n"))
            .writeStream.queryName(name).outputMode("update").format("noop")
            .option("checkpointLocation", os.path.join(str(root), "checkpoint")).start())


def add_batch(spark, root, query, b, keys=30):
    spark.createDataFrame([(k, b) for k in range(keys)], SCHEMA).coalesce(1) \
        .write.mode("append").parquet(os.path.join(str(root), "source"))
    query.processAllAvailable()


def unset_storage(spark):
    for key in ("kind", "checkpointPath", "fileStateSizeThreshold", "maxStateSize"):
        spark.conf.unset(APP_PREFIX + key)


@pytest.fixture(scope="module")
def restarted(spark, tmp_path_factory):
    """A query that packs its state for 3 batches, stops, and restarts on its checkpoint with
    threshold 0 for 2 more batches, where every state file is a file of its own."""
    root = tmp_path_factory.mktemp("tab")
    config = get_checkpoint_config(spark)
    config.set_checkpoint_storage(FileSystemCheckpointStorage(str(root / "cp")))
    query = start(spark, root, "tab_fs")
    first_run = str(query.runId)
    for b in range(3):
        add_batch(spark, root, query, b)
    query_id = str(query.id)
    wait_for("batch 2 in the tab", lambda: (query_json(spark, query_id).get("latestBatch") or {}).get("batchId") == 2)
    query.stop()
    stopped = wait_for("the stop in the tab", lambda: (lambda j: j if j["status"] == "stopped" else None)(
        query_json(spark, query_id)))
    config.set_checkpoint_storage(FileSystemCheckpointStorage(str(root / "cp"), 0))
    query = start(spark, root, "tab_fs")
    for b in range(3, 5):
        add_batch(spark, root, query, b)
    wait_for("batch 4 in the tab", lambda: (query_json(spark, query_id).get("latestBatch") or {}).get("batchId") == 4)
    yield {"root": root, "checkpoint": os.path.join(str(root), "checkpoint"), "query": query,
           "id": query_id, "first_run": first_run, "stopped": stopped}
    query.stop()
    unset_storage(spark)


def test_history_agrees_with_inspect(spark, restarted):
    tab = query_json(spark, restarted["id"])
    info = inspect_checkpoint(restarted["checkpoint"]).to_dict()
    by_batch = {b["batchId"]: b for b in info["batches"]}
    packs = {p["batchId"]: p for p in info["packs"]}

    assert tab["ours"] is True
    assert tab["name"] == "tab_fs"
    assert tab["checkpoint"].endswith("/checkpoint")
    assert tab["provider"].endswith("HeapStateStoreProvider")
    assert tab["statePartitions"] == 2
    assert tab["storage"].startswith("FileSystemCheckpointStorage")
    # Bounded: the last numRecentProgressUpdates batches of the 5 committed.
    assert [r["batchId"] for r in tab["history"]] == [1, 2, 3, 4]
    assert tab["batchesCommitted"] == 5
    assert info["lastCommittedBatch"] == 4
    for row in tab["history"]:
        assert_row_agrees(row, by_batch)
    # Batches 1-2 were packed, 3-4 written as files of their own (threshold 0).
    for row in tab["history"]:
        if row["batchId"] <= 2:
            assert row["inlineBytes"] > 0 and row["fileBytes"] == 0
            assert row["packBytes"] == packs[row["batchId"]]["bytes"] > 0
            assert row["packName"] == packs[row["batchId"]]["name"]
        else:
            assert row["inlineBytes"] == 0 and row["fileBytes"] > 0
            assert row["packBytes"] == 0 and row["packName"] == ""

    summary = tab["summary"]
    sizes = [r["inlineBytes"] + r["fileBytes"] for r in tab["history"]]
    assert summary["batches"] == 4
    assert summary["stateBytes"] == {"min": min(sizes), "avg": round(sum(sizes) / 4.0), "max": max(sizes)}
    durations = [r["offsetsToCommitMs"] for r in tab["history"]]
    assert summary["offsetsToCommitMs"]["min"] == min(durations)
    assert summary["offsetsToCommitMs"]["max"] == max(durations)


def test_restart_shows_the_restored_batch(spark, restarted):
    stopped = restarted["stopped"]
    assert stopped["status"] == "stopped" and stopped["restoredBatchId"] == -1
    assert stopped["storage"].startswith("FileSystemCheckpointStorage")
    assert stopped["runId"] == restarted["first_run"]
    tab = query_json(spark, restarted["id"])
    assert tab["status"] == "running"
    assert tab["runId"] == str(restarted["query"].runId) != restarted["first_run"]
    assert tab["restoredBatchId"] == 2
    commit_2 = [b for b in inspect_checkpoint(restarted["checkpoint"]).to_dict()["batches"] if b["batchId"] == 2][0]
    assert tab["restoredBatchCommittedAtMs"] == commit_2["committedAtMs"]
    assert tab["restoredAtMs"] >= commit_2["committedAtMs"]
    assert tab["failures"] == 0


def test_configuration_says_where_values_came_from(spark, restarted):
    settings = {s["key"]: (s["value"], s["source"]) for s in query_json(spark, restarted["id"])["settings"]}
    assert settings[APP_PREFIX + "fileStateSizeThreshold"] == ("0", "session")
    assert settings["spark.sql.streaming.checkpointStorage.driver.maxTotalInlineSize"] == \
        ("4m", "Spark configuration")
    assert settings["spark.sql.streaming.checkpointStorage.writeBufferSize"] == ("4k", "default")


def test_overview_and_html_pages(spark, restarted):
    overview = get_json(spark, "/checkpoints/json")
    mine = [q for q in overview["queries"] if q["queryId"] == restarted["id"]]
    assert len(mine) == 1
    assert mine[0]["latestBatch"]["batchId"] == 4
    assert mine[0]["restoredBatchId"] == 2
    assert overview["driver"]["maxTotalInlineSize"] == 4 * 1024 * 1024
    assert overview["driver"]["inlineBytesHeld"] >= 0

    html = get(spark, "/checkpoints/")
    assert "checkpoints-queries" in html and "tab_fs" in html and restarted["id"] in html
    page = get(spark, "/checkpoints/query/?id=" + restarted["id"])
    for table in ("checkpoints-overview", "checkpoints-summary", "checkpoints-history", "checkpoints-settings"):
        assert 'id="%s"' % table in page
    history = page.split('id="checkpoints-history"')[1].split('id="checkpoints-settings"')[0]
    # A batch's row: its id, then its commit time as a readable local time.
    rows = re.findall(r"<tr>\s*<td>\s*(\d+)\s*</td>\s*<td>\s*\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\s*</td>", history)
    assert rows == ["4", "3", "2", "1"]
    assert "<details>" in page and "1 operator" in page
    assert "0 batches" not in page
    # An unknown query is said so, in both twins.
    assert "error" in query_json(spark, "00000000-0000-0000-0000-000000000000")


def test_refused_state_commit_shows_as_failure(spark, tmp_path):
    """Driver storage over driver.maxTotalInlineSize (4m here): the coordinator refuses the
    state file, the batch fails, and the tab counts the failure."""
    # Files up to 64 MB pass the executor's maxStateSize check and reach the coordinator.
    get_checkpoint_config(spark).set_checkpoint_storage(DriverCheckpointStorage(max_state_size=64 << 20))
    try:
        src = tmp_path / "source"
        # About 11 MB of state per partition: over the driver's bound of 4m.
        spark.range(120000).select(F.col("id").alias("k"), F.col("id").alias("v")).coalesce(1) \
            .write.parquet(str(src))
        query = (spark.readStream.schema(SCHEMA).parquet(str(src))
                 .groupBy(F.sha2(F.col("k").cast("string"), 256).alias("h"),
                          F.sha2(F.col("v").cast("string"), 512).alias("h2"))
                 .count().writeStream.queryName("tab_too_big").outputMode("update").format("noop")
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        with pytest.raises(StreamingQueryException):
            query.awaitTermination(120)
        query_id = str(query.id)
        tab = wait_for("the failure in the tab", lambda: (lambda j: j if j["status"] == "failed"
                                                          and j["failures"] >= 1 else None)(query_json(spark, query_id)))
    finally:
        unset_storage(spark)
    assert tab["storage"].startswith("DriverCheckpointStorage")
    failure = tab["recentFailures"][0]
    assert failure["kind"] == "StateSizeLimit" and failure["batchId"] == 0
    assert "maxTotalInlineSize" in failure["message"]
    assert "StateSizeLimit" in tab["exception"] or "exceed the limit" in tab["exception"]
    assert tab["history"] == []
    page = get(spark, "/checkpoints/query/?id=" + query_id)
    assert 'id="checkpoints-failures"' in page and "StateSizeLimit" in page


def test_query_without_our_file_manager_has_a_line(spark, tmp_path):
    key = "spark.sql.streaming.checkpointFileManagerClass"
    previous = spark.conf.get(key)
    spark.conf.set(key, spark_file_manager_class())
    try:
        src = tmp_path / "source"
        spark.range(5).coalesce(1).write.parquet(str(src))
        query = (spark.readStream.schema("id long").parquet(str(src)).writeStream
                 .queryName("tab_foreign").format("noop")
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        query.processAllAvailable()
        query.stop()
    finally:
        spark.conf.set(key, previous)
    query_id = str(query.id)
    overview = wait_for("the foreign query", lambda: (lambda j: j if any(
        q["queryId"] == query_id for q in j["withoutEntry"]) else None)(get_json(spark, "/checkpoints/json")))
    line = [q for q in overview["withoutEntry"] if q["queryId"] == query_id][0]
    assert line["name"] == "tab_foreign" and "checkpoint file manager" in line["reason"]
    assert all(q["queryId"] != query_id for q in overview["queries"])
    assert "tab_foreign" in get(spark, "/checkpoints/") and "has no entry" in get(spark, "/checkpoints/")


def read_metric(name):
    """The last value Spark's CSV sink wrote for the plugin's metric ``name``; None if not yet."""
    files = glob.glob(os.path.join(METRICS_DIR, "*.driver.plugin.%s.%s.csv" % (PLUGIN, name)))
    if not files:
        return None
    with open(files[0]) as f:
        rows = [r for r in csv.reader(f) if r and r[0] != "t"]
    return int(float(rows[-1][1])) if rows else None


def expected_metrics(spark, restarted):
    """The plugin's metrics of the restarted query and the driver, as its tab shows them."""
    latest = query_json(spark, restarted["id"])["history"][-1]
    assert latest["fileBytes"] > 0
    return {
        "query.tab_fs.lastBatchId": 4,
        "query.tab_fs.stateInlineBytes": latest["inlineBytes"],
        "query.tab_fs.stateFileBytes": latest["fileBytes"],
        "query.tab_fs.stateFilesWritten": latest["stateFiles"],
        "query.tab_fs.packBytes": latest["packBytes"],
        "query.tab_fs.commitDurationMs": latest["offsetsToCommitMs"],
        "driver.maxTotalInlineSize": 4 * 1024 * 1024,
    }


def test_metrics_reach_the_csv_sink(spark, restarted):
    for name, value in expected_metrics(spark, restarted).items():
        wait_for("%s = %s in the CSV sink" % (name, value), lambda: read_metric(name) == value)
    wait_for("coordinator.requests in the CSV sink", lambda: (read_metric("coordinator.requests") or 0) > 0)
    assert read_metric("coordinator.refusals") is not None
    assert read_metric("driver.inlineBytesHeld") is not None
    # A histogram: its count first. The query's stages wrote packs, each timed.
    wait_for("coordinator.stageEndWaitMs in the CSV sink",
             lambda: (read_metric("coordinator.stageEndWaitMs") or 0) > 0)


def test_metrics_reach_the_jmx_sink(spark, restarted):
    """Spark's JMX sink registers every metric of the plugin as an MBean of the driver JVM's
    platform MBean server (domain ``metrics``, the metric's full name as its ``name``)."""
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
    prefix = "%s.driver.plugin.%s." % (spark.sparkContext.applicationId, PLUGIN)

    def call(method, *args):
        # Through the MBeanServer interface: py4j cannot call the methods of the server's
        # class, which is in a package java.management does not export.
        m = [m for m in jvm.java.lang.Class.forName("javax.management.MBeanServer").getMethods()
             if m.getName() == method and m.getParameterCount() == len(args)][0]
        array = gateway.new_array(jvm.java.lang.Object, len(args))
        for i, a in enumerate(args):
            array[i] = a
        return m.invoke(server, array)

    def beans():
        found = {}
        for bean in call("queryNames", jvm.javax.management.ObjectName("metrics:*"), None):
            name = bean.getKeyProperty("name").strip('"')
            if name.startswith(prefix):
                found[name[len(prefix):]] = bean
        return found

    def value(bean):
        return int(call("getAttribute", bean, "Value"))

    expected = expected_metrics(spark, restarted)
    on_jmx = wait_for("the plugin's metrics on JMX",
                      lambda: (lambda b: b if set(expected) <= set(b) else None)(beans()))
    assert {name: value(on_jmx[name]) for name in expected} == expected
    assert value(on_jmx["coordinator.requests"]) > 0
    assert value(on_jmx["coordinator.refusals"]) >= 0
    assert value(on_jmx["driver.inlineBytesHeld"]) >= 0
    waits = on_jmx["coordinator.stageEndWaitMs"]
    assert int(call("getAttribute", waits, "Count")) > 0
    assert float(call("getAttribute", waits, "99thPercentile")) >= float(call("getAttribute", waits, "50thPercentile")) >= 0


def test_a_browser_renders_the_history_table(spark, restarted, tmp_path):
    """Headless Chromium (dev/chromium installs it) opens the query's page as a user would:
    the document it renders holds the history table's rows, newest first, and its picture of
    the page is not blank."""
    chromium = shutil.which("chromium")
    assert chromium, "no Chromium: dev/bootstrap installs Debian's package as root (dev/chromium)"
    url = spark.sparkContext.uiWebUrl.rstrip("/") + "/checkpoints/query/?id=" + restarted["id"]
    base = [chromium, "--headless", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900",
            "--user-data-dir=" + str(tmp_path / "profile")]
    if os.geteuid() == 0:
        base.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert "Checkpoints of query tab_fs" in dom
    history = dom.split('id="checkpoints-history"')[1].split('id="checkpoints-settings"')[0]
    rows = re.findall(r"<tr>\s*<td>\s*(\d+)\s*</td>\s*<td>\s*\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\s*</td>", history)
    assert rows == ["4", "3", "2", "1"]
    picture = tmp_path / "tab.png"
    subprocess.run(base + ["--screenshot=" + str(picture), url], capture_output=True, timeout=120, check=True)
    # A blank 1280x900 page compresses to a few KB; the tab's tables take far more.
    assert picture.stat().st_size > 20000
