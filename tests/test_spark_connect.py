"""Spark Connect: a local Spark Connect server started with the jar and the plugin's settings
(what `--conf` users do); a client configures the checkpoint storage with settings only and
runs a stateful query whose state lands where the storage says; the py4j wrappers that need
the driver say that they need a classic session."""
import os
import socket
import subprocess
import sys
import time

import pytest

from spark_checkpoint_storage.bundled_jar import bundled_jar_path
from spark_checkpoint_storage.checkpoint_config import (
    FILE_MANAGER_CLASS,
    LISTENER_CLASS,
    PLUGIN_CLASS,
    PROVIDER_CLASS,
    ExternalizedCheckpointCleanup,
    get_checkpoint_config,
)
from spark_checkpoint_storage.session import configure_spark_with_checkpoint_storage
from spark_checkpoint_storage.errors import (
    ClassicSessionRequiredException,
    StaticConfigurationException,
)

pytest.importorskip("grpc", reason="Spark Connect's Python dependencies (pyspark[connect])")

VENV_BIN = os.path.dirname(sys.executable)


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def server_command(port):
    """How a user starts the server: the jar and every setting the plugin needs, as --conf."""
    confs = {
        "spark.plugins": PLUGIN_CLASS,
        "spark.sql.streaming.streamingQueryListeners": LISTENER_CLASS,
        "spark.sql.streaming.stateStore.providerClass": PROVIDER_CLASS,
        "spark.sql.streaming.checkpointFileManagerClass": FILE_MANAGER_CLASS,
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "768m",
    }
    cmd = [os.path.join(VENV_BIN, "spark-submit"), "--master", "local[2]",
           "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--name", "spark-checkpoint-storage connect test", "--jars", bundled_jar_path()]
    for k, v in confs.items():
        cmd += ["--conf", "%s=%s" % (k, v)]
    return cmd


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log_path = tmp_path_factory.mktemp("connect") / "server.log"
    env = dict(os.environ)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    log = open(log_path, "w")
    proc = subprocess.Popen(server_command(port), stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    try:
        deadline = time.time() + 180
        while True:
            assert proc.poll() is None, "the Connect server exited:\n" + log_path.read_text()[-5000:]
            with socket.socket() as s:
                if s.connect_ex(("localhost", port)) == 0:
                    break
            assert time.time() < deadline, "the Connect server did not listen:\n" + \
                log_path.read_text()[-5000:]
            time.sleep(1)
        yield "sc://localhost:%d" % port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def spark(server):
    from pyspark.sql import SparkSession

    before = dict(os.environ)
    session = SparkSession.builder.remote(server).getOrCreate()
    try:
        yield session
    finally:
        session.stop()
        # The Connect client marks the process as Connect-only (SPARK_CONNECT_MODE_ENABLED,
        # ...): undo it, so that later tests and their subprocesses get classic sessions.
        for key in set(os.environ) - set(before):
            del os.environ[key]
        os.environ.update(before)


def test_configuration_only_use_on_a_connect_server(spark, tmp_path):
    from pyspark.sql import functions as F

    assert type(spark).__module__.startswith("pyspark.sql.connect")
    cp = str(tmp_path / "cp")
    # Settings only, set from the client: the storage, its inline threshold, retention.
    spark.conf.set("spark.sql.streaming.checkpointStorage", "filesystem")
    spark.conf.set("spark.sql.streaming.checkpointStorage.checkpointPath", cp)
    config = get_checkpoint_config(spark)
    config.set_num_retained_checkpoints(5)
    assert config.get_num_retained_checkpoints() == 5
    assert spark.conf.get("spark.sql.streaming.minBatchesToRetain") == "5"

    source = str(tmp_path / "source")
    checkpoint = str(tmp_path / "checkpoint")
    os.makedirs(source)
    query = (spark.readStream.schema("k long, v long").parquet(source).groupBy("k")
             .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
             .writeStream.outputMode("complete").format("memory").queryName("connect_counts")
             .option("checkpointLocation", checkpoint).start())
    try:
        for b in range(3):
            spark.createDataFrame([(k, b) for k in range(10)], "k long, v long").coalesce(1) \
                .write.mode("append").parquet(source)
            query.processAllAvailable()
        rows = sorted((r.k, r.n, r.s) for r in spark.table("connect_counts").collect())
        assert rows == [(k, 3, 3) for k in range(10)]

        # The py4j wrappers that need the driver say so.
        from spark_checkpoint_storage.inspection import inspect_checkpoint
        from spark_checkpoint_storage.savepoints import savepoint

        with pytest.raises(ClassicSessionRequiredException, match="needs a classic SparkSession"):
            savepoint(query, str(tmp_path / "sp"))
        with pytest.raises(ClassicSessionRequiredException, match="checkpoint location"):
            inspect_checkpoint(query)
    finally:
        query.stop()

    # The state went where the storage said: packed inline, one pack per batch, no state file
    # of its own; the checkpoint records the storage.
    files = sorted(os.path.relpath(os.path.join(d, f), checkpoint)
                   for d, _, fs in os.walk(checkpoint) for f in fs)
    assert not [f for f in files if ".heap-delta" in f], files
    assert len([f for f in files if f.startswith("state-packs/")]) >= 1, files
    with open(os.path.join(checkpoint, "checkpoint-storage")) as f:
        marker = f.read()
    assert "storage=FileSystemCheckpointStorage" in marker and "persistent=true" in marker


def test_storage_objects_set_on_a_connect_session(spark, tmp_path):
    """Storages are built in a local JVM (no driver through py4j) and travel as settings."""
    from spark_checkpoint_storage.checkpoint_storage import FileSystemCheckpointStorage

    config = get_checkpoint_config(spark)
    try:
        config.set_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path / "cp"), 1024))
        assert spark.conf.get("spark.sql.streaming.checkpointStorage.app.kind") == "filesystem"
        assert spark.conf.get("spark.sql.streaming.checkpointStorage.app.fileStateSizeThreshold") == "1024"
        storage = config.get_checkpoint_storage()
        assert type(storage) is FileSystemCheckpointStorage
        assert storage.get_min_file_size_threshold() == 1024
        assert storage.get_checkpoint_path() == str(tmp_path / "cp")
    finally:
        for key in ("kind", "checkpointPath", "fileStateSizeThreshold"):
            spark.conf.unset("spark.sql.streaming.checkpointStorage.app." + key)


def test_static_settings_and_helpers_on_connect(spark, server):
    from pyspark.sql import SparkSession

    config = get_checkpoint_config(spark)
    assert (config.get_externalized_checkpoint_cleanup()
            == ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    with pytest.raises(StaticConfigurationException, match="Spark Connect server"):
        config.set_externalized_checkpoint_cleanup(ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION)
    with pytest.raises(ClassicSessionRequiredException) as err:
        configure_spark_with_checkpoint_storage(SparkSession.builder.remote(server))
    message = str(err.value)
    assert "--jars %s" % bundled_jar_path() in message
    assert "spark.plugins=%s" % PLUGIN_CLASS in message


def test_docs_connect_examples(spark, server, tmp_path):
    """The docs' Spark Connect blocks: the server command is the one this module starts
    (same class, jar and settings), and the client block runs against it."""
    import re

    from test_readme_examples import connect_blocks

    (server_block,) = [b for b in connect_blocks("bash") if "SparkConnectServer" in b]
    args = server_command(0)
    for conf in re.findall(r"--conf (\S+)", server_block):
        assert conf in args, conf
    assert "org.apache.spark.sql.connect.service.SparkConnectServer" in args
    assert "--jars" in server_block and "python -m spark_checkpoint_storage jar" in server_block

    (client_block,) = [b for b in connect_blocks("python") if ".remote(" in b]
    code = (client_block.replace("sc://localhost:15002", server)
            .replace("/tmp/scs-connect-cp", str(tmp_path / "cp")))
    exec(compile(code, "docs/python-guide.md (Spark Connect)", "exec"), {})
    assert spark.conf.get("spark.sql.streaming.checkpointStorage") == "filesystem"
    assert spark.conf.get("spark.sql.streaming.checkpointStorage.checkpointPath") == str(tmp_path / "cp")
