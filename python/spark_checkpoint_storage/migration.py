"""
Migration of a streaming query's checkpoint between state store providers (Flink: restoring
a canonical savepoint into another state backend). Spark records the provider in a query's
checkpoint and keeps it on every restart; :func:`migrate` writes a new checkpoint whose state
is written by another provider, from which the query resumes on that provider with exactly
the results the original checkpoint would have given.

With ``num_partitions``, the new checkpoint's state is redistributed over that many
partitions (Flink: restoring a savepoint at a new parallelism), each row in the partition
where the resumed query's shuffle sends its key.

Also on the command line: ``python -m spark_checkpoint_storage migrate SRC DST --to heap
[--partitions N]``.
"""
import threading
import uuid
from typing import Any, Callable, Dict, Optional

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.errors import MigrationException, jvm_errors
from spark_checkpoint_storage.results import MigrationProgress, MigrationResult
from spark_checkpoint_storage.session import local_session

__all__ = ["migrate", "MigrationResult", "MigrationProgress", "TARGET_PROVIDERS",
           "MIGRATION_MANIFEST"]

#: Short names of the providers a migration writes with (``to=``), and their classes.
TARGET_PROVIDERS: Dict[str, str] = dict(jvm_names.MIGRATION_TARGETS)

#: The file in a migrated checkpoint that describes the migration (JSON).
MIGRATION_MANIFEST = "_migration"


class _ProgressPoller(threading.Thread):
    """Polls the JVM for a migration's progress and hands each change to ``callback``."""

    def __init__(self, jvm: Any, progress_id: str, callback: Callable[[MigrationProgress], None],
                 interval: float):
        super().__init__(name="spark-checkpoint-storage-migration-progress", daemon=True)
        self._progress = jvm_names.jvm_class(jvm, jvm_names.MIGRATION_TRACKER_CLASS)
        self._id = progress_id
        self._callback = callback
        self._interval = interval
        self._done = threading.Event()

    def run(self) -> None:
        last = None
        while not self._done.wait(self._interval):
            text = self._progress.snapshot(self._id)
            if text is not None and text != last:
                last = text
                self._callback(MigrationProgress.from_json(text))

    def stop(self) -> None:
        self._done.set()
        self.join()


@jvm_errors
def migrate(source: str, target: str, to: str = "heap", batch_id: Optional[int] = None,
            num_partitions: Optional[int] = None, spark: Any = None,
            progress: Optional[Callable[[MigrationProgress], None]] = None,
            progress_interval: float = 1.0) -> MigrationResult:
    """
    Migrates the checkpoint of a stopped streaming query to another state store provider.

    Reads the state of every stateful operator of the checkpoint at ``source`` at a committed
    batch (default: the last), whatever provider wrote it, with Spark's state data source, and
    writes a new checkpoint at ``target``: its metadata, offset, commit and source logs are
    those of the source up to that batch, its state is written by the provider ``to`` as the
    version that batch produced, and its offset log records that provider, so that a query
    started with ``checkpointLocation`` set to ``target`` resumes on it and gives exactly the
    results that resuming the source would have given. The source is never modified.

    With ``num_partitions``, the state of every stateful operator is redistributed over that
    many partitions: each row goes to the partition where the resumed query's shuffle sends
    its key (Spark's hash partitioning of the operator's keys), and the new checkpoint's
    offset log and operator metadata record the new number, so the resumed query runs with
    it whatever ``spark.sql.shuffle.partitions`` its session sets. The rows move
    executor to executor through a Spark shuffle; the driver holds none of them. Without it,
    the number of partitions stays the source's.

    The state is written as plain files: a session with either checkpoint storage of this
    package, or none, resumes the target. The target is written into a hidden sibling
    directory and renamed into place last; a failed migration leaves nothing at ``target``.

    ``source`` may also be a canonical savepoint (``savepoints.savepoint(...,
    format="canonical")``): its state rows are restored into ``target`` by the provider ``to``.

    Works for aggregations, ``dropDuplicates``, ``dropDuplicatesWithinWatermark``,
    stream-stream joins, ``flatMapGroupsWithState`` / ``applyInPandasWithState`` and session
    windows, from and to Spark's ``HDFSBackedStateStoreProvider`` and
    ``RocksDBStateStoreProvider`` and ours, on every Spark line from 3.5 (where Spark records
    no operator metadata, the operator is told from its state schemas). ``transformWithState``
    / ``transformWithStateInPandas`` state (RocksDB's column families) goes to ``rocksdb``
    only, rescaled from Spark 4.2 by Spark's own state rewriter; its ``operators`` list the
    rows of each state variable.

    Rescaling a query's state to 32 partitions, with the same provider:
    ::

        >>> result = migrate("/checkpoints/q1", "/checkpoints/q1-32", to="heap",  # doctest: +SKIP
        ...                  num_partitions=32, progress=print)
        >>> result.source_num_partitions, result.num_partitions  # doctest: +SKIP
        (8, 32)

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
    :param num_partitions: the number of state partitions of the new checkpoint (>= 1);
                           default the source's.
    :param spark: the classic ``SparkSession`` to run the migration job on; default the active
                  one, else a local session with this package's jar (stopped afterwards).
    :param progress: called with a :class:`MigrationProgress` whenever the migration moves on
                     (checked every ``progress_interval`` seconds, from another thread), and
                     once more when it has finished (phase ``done``, every store written).
    :param progress_interval: seconds between two checks of the progress.
    :return: a :class:`MigrationResult`.
    :raises MigrationException: for a batch that is not committed, an operator or provider that
                                cannot be read or written (named), a target inside the source
                                or not empty, state checkpoint format version 2, a
                                ``rocksdb`` target before Spark 4.2, ``num_partitions`` below
                                1, or an operator whose partitioning cannot be told from its
                                state (named).
    """
    if batch_id is not None and (not isinstance(batch_id, int) or batch_id < 0):
        raise MigrationException("batch_id must be a committed batch id (an int >= 0), got %r"
                                 % (batch_id,))
    if not isinstance(to, str) or not to.strip():
        raise MigrationException("to must name a provider (%s, or a class name), got %r"
                                 % (", ".join(sorted(TARGET_PROVIDERS)), to))
    if num_partitions is not None and (isinstance(num_partitions, bool)
                                       or not isinstance(num_partitions, int)
                                       or num_partitions < 1):
        raise MigrationException("num_partitions must be a number of partitions (an int >= 1), "
                                 "got %r" % (num_partitions,))
    own_session = None
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            spark = own_session = local_session()
    if not hasattr(spark, "_jsparkSession"):
        from spark_checkpoint_storage.errors import ClassicSessionRequiredException

        raise ClassicSessionRequiredException(
            "A migration runs a Spark job through py4j, which a Spark Connect session cannot: "
            "run it with a classic session (or the command line, python -m "
            "spark_checkpoint_storage migrate).")
    try:
        jvm = spark._jvm
        progress_id = None if progress is None else str(uuid.uuid4())
        poller = None if progress is None else _ProgressPoller(jvm, progress_id, progress,
                                                               progress_interval)
        if poller is not None:
            poller.start()
        try:
            text = jvm_names.jvm_class(jvm, jvm_names.MIGRATION_CLASS).migrate(
                spark._jsparkSession, source, target, to, -1 if batch_id is None else batch_id,
                num_partitions, progress_id)
        finally:
            if poller is not None:
                poller.stop()
        result = MigrationResult.from_json(text)
        if progress is not None:
            # A migration shorter than progress_interval would report nothing: its last
            # report is always the finished migration's, as a progress bar ends full.
            stores = sum(len(op.stores) for op in result.operators)
            progress(MigrationProgress(phase="done", stores_done=stores, stores_total=stores,
                                       rows_written=result.rows, operator_id=None,
                                       operator_name=None, store=None,
                                       partitions_written=None, partitions=None))
        return result
    finally:
        if own_session is not None:
            own_session.stop()
