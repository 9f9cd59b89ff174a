"""
Migration of a streaming query's checkpoint between state store providers (Flink: restoring
a canonical savepoint into another state backend). Spark records the provider in a query's
checkpoint and keeps it on every restart; :func:`migrate` writes a new checkpoint whose state
is written by another provider, from which the query resumes on that provider with exactly
the results the original checkpoint would have given.

Also on the command line: ``python -m spark_checkpoint_storage migrate SRC DST --to heap``.
"""
import json
from typing import Any, Dict, List, Optional

from spark_checkpoint_storage.errors import MigrationException, jvm_errors

__all__ = ["migrate", "MigrationResult", "TARGET_PROVIDERS", "MIGRATION_MANIFEST"]

#: Short names of the providers a migration writes with (``to=``), and their classes.
TARGET_PROVIDERS: Dict[str, str] = {
    "heap": "io.sparkcheckpointstorage.provider.HeapStateStoreProvider",
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}

#: The file in a migrated checkpoint that describes the migration (JSON).
MIGRATION_MANIFEST = "_migration"


class MigrationResult(object):
    """
    What :func:`migrate` wrote: the new checkpoint's ``path``, the migrated ``batch_id``, the
    ``source_provider`` and ``target_provider`` classes, ``num_partitions``, per operator and
    store the rows written (``operators``), the total ``rows``, and the new checkpoint's
    ``files`` and ``bytes``, and the ``seconds`` it took.

    Example (``old`` is the checkpoint of a stopped query that committed batches 0-2):
    ::

        >>> from spark_checkpoint_storage.migration import migrate
        >>> result = migrate(old, "/tmp/checkpoint-heap", to="heap")  # doctest: +SKIP
        >>> result.batch_id, result.target_provider  # doctest: +SKIP
        (2, 'io.sparkcheckpointstorage.provider.HeapStateStoreProvider')
    """

    def __init__(self, data: Dict[str, Any]):
        self._data = data
        self.path: str = data["path"]
        self.batch_id: int = int(data["batchId"])
        self.source_provider: str = data["sourceProvider"]
        self.target_provider: str = data["targetProvider"]
        self.num_partitions: int = int(data["numPartitions"])
        self.operators: List[Dict[str, Any]] = list(data["operators"])
        self.rows: int = int(data["rows"])
        self.files: int = int(data["files"])
        self.bytes: int = int(data["bytes"])
        self.seconds: float = float(data["seconds"])

    def to_dict(self) -> Dict[str, Any]:
        """The result as plain Python values (JSON-compatible, the JVM's field names)."""
        return dict(self._data)

    def __repr__(self) -> str:
        return ("MigrationResult(path=%r, batch_id=%d, %s -> %s, rows=%d, bytes=%d, seconds=%.1f)"
                % (self.path, self.batch_id, self.source_provider.rsplit(".", 1)[-1],
                   self.target_provider.rsplit(".", 1)[-1], self.rows, self.bytes, self.seconds))


def _local_session() -> Any:
    """A local session with this package's jar, for a migration run without one."""
    from pyspark.sql import SparkSession

    from spark_checkpoint_storage.checkpoint_config import configure_spark_with_checkpoint_storage

    builder = (SparkSession.builder.master("local[*]").appName("spark-checkpoint-storage-migrate")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    return configure_spark_with_checkpoint_storage(builder).getOrCreate()


@jvm_errors
def migrate(source: str, target: str, to: str = "heap", batch_id: Optional[int] = None,
            spark: Any = None) -> MigrationResult:
    """
    Migrates the checkpoint of a stopped streaming query to another state store provider.

    Reads the state of every stateful operator of the checkpoint at ``source`` at a committed
    batch (default: the last), whatever provider wrote it, with Spark's state data source, and
    writes a new checkpoint at ``target``: its metadata, offset, commit and source logs are
    those of the source up to that batch, its state is written by the provider ``to`` as the
    version that batch produced, and its offset log records that provider, so that a query
    started with ``checkpointLocation`` set to ``target`` resumes on it and gives exactly the
    results that resuming the source would have given. The number of shuffle (state)
    partitions stays the source's. The source is never modified.

    The state is written as plain files: a session with either checkpoint storage of this
    package, or none, resumes the target. The target is written into a hidden sibling
    directory and renamed into place last; a failed migration leaves nothing at ``target``.

    ``source`` may also be a canonical savepoint (``savepoints.savepoint(...,
    format="canonical")``): its state rows are restored into ``target`` by the provider ``to``.

    Works for aggregations, ``dropDuplicates``, ``dropDuplicatesWithinWatermark``,
    stream-stream joins, ``flatMapGroupsWithState`` / ``applyInPandasWithState`` and session
    windows, from and to Spark's ``HDFSBackedStateStoreProvider`` and
    ``RocksDBStateStoreProvider`` and ours. Needs Spark 4.2 or later.

    Example:
    ::

        >>> from spark_checkpoint_storage.migration import migrate
        >>> result = migrate("/checkpoints/q1", "/checkpoints/q1-heap", to="heap")  # doctest: +SKIP
        >>> result.rows, result.target_provider  # doctest: +SKIP
        (100000, 'io.sparkcheckpointstorage.provider.HeapStateStoreProvider')
        >>> query = (df.writeStream.option("checkpointLocation", result.path)  # doctest: +SKIP
        ...          .start())

    :param source: the checkpoint location of the query to migrate (stop the query first), or a
                   canonical savepoint.
    :param target: where to write the new checkpoint: must not exist or be empty, and must not
                   lie inside the source.
    :param to: the provider to write with: ``"heap"`` (ours), ``"hdfs"``, ``"rocksdb"``, or a
               provider class name on the classpath.
    :param batch_id: the committed batch to migrate; default the last committed one.
    :param spark: the classic ``SparkSession`` to run the migration job on; default the active
                  one, else a local session with this package's jar (stopped afterwards).
    :return: a :class:`MigrationResult`.
    :raises MigrationException: for a batch that is not committed, an operator or provider that
                                cannot be read or written (named), a target inside the source
                                or not empty, state checkpoint format version 2, or Spark
                                before 4.2.
    """
    if batch_id is not None and (not isinstance(batch_id, int) or batch_id < 0):
        raise MigrationException("batch_id must be a committed batch id (an int >= 0), got %r"
                                 % (batch_id,))
    if not isinstance(to, str) or not to.strip():
        raise MigrationException("to must name a provider (%s, or a class name), got %r"
                                 % (", ".join(sorted(TARGET_PROVIDERS)), to))
    own_session = None
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            spark = own_session = _local_session()
    if not hasattr(spark, "_jsparkSession"):
        from spark_checkpoint_storage.errors import ClassicSessionRequiredException

        raise ClassicSessionRequiredException(
            "A migration runs a Spark job through py4j, which a Spark Connect session cannot: "
            "run it with a classic session (or the command line, python -m "
            "spark_checkpoint_storage migrate).")
    try:
        jvm = spark._jvm
        text = jvm.io.sparkcheckpointstorage.migration.Migration.migrate(
            spark._jsparkSession, source, target, to, -1 if batch_id is None else batch_id)
        return MigrationResult(json.loads(text))
    finally:
        if own_session is not None:
            own_session.stop()
