"""
Session helpers: everything that builds or configures a Spark session for this package, or
finds the session (and its JVM) behind a streaming query or a checkpoint location. The analog
of delta's ``configure_spark_with_delta_pip``
(:func:`configure_spark_with_checkpoint_storage`).

The helpers that build or configure a session install this package's conversion of JVM errors
(:func:`~spark_checkpoint_storage.errors.install_error_conversion`): importing the package
changes nothing in PySpark.

Example:
::

    >>> from pyspark.sql import SparkSession
    >>> from spark_checkpoint_storage.session import configure_spark_with_checkpoint_storage
    >>> builder = configure_spark_with_checkpoint_storage(SparkSession.builder.master("local[2]"))
    >>> spark = builder.getOrCreate()  # doctest: +SKIP
"""
import functools
import os
from typing import Any, Dict, Optional, Tuple

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.bundled_jar import (
    JarNotOnClasspathError,
    bundled_jar_path,
    jvm_has_jar,
)
from spark_checkpoint_storage.checkpoint_config import get_checkpoint_config
from spark_checkpoint_storage.checkpoint_storage import CheckpointStorage
from spark_checkpoint_storage.errors import (
    CheckpointStorageException,
    ClassicSessionRequiredException,
    convert_jvm_exception,
    install_error_conversion,
)
from spark_checkpoint_storage.plugin import PLUGIN_CONFS, server_options
from spark_checkpoint_storage.state_backend import StateBackend

__all__ = [
    "configure_spark_with_checkpoint_storage",
    "local_session",
    "checkpoint_location_and_session",
    "jvm_and_hadoop_conf",
]

def configure_spark_with_checkpoint_storage(builder: Any,
                                            storage: Optional[CheckpointStorage] = None,
                                            state_backend: Optional[StateBackend] = None) -> Any:
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
      directory is known, else driver heap);
    * ``state_backend``, when given, sets the state store provider and its settings (see
      :meth:`~spark_checkpoint_storage.checkpoint_config.CheckpointConfig.set_state_backend`),
      over any provider the builder names. Without it: the builder's provider, else
      :class:`~spark_checkpoint_storage.state_backend.HashMapStateBackend`.

    It also installs this package's conversion of JVM errors in this Python process, once
    (:func:`~spark_checkpoint_storage.errors.install_error_conversion`): an error of this
    package that the JVM throws through PySpark, such as a wrong setting refused by
    ``writeStream.start()``, reaches Python as this package's exception
    (:class:`~spark_checkpoint_storage.errors.IllegalCheckpointStorageArgumentException`);
    every other error stays PySpark's. ``getOrCreate()`` of the returned builder raises a
    wrong start-up setting of this package the same way.

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

        >>> from spark_checkpoint_storage.state_backend import EmbeddedRocksDBStateBackend
        >>> builder = configure_spark_with_checkpoint_storage(
        ...     SparkSession.builder.master("local[2]"),
        ...     state_backend=EmbeddedRocksDBStateBackend())

    :param builder: a ``pyspark.sql.SparkSession.Builder``.
    :param storage: the checkpoint storage, optional.
    :param state_backend: the state backend, optional.
    :return: the same builder, configured.
    """
    if _is_remote_builder(builder):
        raise ClassicSessionRequiredException(
            "configure_spark_with_checkpoint_storage needs a classic SparkSession builder: the "
            "jar and the plugin must be on the Spark Connect server when it starts. Start the "
            "server with %s, then set the storage on the Connect session with "
            "get_checkpoint_config(spark)." % server_options())
    if state_backend is not None and not isinstance(state_backend, StateBackend):
        raise TypeError("state_backend must be a StateBackend (for example "
                        "EmbeddedRocksDBStateBackend()), got %r" % (state_backend,))
    _check_running_jvm_has_jar()
    install_error_conversion()
    options = getattr(builder, "_options", {})
    builder = builder.config(jvm_names.JARS_CONF,
                             _append_list(options, jvm_names.JARS_CONF, bundled_jar_path()))
    builder = builder.config(jvm_names.PLUGINS_CONF,
                             _append_list(options, jvm_names.PLUGINS_CONF, jvm_names.PLUGIN_CLASS))
    builder = builder.config(jvm_names.QUERY_LISTENERS_CONF, _append_list(
        options, jvm_names.QUERY_LISTENERS_CONF, jvm_names.LISTENER_CLASS))
    for key, value in PLUGIN_CONFS.items():
        if key not in options:
            builder = builder.config(key, value)
    if storage is not None:
        get_checkpoint_config(builder).set_checkpoint_storage(storage)
    if state_backend is not None:
        get_checkpoint_config(builder).set_state_backend(state_backend)
    _guard_get_or_create(builder)
    return builder


def local_session() -> Any:
    """
    A local classic session configured by :func:`configure_spark_with_checkpoint_storage`
    (so with this package's jar and its conversion of JVM errors), for the jobs that run
    without a session of the caller's (a migration, a canonical savepoint). The caller stops
    it.

    Example:
    ::

        >>> from spark_checkpoint_storage.session import local_session
        >>> spark = local_session()  # doctest: +SKIP
        >>> spark.stop()  # doctest: +SKIP

    :return: the ``SparkSession`` (``getOrCreate()``: the active one when there is one).
    """
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[*]").appName("spark-checkpoint-storage-migrate")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    return configure_spark_with_checkpoint_storage(builder).getOrCreate()


def checkpoint_location_and_session(query_or_location: Any) -> Tuple[str, Any]:
    """
    The checkpoint location of a streaming query, and the JVM ``SparkSession`` to read it
    with: for a ``StreamingQuery`` of a classic session, its resolved checkpoint root and its
    session; for a location, the location itself and the active classic session's JVM
    session, or None without one (none, or Spark Connect: a local JVM then reads the files).

    Example:
    ::

        >>> from spark_checkpoint_storage.session import checkpoint_location_and_session
        >>> checkpoint_location_and_session("/tmp/checkpoints/q1")[0]
        '/tmp/checkpoints/q1'

    :param query_or_location: a ``StreamingQuery`` or a checkpoint location.
    :return: (checkpoint location, the JVM ``SparkSession`` or None).
    :raises ClassicSessionRequiredException: for a Spark Connect ``StreamingQuery``.
    """
    if isinstance(query_or_location, str):
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        session = ((SparkSession.getActiveSession() or SparkSession._instantiatedSession)
                   if SparkContext._active_spark_context else None)
        # Without a classic session (none, or Spark Connect) a local JVM reads the files.
        return query_or_location, getattr(session, "_jsparkSession", None)
    if hasattr(query_or_location, "_jsq"):
        j_query = query_or_location._jsq
        return (str(j_query.streamingQuery().resolvedCheckpointRoot()),
                j_query.sparkSession())
    if type(query_or_location).__module__.startswith("pyspark.sql.connect"):
        raise ClassicSessionRequiredException(
            "This needs a classic SparkSession: a Spark Connect StreamingQuery does not expose "
            "its checkpoint to the client through py4j. Pass the query's checkpoint location "
            "(the checkpointLocation option) instead, on a machine that can read it.")
    raise TypeError("Expected a StreamingQuery or a checkpoint location, got %r"
                    % (query_or_location,))


def jvm_and_hadoop_conf(j_session: Any) -> Tuple[Any, Any]:
    """
    The py4j JVM view and a Hadoop ``Configuration`` to read checkpoint files with: the
    session's (its Hadoop settings included) for a JVM ``SparkSession``, else a default one
    of the JVM :func:`~spark_checkpoint_storage.java_gateway.get_gateway` gives.

    Example:
    ::

        >>> from spark_checkpoint_storage.session import jvm_and_hadoop_conf
        >>> jvm, conf = jvm_and_hadoop_conf(None)  # doctest: +SKIP
        >>> conf.get("fs.defaultFS")  # doctest: +SKIP
        'file:///'

    :param j_session: a JVM ``SparkSession`` (``spark._jsparkSession``), or None.
    :return: (the JVM view, a Hadoop ``Configuration``).
    """
    from spark_checkpoint_storage.java_gateway import get_gateway

    gateway = get_gateway()
    if j_session is not None:
        return gateway.jvm, j_session.sessionState().newHadoopConf()
    return gateway.jvm, gateway.jvm.org.apache.hadoop.conf.Configuration()


def _is_remote_builder(builder: Any) -> bool:
    options = getattr(builder, "_options", {})
    return ("spark.remote" in options or options.get("spark.api.mode") == "connect"
            or bool(os.environ.get("SPARK_REMOTE")))


def _append_list(options: Dict[str, Any], key: str, value: str) -> str:
    existing = [v.strip() for v in str(options.get(key, "")).split(",") if v.strip()]
    if value not in existing:
        existing.append(value)
    return ",".join(existing)


def _check_running_jvm_has_jar() -> None:
    """
    A Python process launches its driver JVM once, with the classpath of its first session:
    a session built later in the same process (a notebook, a test suite) runs in that JVM,
    and ``spark.jars`` cannot put the jar on a driver that already runs. Refuse before
    ``getOrCreate()`` fails deep inside ``JavaSparkContext`` with a ``ClassNotFoundException``.
    """
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None or jvm_has_jar(gateway):
        return
    jar = bundled_jar_path()
    raise JarNotOnClasspathError(
        "This Python process already runs a Spark driver JVM, started by an earlier "
        "SparkSession without the spark-checkpoint-storage jar, and a JVM's classpath is fixed "
        "when it starts: a session built in it cannot load %s. Start a new Python process "
        "(restart the notebook kernel) and build the session with "
        "configure_spark_with_checkpoint_storage before any other, or launch Python with the "
        "jar on the driver's classpath: PYSPARK_SUBMIT_ARGS='--jars %s pyspark-shell', "
        "spark-submit --jars %s, or spark.jars=%s on the first session." % (
            jvm_names.PLUGIN_CLASS, jar, jar, jar))


def _guard_get_or_create(builder: Any) -> None:
    """
    Makes ``builder.getOrCreate()`` check the running JVM for the jar first, and raise a
    setting of this package that the driver refuses at start-up (a wrong static setting)
    as this package's error, naming the setting, instead of py4j's error about
    ``JavaSparkContext``.
    """
    original = builder.getOrCreate
    if getattr(original, "_spark_checkpoint_storage", False):
        return

    @functools.wraps(original)
    def get_or_create() -> Any:
        from py4j.protocol import Py4JJavaError

        _check_running_jvm_has_jar()
        try:
            return original()
        except Py4JJavaError as e:
            converted = convert_jvm_exception(e)
            if isinstance(converted, CheckpointStorageException):
                raise converted from None
            raise

    get_or_create._spark_checkpoint_storage = True  # type: ignore[attr-defined]
    builder.getOrCreate = get_or_create
