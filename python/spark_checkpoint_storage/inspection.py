"""
Checkpoint inspection (Flink: the checkpoint statistics of the web UI, for a checkpoint on
disk): committed batches, state per operator, partition and store with inline and file bytes
and file counts, packs, the range of batches a query can restart from, and per batch the state
written and how long it took to commit.

Also on the command line: ``python -m spark_checkpoint_storage inspect <checkpoint> [--plot out.png]``.
"""
import dataclasses
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple, Union

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.errors import jvm_errors
from spark_checkpoint_storage.jvm_names import jvm_class
from spark_checkpoint_storage.results import InspectedBatch, InspectedStore, InspectionResult, RepairResult
from spark_checkpoint_storage.session import checkpoint_location_and_session, jvm_and_hadoop_conf

__all__ = ["CheckpointInspection", "MatplotlibNotInstalledError", "inspect_checkpoint", "repair_checkpoint"]

#: What installs the plot's dependency (matplotlib) along with the package.
PLOT_INSTALL_COMMAND = "pip install 'spark-checkpoint-storage[inspection]'"


class MatplotlibNotInstalledError(ImportError):
    """
    :meth:`CheckpointInspection.plot` needs matplotlib, which cannot be imported here; the
    message names the command that installs it (the ``inspection`` extra).
    """

#: The pack table's columns: live entries beside entries, as the table has always had them.
_PACK_COLUMNS = ("name", "batch_id", "bytes", "entries", "live_entries", "deleted")


def _rows(items: Tuple[Any, ...], names: Tuple[str, ...]) -> Dict[str, List[Any]]:
    """Columns of ``names`` (the result rows' fields, in their order) over ``items``."""
    return {name: [getattr(item, name) for item in items] for name in names}


def _columns(row_type: Any) -> Tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(row_type))


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

    Example (``checkpoint`` is the location of a query that committed batches 0-2):
    ::

        >>> from spark_checkpoint_storage.inspection import inspect_checkpoint
        >>> info = inspect_checkpoint(checkpoint)  # doctest: +SKIP
        >>> info.committed_batches, info.retained_range  # doctest: +SKIP
        ([0, 1, 2], (0, 2))
        >>> info.stores.to_pandas()[["partition", "inline_bytes"]]  # doctest: +SKIP
        >>> info.plot("/tmp/state.png")  # doctest: +SKIP
    """

    def __init__(self, result: Union[InspectionResult, Dict[str, Any]]):
        if isinstance(result, dict):
            result = InspectionResult._from_dict(result, "CheckpointInspection")
        #: What the JVM read, typed (:class:`~spark_checkpoint_storage.results.InspectionResult`).
        self.result: InspectionResult = result
        #: The checkpoint location, qualified.
        self.checkpoint: str = result.checkpoint
        #: The query's id (its ``metadata`` file), or None.
        self.query_id: Optional[str] = result.query_id
        #: The storage its ``checkpoint-storage`` marker records, or None.
        self.storage: Optional[str] = result.storage
        #: Whether the marker says its state persists, or None.
        self.persistent: Optional[bool] = result.persistent
        #: The batches of the commit log, ascending.
        self.committed_batches: List[int] = list(result.committed_batches)
        #: Batches in the offset log without a commit (running or failed).
        self.uncommitted_batches: List[int] = list(result.uncommitted_batches)
        #: The last committed batch, or None.
        self.last_committed_batch: Optional[int] = result.last_committed_batch
        first, last = result.retained_first_batch, result.retained_last_batch
        #: The committed batches a query can restart from, (first, last), or None.
        self.retained_range: Optional[Tuple[int, int]] = \
            None if first is None or last is None else (first, last)
        #: One row per operator, partition and store (a ``pyarrow.Table``).
        self.stores = _table(_rows(result.stores, _columns(InspectedStore)))
        #: One row per batch of the offset log (a ``pyarrow.Table``).
        self.batches = _table(_rows(result.batches, _columns(InspectedBatch)))
        #: One row per pack file (a ``pyarrow.Table``).
        self.packs = _table(_rows(result.packs, _PACK_COLUMNS))

    def to_dict(self) -> Dict[str, Any]:
        """The inspection as plain Python values (JSON-compatible, the JVM's field names)."""
        return self.result.to_dict()

    @property
    def total_inline_bytes(self) -> int:
        """State bytes held inline (by the driver, or in packs), over every store."""
        return sum(s.inline_bytes for s in self.result.stores)

    @property
    def total_file_bytes(self) -> int:
        """State bytes in files of their own, over every store."""
        return sum(s.file_bytes for s in self.result.stores)

    @property
    def total_files(self) -> int:
        """State files (inline or not) of every store."""
        return sum(s.files for s in self.result.stores)

    def operators(self) -> Any:
        """State per operator: stores, files, inline and file bytes, summed over partitions."""
        per_op: Dict[int, Dict[str, int]] = {}
        for s in self.result.stores:
            op = per_op.setdefault(s.operator, {"stores": 0, "files": 0, "inline_files": 0,
                                                "inline_bytes": 0, "file_bytes": 0})
            op["stores"] += 1
            op["files"] += s.files
            op["inline_files"] += s.inline_files
            op["inline_bytes"] += s.inline_bytes
            op["file_bytes"] += s.file_bytes
        ops = sorted(per_op)
        columns: Dict[str, List[Any]] = {"operator": ops}
        for key in ("stores", "files", "inline_files", "inline_bytes", "file_bytes"):
            columns[key] = [per_op[o][key] for o in ops]
        return _table(columns)

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self) -> str:
        """
        A readable text report: summary, then the operator, store, batch and pack tables.
        Times are ISO-8601 local times to the second (``2026-11-26T10:02:03``);
        :meth:`to_dict` keeps the epoch milliseconds.
        """
        retained = ("%d to %d" % self.retained_range) if self.retained_range else "none"
        lines = [
            "checkpoint        %s" % self.checkpoint,
            "query id          %s" % (self.query_id or "-"),
            "storage           %s" % (self.storage or "- (no inline state recorded)"),
            "committed batches %s" % (_ranges(self.committed_batches) or "none"),
            "last committed    %s" % ("-" if self.last_committed_batch is None else self.last_committed_batch),
            "uncommitted       %s" % (_ranges(self.uncommitted_batches) or "none"),
            "retained range    %s" % retained,
            "last complete     %s" % self._completeness(),
            "state             %d files, %s inline, %s in files, %d packs"
            % (self.total_files, _size(self.total_inline_bytes), _size(self.total_file_bytes),
               len(self.result.packs)),
            "",
            "operators",
            _text_table(self.operators()),
            "",
            "stores (operator, partition, store)",
            _text_table(self.stores),
            "",
            "batches (local times, %s)" % _local_zone(),
            _text_table(_batch_rows(self.result.batches)),
        ]
        if self.result.packs:
            lines += ["", "packs", _text_table(self.packs)]
        return "\n".join(lines) + "\n"

    def _completeness(self) -> str:
        r = self.result
        if r.last_complete_batch is None or r.last_complete_batch == r.last_committed_batch:
            return "-" if r.last_complete_batch is None else str(r.last_complete_batch)
        return ("%d: INCOMPLETE, batch %d's state is missing (%s); python -m spark_checkpoint_storage "
                "repair brings the checkpoint back to batch %d"
                % (r.last_complete_batch, r.last_committed_batch, ", ".join(r.missing_state[:3])
                   + (" and %d more" % (len(r.missing_state) - 3) if len(r.missing_state) > 3 else ""),
                   r.last_complete_batch))

    def plot(self, path: str) -> str:
        """
        Writes a PNG: state bytes written per committed batch (inline and in files) and the
        time from a batch's offsets to its commit. Needs matplotlib (the ``inspection``
        extra). Returns ``path``.

        :param path: the PNG file to write.
        :return: ``path``.
        :raises MatplotlibNotInstalledError: when matplotlib cannot be imported.
        """
        fig = self._figure()
        fig.savefig(path, format="png", dpi=100)
        return path

    def _figure(self) -> Any:
        """The plot's matplotlib ``Figure``, not drawn yet."""
        require_matplotlib()
        # A Figure of its own rather than pyplot's: no backend switched, no figure left open
        # in a notebook or an application that plots too.
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator

        batches = [b for b in self.result.batches if b.committed]
        ids = [b.batch_id for b in batches]
        inline = [b.inline_bytes for b in batches]
        files = [b.file_bytes for b in batches]
        durations = [b.duration_ms or 0 for b in batches]
        # Bytes in one binary unit (and ms or s) on the axis: round ticks, not 195.3 KiB.
        most = max([i + f for i, f in zip(inline, files)] or [0])
        byte_unit, byte_scale = _unit(most, [("B", 1), ("KiB", 1024), ("MiB", 1024 ** 2),
                                             ("GiB", 1024 ** 3)])
        time_unit, time_scale = _unit(max(durations or [0]) / 10.0, [("ms", 1), ("s", 1000)])

        fig = Figure(figsize=(9, 6), layout="constrained")
        top, bottom = fig.subplots(2, 1, sharex=True)
        inline_scaled = [v / byte_scale for v in inline]
        top.bar(ids, inline_scaled, label="inline (packed / driver)", color="tab:blue")
        top.bar(ids, [v / byte_scale for v in files], bottom=inline_scaled,
                label="files of their own", color="tab:orange")
        top.set_ylabel("state written (%s)" % byte_unit)
        # Headroom set by hand: the zero-height bars stacked on top stick the autoscale there.
        top.set_ylim(0, most / byte_scale * 1.1 or 1)
        if ids:
            # Right of the axes: inside, it hides the bars of the batches it covers.
            top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                       frameon=False, title="state bytes")
        else:
            top.text(0.5, 0.5, "no committed batch", ha="center", va="center",
                     transform=top.transAxes)
            bottom.set_xticks([])
        top.grid(axis="y", alpha=0.3)
        top.set_title("checkpoint %s" % self.checkpoint, fontsize=9, loc="left")
        scaled = [v / time_scale for v in durations]
        bottom.plot(ids, scaled, marker="o", color="tab:green")
        bottom.set_ylabel("offsets to commit (%s)" % time_unit)
        bottom.set_ylim(0, max(scaled or [0]) * 1.15 or 1)
        bottom.grid(axis="y", alpha=0.3)
        bottom.set_xlabel("batch")
        if ids:
            # Batch ids are integers: matplotlib's default locator puts ticks at 0.5, 1.5, ...
            bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
        return fig


def require_matplotlib() -> None:
    """Raises :class:`MatplotlibNotInstalledError` when matplotlib cannot be imported: the
    command line asks before it reads a checkpoint, so that a refusal does not wait for a JVM."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        # One line: the command line prints it as its whole answer.
        reason = " ".join(str(e).split()) or type(e).__name__
        raise MatplotlibNotInstalledError(
            "plotting needs matplotlib, which cannot be imported (%s); install it with: %s"
            % (reason, PLOT_INSTALL_COMMAND)) from e


def _unit(largest: float, units: List[Tuple[str, int]]) -> Tuple[str, int]:
    """The largest of ``units`` (name, scale; ascending) that ``largest`` reaches, else the first."""
    chosen = units[0]
    for unit in units:
        if largest >= unit[1]:
            chosen = unit
    return chosen


def _local_time(ms: Optional[int]) -> Optional[str]:
    """Epoch milliseconds as an ISO-8601 local time to the second, ``2026-11-26T10:02:03``."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000.0).isoformat(timespec="seconds")


def _local_zone() -> str:
    """The local time zone's offset now, and its name when it has one: ``UTC+01:00 (CET)``."""
    now = datetime.now().astimezone()
    offset = now.strftime("%z")
    name = now.tzname() or ""
    zone = "UTC%s:%s" % (offset[:3], offset[3:])
    # Zones without a name of their own are called by their offset ("+0530", "UTC").
    return zone if not name or name[0] in "+-" or name.startswith("UTC") else "%s (%s)" % (zone, name)


def _batch_rows(batches: Tuple[InspectedBatch, ...]) -> Dict[str, List[Any]]:
    """The batch table as the text shows it: local times instead of epoch milliseconds."""
    return {
        "batch_id": [b.batch_id for b in batches],
        "committed": [b.committed for b in batches],
        "started_at": [_local_time(b.started_at_ms) for b in batches],
        "committed_at": [_local_time(b.committed_at_ms) for b in batches],
        "duration_ms": [b.duration_ms for b in batches],
        "state_files": [b.state_files for b in batches],
        "inline_bytes": [b.inline_bytes for b in batches],
        "file_bytes": [b.file_bytes for b in batches],
    }


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
    """A pyarrow Table, pandas DataFrame or dict of columns as right-aligned text columns."""
    if isinstance(table, dict):
        columns = list(table)
        data = table
    elif hasattr(table, "to_pydict"):
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
    location, session = checkpoint_location_and_session(query_or_checkpoint_location)
    jvm, conf = jvm_and_hadoop_conf(session)
    text = jvm_class(jvm, jvm_names.INSPECTOR_CLASS).inspectJson(location, conf)
    return CheckpointInspection(InspectionResult.from_json(text))


@jvm_errors
def repair_checkpoint(query_or_checkpoint_location: Any, dry_run: bool = False) -> RepairResult:
    """
    Brings a stopped query's checkpoint whose commit log names batches with missing state (a
    pack deleted, a write lost by a fault) back to its last complete batch, the way Flink
    restores its latest completed checkpoint: the offset and commit log entries of every later
    batch are removed, newest first, and so are the state files of their versions. The query
    then runs those batches again from its source. An exactly-once sink (the file sink, Delta)
    skips the batches it already committed, so their state cannot be rebuilt and the query
    refuses to commit them again; see "Repairing a checkpoint" in the operations guide.

    Example:
    ::

        >>> from spark_checkpoint_storage.inspection import repair_checkpoint
        >>> repair_checkpoint("/tmp/checkpoints/my-query", dry_run=True)  # doctest: +SKIP
        RepairResult(checkpoint='file:/tmp/checkpoints/my-query', last_committed_batch=7,
                     last_complete_batch=5, removed_batches=(6, 7), removed_state_files=4,
                     dry_run=True)

    :param query_or_checkpoint_location: a stopped ``StreamingQuery`` or a checkpoint location.
    :param dry_run: only report what a repair would remove.
    :return: the :class:`~spark_checkpoint_storage.results.RepairResult`.
    :raises CheckpointNotFoundException: when there is no checkpoint at the location.
    """
    location, session = checkpoint_location_and_session(query_or_checkpoint_location)
    jvm, conf = jvm_and_hadoop_conf(session)
    text = jvm_class(jvm, jvm_names.REPAIR_CLASS).repairJson(location, dry_run, conf)
    return RepairResult.from_json(text)
