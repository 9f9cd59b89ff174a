"""
Savepoints: a self-contained, relocatable copy of a streaming query's checkpoint at a
committed batch (Flink: a savepoint). A new query started on the copy resumes after that
batch with exactly the state the original had.
"""
import uuid
from typing import Any, Optional

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.errors import SavepointException, jvm_errors
from spark_checkpoint_storage.jvm_names import jvm_class
from spark_checkpoint_storage.results import CanonicalSavepointResult, SavepointResult
from spark_checkpoint_storage.session import (
    checkpoint_location_and_session,
    jvm_and_hadoop_conf,
    local_session,
)

__all__ = ["savepoint", "SAVEPOINT_MANIFEST", "SAVEPOINT_FORMATS"]

#: ``format=`` of :func:`savepoint`: our own (the default; resumes directly) or canonical
#: (provider-neutral parquet rows; restored with ``migration.migrate(..., to=...)``).
SAVEPOINT_FORMATS = ("native", "canonical")

#: The file in a savepoint that describes it (JSON: batchId, queryId, files, bytes, ...).
SAVEPOINT_MANIFEST = "_savepoint"


def _default_target(jvm: Any, conf: Any, location: str, query_id: Optional[str]) -> str:
    """``<savepoint path of the session's storage>/savepoint-<query id prefix>-<random>``."""
    j_map = jvm.java.util.HashMap()
    props = conf.getPropsWithPrefix(jvm_names.PREFIX)
    for key in props.keySet():
        j_map.put(jvm_names.PREFIX + key, props.get(key))
    location_key = jvm_names.SPARK_CHECKPOINT_LOCATION
    if conf.get(location_key) is not None:
        j_map.put(location_key, conf.get(location_key))
    storage = jvm_class(jvm, jvm_names.STORAGE_LOADER_CLASS).loadFromJava(j_map, location)
    directory = storage.getSavepointPath()
    if directory is None:
        raise SavepointException(
            "No savepoint directory: the checkpoint storage %s has none. Pass target=..., or set "
            "%s (or give the storage a checkpoint path, whose savepoints/ folder is then used)."
            % (storage.toString(), jvm_names.SAVEPOINT_PATH))
    name = "savepoint-%s%s" % ((query_id or "")[:6] + "-" if query_id else "", uuid.uuid4().hex[:12])
    return str(directory).rstrip("/") + "/" + name


@jvm_errors
def savepoint(query_or_checkpoint_location: Any, target: Optional[str] = None,
              batch_id: Optional[int] = None, format: str = "native") -> str:
    """
    Writes a savepoint of a streaming query: a self-contained, relocatable copy of its
    checkpoint at its last committed batch (or at ``batch_id``), and returns its path.

    The copy holds the query's metadata, its offset and commit logs up to the batch, its
    source logs, and every state file up to the batch's state version as a plain file: state
    the driver held inline (in heap, or packed) is written out, so the copy needs neither the
    driver nor packs, and nothing in it names the original location. Move it anywhere; a
    query started with ``checkpointLocation`` set to the copy resumes after the batch, with
    whichever checkpoint storage its session uses. A running query keeps running: batches
    that are not committed yet are left out.

    Example:
    ::

        >>> from spark_checkpoint_storage.savepoints import savepoint
        >>> path = savepoint(query, "/backups/my-query-sp1")  # doctest: +SKIP
        >>> restored = (df.writeStream.option("checkpointLocation", path)  # doctest: +SKIP
        ...             .start())

    :param query_or_checkpoint_location: a ``StreamingQuery`` of a classic session (running
                                         or stopped), or a checkpoint location.
    :param target: the directory to write to; it must not exist or be empty, and must not lie
                   inside the checkpoint. Default: a new directory under the savepoint path of
                   the session's checkpoint storage
                   (``spark.sql.streaming.checkpointStorage.savepointPath``, else
                   ``<checkpoint path>/savepoints``).
    :param batch_id: the committed batch to save; default the last committed one.
    :param format: ``"native"`` (default): our own format above. ``"canonical"``: a
                   provider-neutral savepoint (Flink: a canonical savepoint): the same logs
                   and Spark's operator metadata, and instead of state files the state rows of
                   every operator, store and partition as parquet (``key`` and ``value``
                   structs with the store's schemas) read by Spark's state data source from
                   whichever provider wrote them, and a ``_savepoint`` file saying
                   ``"format": "canonical"`` with the schemas. A query does not start on it
                   directly: ``migration.migrate(savepoint, checkpoint, to="heap"|"hdfs"|
                   "rocksdb")`` restores it into a new checkpoint written by the provider
                   chosen. Needs a classic session (default: the active one, else a local one)
                   and Spark 4.2 or later; the query should be stopped.

                   >>> sp = savepoint("/cp/q1", "/backups/q1", format="canonical")  # doctest: +SKIP
                   >>> migrate(sp, "/cp/q1-rocksdb", to="rocksdb")  # doctest: +SKIP
    :return: the savepoint's path.
    :raises SavepointException: for a target inside the checkpoint or not empty, or beside
                                the hidden sibling an unfinished savepoint or migration left
                                there, a batch that is not committed, or a checkpoint without
                                committed batches.
    :raises ClassicSessionRequiredException: for a Spark Connect query.
    """
    location, j_session = checkpoint_location_and_session(query_or_checkpoint_location)
    if batch_id is not None and (not isinstance(batch_id, int) or batch_id < 0):
        raise SavepointException("batch_id must be a committed batch id (an int >= 0), got %r"
                                 % (batch_id,))
    if format not in SAVEPOINT_FORMATS:
        raise SavepointException("format must be one of %s, got %r"
                                 % (", ".join(SAVEPOINT_FORMATS), format))
    if format == "canonical":
        return _canonical(query_or_checkpoint_location, location, j_session, target, batch_id)
    jvm, conf = jvm_and_hadoop_conf(j_session)
    if target is None:
        target = _default_target(jvm, conf, location, _query_id(query_or_checkpoint_location))
    return SavepointResult.from_json(jvm_class(jvm, jvm_names.SAVEPOINTS_CLASS).create(
        location, target, -1 if batch_id is None else batch_id, conf)).path


def _query_id(query_or_location: Any) -> Optional[str]:
    return str(query_or_location.id) if hasattr(query_or_location, "_jsq") else None


def _canonical(query_or_location: Any, location: str, j_session: Any, target: Optional[str],
               batch_id: Optional[int]) -> str:
    """A canonical savepoint: a Spark job on the query's session, or the active or a local one
    (the job needs a SparkContext, so a session is started before any JVM is asked)."""
    own = None
    if j_session is None:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is None:
            active = own = local_session()
        j_session = active._jsparkSession
    try:
        jvm, conf = jvm_and_hadoop_conf(j_session)
        if target is None:
            target = _default_target(jvm, conf, location, _query_id(query_or_location))
        return CanonicalSavepointResult.from_json(jvm_class(
            jvm, jvm_names.CANONICAL_SAVEPOINTS_CLASS).create(
            j_session, location, target, -1 if batch_id is None else batch_id)).path
    finally:
        if own is not None:
            own.stop()
