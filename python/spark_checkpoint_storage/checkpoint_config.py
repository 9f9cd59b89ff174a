"""
Session configuration: the analog of PyFlink's ``env.get_checkpoint_config()`` and of
delta's ``configure_spark_with_delta_pip``.
"""
from typing import Any

from spark_checkpoint_storage.bundled_jar import bundled_jar_path

__all__ = ["configure_spark_with_checkpoint_storage"]


def configure_spark_with_checkpoint_storage(builder: Any) -> Any:
    """
    Puts the jar bundled with this package on the classpath of the driver and of every
    executor of the session ``builder`` will create, and returns the builder.

    The jar is added to ``spark.jars`` (keeping any jars already listed there), which Spark
    puts on the driver's classpath at start-up and ships to the executors, so no network
    access is needed.

    Example:
    ::

        >>> from pyspark.sql import SparkSession
        >>> from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        >>> builder = SparkSession.builder.master("local[2]")
        >>> spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()  # doctest: +SKIP

    :param builder: a ``pyspark.sql.SparkSession.Builder``.
    :return: the same builder, configured.
    """
    jar = bundled_jar_path()
    options = getattr(builder, "_options", {})
    existing = [j for j in str(options.get("spark.jars", "")).split(",") if j.strip()]
    if jar not in existing:
        existing.append(jar)
    return builder.config("spark.jars", ",".join(existing))
