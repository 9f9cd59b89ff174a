"""
Session configuration: the analog of PyFlink's ``env.get_checkpoint_config()``
(:func:`get_checkpoint_config`). The helper that configures a session builder with the jar
and the plugin, :func:`~spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`
(delta's ``configure_spark_with_delta_pip``), lives in :mod:`spark_checkpoint_storage.session`
and is importable from here too.

Every setting is a Spark configuration key, so what these helpers do can equally be written
as ``--conf`` options (that is how a Spark Connect server is configured).
"""
from enum import Enum
from typing import Any, Optional

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    from_j_checkpoint_storage,
)
from spark_checkpoint_storage.errors import (
    IllegalCheckpointStorageArgumentException,
    StaticConfigurationException,
    install_error_conversion,
    jvm_errors,
)
from spark_checkpoint_storage.plugin import check_connect_server_has_plugin, is_connect_session
from spark_checkpoint_storage.state_backend import StateBackend, from_provider_class

__all__ = [
    "CheckpointConfig",
    "ExternalizedCheckpointCleanup",
    "get_checkpoint_config",
    "STATIC_CONFS",
]

PROVIDER_CLASS = jvm_names.HEAP_PROVIDER_CLASS
PLUGIN_CLASS = jvm_names.PLUGIN_CLASS
FILE_MANAGER_CLASS = jvm_names.FILE_MANAGER_CLASS
LISTENER_CLASS = jvm_names.LISTENER_CLASS

PREFIX = jvm_names.PREFIX
STORAGE = jvm_names.STORAGE
APP_PREFIX = jvm_names.APP_PREFIX
CHECKPOINT_PATH = jvm_names.CHECKPOINT_PATH
SAVEPOINT_PATH = jvm_names.SAVEPOINT_PATH
EXTERNALIZED_CLEANUP = jvm_names.EXTERNALIZED_CLEANUP
DRIVER_MAX_TOTAL_INLINE_SIZE = jvm_names.DRIVER_MAX_TOTAL_INLINE_SIZE
#: The most request bytes an executor sends to the driver's coordinator in one message.
EXECUTOR_MAX_REQUEST_BATCH_SIZE = jvm_names.EXECUTOR_MAX_REQUEST_BATCH_SIZE
#: ``"true"``: the file system storage's tasks hand state files above the threshold to a
#: background writer; the batch commits once they are durable (Flink's asynchronous snapshots).
ASYNC_STATE_WRITES = jvm_names.ASYNC_STATE_WRITES
MIN_BATCHES_TO_RETAIN = jvm_names.MIN_BATCHES_TO_RETAIN
SPARK_CHECKPOINT_LOCATION = jvm_names.SPARK_CHECKPOINT_LOCATION
#: Spark's default of ``spark.sql.streaming.minBatchesToRetain``.
DEFAULT_NUM_RETAINED_CHECKPOINTS = 100

#: Settings Spark (or the plugin) reads only when the session starts: setting them on a
#: running session has no effect, so :class:`CheckpointConfig` refuses to.
STATIC_CONFS = jvm_names.STATIC_CONFS


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
        conf = self._session.conf
        if hasattr(conf, "getAll"):
            return list(conf.getAll.keys())
        # pyspark 3.5's RuntimeConfig lists nothing: ask the session's JVM side.
        jsession = getattr(self._session, "_jsparkSession", None)
        if jsession is None:
            return []
        jvm = self._session.sparkContext._jvm
        settings = jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(jsession.conf().getAll()).asJava()
        return [str(k) for k in settings.keySet()]


class CheckpointConfig(object):
    """
    The checkpoint settings of a Spark session or of a session builder: which checkpoint
    storage state goes to, which state backend holds it, how many batches stay restorable,
    and what stopping a query does to its checkpoint (Flink: ``env.get_checkpoint_config()``
    and ``env.set_state_backend()``). Obtain it with :func:`get_checkpoint_config`.

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
        loader = jvm_names.jvm_class(gateway.jvm, jvm_names.STORAGE_LOADER_CLASS)
        return from_j_checkpoint_storage(loader.loadFromJava(j_map, None))

    # -- state backend ---------------------------------------------------------------------

    def set_state_backend(self, backend: StateBackend) -> "CheckpointConfig":
        """
        Sets the state backend of the queries of this session (Flink:
        ``env.set_state_backend``): its state store provider
        (``spark.sql.streaming.stateStore.providerClass``) and, for
        :class:`~spark_checkpoint_storage.state_backend.EmbeddedRocksDBStateBackend`, the
        RocksDB settings it holds.

        On a builder it applies when the session starts. On a running session it applies to
        queries started afterwards: Spark reads the provider when a query starts, and a query
        resumed from a checkpoint keeps the provider recorded in that checkpoint (changing
        the provider of existing state is a migration: see
        :func:`~spark_checkpoint_storage.migration.migrate`).

        Only the settings the backend holds are written: switching from RocksDB to
        :class:`~spark_checkpoint_storage.state_backend.HashMapStateBackend` changes the
        provider class and leaves the ``spark.sql.streaming.stateStore.rocksdb.*`` settings
        as they are. Other providers never read them, and a later switch back to RocksDB
        finds them again unless the new backend sets them.

        Example:
        ::

            >>> from spark_checkpoint_storage.state_backend import EmbeddedRocksDBStateBackend
            >>> config = get_checkpoint_config(SparkSession.builder)
            >>> _ = config.set_state_backend(EmbeddedRocksDBStateBackend())
            >>> config.get_state_backend().is_changelog_checkpointing_enabled()
            True

        :param backend: the state backend.
        :return: this config.
        """
        if not isinstance(backend, StateBackend):
            raise TypeError("set_state_backend takes a StateBackend (for example "
                            "EmbeddedRocksDBStateBackend()), got %r" % (backend,))
        for key, value in backend._to_conf().items():
            self._conf.set(key, value)
        return self

    def get_state_backend(self) -> StateBackend:
        """
        The state backend the queries of this session start with, read back from
        ``spark.sql.streaming.stateStore.providerClass``: this package's heap provider is a
        :class:`~spark_checkpoint_storage.state_backend.HashMapStateBackend`, Spark's RocksDB
        provider an :class:`~spark_checkpoint_storage.state_backend.EmbeddedRocksDBStateBackend`
        with the ``spark.sql.streaming.stateStore.rocksdb.*`` settings of the session (an
        unset changelog setting reads as Spark's default, off), any other class a
        :class:`~spark_checkpoint_storage.state_backend.CustomStateBackend`. Unset, it is
        Spark's default provider: ``CustomStateBackend`` of ``HDFSBackedStateStoreProvider``
        (:func:`~spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`
        sets the heap provider on a builder that names none).

        Example:
        ::

            >>> get_checkpoint_config(SparkSession.builder).get_state_backend().get_provider_class()
            'org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider'

        :return: the state backend.
        """
        conf = {key: self._conf.get(key) for key in self._conf.keys()
                if key.startswith(jvm_names.ROCKSDB_CONF_PREFIX)}
        return from_provider_class(self._conf.get(jvm_names.PROVIDER_CLASS_CONF), conf)

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

    Like :func:`~spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`, it
    installs this package's conversion of JVM errors in this Python process, once
    (:func:`~spark_checkpoint_storage.errors.install_error_conversion`): a wrong setting of
    this package refused by ``writeStream.start()`` then reaches Python as
    :class:`~spark_checkpoint_storage.errors.IllegalCheckpointStorageArgumentException`.

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
    :raises JarNotOnClasspathError: a Spark Connect session whose server was started without
        the jar and the plugin.
    """
    if hasattr(builder_or_session, "_options") and hasattr(builder_or_session, "getOrCreate"):
        install_error_conversion()
        return CheckpointConfig(_BuilderConf(builder_or_session))
    if hasattr(builder_or_session, "conf") and hasattr(builder_or_session, "readStream"):
        if is_connect_session(builder_or_session):
            check_connect_server_has_plugin(builder_or_session)
        install_error_conversion()
        return CheckpointConfig(_SessionConf(builder_or_session))
    raise TypeError("get_checkpoint_config takes a SparkSession.Builder or a SparkSession, got %r"
                    % (builder_or_session,))
