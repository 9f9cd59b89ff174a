"""get_checkpoint_config and configure_spark_with_checkpoint_storage: PyFlink's
test_check_point_config.py translated where Spark has the concept (constants, externalized
checkpoint cleanup), plus storages, retained checkpoints and static settings on builders and
on a running session, each checked on real streaming queries and the files they write."""
import os

import pytest
from pyspark.sql import SparkSession

from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
from spark_checkpoint_storage.checkpoint_config import (
    CheckpointConfig,
    ExternalizedCheckpointCleanup,
    get_checkpoint_config,
)
from spark_checkpoint_storage.checkpoint_storage import (
    CustomCheckpointStorage,
    DriverCheckpointStorage,
    FileSystemCheckpointStorage,
)
from spark_checkpoint_storage.errors import (
    IllegalCheckpointStorageArgumentException,
    StaticConfigurationException,
)
from spark_checkpoint_storage.java_gateway import get_gateway

from support import aggregation
from support.aggregation import files_under
from test_checkpoint_storage_api import build_custom_storage_jar


@pytest.fixture(scope="module")
def custom_jar(tmp_path_factory):
    return build_custom_storage_jar(tmp_path_factory.mktemp("custom"))


@pytest.fixture(scope="module")
def spark(custom_jar, tmp_path_factory):
    root = tmp_path_factory.mktemp("session")
    builder = (SparkSession.builder.master("local[2]")
               .config("spark.sql.shuffle.partitions", 4)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.jars", custom_jar))
    storage = DriverCheckpointStorage(str(root / "driver-cp"), max_state_size=1 << 20)
    session = configure_spark_with_checkpoint_storage(builder, storage).getOrCreate()
    yield session
    session.stop()


def run_aggregation(spark, root, batches, keys=30):
    """The storage tests' aggregation, its state checked exactly; returns its checkpoint."""
    checkpoint = aggregation.run_aggregation(spark, root, batches, keys)
    assert aggregation.state_of(spark, checkpoint) == aggregation.expected(batches, keys)
    return checkpoint


# -- PyFlink's CheckpointConfigTests, translated ----------------------------------------------

def test_constant():
    listener = get_gateway().jvm.io.sparkcheckpointstorage.coordinator.CheckpointStorageQueryListener
    assert (ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION.value
            == listener.RetainOnCancellation())
    assert (ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION.value
            == listener.DeleteOnCancellation())
    options = get_gateway().jvm.io.sparkcheckpointstorage.storage.CheckpointStorageOptions
    from spark_checkpoint_storage import checkpoint_config as cc
    assert cc.STORAGE == options.Storage()
    assert cc.CHECKPOINT_PATH == options.CheckpointPath()
    assert cc.SAVEPOINT_PATH == options.SavepointPath()
    assert cc.APP_PREFIX == options.AppPrefix()
    assert cc.EXTERNALIZED_CLEANUP == options.ExternalizedCleanup()
    assert cc.DRIVER_MAX_TOTAL_INLINE_SIZE == options.DriverMaxTotalInlineSize()
    assert cc.EXECUTOR_MAX_REQUEST_BATCH_SIZE == options.ExecutorMaxRequestBatchSize()
    assert cc.ASYNC_STATE_WRITES == options.AsyncStateWrites()
    spark_keys = get_gateway().jvm.io.sparkcheckpointstorage.layout.SparkSettingKeys
    assert cc.SPARK_CHECKPOINT_LOCATION == spark_keys.CheckpointLocation()


def test_get_set_externalized_checkpoints_cleanup():
    config = get_checkpoint_config(SparkSession.builder)
    # Spark keeps every checkpoint on its file system: always externalized, retained by default.
    assert config.is_externalized_checkpoints_enabled()
    assert (config.get_externalized_checkpoint_cleanup()
            == ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    config.enable_externalized_checkpoints(ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    assert (config.get_externalized_checkpoint_cleanup()
            == ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    config.set_externalized_checkpoint_cleanup(ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION)
    assert (config.get_externalized_checkpoint_cleanup()
            == ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION)
    with pytest.raises(TypeError):
        config.set_externalized_checkpoint_cleanup("DELETE_ON_CANCELLATION")


# -- storages on a builder ------------------------------------------------------------------

def test_get_set_checkpoint_storage_on_a_builder():
    builder = SparkSession.builder
    config = get_checkpoint_config(builder)
    assert isinstance(config, CheckpointConfig)
    assert config.get_checkpoint_storage() is None

    config.set_checkpoint_storage(DriverCheckpointStorage(max_state_size=1000))
    storage = config.get_checkpoint_storage()
    assert type(storage) is DriverCheckpointStorage
    assert storage.get_max_state_size() == 1000
    assert storage.get_checkpoint_path() is None

    # Another storage replaces every setting of the previous one.
    config.set_checkpoint_storage(FileSystemCheckpointStorage("file:///tmp/cp", 2048))
    storage = config.get_checkpoint_storage()
    assert storage == FileSystemCheckpointStorage("file:///tmp/cp", 2048)
    assert not [k for k in builder._options if k.endswith("app.maxStateSize")]

    config.set_checkpoint_storage_dir("file:///tmp/other")
    assert config.get_checkpoint_storage() == FileSystemCheckpointStorage("file:///tmp/other")
    with pytest.raises(TypeError, match="takes a CheckpointStorage"):
        config.set_checkpoint_storage("filesystem")


def test_values_unset_in_code_come_from_configuration():
    builder = (SparkSession.builder
               .config("spark.sql.streaming.checkpointStorage.maxStateSize", "64k")
               .config("spark.sql.streaming.checkpointStorage.savepointPath", "file:///sp"))
    config = get_checkpoint_config(builder).set_checkpoint_storage(DriverCheckpointStorage())
    storage = config.get_checkpoint_storage()
    assert storage.get_max_state_size() == 64 * 1024
    assert storage.get_savepoint_path() == "file:///sp"
    # A value set in code wins.
    config.set_checkpoint_storage(DriverCheckpointStorage(max_state_size=100))
    assert config.get_checkpoint_storage().get_max_state_size() == 100


def test_storage_named_in_configuration():
    builder = SparkSession.builder.config("spark.sql.streaming.checkpointStorage", "filesystem")
    with pytest.raises(IllegalCheckpointStorageArgumentException,
                       match="needs a checkpoint directory"):
        get_checkpoint_config(builder).get_checkpoint_storage()
    builder.config("spark.sql.streaming.checkpointLocation", "/ckpt")
    storage = get_checkpoint_config(builder).get_checkpoint_storage()
    assert storage == FileSystemCheckpointStorage("/ckpt")
    assert storage.get_savepoint_path() == "/ckpt/savepoints"


def test_get_set_num_retained_checkpoints():
    config = get_checkpoint_config(SparkSession.builder)
    assert config.get_num_retained_checkpoints() == CheckpointConfig.DEFAULT_NUM_RETAINED_CHECKPOINTS == 100
    config.set_num_retained_checkpoints(3)
    assert config.get_num_retained_checkpoints() == 3
    for bad in (0, -1, "3", True):
        with pytest.raises(IllegalCheckpointStorageArgumentException, match="at least 1"):
            config.set_num_retained_checkpoints(bad)


def test_configure_keeps_existing_lists_and_sets_the_storage():
    builder = (SparkSession.builder.config("spark.plugins", "a.B")
               .config("spark.sql.streaming.stateStore.providerClass", "my.Provider"))
    configure_spark_with_checkpoint_storage(builder, FileSystemCheckpointStorage("file:///x", 0))
    options = builder._options
    assert options["spark.plugins"] == "a.B,io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin"
    assert options["spark.sql.streaming.stateStore.providerClass"] == "my.Provider"
    assert options["spark.sql.streaming.checkpointFileManagerClass"].endswith("StorageCheckpointFileManager")
    assert options["spark.jars"].endswith(".jar")
    assert options["spark.sql.streaming.checkpointStorage.app.kind"] == "filesystem"
    assert options["spark.sql.streaming.checkpointStorage.app.fileStateSizeThreshold"] == "0"


# -- a running session --------------------------------------------------------------------

def test_session_built_with_a_storage_uses_it(spark, tmp_path):
    config = get_checkpoint_config(spark)
    storage = config.get_checkpoint_storage()
    assert type(storage) is DriverCheckpointStorage
    assert storage.get_max_state_size() == 1 << 20
    checkpoint = run_aggregation(spark, tmp_path, batches=2)
    files = files_under(checkpoint)
    # Driver storage with a path: no state file of its own, packs under the checkpoint.
    assert not [f for f in files if f.endswith(".heap-delta")], files
    assert [f for f in files if f.startswith("state-packs/")], files
    with open(os.path.join(checkpoint, "checkpoint-storage")) as f:
        assert "storage=DriverCheckpointStorage" in f.read()


def test_storage_set_on_a_running_session_applies_to_new_queries(spark, tmp_path):
    config = get_checkpoint_config(spark)
    before = config.get_checkpoint_storage()
    try:
        config.set_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path / "cp"), 0))
        assert config.get_checkpoint_storage().get_min_file_size_threshold() == 0
        checkpoint = run_aggregation(spark, tmp_path, batches=2)
        deltas = [f for f in files_under(checkpoint) if f.endswith(".heap-delta")]
        assert len(deltas) == 8, deltas  # 4 partitions x 2 versions, each over 0 bytes
    finally:
        config.set_checkpoint_storage(before)
    assert config.get_checkpoint_storage() == before


def test_custom_storage_through_configure_and_a_query(spark, tmp_path):
    config = get_checkpoint_config(spark)
    before = config.get_checkpoint_storage()
    custom = CustomCheckpointStorage(spark._jvm.example.AllFilesCheckpointStorage())
    try:
        config.set_checkpoint_storage(custom)
        assert config.get_checkpoint_storage() == custom
        assert type(config.get_checkpoint_storage()) is CustomCheckpointStorage
        checkpoint = run_aggregation(spark, tmp_path, batches=2, keys=3)
        files = files_under(checkpoint)
        assert len([f for f in files if f.endswith(".heap-delta")]) == 8, files
        assert not [f for f in files if f.startswith("state-packs/")], files
    finally:
        config.set_checkpoint_storage(before)


def test_retained_checkpoints_on_a_running_session_purge_old_batches(spark, tmp_path):
    config = get_checkpoint_config(spark)
    try:
        config.set_num_retained_checkpoints(2)
        checkpoint = run_aggregation(spark, tmp_path, batches=5, keys=3)
        commits = sorted(int(f) for f in os.listdir(os.path.join(checkpoint, "commits"))
                         if f.isdigit())
        assert commits[-1] == 4
        assert len(commits) <= 3, commits  # Spark purges all but the last 2 (+ the one in flight)
    finally:
        spark.conf.unset("spark.sql.streaming.minBatchesToRetain")
    assert config.get_num_retained_checkpoints() == 100


def test_static_settings_refused_on_a_running_session(spark):
    config = get_checkpoint_config(spark)
    assert (config.get_externalized_checkpoint_cleanup()
            == ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    with pytest.raises(StaticConfigurationException) as err:
        config.set_externalized_checkpoint_cleanup(ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION)
    message = str(err.value)
    assert "spark.sql.streaming.checkpointStorage.externalizedCleanup is read only when the Spark session starts" in message
    assert "DELETE_ON_CANCELLATION" in message
    assert "--conf" in message
    assert err.value.getCondition() == "CHECKPOINT_STORAGE.STATIC_CONFIGURATION"
    # The value the session already has is accepted.
    config.set_externalized_checkpoint_cleanup(ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    with pytest.raises(StaticConfigurationException, match="spark.plugins"):
        config._conf.set("spark.plugins", "other.Plugin")
    # Executors read their request batch size when they start.
    with pytest.raises(StaticConfigurationException,
                       match="spark.sql.streaming.checkpointStorage.executor.maxRequestBatchSize"):
        config._conf.set("spark.sql.streaming.checkpointStorage.executor.maxRequestBatchSize", "2m")
