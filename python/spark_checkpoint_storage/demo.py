"""The demo behind ``python -m spark_checkpoint_storage demo``."""
from spark_checkpoint_storage._version import __version__


def run_demo(batches: int = 6) -> int:
    from pyspark.sql import SparkSession

    from spark_checkpoint_storage.checkpoint_config import configure_spark_with_checkpoint_storage
    from spark_checkpoint_storage.java_gateway import get_gateway

    builder = SparkSession.builder.master("local[2]").appName("spark-checkpoint-storage demo")
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    try:
        info = get_gateway().jvm.io.sparkcheckpointstorage.BuildInfo
        print("spark-checkpoint-storage %s (python) / %s (jar, built for Spark %s)"
              % (__version__, info.version(), info.sparkVersion()))
        print("Spark %s, jar loaded from %s" % (spark.version, info.jarLocation()))
    finally:
        spark.stop()
    return 0
