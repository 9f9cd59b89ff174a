"""
State backends, in the shape of ``pyflink.datastream.state_backend``: which state store
provider holds the state of a session's streaming queries while they run, independently of
the checkpoint storage that decides where checkpointed state bytes go.

* :class:`HashMapStateBackend`: state as objects in executor heap, this package's
  ``HeapStateStoreProvider`` (the default of
  :func:`~spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`).
* :class:`EmbeddedRocksDBStateBackend`: state in a RocksDB instance per state store, Spark's
  ``RocksDBStateStoreProvider``, with changelog checkpointing on. The only provider Spark
  runs ``transformWithState`` / ``transformWithStateInPandas`` on.
* :class:`CustomStateBackend`: any other state store provider class.

A backend is configuration only: each is the Spark settings it stands for (the provider
class, ``spark.sql.streaming.stateStore.providerClass``, and for RocksDB the
``spark.sql.streaming.stateStore.rocksdb.*`` settings). Set one on a session with
:meth:`~spark_checkpoint_storage.checkpoint_config.CheckpointConfig.set_state_backend` or
:func:`~spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`.

Example:
::

    >>> from spark_checkpoint_storage.state_backend import (
    ...     EmbeddedRocksDBStateBackend, HashMapStateBackend)
    >>> HashMapStateBackend().get_provider_class()
    'io.sparkcheckpointstorage.provider.HeapStateStoreProvider'
    >>> EmbeddedRocksDBStateBackend().is_changelog_checkpointing_enabled()
    True
"""
from abc import ABCMeta
from typing import Any, Dict, Mapping, Optional, Union

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.errors import IllegalCheckpointStorageArgumentException

__all__ = [
    "StateBackend",
    "HashMapStateBackend",
    "EmbeddedRocksDBStateBackend",
    "CustomStateBackend",
    "from_provider_class",
]


def from_provider_class(provider_class: Optional[str],
                        conf: Optional[Mapping[str, Any]] = None) -> "StateBackend":
    """
    The backend of a state store provider class name (the value of
    ``spark.sql.streaming.stateStore.providerClass``), with, for RocksDB, the
    ``spark.sql.streaming.stateStore.rocksdb.*`` settings of ``conf`` (PyFlink:
    ``_from_j_state_backend``).

    Unset (None or blank) is Spark's default provider, ``HDFSBackedStateStoreProvider``,
    returned as a :class:`CustomStateBackend`.

    Example:
    ::

        >>> from spark_checkpoint_storage import jvm_names
        >>> from spark_checkpoint_storage.state_backend import from_provider_class
        >>> from_provider_class(jvm_names.HEAP_PROVIDER_CLASS) == HashMapStateBackend()
        True
        >>> from_provider_class(None).get_provider_class()
        'org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider'

    :param provider_class: the provider class name, or None.
    :param conf: the session's or builder's settings (only the RocksDB ones are read).
    :return: :class:`HashMapStateBackend`, :class:`EmbeddedRocksDBStateBackend` or
             :class:`CustomStateBackend`.
    """
    name = (provider_class or "").strip() or jvm_names.HDFS_PROVIDER_CLASS
    if name == jvm_names.HEAP_PROVIDER_CLASS:
        return HashMapStateBackend()
    if name == jvm_names.ROCKSDB_PROVIDER_CLASS:
        options = {k: v for k, v in (conf or {}).items()
                   if k.startswith(jvm_names.ROCKSDB_CONF_PREFIX) and v is not None}
        # Read back, an unset changelog setting is Spark's own default (off), not ours (on).
        enabled = _parse_bool(jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF, options.get(
            jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF, "false"))
        backend = EmbeddedRocksDBStateBackend(enable_changelog_checkpointing=enabled)
        backend.set_options(options)
        return backend
    return CustomStateBackend(name)


def _parse_bool(key: str, value: Any) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise IllegalCheckpointStorageArgumentException(
            "%s must be true or false, got %r" % (key, value))
    return text == "true"


def _setting_value(key: str, value: Any) -> str:
    """A Python value as Spark reads it back: booleans lower-case, numbers as digits."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError("The value of %s must be a str, bool, int or float, got %r" % (key, value))


class StateBackend(object, metaclass=ABCMeta):
    """
    A state backend defines how the state of a streaming query is held while it runs: in
    Spark, the state store provider (``spark.sql.streaming.stateStore.providerClass``) that
    every stateful operator opens its state stores with. Where checkpointed state bytes go is
    the separate business of the checkpoint storage
    (:mod:`spark_checkpoint_storage.checkpoint_storage`); both storages work with every
    backend.

    :class:`HashMapStateBackend` keeps state as objects in executor heap: fast, bounded by
    the heap. :class:`EmbeddedRocksDBStateBackend` keeps it in RocksDB (off heap, on local
    disk): larger state, and the only backend Spark runs ``transformWithState`` on.

    Spark reads the provider when a query starts, and a query resumed from a checkpoint keeps
    the provider recorded in that checkpoint (its offset log), whatever the session says.

    Example:
    ::

        >>> from spark_checkpoint_storage.state_backend import (
        ...     StateBackend, HashMapStateBackend, EmbeddedRocksDBStateBackend)
        >>> isinstance(EmbeddedRocksDBStateBackend(), StateBackend)
        True
        >>> HashMapStateBackend()._to_conf()
        {'spark.sql.streaming.stateStore.providerClass': 'io.sparkcheckpointstorage.provider.HeapStateStoreProvider'}
    """

    def __init__(self, provider_class: str):
        if not isinstance(provider_class, str) or not provider_class.strip():
            raise IllegalCheckpointStorageArgumentException(
                "A state store provider class must be a non-empty class name (%s), got %r"
                % (jvm_names.PROVIDER_CLASS_CONF, provider_class))
        self._provider_class = provider_class.strip()

    def get_provider_class(self) -> str:
        """
        The state store provider class this backend stands for (the value of
        ``spark.sql.streaming.stateStore.providerClass``).

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend().get_provider_class()
            'org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider'

        :return: the class name.
        """
        return self._provider_class

    def _to_conf(self) -> Dict[str, str]:
        """The Spark settings that select this backend."""
        return {jvm_names.PROVIDER_CLASS_CONF: self._provider_class}

    def _description(self) -> str:
        return self._provider_class

    def __str__(self) -> str:
        return "%s (%s)" % (type(self).__name__, self._description())

    def __repr__(self) -> str:
        return "%s()" % type(self).__name__

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and \
            self._to_conf() == other._to_conf()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, frozenset(self._to_conf().items())))


class HashMapStateBackend(StateBackend):
    """
    This state backend holds the working state in the memory (JVM heap) of the executors:
    this package's ``HeapStateStoreProvider`` (Flink's ``HashMapStateBackend``), the default
    of :func:`~spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`.

    State access is as fast as a hash map lookup; each batch's changes are checkpointed as a
    delta file (and periodically a snapshot) through the checkpoint storage. The state of
    every store of an executor must fit its heap.

    Spark runs ``transformWithState`` / ``transformWithStateInPandas`` only on its RocksDB
    provider: with this backend such a query fails at start
    (``STORE_BACKEND_NOT_SUPPORTED_FOR_TWS``); use :class:`EmbeddedRocksDBStateBackend` for it.

    Example:
    ::

        >>> from spark_checkpoint_storage.state_backend import HashMapStateBackend
        >>> backend = HashMapStateBackend()
        >>> print(backend)
        HashMapStateBackend (io.sparkcheckpointstorage.provider.HeapStateStoreProvider)
    """

    def __init__(self) -> None:
        """
        Creates a new HashMapStateBackend.

        Example:
        ::

            >>> HashMapStateBackend() == HashMapStateBackend()
            True
        """
        super(HashMapStateBackend, self).__init__(jvm_names.HEAP_PROVIDER_CLASS)


class EmbeddedRocksDBStateBackend(StateBackend):
    """
    A state backend that holds the working state in RocksDB: Spark's
    ``RocksDBStateStoreProvider`` (Flink's ``EmbeddedRocksDBStateBackend``). Each state store
    is a RocksDB instance on the executor's local disk, off heap, so state can grow beyond the
    heap; it is the only backend Spark runs ``transformWithState`` /
    ``transformWithStateInPandas`` on (value, list and map state, timers, TTL).

    **Changelog checkpointing** is on by default here (Spark's own default is off): each batch
    commits a small changelog of its changes, and RocksDB snapshots are uploaded in the
    background. With this package's checkpoint file manager the changelogs travel with the
    batch's pack instead of becoming a file each.

    **Settings**: typed getters and setters for the main ones
    (``spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage``, ``.maxMemoryUsageMB``,
    ``.blockCacheSizeMB``, ``.compactOnCommit``), and :meth:`set_options` for any other
    ``spark.sql.streaming.stateStore.rocksdb.*`` setting. Settings left unset keep Spark's
    defaults.

    Example:
    ::

        >>> from spark_checkpoint_storage.state_backend import EmbeddedRocksDBStateBackend
        >>> backend = EmbeddedRocksDBStateBackend()
        >>> backend.set_bounded_memory_usage(True)
        >>> backend.set_max_memory_usage_mb(1024)
        >>> backend.is_changelog_checkpointing_enabled(), backend.get_max_memory_usage_mb()
        (True, 1024)
        >>> print(backend)
        EmbeddedRocksDBStateBackend (org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider, changelog checkpointing on)
    """

    #: Spark's default memory budget of an executor's RocksDB instances with bounded memory
    #: usage (``maxMemoryUsageMB``), in MiB.
    DEFAULT_MAX_MEMORY_USAGE_MB = 500
    #: Spark's default block cache of a RocksDB instance (``blockCacheSizeMB``), in MiB.
    DEFAULT_BLOCK_CACHE_SIZE_MB = 8

    def __init__(self, enable_changelog_checkpointing: Optional[bool] = None):
        """
        Creates a new EmbeddedRocksDBStateBackend.

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend(enable_changelog_checkpointing=False)._to_conf()[
            ...     'spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled']
            'false'

        :param enable_changelog_checkpointing: whether each batch commits a changelog of its
            changes instead of a RocksDB snapshot
            (``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled``).
            None: on.
        """
        super(EmbeddedRocksDBStateBackend, self).__init__(jvm_names.ROCKSDB_PROVIDER_CLASS)
        if enable_changelog_checkpointing is None:
            enable_changelog_checkpointing = True
        if not isinstance(enable_changelog_checkpointing, bool):
            raise TypeError("enable_changelog_checkpointing must be a bool or None, got %r"
                            % (enable_changelog_checkpointing,))
        key = jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF
        self._options: Dict[str, str] = {key: _setting_value(key, enable_changelog_checkpointing)}

    def is_changelog_checkpointing_enabled(self) -> bool:
        """
        Whether each batch commits a changelog of its changes (snapshots in the background)
        rather than a RocksDB snapshot.

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend().is_changelog_checkpointing_enabled()
            True

        :return: True when changelog checkpointing is on.
        """
        return _parse_bool(jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF,
                           self._options[jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF])

    # -- memory ----------------------------------------------------------------------------

    def set_bounded_memory_usage(self, enabled: bool) -> None:
        """
        Sets whether all RocksDB instances of an executor share one memory budget
        (:meth:`set_max_memory_usage_mb`) for their write buffers and block cache
        (``spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage``, Spark's default off).

        Example:
        ::

            >>> backend = EmbeddedRocksDBStateBackend()
            >>> backend.set_bounded_memory_usage(True)
            >>> backend.is_bounded_memory_usage()
            True

        :param enabled: True to bound the memory.
        """
        self._set_bool(jvm_names.ROCKSDB_BOUNDED_MEMORY_USAGE_CONF, enabled)

    def is_bounded_memory_usage(self) -> bool:
        """
        Whether all RocksDB instances of an executor share one memory budget; off unless set.

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend().is_bounded_memory_usage()
            False

        :return: True when the memory is bounded.
        """
        return self._get_bool(jvm_names.ROCKSDB_BOUNDED_MEMORY_USAGE_CONF, False)

    def set_max_memory_usage_mb(self, size_mb: int) -> None:
        """
        Sets the memory budget, in MiB, shared by the RocksDB instances of an executor when
        memory usage is bounded
        (``spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB``).

        Example:
        ::

            >>> backend = EmbeddedRocksDBStateBackend()
            >>> backend.set_max_memory_usage_mb(256)
            >>> backend.get_max_memory_usage_mb()
            256

        :param size_mb: a positive number of MiB.
        """
        self._set_positive_int(jvm_names.ROCKSDB_MAX_MEMORY_USAGE_MB_CONF, size_mb)

    def get_max_memory_usage_mb(self) -> int:
        """
        The memory budget of an executor's RocksDB instances in MiB:
        :data:`DEFAULT_MAX_MEMORY_USAGE_MB` (Spark's default, 500) unless set.

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend().get_max_memory_usage_mb()
            500

        :return: the budget in MiB.
        """
        return self._get_int(jvm_names.ROCKSDB_MAX_MEMORY_USAGE_MB_CONF,
                             self.DEFAULT_MAX_MEMORY_USAGE_MB)

    def set_block_cache_size_mb(self, size_mb: int) -> None:
        """
        Sets the block cache of each RocksDB instance, in MiB, used when memory usage is not
        bounded (``spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB``).

        Example:
        ::

            >>> backend = EmbeddedRocksDBStateBackend()
            >>> backend.set_block_cache_size_mb(64)
            >>> backend.get_block_cache_size_mb()
            64

        :param size_mb: a positive number of MiB.
        """
        self._set_positive_int(jvm_names.ROCKSDB_BLOCK_CACHE_SIZE_MB_CONF, size_mb)

    def get_block_cache_size_mb(self) -> int:
        """
        The block cache of each RocksDB instance in MiB: :data:`DEFAULT_BLOCK_CACHE_SIZE_MB`
        (Spark's default, 8) unless set.

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend().get_block_cache_size_mb()
            8

        :return: the block cache size in MiB.
        """
        return self._get_int(jvm_names.ROCKSDB_BLOCK_CACHE_SIZE_MB_CONF,
                             self.DEFAULT_BLOCK_CACHE_SIZE_MB)

    # -- compaction ------------------------------------------------------------------------

    def set_compact_on_commit(self, enabled: bool) -> None:
        """
        Sets whether RocksDB compacts its database at every commit
        (``spark.sql.streaming.stateStore.rocksdb.compactOnCommit``, Spark's default off):
        smaller snapshots, slower commits.

        Example:
        ::

            >>> backend = EmbeddedRocksDBStateBackend()
            >>> backend.set_compact_on_commit(True)
            >>> backend.is_compact_on_commit()
            True

        :param enabled: True to compact at every commit.
        """
        self._set_bool(jvm_names.ROCKSDB_COMPACT_ON_COMMIT_CONF, enabled)

    def is_compact_on_commit(self) -> bool:
        """
        Whether RocksDB compacts its database at every commit; off unless set.

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend().is_compact_on_commit()
            False

        :return: True when compacting at every commit.
        """
        return self._get_bool(jvm_names.ROCKSDB_COMPACT_ON_COMMIT_CONF, False)

    # -- any other setting -----------------------------------------------------------------

    def set_options(self, options: Mapping[str, Union[str, bool, int, float]]) -> None:
        """
        Sets Spark RocksDB settings by their full keys, each of which must start with
        ``spark.sql.streaming.stateStore.rocksdb.`` (for example
        ``spark.sql.streaming.stateStore.rocksdb.formatVersion``). Booleans are written as
        ``true`` / ``false``. Spark checks the values when a query opens its stores.

        Example:
        ::

            >>> backend = EmbeddedRocksDBStateBackend()
            >>> backend.set_options({"spark.sql.streaming.stateStore.rocksdb.maxOpenFiles": 1000})
            >>> backend.get_options()["spark.sql.streaming.stateStore.rocksdb.maxOpenFiles"]
            '1000'
            >>> backend.set_options({"spark.sql.shuffle.partitions": 4})
            Traceback (most recent call last):
              ...
            spark_checkpoint_storage.errors.IllegalCheckpointStorageArgumentException: [CHECKPOINT_STORAGE.INVALID_ARGUMENT] ...

        :param options: full setting keys and their values.
        :raises IllegalCheckpointStorageArgumentException: (a ``ValueError``) for a key
            outside ``spark.sql.streaming.stateStore.rocksdb.``; nothing is set then.
        """
        if not isinstance(options, Mapping):
            raise TypeError("set_options takes a dict of setting keys and values, got %r"
                            % (options,))
        prefix = jvm_names.ROCKSDB_CONF_PREFIX
        foreign = sorted(str(k) for k in options
                         if not isinstance(k, str) or not k.startswith(prefix) or k == prefix)
        if foreign:
            raise IllegalCheckpointStorageArgumentException(
                "EmbeddedRocksDBStateBackend.set_options takes Spark's RocksDB settings only, "
                "keys starting with %s; not %s. Set other settings on the session or the "
                "builder (spark.conf.set, SparkSession.builder.config)."
                % (prefix, ", ".join(foreign)))
        values = {key: _setting_value(key, value) for key, value in options.items()}
        if jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF in values:
            _parse_bool(jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF,
                        values[jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF])
        self._options.update(values)

    def get_options(self) -> Dict[str, str]:
        """
        Every RocksDB setting of this backend, changelog checkpointing included, by full key.

        Example:
        ::

            >>> EmbeddedRocksDBStateBackend().get_options()
            {'spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled': 'true'}

        :return: a copy of the settings.
        """
        return dict(self._options)

    # -- helpers ---------------------------------------------------------------------------

    def _set_bool(self, key: str, enabled: bool) -> None:
        if not isinstance(enabled, bool):
            raise TypeError("%s takes a bool, got %r" % (key, enabled))
        self._options[key] = _setting_value(key, enabled)

    def _get_bool(self, key: str, default: bool) -> bool:
        value = self._options.get(key)
        return default if value is None else _parse_bool(key, value)

    def _set_positive_int(self, key: str, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise IllegalCheckpointStorageArgumentException(
                "%s must be a positive int (MiB), got %r" % (key, value))
        self._options[key] = str(value)

    def _get_int(self, key: str, default: int) -> int:
        value = self._options.get(key)
        if value is None:
            return default
        try:
            return int(value.strip())
        except ValueError:
            raise IllegalCheckpointStorageArgumentException(
                "%s must be a number of MiB, got %r" % (key, value)) from None

    def _to_conf(self) -> Dict[str, str]:
        conf = super(EmbeddedRocksDBStateBackend, self)._to_conf()
        conf.update(self._options)
        return conf

    def _description(self) -> str:
        return "%s, changelog checkpointing %s" % (
            self._provider_class, "on" if self.is_changelog_checkpointing_enabled() else "off")

    def __repr__(self) -> str:
        others = {k: v for k, v in self._options.items()
                  if k != jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF}
        return "EmbeddedRocksDBStateBackend(enable_changelog_checkpointing=%r%s)" % (
            self.is_changelog_checkpointing_enabled(),
            "" if not others else ", options=%r" % (others,))


class CustomStateBackend(StateBackend):
    """
    Any other state store provider: a class implementing Spark's ``StateStoreProvider``, on
    the classpath of the driver and the executors (Spark's default
    ``HDFSBackedStateStoreProvider``, or one of your own). Only the class name is set; its
    settings are the provider's business.

    Example:
    ::

        >>> from spark_checkpoint_storage.state_backend import CustomStateBackend
        >>> backend = CustomStateBackend(
        ...     "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider")
        >>> backend.get_provider_class()
        'org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider'
    """

    def __init__(self, provider_class: str):
        """
        Creates a backend of the state store provider class ``provider_class``.

        Example:
        ::

            >>> CustomStateBackend("com.example.MyStateStoreProvider")
            CustomStateBackend('com.example.MyStateStoreProvider')

        :param provider_class: the fully qualified class name.
        """
        super(CustomStateBackend, self).__init__(provider_class)

    def __repr__(self) -> str:
        return "CustomStateBackend(%r)" % (self._provider_class,)
