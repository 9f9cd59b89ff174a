"""
Every JVM name the Python package uses, in one place: the classes of the jar, Spark's classes
and setting keys it names, and the settings of the checkpoint storage. A test checks each one
against the jar and the running Spark, so a renamed JVM class or key fails there rather than
in a user's session.

Example:
::

    >>> from spark_checkpoint_storage import jvm_names
    >>> jvm_names.HEAP_PROVIDER_CLASS
    'io.sparkcheckpointstorage.provider.HeapStateStoreProvider'
    >>> jvm_names.MIGRATION_TARGETS["hdfs"]
    'org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider'
"""
from typing import Any, Dict, Optional, Tuple

__all__ = [
    "JVM_PACKAGE",
    "HEAP_PROVIDER_CLASS",
    "FILE_MANAGER_CLASS",
    "PLUGIN_CLASS",
    "LISTENER_CLASS",
    "BUILD_INFO_CLASS",
    "STORAGE_LOADER_CLASS",
    "HDFS_PROVIDER_CLASS",
    "ROCKSDB_PROVIDER_CLASS",
    "MIGRATION_TARGETS",
    "PROVIDER_CLASS_CONF",
    "FILE_MANAGER_CLASS_CONF",
    "ROCKSDB_CONF_PREFIX",
    "ROCKSDB_CHANGELOG_CHECKPOINTING_CONF",
    "ROCKSDB_BOUNDED_MEMORY_USAGE_CONF",
    "ROCKSDB_MAX_MEMORY_USAGE_MB_CONF",
    "ROCKSDB_BLOCK_CACHE_SIZE_MB_CONF",
    "ROCKSDB_COMPACT_ON_COMMIT_CONF",
    "spark_file_manager_class",
    "jvm_class",
]

#: The package of every JVM class of the jar.
JVM_PACKAGE = "io.sparkcheckpointstorage"

# -- classes of the jar ----------------------------------------------------------------------

#: The state store provider holding state in executor heap (Flink: HashMap state backend).
HEAP_PROVIDER_CLASS = JVM_PACKAGE + ".provider.HeapStateStoreProvider"
#: The checkpoint file manager that places state bytes in the checkpoint storage.
FILE_MANAGER_CLASS = JVM_PACKAGE + ".filemanager.StorageCheckpointFileManager"
#: The Spark plugin running the checkpoint coordinator on the driver.
PLUGIN_CLASS = JVM_PACKAGE + ".coordinator.CheckpointStoragePlugin"
#: The streaming query listener freeing a stopped query's driver memory.
LISTENER_CLASS = JVM_PACKAGE + ".coordinator.CheckpointStorageQueryListener"
#: The jar's version and Spark line.
BUILD_INFO_CLASS = JVM_PACKAGE + ".BuildInfo"
#: Resolves the checkpoint storage of a session's settings (Flink's precedence).
STORAGE_LOADER_CLASS = JVM_PACKAGE + ".storage.CheckpointStorageLoader"
#: The JVM entry points of savepoints, canonical savepoints, migration and inspection.
SAVEPOINTS_CLASS = JVM_PACKAGE + ".savepoint.Savepoints"
CANONICAL_SAVEPOINTS_CLASS = JVM_PACKAGE + ".migration.CanonicalSavepoints"
MIGRATION_CLASS = JVM_PACKAGE + ".migration.Migration"
MIGRATION_TRACKER_CLASS = JVM_PACKAGE + ".migration.MigrationTracker"
INSPECTOR_CLASS = JVM_PACKAGE + ".inspection.CheckpointInspector"
REPAIR_CLASS = JVM_PACKAGE + ".repair.CheckpointRepair"
#: Writes the JVM's results as JSON and lists their fields (``schemaJson()``).
RESULT_CODEC_CLASS = JVM_PACKAGE + ".results.ResultCodec"

# -- Spark's classes -------------------------------------------------------------------------

_STATE_PACKAGE = "org.apache.spark.sql.execution.streaming.state"
#: Spark's default state store provider.
HDFS_PROVIDER_CLASS = _STATE_PACKAGE + ".HDFSBackedStateStoreProvider"
#: Spark's RocksDB state store provider.
ROCKSDB_PROVIDER_CLASS = _STATE_PACKAGE + ".RocksDBStateStoreProvider"

#: The providers ``migrate(..., to=...)`` writes with, by short name.
MIGRATION_TARGETS: Dict[str, str] = {
    "heap": HEAP_PROVIDER_CLASS,
    "hdfs": HDFS_PROVIDER_CLASS,
    "rocksdb": ROCKSDB_PROVIDER_CLASS,
}


def spark_file_manager_class(spark_version: Optional[str] = None) -> str:
    """
    Spark's own checkpoint file manager (on ``file://`` and ``hdfs://``) of a Spark version
    (default: the installed pyspark's): its package moved in Spark 4.1.

    Example:
    ::

        >>> spark_file_manager_class("3.5.9")
        'org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager'
        >>> spark_file_manager_class("4.3.0")
        'org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager'

    :param spark_version: a Spark version such as ``"4.1.4"``; None for the installed pyspark.
    :return: the class name.
    """
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    moved = "checkpointing." if _line(spark_version) >= (4, 1) else ""
    return "org.apache.spark.sql.execution.streaming." + moved + "FileContextBasedCheckpointFileManager"


def jvm_class(jvm: Any, name: str) -> Any:
    """
    The py4j view of the JVM class ``name`` (one of this module's names) in the JVM ``jvm``
    (a gateway's ``jvm``).

    Example:
    ::

        >>> from spark_checkpoint_storage.java_gateway import get_gateway
        >>> jvm_class(get_gateway().jvm, BUILD_INFO_CLASS).version()  # doctest: +SKIP
        '0.1.0'
    """
    view = jvm
    for part in name.split("."):
        view = getattr(view, part)
    return view


def _line(version: str) -> Tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# -- Spark's setting keys --------------------------------------------------------------------

#: Spark's setting naming the state store provider.
PROVIDER_CLASS_CONF = "spark.sql.streaming.stateStore.providerClass"
#: Spark's setting naming the checkpoint file manager.
FILE_MANAGER_CLASS_CONF = "spark.sql.streaming.checkpointFileManagerClass"
#: Spark's settings the helpers extend with the jar, the plugin and the listener.
JARS_CONF = "spark.jars"
PLUGINS_CONF = "spark.plugins"
QUERY_LISTENERS_CONF = "spark.sql.streaming.streamingQueryListeners"
#: Spark's retained batches (Flink: ``state.checkpoints.num-retained``).
MIN_BATCHES_TO_RETAIN = "spark.sql.streaming.minBatchesToRetain"
#: Spark's default checkpoint root of queries.
SPARK_CHECKPOINT_LOCATION = "spark.sql.streaming.checkpointLocation"

#: The prefix of every setting of Spark's RocksDB state store provider (its ``RocksDBConf``).
ROCKSDB_CONF_PREFIX = "spark.sql.streaming.stateStore.rocksdb."
#: RocksDB: commit a batch as a changelog of its changes, snapshots in the background.
ROCKSDB_CHANGELOG_CHECKPOINTING_CONF = ROCKSDB_CONF_PREFIX + "changelogCheckpointing.enabled"
#: RocksDB: one memory budget shared by every RocksDB instance of an executor.
ROCKSDB_BOUNDED_MEMORY_USAGE_CONF = ROCKSDB_CONF_PREFIX + "boundedMemoryUsage"
#: RocksDB: that budget, in MiB (with bounded memory usage).
ROCKSDB_MAX_MEMORY_USAGE_MB_CONF = ROCKSDB_CONF_PREFIX + "maxMemoryUsageMB"
#: RocksDB: the block cache of each instance, in MiB (without bounded memory usage).
ROCKSDB_BLOCK_CACHE_SIZE_MB_CONF = ROCKSDB_CONF_PREFIX + "blockCacheSizeMB"
#: RocksDB: compact the database at every commit.
ROCKSDB_COMPACT_ON_COMMIT_CONF = ROCKSDB_CONF_PREFIX + "compactOnCommit"

# -- settings of the checkpoint storage (the JVM's CheckpointStorageOptions) ------------------

PREFIX = "spark.sql.streaming.checkpointStorage"
STORAGE = PREFIX
APP_PREFIX = PREFIX + ".app."
CHECKPOINT_PATH = PREFIX + ".checkpointPath"
SAVEPOINT_PATH = PREFIX + ".savepointPath"
MAX_STATE_SIZE = PREFIX + ".maxStateSize"
FILE_STATE_SIZE_THRESHOLD = PREFIX + ".fileStateSizeThreshold"
WRITE_BUFFER_SIZE = PREFIX + ".writeBufferSize"
EXTERNALIZED_CLEANUP = PREFIX + ".externalizedCleanup"
DRIVER_MAX_TOTAL_INLINE_SIZE = PREFIX + ".driver.maxTotalInlineSize"
EXECUTOR_MAX_REQUEST_BATCH_SIZE = PREFIX + ".executor.maxRequestBatchSize"
ASYNC_STATE_WRITES = PREFIX + ".asyncStateWrites"

#: Settings Spark (or the plugin) reads only when the session starts.
STATIC_CONFS = frozenset([
    JARS_CONF,
    PLUGINS_CONF,
    QUERY_LISTENERS_CONF,
    DRIVER_MAX_TOTAL_INLINE_SIZE,
    EXECUTOR_MAX_REQUEST_BATCH_SIZE,
    EXTERNALIZED_CLEANUP,
])
