"""
Spark's own checkpoint file manager, the one a session uses when it names none: the class to
name when a session should run Spark's built-in state store providers exactly as plain Spark
does (the demo and the benchmarks compare ours against it). Its package moved in Spark 4.1.
"""
import re
from typing import Optional

__all__ = ["spark_file_manager_class"]

_BEFORE_4_1 = "org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager"
_FROM_4_1 = ("org.apache.spark.sql.execution.streaming.checkpointing."
             "FileContextBasedCheckpointFileManager")


def spark_file_manager_class(spark_line: Optional[str] = None) -> str:
    """
    The class name of Spark's ``FileContextBasedCheckpointFileManager`` on a Spark line, for
    ``spark.sql.streaming.checkpointFileManagerClass``.

    Example:
    ::

        >>> from spark_checkpoint_storage.spark_file_manager import spark_file_manager_class
        >>> spark_file_manager_class("3.5")
        'org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager'
        >>> spark_file_manager_class("4.3")
        'org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager'

    :param spark_line: the Spark line, as ``"3.5"``; by default the line of the installed
        pyspark.
    :return: the fully qualified class name.
    """
    if spark_line is None:
        import pyspark

        spark_line = pyspark.__version__
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", spark_line).groups())
    return _FROM_4_1 if (major, minor) >= (4, 1) else _BEFORE_4_1
