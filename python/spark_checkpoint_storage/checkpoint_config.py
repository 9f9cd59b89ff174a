"""
Session configuration: the analog of PyFlink's ``env.get_checkpoint_config()`` and of
delta's ``configure_spark_with_delta_pip``.
"""
from typing import Any, Dict

from spark_checkpoint_storage.bundled_jar import bundled_jar_path

__all__ = ["configure_spark_with_checkpoint_storage", "PLUGIN_CONFS"]

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


def _append_list(options: Dict[str, Any], key: str, value: str) -> str:
    existing = [v.strip() for v in str(options.get(key, "")).split(",") if v.strip()]
    if value not in existing:
        existing.append(value)
    return ",".join(existing)


def configure_spark_with_checkpoint_storage(builder: Any) -> Any:
    """
    Configures the session ``builder`` will create for spark-checkpoint-storage, and returns
    the builder:

    * the jar bundled with this package goes on the classpath of the driver and every
      executor (``spark.jars``; Spark ships it, no network access needed);
    * the coordinator plugin is added to ``spark.plugins`` and its query listener to
      ``spark.sql.streaming.streamingQueryListeners`` (frees a stopped query's driver memory,
      applies ``DELETE_ON_CANCELLATION``);
    * ``HeapStateStoreProvider`` and ``StorageCheckpointFileManager`` are set, unless the
      builder already names others.

    Which checkpoint storage the queries use follows the configuration
    (``spark.sql.streaming.checkpointStorage``; default: file system when a checkpoint
    directory is known, else driver heap).

    Example:
    ::

        >>> from pyspark.sql import SparkSession
        >>> from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        >>> builder = SparkSession.builder.master("local[2]")
        >>> spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()  # doctest: +SKIP

    :param builder: a ``pyspark.sql.SparkSession.Builder``.
    :return: the same builder, configured.
    """
    options = getattr(builder, "_options", {})
    builder = builder.config("spark.jars", _append_list(options, "spark.jars", bundled_jar_path()))
    builder = builder.config("spark.plugins", _append_list(options, "spark.plugins", PLUGIN_CLASS))
    builder = builder.config("spark.sql.streaming.streamingQueryListeners", _append_list(
        options, "spark.sql.streaming.streamingQueryListeners", LISTENER_CLASS))
    for key, value in PLUGIN_CONFS.items():
        if key not in options:
            builder = builder.config(key, value)
    return builder
