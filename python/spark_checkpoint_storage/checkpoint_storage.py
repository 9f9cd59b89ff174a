"""
Checkpoint storages, in the shape of ``pyflink.datastream.checkpoint_storage``: thin Python
classes over the JVM storages of the plugin jar, built through
:func:`~spark_checkpoint_storage.java_gateway.get_gateway` (the
running driver, or a JVM launched with the jar when no session exists yet).

Set one on a session with :func:`spark_checkpoint_storage.checkpoint_config.get_checkpoint_config`
or :func:`spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`.
"""
from abc import ABCMeta
from typing import Any, Optional

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.errors import jvm_errors
from spark_checkpoint_storage.java_gateway import get_gateway

__all__ = [
    "CheckpointStorage",
    "DriverCheckpointStorage",
    "FileSystemCheckpointStorage",
    "CustomCheckpointStorage",
    "from_j_checkpoint_storage",
]

_JVM_PACKAGE = jvm_names.JVM_PACKAGE + ".storage"


def _jvm_class(gateway: Any, name: str) -> Any:
    return jvm_names.jvm_class(gateway.jvm, "%s.%s" % (_JVM_PACKAGE, name))


def _normalize_path(gateway: Any, path: str) -> str:
    """A path as Hadoop writes it (``file://var/cp/`` -> ``file://var/cp``), as PyFlink's ``JPath``."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError("A checkpoint path must be a non-empty string, got %r" % (path,))
    return str(gateway.jvm.org.apache.hadoop.fs.Path(path).toString())


def from_j_checkpoint_storage(j_checkpoint_storage: Any) -> Optional["CheckpointStorage"]:
    """
    Wraps a JVM checkpoint storage in its Python class: :class:`DriverCheckpointStorage`,
    :class:`FileSystemCheckpointStorage`, or :class:`CustomCheckpointStorage` for any other
    implementation of ``io.sparkcheckpointstorage.storage.CheckpointStorage`` (PyFlink:
    ``CheckpointStorage._from_j_checkpoint_storage``).

    Example:
    ::

        >>> from spark_checkpoint_storage.checkpoint_storage import (
        ...     DriverCheckpointStorage, from_j_checkpoint_storage)
        >>> j_storage = DriverCheckpointStorage()._j_checkpoint_storage  # doctest: +SKIP
        >>> type(from_j_checkpoint_storage(j_storage)).__name__  # doctest: +SKIP
        'DriverCheckpointStorage'

    :param j_checkpoint_storage: a JVM checkpoint storage, or None.
    :return: its Python class wrapping it, or None for None.
    :raises TypeError: when the JVM object is not a checkpoint storage.
    """
    if j_checkpoint_storage is None:
        return None
    from py4j.java_gateway import JavaObject, get_java_class

    if not isinstance(j_checkpoint_storage, JavaObject):
        raise TypeError("%r is not a JVM object, let alone an instance of CheckpointStorage."
                        % (j_checkpoint_storage,))
    gateway = get_gateway()
    j_clz = j_checkpoint_storage.getClass()
    if not get_java_class(_jvm_class(gateway, "CheckpointStorage")).isAssignableFrom(j_clz):
        raise TypeError("%s is not an instance of CheckpointStorage." % j_checkpoint_storage)
    if get_java_class(_jvm_class(gateway, "DriverCheckpointStorage")).isAssignableFrom(j_clz):
        return DriverCheckpointStorage(j_driver_checkpoint_storage=j_checkpoint_storage)
    if get_java_class(_jvm_class(gateway, "FileSystemCheckpointStorage")).isAssignableFrom(j_clz):
        return FileSystemCheckpointStorage(j_filesystem_checkpoint_storage=j_checkpoint_storage)
    return CustomCheckpointStorage(j_checkpoint_storage)


class CheckpointStorage(object, metaclass=ABCMeta):
    """
    Checkpoint storage defines where the state of Spark streaming queries is checkpointed for
    fault tolerance. Implementations store checkpoints in different fashions and have
    different requirements and availability guarantees.

    :class:`DriverCheckpointStorage` keeps state in the memory of the Spark driver (Flink's
    `JobManagerCheckpointStorage`). It is lightweight, needs no file system, and suits small
    state, local testing and development.

    :class:`FileSystemCheckpointStorage` stores state on a file system (``file://``,
    ``hdfs://``, ``s3a://``, ...), packing small state chunks into one file per batch. It
    supports large state and is recommended for production.

    **Raw Bytes Storage**

    A storage decides where the bytes of each state file a state store provider writes go:
    inline to the driver (held in heap and, when persistent, written as one pack per batch
    before the batch commits) or into a file of its own written by the executor.

    **Serializability**

    Storages are serializable, configuration-only factories: they travel to every executor as
    Spark configuration (``spark.sql.streaming.checkpointStorage.app.*``).

    Example:
    ::

        >>> from spark_checkpoint_storage.checkpoint_storage import (
        ...     CheckpointStorage, DriverCheckpointStorage, FileSystemCheckpointStorage)
        >>> isinstance(DriverCheckpointStorage(), CheckpointStorage)
        True
        >>> FileSystemCheckpointStorage("file:///tmp/checkpoints").is_persistent()
        True
    """

    def __init__(self, j_checkpoint_storage: Any):
        self._j_checkpoint_storage = j_checkpoint_storage

    @jvm_errors
    def is_persistent(self) -> bool:
        """Whether checkpointed state survives the driver."""
        return bool(self._j_checkpoint_storage.isPersistent())

    @jvm_errors
    def _to_conf(self) -> "dict[str, str]":
        """The Spark settings that select this storage (values set in code win over others)."""
        return {str(k): str(v) for k, v in self._j_checkpoint_storage.toConfMap().items()}

    def __str__(self) -> str:
        return self._j_checkpoint_storage.toString()

    def __repr__(self) -> str:
        return "%s(%s)" % (type(self).__name__, self._j_checkpoint_storage.toString())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CheckpointStorage):
            return False
        mine, theirs = self._j_checkpoint_storage, other._j_checkpoint_storage
        if getattr(mine, "_gateway_client", None) is getattr(theirs, "_gateway_client", None):
            return bool(mine.equals(theirs))
        # Built in different JVMs (before the session, and by it): compare what they hold.
        return (type(self) is type(other) and str(self) == str(other)
                and mine.getSavepointPath() == theirs.getSavepointPath())

    def __hash__(self) -> int:
        return hash((type(self).__name__, str(self)))


class DriverCheckpointStorage(CheckpointStorage):
    """
    The `CheckpointStorage` that checkpoints state directly to the Spark driver's memory
    (hence the name; Flink's `JobManagerCheckpointStorage`).

    Every state file an executor writes travels to the driver, which holds it in heap. With a
    checkpoint path the driver also writes each batch's state as one pack file under the
    query's checkpoint location before the batch commits, so the query survives a driver
    restart; without one, state lives only as long as the driver.

    This storage is for experimentation, quick local setups, and queries with very small
    state: larger state occupies larger portions of the driver's heap. For anything else use
    :class:`FileSystemCheckpointStorage`.

    **State Size Considerations**

    - Each individual state file (one operator, partition and version) must not exceed the
      configured maximum state size (see :func:`get_max_state_size`); a larger one fails the
      task with an error naming the size, the limit and the setting.
    - The inline state the driver holds over all queries is bounded by
      ``spark.sql.streaming.checkpointStorage.driver.maxTotalInlineSize`` (default: a quarter
      of the driver's heap); crossing it is the same kind of error, never an out-of-memory.

    **Persistence Guarantees**

    With a checkpoint path, state is as persistent as the file system the packs are written
    to, and savepoints are supported. Without one, a restarted driver refuses to resume the
    query, saying the state is gone and how to make it persistent.

    **Configuration**

    Set in the application (``get_checkpoint_config(spark).set_checkpoint_storage(...)``) or
    in configuration (``spark.sql.streaming.checkpointStorage=driver``). Values left unset in
    code are taken from configuration (``spark.sql.streaming.checkpointStorage.*``).

    Example:
    ::

        >>> from spark_checkpoint_storage.checkpoint_storage import DriverCheckpointStorage
        >>> heap_only = DriverCheckpointStorage()
        >>> heap_only.is_persistent(), heap_only.get_max_state_size()
        (False, 5242880)
        >>> durable = DriverCheckpointStorage("file:///tmp/checkpoints", max_state_size=1 << 20)
        >>> durable.is_persistent(), durable.get_savepoint_path()
        (True, 'file:/tmp/checkpoints/savepoints')
    """

    #: The default maximal size of a state file (5 MiB), as Flink's.
    DEFAULT_MAX_STATE_SIZE = 5 * 1024 * 1024

    @jvm_errors
    def __init__(self,
                 checkpoint_path: Optional[str] = None,
                 max_state_size: Optional[int] = None,
                 j_driver_checkpoint_storage: Any = None):
        """
        Creates a new DriverCheckpointStorage, optionally with a path to persist checkpoints
        to, and a maximum state size.

        WARNING: raising the maximum state size beyond :data:`DEFAULT_MAX_STATE_SIZE` should be
        done with care: the driver must hold all state of all queries in its heap.

        Example:
        ::

            >>> checkpoint_storage = DriverCheckpointStorage()
            >>> checkpoint_storage.get_max_state_size()
            5242880

        :param checkpoint_path: where checkpoints are persisted (one pack per batch). If None,
                                the value from configuration is used; without one, state is
                                kept in driver heap only.
        :param max_state_size: the maximal size of one state file in bytes. If None, the value
                               from configuration is used, else :data:`DEFAULT_MAX_STATE_SIZE`.
        :param j_driver_checkpoint_storage: For internal use, please keep None.
        """
        if j_driver_checkpoint_storage is None:
            gateway = get_gateway()
            JDriverCheckpointStorage = _jvm_class(gateway, "DriverCheckpointStorage")
            if max_state_size is not None and not isinstance(max_state_size, int):
                raise TypeError("max_state_size must be an int, got %r" % (max_state_size,))
            if checkpoint_path is not None:
                checkpoint_path = _normalize_path(gateway, checkpoint_path)
                j_driver_checkpoint_storage = (
                    JDriverCheckpointStorage(checkpoint_path) if max_state_size is None
                    else JDriverCheckpointStorage(checkpoint_path, max_state_size))
            else:
                j_driver_checkpoint_storage = (
                    JDriverCheckpointStorage() if max_state_size is None
                    else JDriverCheckpointStorage(max_state_size))
        super(DriverCheckpointStorage, self).__init__(j_driver_checkpoint_storage)

    def get_checkpoint_path(self) -> Optional[str]:
        """
        Gets the base directory where checkpoints are persisted, or None for heap-only state.

        :return: The base directory for checkpoints.
        """
        j_path = self._j_checkpoint_storage.getCheckpointPath()
        return None if j_path is None else str(j_path)

    def get_max_state_size(self) -> int:
        """
        Gets the maximum size that an individual state file can have, as configured in the
        constructor. By default :data:`DEFAULT_MAX_STATE_SIZE` will be used.
        """
        return int(self._j_checkpoint_storage.getMaxStateSize())

    def get_savepoint_path(self) -> Optional[str]:
        """
        Gets the base directory where savepoints are stored by default:
        ``<checkpoint path>/savepoints``, or the configured savepoint path; None without
        either.

        :return: The base directory for savepoints.
        """
        j_path = self._j_checkpoint_storage.getSavepointPath()
        return None if j_path is None else str(j_path)


class FileSystemCheckpointStorage(CheckpointStorage):
    """
    `FileSystemCheckpointStorage` checkpoints state to a file system: any Hadoop file system
    URI (``file://``, ``hdfs://``, ``s3a://``, ...).

    **State Size Considerations**

    This checkpoint storage stores small state chunks with the batch's metadata, to avoid
    creating many small files: every state file of at most :func:`get_min_file_size_threshold`
    bytes travels to the driver, which writes all of them as one pack file per batch before
    the batch commits. Larger state files are written by the executors as files of their own.
    Raising the threshold makes the packs larger; the threshold is at most
    :data:`MAX_FILE_STATE_THRESHOLD`.

    **Persistence Guarantees**

    Checkpoints are as persistent and available as the file system they are written to. The
    storage supports savepoints. On file systems without an atomic rename (object stores) no
    rename-based commit is used.

    **Configuration**

    Set in the application (``get_checkpoint_config(spark).set_checkpoint_storage(...)``) or
    in configuration (``spark.sql.streaming.checkpointStorage=filesystem``). Values left unset
    in code are taken from configuration (``spark.sql.streaming.checkpointStorage.*``).

    Example:
    ::

        >>> from spark_checkpoint_storage.checkpoint_storage import FileSystemCheckpointStorage
        >>> storage = FileSystemCheckpointStorage("file:///tmp/checkpoints",
        ...                                       file_state_size_threshold=64 * 1024)
        >>> storage.get_min_file_size_threshold(), storage.get_write_buffer_size()
        (65536, 65536)
    """

    #: Maximum size of state that is stored with the metadata (in packs) rather than in files (1 MiB).
    MAX_FILE_STATE_THRESHOLD = 1024 * 1024
    #: Default inline threshold (20 KiB), as Flink's ``state.storage.fs.memory-threshold``.
    DEFAULT_FILE_STATE_THRESHOLD = 20 * 1024
    #: Default write buffer size (4 KiB), as Flink's ``state.storage.fs.write-buffer-size``.
    DEFAULT_WRITE_BUFFER_SIZE = 4 * 1024

    @jvm_errors
    def __init__(self,
                 checkpoint_path: Optional[str] = None,
                 file_state_size_threshold: Optional[int] = None,
                 write_buffer_size: int = -1,
                 j_filesystem_checkpoint_storage: Any = None):
        """
        Creates a new FileSystemCheckpointStorage, setting the path for checkpoint data in a
        file system.

        Example:
        ::

            >>> checkpoint_storage = FileSystemCheckpointStorage("hdfs://checkpoints")
            >>> checkpoint_storage.get_min_file_size_threshold()
            20480

        :param checkpoint_path: The path to write checkpoints to.
        :param file_state_size_threshold: State up to this size is stored inline (packed),
                                          rather than in files. If None or -1, the value from
                                          configuration is used, else 20 KiB. At most
                                          :data:`MAX_FILE_STATE_THRESHOLD`.
        :param write_buffer_size: Write buffer size used to write state files. If -1, the
                                  value from configuration is used, else 4 KiB; never below
                                  the threshold.
        :param j_filesystem_checkpoint_storage: For internal use, please keep None.
        """
        if j_filesystem_checkpoint_storage is None:
            if checkpoint_path is None:
                raise ValueError("checkpoint_path must not be None")
            for name, value in (("file_state_size_threshold", file_state_size_threshold),
                                ("write_buffer_size", write_buffer_size)):
                if value is not None and not isinstance(value, int):
                    raise TypeError("%s must be an int, got %r" % (name, value))
            gateway = get_gateway()
            JFileSystemCheckpointStorage = _jvm_class(gateway, "FileSystemCheckpointStorage")
            if file_state_size_threshold is None:
                file_state_size_threshold = -1
            j_filesystem_checkpoint_storage = JFileSystemCheckpointStorage(
                _normalize_path(gateway, checkpoint_path), file_state_size_threshold,
                write_buffer_size)
        super(FileSystemCheckpointStorage, self).__init__(j_filesystem_checkpoint_storage)

    def get_checkpoint_path(self) -> str:
        """
        Gets the base directory where checkpoints are stored.

        :return: The base directory for checkpoints.
        """
        return str(self._j_checkpoint_storage.getCheckpointPath())

    def get_savepoint_path(self) -> Optional[str]:
        """
        Gets the base directory where savepoints are stored by default:
        ``<checkpoint path>/savepoints``, or the configured savepoint path.

        :return: The base directory for savepoints.
        """
        j_path = self._j_checkpoint_storage.getSavepointPath()
        return None if j_path is None else str(j_path)

    def get_min_file_size_threshold(self) -> int:
        """
        Gets the threshold up to which state is stored inline (in the batch's pack) rather than
        in a file of its own. This keeps many small state files from being created.

        If not explicitly configured, this is the default value of 20 KiB.

        :return: The file size threshold, in bytes.
        """
        return int(self._j_checkpoint_storage.getMinFileSizeThreshold())

    def get_write_buffer_size(self) -> int:
        """
        Gets the write buffer size for writing state files: the configured size, never below
        the file size threshold. If not explicitly configured, this is the default value of
        4 KiB (or the threshold, when larger).

        :return: The write buffer size, in bytes.
        """
        return int(self._j_checkpoint_storage.getWriteBufferSize())


class CustomCheckpointStorage(CheckpointStorage):
    """
    A user-defined checkpoint storage: a JVM object implementing
    ``io.sparkcheckpointstorage.storage.CheckpointStorage`` (with a public no-argument
    constructor, so that executors can rebuild it from configuration), or a
    ``CheckpointStorageFactory`` named in ``spark.sql.streaming.checkpointStorage``.

    Example:
    ::

        >>> j_storage = get_gateway().jvm.com.example.MyCheckpointStorage()  # doctest: +SKIP
        >>> storage = CustomCheckpointStorage(j_storage)  # doctest: +SKIP
    """

    def __init__(self, j_custom_checkpoint_storage: Any):
        super(CustomCheckpointStorage, self).__init__(j_custom_checkpoint_storage)

    def get_checkpoint_path(self) -> Optional[str]:
        """The storage's checkpoint path, or None."""
        j_path = self._j_checkpoint_storage.getCheckpointPath()
        return None if j_path is None else str(j_path)

    def get_savepoint_path(self) -> Optional[str]:
        """The storage's default savepoint path, or None."""
        j_path = self._j_checkpoint_storage.getSavepointPath()
        return None if j_path is None else str(j_path)
