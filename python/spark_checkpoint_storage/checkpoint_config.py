"""
Session configuration: the analog of PyFlink's ``env.get_checkpoint_config()``
(:func:`get_checkpoint_config`) and of delta's ``configure_spark_with_delta_pip``
(:func:`configure_spark_with_checkpoint_storage`).

Every setting is a Spark configuration key, so what these helpers do can equally be written
as ``--conf`` options (that is how a Spark Connect server is configured).
"""
import os
from enum import Enum
from typing import Any, Dict, Optional

from spark_checkpoint_storage.bundled_jar import bundled_jar_path
from spark_checkpoint_storage.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    _from_j_checkpoint_storage,
)
from spark_checkpoint_storage.errors import (
    ClassicSessionRequiredException,
    IllegalCheckpointStorageArgumentException,
    StaticConfigurationException,
    jvm_errors,
)

__all__ = [
    "CheckpointConfig",
    "ExternalizedCheckpointCleanup",
    "configure_spark_with_checkpoint_storage",
    "get_checkpoint_config",
    "PLUGIN_CONFS",
    "STATIC_CONFS",
]

PROVIDER_CLASS = "io.sparkcheckpointstorage.provider.HeapStateStoreProvider"
PLUGIN_CLASS = "io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin"
FILE_MANAGER_CLASS = "io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager"
LISTENER_CLASS = "io.sparkcheckpointstorage.coordinator.CheckpointStorageQueryListener"

#: Every setting the plugin needs besides the jar: the state store provider, the checkpoint
#: file manager that places state bytes, and the Spark plugin that runs the coordinator.
PLUGIN_CONFS: Dict[str, str] = {
    "spark.sql.streaming.stateStore.providerClass": PROVIDER_CLASS,
    "spark.sql.streaming.checkpointFileManagerClass": FILE_MANAGER_CLASS,
}

PREFIX = "spark.sql.streaming.checkpointStorage"
STORAGE = PREFIX
APP_PREFIX = PREFIX + ".app."
CHECKPOINT_PATH = PREFIX + ".checkpointPath"
SAVEPOINT_PATH = PREFIX + ".savepointPath"
EXTERNALIZED_CLEANUP = PREFIX + ".externalizedCleanup"
DRIVER_MAX_TOTAL_INLINE_SIZE = PREFIX + ".driver.maxTotalInlineSize"
#: The most request bytes an executor sends to the driver's coordinator in one message.
EXECUTOR_MAX_REQUEST_BATCH_SIZE = PREFIX + ".executor.maxRequestBatchSize"
MIN_BATCHES_TO_RETAIN = "spark.sql.streaming.minBatchesToRetain"
SPARK_CHECKPOINT_LOCATION = "spark.sql.streaming.checkpointLocation"
#: Spark's default of ``spark.sql.streaming.minBatchesToRetain``.
DEFAULT_NUM_RETAINED_CHECKPOINTS = 100

#: Settings Spark (or the plugin) reads only when the session starts: setting them on a
#: running session has no effect, so :class:`CheckpointConfig` refuses to.
STATIC_CONFS = frozenset([
    "spark.jars",
    "spark.plugins",
    "spark.sql.streaming.streamingQueryListeners",
    DRIVER_MAX_TOTAL_INLINE_SIZE,
    EXECUTOR_MAX_REQUEST_BATCH_SIZE,
    EXTERNALIZED_CLEANUP,
])


class ExternalizedCheckpointCleanup(Enum):
    """
    What happens to a query's checkpoint when the user stops the query (Flink: cancels the
    job). Spark always keeps a query's checkpoint on its file system, so checkpoints are
    always "externalized"; this only chooses whether stopping deletes it.

    :attr:`DELETE_ON_CANCELLATION`:

    Delete the checkpoint when the query is stopped by the user (``query.stop()``). A query
    that fails keeps its checkpoint, so that it can be restarted.

    :attr:`RETAIN_ON_CANCELLATION`:

    Keep the checkpoint when the query is stopped (Spark's behaviour, the default). It must
    be deleted by hand once no longer needed.

    Example:
    ::

        >>> from pyspark.sql import SparkSession
        >>> from spark_checkpoint_storage.checkpoint_config import (
        ...     ExternalizedCheckpointCleanup, get_checkpoint_config)
        >>> config = get_checkpoint_config(SparkSession.builder.master("local[2]"))
        >>> _ = config.set_externalized_checkpoint_cleanup(
        ...     ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION)
        >>> config.get_externalized_checkpoint_cleanup().value
        'DELETE_ON_CANCELLATION'
    """

    DELETE_ON_CANCELLATION = "DELETE_ON_CANCELLATION"
    RETAIN_ON_CANCELLATION = "RETAIN_ON_CANCELLATION"


def _is_connect_session(target: Any) -> bool:
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # Spark Connect's Python dependencies are not installed
        return False
    return isinstance(target, ConnectSession)


def _is_remote_builder(builder: Any) -> bool:
    options = getattr(builder, "_options", {})
    return ("spark.remote" in options or options.get("spark.api.mode") == "connect"
            or bool(os.environ.get("SPARK_REMOTE")))


class _BuilderConf(object):
    """Settings of a session not created yet: they all apply at start-up."""

    running = False

    def __init__(self, builder: Any):
        self._builder = builder

    def get(self, key: str) -> Optional[str]:
        value = self._builder._options.get(key)
        return None if value is None else str(value)

    def set(self, key: str, value: str) -> None:
        self._builder.config(key, value)

    def unset(self, key: str) -> None:
        with self._builder._lock:
            self._builder._options.pop(key, None)

    def keys(self) -> "list[str]":
        return list(self._builder._options.keys())


class _SessionConf(object):
    """Settings of a running session (classic or Spark Connect): runtime settings only."""

    running = True

    def __init__(self, session: Any):
        self._session = session

    def get(self, key: str) -> Optional[str]:
        value = self._session.conf.get(key, None)
        return None if value is None else str(value)

    def set(self, key: str, value: str) -> None:
        if key in STATIC_CONFS:
            if self.get(key) == value:
                return
            raise StaticConfigurationException(
                "%s is read only when the Spark session starts, so it cannot be set on a running "
                "session (it is %r here, you asked for %r). Set it on the builder before the "
                "session starts: get_checkpoint_config(SparkSession.builder...) or "
                "configure_spark_with_checkpoint_storage(builder), or pass --conf %s=%s to "
                "spark-submit (or to the Spark Connect server)."
                % (key, self.get(key), value, key, value))
        self._session.conf.set(key, value)

    def unset(self, key: str) -> None:
        self._session.conf.unset(key)

    def keys(self) -> "list[str]":
        return list(self._session.conf.getAll.keys())


class CheckpointConfig(object):
    """
    The checkpoint settings of a Spark session or of a session builder: which checkpoint
    storage state goes to, how many batches stay restorable, and what stopping a query does
    to its checkpoint (Flink: ``env.get_checkpoint_config()``). Obtain it with
    :func:`get_checkpoint_config`.

    Every method writes Spark settings: on a builder they apply when the session starts; on a
    running session, runtime settings apply to queries started afterwards, and settings Spark
    reads only at start-up raise
    :class:`~spark_checkpoint_storage.errors.StaticConfigurationException`.

    Example:
    ::

        >>> from pyspark.sql import SparkSession
        >>> config = get_checkpoint_config(SparkSession.builder)
        >>> config.set_checkpoint_storage_dir("file:///tmp/checkpoints")
        >>> config.get_checkpoint_storage().get_checkpoint_path()
        'file:/tmp/checkpoints'
    """

    #: The default number of retained checkpoints (Spark's ``minBatchesToRetain``).
    DEFAULT_NUM_RETAINED_CHECKPOINTS = DEFAULT_NUM_RETAINED_CHECKPOINTS
    #: The default cleanup of a stopped query's checkpoint.
    DEFAULT_EXTERNALIZED_CHECKPOINT_CLEANUP = ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION

    def __init__(self, conf: Any):
        self._conf = conf

    # -- checkpoint storage ----------------------------------------------------------------

    def set_checkpoint_storage(self, storage: CheckpointStorage) -> "CheckpointConfig":
        """
        Sets the checkpoint storage of the queries of this session. Values the storage leaves
        unset (for example the maximum state size of a ``DriverCheckpointStorage()``) are
        taken from ``spark.sql.streaming.checkpointStorage.*`` settings; the storage itself
        wins over ``spark.sql.streaming.checkpointStorage`` (Flink's precedence).

        Example:
        ::

            >>> from spark_checkpoint_storage.checkpoint_storage import DriverCheckpointStorage
            >>> config = get_checkpoint_config(SparkSession.builder)
            >>> config.set_checkpoint_storage(DriverCheckpointStorage(max_state_size=1 << 20))

        :param storage: the checkpoint storage.
        :return: this config.
        """
        if not isinstance(storage, CheckpointStorage):
            raise TypeError("set_checkpoint_storage takes a CheckpointStorage (for example "
                            "FileSystemCheckpointStorage(path)), got %r" % (storage,))
        for key in self._conf.keys():
            if key.startswith(APP_PREFIX):
                self._conf.unset(key)
        for key, value in storage._to_conf().items():
            self._conf.set(key, value)
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> "CheckpointConfig":
        """
        Configures the application to write checkpoints to a file system, a shortcut for
        ``set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_path))``.

        :param checkpoint_path: the directory checkpoints are written to.
        :return: this config.
        """
        return self.set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_path))

    @jvm_errors
    def get_checkpoint_storage(self) -> Optional[CheckpointStorage]:
        """
        The checkpoint storage the queries of this session use, as resolved from its settings
        with Flink's precedence: a storage set in code, else the one named in
        ``spark.sql.streaming.checkpointStorage``, else the file system storage when a
        checkpoint directory is configured. None when nothing is configured: then each query
        uses ``FileSystemCheckpointStorage(<its checkpointLocation>)``, or the driver storage
        when it has none.

        :return: the checkpoint storage, or None.
        """
        from spark_checkpoint_storage.java_gateway import get_gateway

        keys = [k for k in self._conf.keys() if k.startswith(PREFIX) or k == SPARK_CHECKPOINT_LOCATION]
        if not any(k.startswith(APP_PREFIX) or k in (STORAGE, CHECKPOINT_PATH, SPARK_CHECKPOINT_LOCATION)
                   for k in keys):
            return None
        gateway = get_gateway()
        j_map = gateway.jvm.java.util.HashMap()
        for key in keys:
            value = self._conf.get(key)
            if value is not None:
                j_map.put(key, value)
        j_lookup = gateway.jvm.scala.jdk.javaapi.CollectionConverters.asScala(j_map).lift()
        loader = gateway.jvm.io.sparkcheckpointstorage.storage.CheckpointStorageLoader
        return _from_j_checkpoint_storage(loader.load(j_lookup, gateway.jvm.scala.Option.empty()))

    # -- retained checkpoints --------------------------------------------------------------

    def set_num_retained_checkpoints(self, num_retained: int) -> "CheckpointConfig":
        """
        Sets how many committed batches stay restorable (Flink: ``state.checkpoints.num-retained``;
        Spark: ``spark.sql.streaming.minBatchesToRetain``). Older state files, packs and log
        entries are deleted in the background.

        :param num_retained: at least 1.
        :return: this config.
        """
        if not isinstance(num_retained, int) or isinstance(num_retained, bool) or num_retained < 1:
            raise IllegalCheckpointStorageArgumentException(
                "The number of retained checkpoints must be an int of at least 1 (%s), got %r"
                % (MIN_BATCHES_TO_RETAIN, num_retained))
        self._conf.set(MIN_BATCHES_TO_RETAIN, str(num_retained))
        return self

    def get_num_retained_checkpoints(self) -> int:
        """
        How many committed batches stay restorable; :data:`DEFAULT_NUM_RETAINED_CHECKPOINTS`
        (Spark's default, 100) unless set.
        """
        value = self._conf.get(MIN_BATCHES_TO_RETAIN)
        return DEFAULT_NUM_RETAINED_CHECKPOINTS if value is None else int(value)

    # -- externalized checkpoint cleanup ---------------------------------------------------

    def set_externalized_checkpoint_cleanup(
            self, cleanup_mode: ExternalizedCheckpointCleanup) -> "CheckpointConfig":
        """
        Sets what stopping a query does to its checkpoint (see
        :class:`ExternalizedCheckpointCleanup`). Read when the session starts: set it on the
        builder.

        Example:
        ::

            >>> config = get_checkpoint_config(SparkSession.builder)
            >>> config.set_externalized_checkpoint_cleanup(
            ...     ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION)

        :param cleanup_mode: the cleanup mode.
        :return: this config.
        """
        if not isinstance(cleanup_mode, ExternalizedCheckpointCleanup):
            raise TypeError("cleanup_mode must be an ExternalizedCheckpointCleanup, got %r"
                            % (cleanup_mode,))
        if self._conf.running and self.get_externalized_checkpoint_cleanup() == cleanup_mode:
            return self  # what the session already does
        self._conf.set(EXTERNALIZED_CLEANUP, cleanup_mode.value)
        return self

    def enable_externalized_checkpoints(
            self, cleanup_mode: ExternalizedCheckpointCleanup) -> "CheckpointConfig":
        """PyFlink's older name of :func:`set_externalized_checkpoint_cleanup`."""
        return self.set_externalized_checkpoint_cleanup(cleanup_mode)

    def get_externalized_checkpoint_cleanup(self) -> ExternalizedCheckpointCleanup:
        """
        What stopping a query does to its checkpoint; RETAIN_ON_CANCELLATION (Spark's
        behaviour) unless set.
        """
        value = self._conf.get(EXTERNALIZED_CLEANUP)
        if value is None:
            return self.DEFAULT_EXTERNALIZED_CHECKPOINT_CLEANUP
        try:
            return ExternalizedCheckpointCleanup(value.strip().upper())
        except ValueError:
            raise IllegalCheckpointStorageArgumentException(
                "%s must be RETAIN_ON_CANCELLATION or DELETE_ON_CANCELLATION, got %r"
                % (EXTERNALIZED_CLEANUP, value)) from None

    def is_externalized_checkpoints_enabled(self) -> bool:
        """
        Always True: unlike Flink's, Spark's checkpoints are always written to the checkpoint
        location, where they outlive the query unless DELETE_ON_CANCELLATION is set.
        """
        return True


def get_checkpoint_config(builder_or_session: Any) -> CheckpointConfig:
    """
    The checkpoint settings of a ``SparkSession.Builder`` (applied when the session starts) or
    of a running ``SparkSession``, classic or Spark Connect (Flink:
    ``env.get_checkpoint_config()``).

    Example:
    ::

        >>> from pyspark.sql import SparkSession
        >>> from spark_checkpoint_storage.checkpoint_storage import FileSystemCheckpointStorage
        >>> builder = SparkSession.builder.master("local[2]")
        >>> config = get_checkpoint_config(builder)
        >>> config.set_checkpoint_storage(FileSystemCheckpointStorage("file:///tmp/cp"))
        >>> config.set_num_retained_checkpoints(10)

    :param builder_or_session: a ``SparkSession.Builder`` or a ``SparkSession``.
    :return: its :class:`CheckpointConfig`.
    """
    if hasattr(builder_or_session, "_options") and hasattr(builder_or_session, "getOrCreate"):
        return CheckpointConfig(_BuilderConf(builder_or_session))
    if hasattr(builder_or_session, "conf") and hasattr(builder_or_session, "readStream"):
        return CheckpointConfig(_SessionConf(builder_or_session))
    raise TypeError("get_checkpoint_config takes a SparkSession.Builder or a SparkSession, got %r"
                    % (builder_or_session,))


def _append_list(options: Dict[str, Any], key: str, value: str) -> str:
    existing = [v.strip() for v in str(options.get(key, "")).split(",") if v.strip()]
    if value not in existing:
        existing.append(value)
    return ",".join(existing)


def configure_spark_with_checkpoint_storage(builder: Any,
                                            storage: Optional[CheckpointStorage] = None) -> Any:
    """
    Configures the session ``builder`` will create for spark-checkpoint-storage, and returns
    the builder:

    * the jar bundled with this package goes on the classpath of the driver and every
      executor (``spark.jars``; Spark ships it, no network access needed);
    * the coordinator plugin is added to ``spark.plugins`` and its query listener to
      ``spark.sql.streaming.streamingQueryListeners`` (frees a stopped query's driver memory,
      applies ``DELETE_ON_CANCELLATION``);
    * ``HeapStateStoreProvider`` and ``StorageCheckpointFileManager`` are set, unless the
      builder already names others;
    * ``storage``, when given, becomes the checkpoint storage of the session's queries.
      Without it the storage follows the configuration
      (``spark.sql.streaming.checkpointStorage``; default: file system when a checkpoint
      directory is known, else driver heap).

    A Spark Connect builder (``.remote(...)``) cannot add a jar or a plugin to a server that
    already runs: start the server with them instead (see the Python guide, "Spark Connect").

    Example:
    ::

        >>> from pyspark.sql import SparkSession
        >>> from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        >>> from spark_checkpoint_storage.checkpoint_storage import DriverCheckpointStorage
        >>> builder = SparkSession.builder.master("local[2]")
        >>> builder = configure_spark_with_checkpoint_storage(builder, DriverCheckpointStorage())
        >>> spark = builder.getOrCreate()  # doctest: +SKIP

    :param builder: a ``pyspark.sql.SparkSession.Builder``.
    :param storage: the checkpoint storage, optional.
    :return: the same builder, configured.
    """
    if _is_remote_builder(builder):
        raise ClassicSessionRequiredException(
            "configure_spark_with_checkpoint_storage needs a classic SparkSession builder: the "
            "jar and the plugin must be on the Spark Connect server when it starts. Start the "
            "server with --jars %s --conf spark.plugins=%s --conf "
            "spark.sql.streaming.streamingQueryListeners=%s %s, then set the storage on the "
            "Connect session with get_checkpoint_config(spark)."
            % (bundled_jar_path(), PLUGIN_CLASS, LISTENER_CLASS,
               " ".join("--conf %s=%s" % kv for kv in PLUGIN_CONFS.items())))
    options = getattr(builder, "_options", {})
    builder = builder.config("spark.jars", _append_list(options, "spark.jars", bundled_jar_path()))
    builder = builder.config("spark.plugins", _append_list(options, "spark.plugins", PLUGIN_CLASS))
    builder = builder.config("spark.sql.streaming.streamingQueryListeners", _append_list(
        options, "spark.sql.streaming.streamingQueryListeners", LISTENER_CLASS))
    for key, value in PLUGIN_CONFS.items():
        if key not in options:
            builder = builder.config(key, value)
    if storage is not None:
        get_checkpoint_config(builder).set_checkpoint_storage(storage)
    return builder
