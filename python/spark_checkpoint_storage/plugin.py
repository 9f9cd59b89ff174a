"""
What a driver needs to run this package's plugin, in one place below the session and
checkpoint-config helpers that use it: the settings besides the jar (:data:`PLUGIN_CONFS`), the
spark-submit options that give a driver or a Spark Connect server the jar and those settings
(:func:`server_options`), and the check that a Spark Connect session's server runs the plugin
(:func:`is_connect_session`, :func:`check_connect_server_has_plugin`): a client cannot add a
jar or a plugin to a server that already runs.

Example:
::

    >>> from spark_checkpoint_storage.plugin import PLUGIN_CONFS, server_options
    >>> PLUGIN_CONFS["spark.sql.streaming.stateStore.providerClass"]
    'io.sparkcheckpointstorage.provider.HeapStateStoreProvider'
    >>> server_options().startswith("--jars ")
    True
"""
from typing import Any, Dict

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.bundled_jar import JarNotOnClasspathError, bundled_jar_path

__all__ = [
    "PLUGIN_CONFS",
    "server_options",
    "is_connect_session",
    "check_connect_server_has_plugin",
]

#: Every setting the plugin needs besides the jar: the state store provider, the checkpoint
#: file manager that places state bytes, and the Spark plugin that runs the coordinator.
PLUGIN_CONFS: Dict[str, str] = {
    jvm_names.PROVIDER_CLASS_CONF: jvm_names.HEAP_PROVIDER_CLASS,
    jvm_names.FILE_MANAGER_CLASS_CONF: jvm_names.FILE_MANAGER_CLASS,
}


def is_connect_session(target: Any) -> bool:
    """
    Whether ``target`` is a Spark Connect ``SparkSession`` (False when Spark Connect's Python
    dependencies are not installed).

    Example:
    ::

        >>> from spark_checkpoint_storage.plugin import is_connect_session
        >>> is_connect_session(spark)  # doctest: +SKIP
        False
    """
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # Spark Connect's Python dependencies are not installed
        return False
    return isinstance(target, ConnectSession)


def check_connect_server_has_plugin(session: Any) -> None:
    """
    Refuses a Spark Connect session whose server runs without this package's plugin: a
    client cannot add the jar and the plugin to a server that already runs.

    Example:
    ::

        >>> from spark_checkpoint_storage.plugin import check_connect_server_has_plugin
        >>> check_connect_server_has_plugin(connect_spark)  # doctest: +SKIP

    :param session: a Spark Connect ``SparkSession``.
    :raises JarNotOnClasspathError: when the server's ``spark.plugins`` does not name the
        plugin; the message gives the server's ``--jars`` and ``--conf`` options.
    """
    plugins = session.conf.get(jvm_names.PLUGINS_CONF, None) or ""
    if jvm_names.PLUGIN_CLASS not in [p.strip() for p in plugins.split(",")]:
        raise JarNotOnClasspathError(
            "The Spark Connect server does not run the spark-checkpoint-storage plugin (its %s "
            "is %r): the jar and the plugin must be on the server when it starts, a client "
            "cannot add them. Start the server with %s."
            % (jvm_names.PLUGINS_CONF, plugins, server_options()))


def server_options() -> str:
    """
    The spark-submit options that give a Spark Connect server (or any driver) the jar and
    the plugin.

    Example:
    ::

        >>> from spark_checkpoint_storage.plugin import server_options
        >>> server_options().startswith("--jars ")
        True
    """
    return "--jars %s --conf %s=%s --conf %s=%s %s" % (
        bundled_jar_path(), jvm_names.PLUGINS_CONF, jvm_names.PLUGIN_CLASS,
        jvm_names.QUERY_LISTENERS_CONF, jvm_names.LISTENER_CLASS,
        " ".join("--conf %s=%s" % kv for kv in PLUGIN_CONFS.items()))
