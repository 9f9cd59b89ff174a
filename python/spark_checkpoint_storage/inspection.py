"""
Checkpoint inspection (Flink: the checkpoint statistics of the web UI, for a checkpoint on
disk): committed batches, state per operator, partition and store with inline and file bytes
and file counts, packs, the range of batches a query can restart from, and per batch the state
written and how long it took to commit.

Also on the command line: ``python -m spark_checkpoint_storage inspect <checkpoint> [--plot out.png]``.
"""
import json
from typing import Any, Dict, List, Optional, Tuple

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.errors import ClassicSessionRequiredException, jvm_errors
from spark_checkpoint_storage.jvm_names import jvm_class

__all__ = ["CheckpointInspection", "inspect_checkpoint"]

_STORE_COLUMNS = [
    ("operator", "operator"), ("partition", "partition"), ("store", "store"),
    ("files", "files"), ("inlineFiles", "inline_files"), ("inlineBytes", "inline_bytes"),
    ("fileBytes", "file_bytes"), ("minVersion", "min_version"), ("maxVersion", "max_version"),
    ("latestSnapshotVersion", "latest_snapshot_version"),
    ("restorableFromVersion", "restorable_from_version"),
]
_BATCH_COLUMNS = [
    ("batchId", "batch_id"), ("committed", "committed"), ("startedAtMs", "started_at_ms"),
    ("committedAtMs", "committed_at_ms"), ("durationMs", "duration_ms"),
    ("stateFiles", "state_files"), ("inlineBytes", "inline_bytes"), ("fileBytes", "file_bytes"),
]
_PACK_COLUMNS = [
    ("name", "name"), ("batchId", "batch_id"), ("bytes", "bytes"), ("entries", "entries"),
    ("liveEntries", "live_entries"), ("deleted", "deleted"),
]


def _rows(items: List[Dict[str, Any]], columns: List[Tuple[str, str]]) -> Dict[str, List[Any]]:
    return {py: [item.get(jvm) for item in items] for jvm, py in columns}


def _table(columns: Dict[str, List[Any]]) -> Any:
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency of the inspection extra
        import pandas as pd

        return pd.DataFrame(columns)
    return pa.table(columns)


class CheckpointInspection(object):
    """
    What one checkpoint holds, as read by :func:`inspect_checkpoint`.

    Tables are ``pyarrow.Table`` s (``.to_pandas()`` for pandas):

    * :attr:`stores`: one row per operator, partition and store: ``files``, ``inline_files``,
      ``inline_bytes`` (held by the driver / packed), ``file_bytes`` (files of their own),
      ``min_version``, ``max_version``, ``latest_snapshot_version``, ``restorable_from_version``;
    * :attr:`batches`: one row per batch in the offset log: ``committed``, ``started_at_ms``
      (offsets written), ``committed_at_ms`` (commit written), ``duration_ms``, and the
      ``state_files``, ``inline_bytes`` and ``file_bytes`` of the state version it wrote;
    * :attr:`packs`: one row per pack file.

    ``str()`` gives a readable text table.
    """

    def __init__(self, data: Dict[str, Any]):
        self._data = data
        self.checkpoint: str = data["checkpoint"]
        self.query_id: Optional[str] = data.get("queryId")
        self.storage: Optional[str] = data.get("storage")
        self.persistent: Optional[bool] = data.get("persistent")
        self.committed_batches: List[int] = list(data["committedBatches"])
        self.uncommitted_batches: List[int] = list(data["uncommittedBatches"])
        self.last_committed_batch: Optional[int] = data.get("lastCommittedBatch")
        first, last = data.get("retainedFirstBatch"), data.get("retainedLastBatch")
        #: The committed batches a query can restart from, (first, last), or None.
        self.retained_range: Optional[Tuple[int, int]] = None if first is None else (first, last)
        self.stores = _table(_rows(data["stores"], _STORE_COLUMNS))
        self.batches = _table(_rows(data["batches"], _BATCH_COLUMNS))
        self.packs = _table(_rows(data["packs"], _PACK_COLUMNS))

    def to_dict(self) -> Dict[str, Any]:
        """The inspection as plain Python values (JSON-compatible)."""
        return json.loads(json.dumps(self._data))

    @property
    def total_inline_bytes(self) -> int:
        return sum(s["inlineBytes"] for s in self._data["stores"])

    @property
    def total_file_bytes(self) -> int:
        return sum(s["fileBytes"] for s in self._data["stores"])

    @property
    def total_files(self) -> int:
        return sum(s["files"] for s in self._data["stores"])

    def operators(self) -> Any:
        """State per operator: stores, files, inline and file bytes, summed over partitions."""
        per_op: Dict[int, Dict[str, int]] = {}
        for s in self._data["stores"]:
            op = per_op.setdefault(s["operator"], {"stores": 0, "files": 0, "inline_files": 0,
                                                   "inline_bytes": 0, "file_bytes": 0})
            op["stores"] += 1
            op["files"] += s["files"]
            op["inline_files"] += s["inlineFiles"]
            op["inline_bytes"] += s["inlineBytes"]
            op["file_bytes"] += s["fileBytes"]
        ops = sorted(per_op)
        columns: Dict[str, List[Any]] = {"operator": ops}
        for key in ("stores", "files", "inline_files", "inline_bytes", "file_bytes"):
            columns[key] = [per_op[o][key] for o in ops]
        return _table(columns)

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self) -> str:
        """A readable text report: summary, then the operator, store, batch and pack tables."""
        d = self._data
        retained = ("%d to %d" % self.retained_range) if self.retained_range else "none"
        lines = [
            "checkpoint        %s" % self.checkpoint,
            "query id          %s" % (self.query_id or "-"),
            "storage           %s" % (self.storage or "- (no inline state recorded)"),
            "committed batches %s" % _ranges(self.committed_batches),
            "last committed    %s" % ("-" if self.last_committed_batch is None else self.last_committed_batch),
            "uncommitted       %s" % (_ranges(self.uncommitted_batches) or "none"),
            "retained range    %s" % retained,
            "state             %d files, %s inline, %s in files, %d packs"
            % (self.total_files, _size(self.total_inline_bytes), _size(self.total_file_bytes),
               len(d["packs"])),
            "",
            "operators",
            _text_table(self.operators()),
            "",
            "stores (operator, partition, store)",
            _text_table(self.stores),
            "",
            "batches",
            _text_table(self.batches),
        ]
        if d["packs"]:
            lines += ["", "packs", _text_table(self.packs)]
        return "\n".join(lines) + "\n"

    def plot(self, path: str) -> str:
        """
        Writes a PNG: state bytes written per batch (inline and in files) and the time from a
        batch's offsets to its commit. Returns ``path``.
        """
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        batches = [b for b in self._data["batches"] if b["committed"]]
        ids = [b["batchId"] for b in batches]
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        inline = [b["inlineBytes"] for b in batches]
        files = [b["fileBytes"] for b in batches]
        top.bar(ids, inline, label="inline (packed / driver)")
        top.bar(ids, files, bottom=inline, label="files of their own")
        top.set_ylabel("state bytes written")
        top.legend()
        top.set_title("checkpoint %s" % self.checkpoint, fontsize=9)
        bottom.plot(ids, [b["durationMs"] or 0 for b in batches], marker="o")
        bottom.set_ylabel("offsets to commit (ms)")
        bottom.set_xlabel("batch")
        fig.tight_layout()
        fig.savefig(path, format="png")
        plt.close(fig)
        return path


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0  # type: ignore[assignment]
    return str(n)


def _ranges(ids: List[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    out: List[str] = []
    for i in ids:
        if out and int(out[-1].split("-")[-1]) == i - 1:
            out[-1] = "%s-%d" % (out[-1].split("-")[0], i)
        else:
            out.append(str(i))
    return ", ".join(out)


def _text_table(table: Any) -> str:
    if hasattr(table, "to_pydict"):
        columns = table.column_names
        data = table.to_pydict()
    else:
        columns = list(table.columns)
        data = {c: list(table[c]) for c in columns}
    rows = [["-" if data[c][i] is None else str(data[c][i]) for c in columns]
            for i in range(len(data[columns[0]]) if columns else 0)]
    widths = [max([len(c)] + [len(r[j]) for r in rows]) for j, c in enumerate(columns)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(columns)] + [line(r) for r in rows]) if rows else "(none)"


def _checkpoint_of(query_or_location: Any) -> Tuple[str, Any]:
    """(checkpoint location, the JVM SparkSession or None) of a query or a location."""
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


def _jvm_and_conf(j_session: Any) -> Tuple[Any, Any]:
    from spark_checkpoint_storage.java_gateway import get_gateway

    gateway = get_gateway()
    if j_session is not None:
        return gateway.jvm, j_session.sessionState().newHadoopConf()
    return gateway.jvm, gateway.jvm.org.apache.hadoop.conf.Configuration()


@jvm_errors
def inspect_checkpoint(query_or_checkpoint_location: Any) -> CheckpointInspection:
    """
    Inspects a streaming query's checkpoint: a running or stopped ``StreamingQuery`` of a
    classic session, or a checkpoint location (any Hadoop URI). Inline state is read as the
    query sees it: from the driver's coordinator when this process runs the driver, else
    from the packs.

    Example:
    ::

        >>> from spark_checkpoint_storage.inspection import inspect_checkpoint
        >>> info = inspect_checkpoint("/tmp/checkpoints/my-query")  # doctest: +SKIP
        >>> info.last_committed_batch, info.retained_range  # doctest: +SKIP
        (9, (0, 9))
        >>> info.stores.to_pandas()  # doctest: +SKIP
        >>> print(info)  # doctest: +SKIP

    :param query_or_checkpoint_location: a ``StreamingQuery`` or a checkpoint location.
    :return: the :class:`CheckpointInspection`.
    :raises CheckpointNotFoundException: when there is no checkpoint at the location.
    :raises CheckpointStateException: when the checkpoint's state lived in a previous
                                      driver's heap only.
    """
    location, session = _checkpoint_of(query_or_checkpoint_location)
    jvm, conf = _jvm_and_conf(session)
    text = jvm_class(jvm, jvm_names.INSPECTOR_CLASS).inspectJson(location, conf)
    return CheckpointInspection(json.loads(text))
