"""
Savepoints: a self-contained, relocatable copy of a streaming query's checkpoint at a
committed batch (Flink: a savepoint). A new query started on the copy resumes after that
batch with exactly the state the original had.
"""
import json
import uuid
from typing import Any, Optional

from spark_checkpoint_storage.errors import SavepointException, jvm_errors
from spark_checkpoint_storage.inspection import _checkpoint_of, _jvm_and_conf

__all__ = ["savepoint", "SAVEPOINT_MANIFEST"]

#: The file in a savepoint that describes it (JSON: batchId, queryId, files, bytes, ...).
SAVEPOINT_MANIFEST = "_savepoint"


def _default_target(jvm: Any, conf: Any, location: str, query_id: Optional[str]) -> str:
    """``<savepoint path of the session's storage>/savepoint-<query id prefix>-<random>``."""
    j_map = jvm.java.util.HashMap()
    props = conf.getPropsWithPrefix("spark.sql.streaming.checkpointStorage")
    for key in props.keySet():
        j_map.put("spark.sql.streaming.checkpointStorage" + key, props.get(key))
    location_key = "spark.sql.streaming.checkpointLocation"
    if conf.get(location_key) is not None:
        j_map.put(location_key, conf.get(location_key))
    lookup = jvm.scala.jdk.javaapi.CollectionConverters.asScala(j_map).lift()
    storage = jvm.io.sparkcheckpointstorage.storage.CheckpointStorageLoader.load(
        lookup, jvm.scala.Option.apply(location))
    directory = storage.getSavepointPath()
    if directory is None:
        raise SavepointException(
            "No savepoint directory: the checkpoint storage %s has none. Pass target=..., or set "
            "spark.sql.streaming.checkpointStorage.savepointPath (or give the storage a "
            "checkpoint path, whose savepoints/ folder is then used)." % storage.toString())
    name = "savepoint-%s%s" % ((query_id or "")[:6] + "-" if query_id else "", uuid.uuid4().hex[:12])
    return str(directory).rstrip("/") + "/" + name


@jvm_errors
def savepoint(query_or_checkpoint_location: Any, target: Optional[str] = None,
              batch_id: Optional[int] = None) -> str:
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
    :return: the savepoint's path.
    :raises SavepointException: for a target inside the checkpoint or not empty, a batch that
                                is not committed, or a checkpoint without committed batches.
    :raises ClassicSessionRequiredException: for a Spark Connect query.
    """
    location, j_session = _checkpoint_of(query_or_checkpoint_location)
    jvm, conf = _jvm_and_conf(j_session)
    if target is None:
        query_id = str(query_or_checkpoint_location.id) if hasattr(
            query_or_checkpoint_location, "_jsq") else None
        target = _default_target(jvm, conf, location, query_id)
    if batch_id is not None and (not isinstance(batch_id, int) or batch_id < 0):
        raise SavepointException("batch_id must be a committed batch id (an int >= 0), got %r"
                                 % (batch_id,))
    result = json.loads(jvm.io.sparkcheckpointstorage.savepoint.Savepoints.create(
        location, target, -1 if batch_id is None else batch_id, conf))
    return str(result["path"])
