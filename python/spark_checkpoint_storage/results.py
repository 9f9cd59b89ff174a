"""
What the JVM answers with, typed: inspections, savepoints, migrations (rescales included) and
a migration's progress. Each class here is the Python twin of a case class of the jar
(``io.sparkcheckpointstorage.results``) of the same name, which the jar's ``ResultCodec`` writes
as JSON; :meth:`JvmResult.from_json` builds the class from that JSON and refuses a field
that is missing or unknown, naming it (a package and a jar of different builds). A field
``batch_id`` is the JSON's ``batchId``: the JVM's names in snake case, in the same order, which
a test checks against the jar's own list of fields.

The public functions return these, or the objects built on them:
:func:`~spark_checkpoint_storage.migration.migrate` a :class:`MigrationResult` (its
``progress`` callback gets :class:`MigrationProgress` es),
:func:`~spark_checkpoint_storage.inspection.inspect_checkpoint` a
:class:`~spark_checkpoint_storage.inspection.CheckpointInspection` whose ``result`` is an
:class:`InspectionResult`, :func:`~spark_checkpoint_storage.savepoints.savepoint` the path of a
:class:`SavepointResult` or :class:`CanonicalSavepointResult`.

Example:
::

    >>> from spark_checkpoint_storage.results import MigratedStore
    >>> store = MigratedStore.from_json('{"store": "default", "rows": 3, "rowsPerPartition": [1, 2]}')
    >>> store.rows_per_partition
    (1, 2)
    >>> store.to_dict()
    {'store': 'default', 'rows': 3, 'rowsPerPartition': [1, 2]}
"""
import dataclasses
import json
from typing import (Any, Dict, List, Optional, Tuple, Type, TypeVar, Union, get_args,
                    get_origin, get_type_hints)

from spark_checkpoint_storage.errors import ResultSchemaException

__all__ = [
    "JvmResult", "InspectionResult", "InspectedStore", "InspectedPack", "InspectedBatch",
    "SavepointResult", "CanonicalSavepointResult", "CanonicalOperator", "CanonicalStore",
    "MigrationResult", "MigratedOperator", "MigratedStore", "MigrationProgress", "RepairResult",
    "RESULT_TYPES",
]

_R = TypeVar("_R", bound="JvmResult")


def _jvm_name(field: str) -> str:
    """``rows_per_partition`` -> ``rowsPerPartition``: the JVM's name of a field."""
    head, *rest = field.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _element(hint: Any) -> Any:
    """The type of an ``Optional[X]``'s ``X``, or of a ``Tuple[X, ...]``'s elements."""
    return next(a for a in get_args(hint) if a is not type(None))


def _from_json_value(hint: Any, value: Any, where: str) -> Any:
    origin = get_origin(hint)
    if origin is Union:
        return None if value is None else _from_json_value(_element(hint), value, where)
    if value is None:
        raise ResultSchemaException("%s is null, which it never is in this package's results: "
                                    "the jar is of another build than the Python package" % where)
    if origin is tuple:
        return tuple(_from_json_value(_element(hint), v, "%s[%d]" % (where, i))
                     for i, v in enumerate(value))
    if isinstance(hint, type) and issubclass(hint, JvmResult):
        return hint._from_dict(value, where)
    return float(value) if hint is float else value


def _to_json_value(value: Any) -> Any:
    if isinstance(value, JvmResult):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_to_json_value(v) for v in value]
    return value


class JvmResult:
    """
    What every result class here shares: built from the JVM's JSON
    (:meth:`~JvmResult.from_json`), back to it (:meth:`~JvmResult.to_dict`), its fields read by
    the JVM's names too (``result["batchId"]``, as when results were dicts), and the JVM's
    names of its fields (:meth:`~JvmResult.jvm_fields`).

    Example:
    ::

        >>> issubclass(MigrationResult, JvmResult)
        True
        >>> MigratedOperator.jvm_fields()
        ['operatorId', 'operatorName', 'stores']
    """

    @classmethod
    def jvm_fields(cls) -> List[str]:
        """
        The JVM's names of this result's fields, in order: what its JSON holds.

        >>> MigratedStore.jvm_fields()
        ['store', 'rows', 'rowsPerPartition']
        """
        return [_jvm_name(f.name) for f in dataclasses.fields(cls)]  # type: ignore[arg-type]

    @classmethod
    def from_json(cls: Type[_R], text: str) -> _R:
        """
        The result the JVM wrote as ``text``.

        :raises ResultSchemaException: when a field is missing or unknown.

        >>> MigratedStore.from_json('{"store": "n", "rows": 1, "rowsPerPartition": [1]}').rows
        1
        """
        return cls._from_dict(json.loads(text), cls.__name__)

    @classmethod
    def _from_dict(cls: Type[_R], data: Dict[str, Any], where: str) -> _R:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        names = {_jvm_name(f.name): f for f in fields}
        unknown = [k for k in data if k not in names]
        missing = [k for k, f in names.items()
                   if k not in data and f.default is dataclasses.MISSING]
        if unknown or missing:
            raise ResultSchemaException(
                "%s from the JVM%s%s: the jar is of another build than the Python package"
                % (where if where == cls.__name__ else "%s (%s)" % (where, cls.__name__),
                   " has unknown fields %s" % ", ".join(unknown) if unknown else "",
                   "%s lacks %s" % (" and" if unknown else "", ", ".join(missing))
                   if missing else ""))
        hints = get_type_hints(cls)
        return cls(**{f.name: _from_json_value(hints[f.name], data[_jvm_name(f.name)],
                                               "%s.%s" % (where, _jvm_name(f.name)))
                      for f in fields if _jvm_name(f.name) in data})

    def to_dict(self) -> Dict[str, Any]:
        """
        The result as the JVM wrote it: plain Python values under the JVM's field names
        (JSON-compatible); a field the JVM leaves out when unset is left out when unset.

        >>> MigratedStore("n", 1, (1,)).to_dict()
        {'store': 'n', 'rows': 1, 'rowsPerPartition': [1]}
        """
        return {_jvm_name(f.name): _to_json_value(getattr(self, f.name))
                for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if not (f.default is not dataclasses.MISSING and getattr(self, f.name) == f.default)}

    def __getitem__(self, jvm_name: str) -> Any:
        """A field by its JVM name (``store["rowsPerPartition"]``), as when results were dicts."""
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if _jvm_name(f.name) == jvm_name:
                return getattr(self, f.name)
        raise KeyError(jvm_name)


@dataclasses.dataclass(frozen=True)
class InspectedStore(JvmResult):
    """
    One store of one operator and partition of an inspected checkpoint: its state files, their
    bytes held inline (by the driver, or packed) and in files of their own, and the versions
    they hold.

    Example:
    ::

        >>> info = inspect_checkpoint("/tmp/checkpoints/q1")  # doctest: +SKIP
        >>> [s.inline_bytes for s in info.result.stores]  # doctest: +SKIP
        [1024, 998]
    """

    #: The operator's id.
    operator: int
    #: The partition.
    partition: int
    #: The store's name (``default``, or one of a join's four).
    store: str
    #: State files, inline or not.
    files: int
    #: State files held inline.
    inline_files: int
    #: Bytes of the state files held inline.
    inline_bytes: int
    #: Bytes of the state files of their own.
    file_bytes: int
    #: The oldest version a state file holds.
    min_version: int
    #: The newest version a state file holds.
    max_version: int
    #: The newest snapshot's version, or None.
    latest_snapshot_version: Optional[int]
    #: The oldest version from which every later one can be rebuilt, or None.
    restorable_from_version: Optional[int]


@dataclasses.dataclass(frozen=True)
class InspectedPack(JvmResult):
    """
    One pack file of an inspected checkpoint: the state files of one batch held inline.

    Example:
    ::

        >>> [p.name for p in inspect_checkpoint(location).result.packs]  # doctest: +SKIP
        ['1.pack', '2.pack']
    """

    #: The file's name (``<n>.pack``).
    name: str
    #: The batch that wrote it.
    batch_id: int
    #: Its size.
    bytes: int
    #: The state files it holds.
    entries: int
    #: The deletions it records.
    deleted: int
    #: Its state files that no later pack supersedes.
    live_entries: int


@dataclasses.dataclass(frozen=True)
class InspectedBatch(JvmResult):
    """
    One batch of an inspected checkpoint's offset log: whether and when it committed, and the
    state it wrote.

    Example:
    ::

        >>> [b.duration_ms for b in inspect_checkpoint(location).result.batches]  # doctest: +SKIP
        [412, 96, 88]
    """

    #: The batch.
    batch_id: int
    #: Whether the commit log has it.
    committed: bool
    #: When its offsets were written (epoch milliseconds), or None.
    started_at_ms: Optional[int]
    #: When its commit was written (epoch milliseconds), or None.
    committed_at_ms: Optional[int]
    #: From offsets to commit, or None.
    duration_ms: Optional[int]
    #: State files of the version it wrote.
    state_files: int
    #: Their bytes held inline.
    inline_bytes: int
    #: Their bytes in files of their own.
    file_bytes: int


@dataclasses.dataclass(frozen=True)
class InspectionResult(JvmResult):
    """
    What a checkpoint holds, as the JVM reads it for
    :func:`~spark_checkpoint_storage.inspection.inspect_checkpoint` (whose
    :class:`~spark_checkpoint_storage.inspection.CheckpointInspection` adds tables, text and a
    plot): its batches, its stores, packs and batches row by row.

    Example:
    ::

        >>> result = inspect_checkpoint("/tmp/checkpoints/q1").result  # doctest: +SKIP
        >>> result.committed_batches, result.retained_first_batch  # doctest: +SKIP
        ((0, 1, 2), 0)
    """

    #: The checkpoint's location, qualified.
    checkpoint: str
    #: The query's id (its ``metadata`` file), or None.
    query_id: Optional[str]
    #: The storage its ``checkpoint-storage`` marker records, or None.
    storage: Optional[str]
    #: Whether the marker says its state persists, or None.
    persistent: Optional[bool]
    #: The batches of the commit log, ascending.
    committed_batches: Tuple[int, ...]
    #: Batches of the offset log without a commit (running or failed).
    uncommitted_batches: Tuple[int, ...]
    #: The last committed batch, or None.
    last_committed_batch: Optional[int]
    #: One per operator, partition and store.
    stores: Tuple[InspectedStore, ...]
    #: Files under ``state/`` that are no store's state file.
    other_state_files: int
    #: The first committed batch a query can restart from, or None.
    retained_first_batch: Optional[int]
    #: The last committed batch a query can restart from, or None.
    retained_last_batch: Optional[int]
    #: One per pack file.
    packs: Tuple[InspectedPack, ...]
    #: One per batch of the offset log.
    batches: Tuple[InspectedBatch, ...]
    #: The last committed batch whose state every store holds (-1: none; None: nothing
    #: committed). Below :attr:`last_committed_batch` when the checkpoint is incomplete.
    last_complete_batch: Optional[int]
    #: What the last committed batch misses, one ``"<store directory> version <v>"`` each.
    missing_state: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class SavepointResult(JvmResult):
    """
    A savepoint taken by :func:`~spark_checkpoint_storage.savepoints.savepoint` (which returns
    its ``path``): its ``_savepoint`` file's fields and where it went.

    Example:
    ::

        >>> result = SavepointResult(2, None, 12, 4096, 3, 1764151323000, "/backups/q1-sp1")
        >>> result.batch_id, result.path
        (2, '/backups/q1-sp1')
    """

    #: The batch saved.
    batch_id: int
    #: The query's id, or None.
    query_id: Optional[str]
    #: The files copied.
    files: int
    #: Their bytes.
    bytes: int
    #: Of them, the state files that were held inline.
    inline_files: int
    #: When it was written (epoch milliseconds).
    created_at_ms: int
    #: Where it went.
    path: str


@dataclasses.dataclass(frozen=True)
class CanonicalStore(JvmResult):
    """
    One store of a canonical savepoint: its rows as parquet, with the store's schemas.

    Example:
    ::

        >>> store = CanonicalStore("default", "canonical-state/0/default", 0, 4, "{}", "{}", 10)
        >>> store.rows
        10
    """

    #: The store's name.
    name: str
    #: The folder of its parquet rows, relative to the savepoint.
    path: str
    #: The key columns its prefix scans use.
    num_cols_prefix_key: int
    #: Its partitions.
    num_partitions: int
    #: The key's schema (Spark's JSON of a ``StructType``).
    key_schema: str
    #: The value's schema (Spark's JSON of a ``StructType``).
    value_schema: str
    #: Its rows.
    rows: int


@dataclasses.dataclass(frozen=True)
class CanonicalOperator(JvmResult):
    """
    One operator of a canonical savepoint.

    Example:
    ::

        >>> CanonicalOperator(0, "stateStoreSave", ()).operator_name
        'stateStoreSave'
    """

    #: The operator's id.
    operator_id: int
    #: Spark's name of the operator.
    operator_name: str
    #: Its stores.
    stores: Tuple[CanonicalStore, ...]


@dataclasses.dataclass(frozen=True)
class CanonicalSavepointResult(JvmResult):
    """
    A canonical savepoint taken by ``savepoint(..., format="canonical")`` (which returns its
    ``path``): its ``_savepoint`` file's fields, where it went, what it holds and how long it
    took.

    Example:
    ::

        >>> path = savepoint("/cp/q1", "/backups/q1", format="canonical")  # doctest: +SKIP
    """

    #: ``canonical``.
    format: str
    #: The version of the format.
    format_version: int
    #: The batch saved.
    batch_id: int
    #: The provider that wrote the state saved.
    source_provider: str
    #: The state's partitions.
    num_partitions: int
    #: The rows saved.
    rows: int
    #: The operators saved.
    operators: Tuple[CanonicalOperator, ...]
    #: When it was written (epoch milliseconds).
    created_at_ms: int
    #: Where it went.
    path: str
    #: Its files.
    files: int
    #: Their bytes.
    bytes: int
    #: The time it took.
    seconds: float


@dataclasses.dataclass(frozen=True)
class RepairResult(JvmResult):
    """
    What :func:`~spark_checkpoint_storage.inspection.repair_checkpoint` did to a checkpoint
    (or, with ``dry_run``, would do): the batches after its last complete batch removed from
    its offset and commit logs, and the state files of their versions deleted.

    Example:
    ::

        >>> r = RepairResult("file:/tmp/cp", 7, 5, (6, 7), 4, False)
        >>> r.removed_batches, r.last_complete_batch
        ((6, 7), 5)
    """

    #: The checkpoint's location, qualified.
    checkpoint: str
    #: The last batch of the commit log before the repair, or None.
    last_committed_batch: Optional[int]
    #: The last batch whose state every store holds (-1: none), or None.
    last_complete_batch: Optional[int]
    #: The batches removed from the offset and commit logs, ascending.
    removed_batches: Tuple[int, ...]
    #: The state files of the removed batches' versions, deleted.
    removed_state_files: int
    #: Whether nothing was changed (only reported).
    dry_run: bool


@dataclasses.dataclass(frozen=True)
class MigratedStore(JvmResult):
    """
    The rows a migration wrote of one store, or of one state variable of a
    ``transformWithState`` operator, per partition of the new checkpoint.

    Example:
    ::

        >>> MigratedStore("default", 3, (1, 2)).rows_per_partition
        (1, 2)
    """

    #: The store's (or state variable's) name.
    store: str
    #: The rows written.
    rows: int
    #: The rows written, per partition.
    rows_per_partition: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class MigratedOperator(JvmResult):
    """
    The stores a migration wrote of one operator.

    Example:
    ::

        >>> op = MigratedOperator(0, "stateStoreSave", (MigratedStore("default", 3, (1, 2)),))
        >>> [s.store for s in op.stores]
        ['default']
    """

    #: The operator's id.
    operator_id: int
    #: Spark's name of the operator.
    operator_name: str
    #: Its stores (or state variables).
    stores: Tuple[MigratedStore, ...]


@dataclasses.dataclass(frozen=True, repr=False)
class MigrationResult(JvmResult):
    """
    What :func:`~spark_checkpoint_storage.migration.migrate` wrote: the new checkpoint's
    ``path``, the migrated ``batch_id``, the ``source_provider`` and ``target_provider``
    classes, ``num_partitions`` (the new checkpoint's) and ``source_num_partitions``, per
    operator and store the rows written (``operators``, with ``rows_per_partition``), the
    total ``rows``, the new checkpoint's ``files`` and ``bytes``, and the ``seconds`` it took.

    Example (``old`` is the checkpoint of a stopped query that committed batches 0-2):
    ::

        >>> from spark_checkpoint_storage.migration import migrate
        >>> result = migrate(old, "/tmp/checkpoint-heap", to="heap")  # doctest: +SKIP
        >>> result.batch_id, result.target_provider  # doctest: +SKIP
        (2, 'io.sparkcheckpointstorage.provider.HeapStateStoreProvider')
    """

    #: The checkpoint migrated.
    source: str
    #: The batch migrated.
    batch_id: int
    #: The provider that wrote the source's state.
    source_provider: str
    #: The provider that wrote the new checkpoint's state.
    target_provider: str
    #: The new checkpoint's partitions.
    num_partitions: int
    #: The source's partitions.
    source_num_partitions: int
    #: Per operator, the rows written of each store.
    operators: Tuple[MigratedOperator, ...]
    #: The rows written.
    rows: int
    #: The canonical savepoint restored, when the source was one; else None (and not in the JSON).
    canonical_savepoint: Optional[str] = dataclasses.field(default=None, kw_only=True)
    #: Where the new checkpoint went.
    path: str
    #: The log and metadata files copied.
    log_files: int
    #: Their bytes.
    log_bytes: int
    #: The new checkpoint's files.
    files: int
    #: Their bytes.
    bytes: int
    #: The time it took.
    seconds: float

    def __repr__(self) -> str:
        return ("MigrationResult(path=%r, batch_id=%d, %s -> %s, rows=%d, bytes=%d, seconds=%.1f)"
                % (self.path, self.batch_id, self.source_provider.rsplit(".", 1)[-1],
                   self.target_provider.rsplit(".", 1)[-1], self.rows, self.bytes, self.seconds))


@dataclasses.dataclass(frozen=True)
class MigrationProgress(JvmResult):
    """
    How far a running :func:`~spark_checkpoint_storage.migration.migrate` is, as passed to its
    ``progress`` callback: the ``phase``, the stores written (``stores_done`` of
    ``stores_total``, over all operators), the store being written (``operator_id``,
    ``operator_name``, ``store``; None between stores) with its ``partitions_written`` of
    ``partitions``, and the ``rows_written`` so far.

    Example (``old`` is the checkpoint of a stopped query):
    ::

        >>> from spark_checkpoint_storage.migration import migrate
        >>> def show(progress):
        ...     print(progress.stores_done, "of", progress.stores_total, "stores")
        >>> migrate(old, "/tmp/checkpoint-8", to="heap", num_partitions=8,
        ...         progress=show)  # doctest: +SKIP
    """

    #: What the migration does now (``writing state``, ...).
    phase: str
    #: The stores written.
    stores_done: int
    #: The stores to write, over all operators.
    stores_total: int
    #: The rows written so far.
    rows_written: int
    #: The operator of the store being written, or None.
    operator_id: Optional[int]
    #: Spark's name of that operator, or None.
    operator_name: Optional[str]
    #: The store being written, or None.
    store: Optional[str]
    #: Its partitions written, or None.
    partitions_written: Optional[int]
    #: Its partitions, or None.
    partitions: Optional[int]

    def __str__(self) -> str:
        text = "stores %d/%d, %d rows written" % (self.stores_done, self.stores_total,
                                                  self.rows_written)
        if self.store is not None:
            text += "; operator %s (%s) store %s: partitions %d/%d" % (
                self.operator_id, self.operator_name, self.store, self.partitions_written,
                self.partitions)
        return "%s (%s)" % (text, self.phase)


#: Every result class, as the jar's ``ResultCodec`` lists its case classes (by name).
RESULT_TYPES: Tuple[Type[JvmResult], ...] = (
    InspectionResult, InspectedStore, InspectedPack, InspectedBatch,
    SavepointResult, CanonicalSavepointResult, CanonicalOperator, CanonicalStore,
    MigrationResult, MigratedOperator, MigratedStore, MigrationProgress, RepairResult,
)
