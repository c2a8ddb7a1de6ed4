"""Query planning: which file slices a query reads and which instants count.

* **snapshot** (optionally as of an instant): every visible file group's slice
  as of the instant; log blocks of completed instants up to it.
* **read optimized**: the latest base file of every file group, logs ignored.
* **incremental** ``(begin, end]``: rows written by the completed commits in
  the window, in their state as of ``end``. Table version 6 windows on
  requested (instant) times, 8+ on completion times, as hudi-rs does.

A :class:`ReadPlan` is a value: everything an engine needs to run the query,
answered from the table's timeline, configuration and files while planning
(no table object, no callables). It pickles, so it can be kept on disk and
sent to another thread or process; reading one of its slices needs only the
plan (``plan.context()``, ``file_group.reader``).

Times are instant times in any spelling ``normalize_instant_time`` accepts,
plus Hudi's idioms for "from the first commit" as begin time: ``'000'`` (what
Hudi's docs use: every instant time sorts after it) and ``'earliest'`` (Hudi's
incremental query analyzer).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import decimal
import enum
import functools
import gc
import hashlib
import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import pyarrow as pa

from ..config.read_settings import MergeMemory
from ..errors import TimelineChangedError, TimelineError, UnsupportedFeatureError
from ..file_group.file_slice import FileSlice
from ..merge.rules import MergeConfig
from ..schema.avro_arrow import avro_to_arrow
from ..schema.meta_fields import without_meta_fields
from ..storage.storage import Storage, get_storage
from ..timeline.instant import Action, Instant, normalize_instant_time
from .filters import ColumnFilter, FilterSpec, parse_filters
from .fs_view import CommittedInstants
from .integrity import check_plan_files
from .table import HudiTable

if TYPE_CHECKING:
    from ..file_group.reader import SliceReadContext
    from ..keygen.generators import KeyGenerator


class QueryType(str, Enum):
    SNAPSHOT = "snapshot"
    READ_OPTIMIZED = "read_optimized"
    INCREMENTAL = "incremental"


@dataclass(frozen=True)
class TableLocation:
    """Where a table's files are and how to open them."""

    base_uri: str
    #: the URI of the base path that other readers (DuckDB, pyarrow) open files under
    files_uri: str
    storage_options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, storage: Storage) -> "TableLocation":
        return cls(storage.base_uri, storage.uri(), tuple(sorted(storage.storage_options.items())))

    def uri(self, rel: str = "") -> str:
        """The URI of a file (path relative to the base path), as ``Storage.uri`` spells it."""
        rel = rel.strip("/")
        if not rel:
            return self.files_uri
        return self._prefix + rel

    @functools.cached_property
    def _prefix(self) -> str:
        """(a plan spells one URI per file under it)"""
        return self.files_uri.rstrip("/") + "/"

    def open(self) -> Storage:
        return get_storage(self.base_uri, dict(self.storage_options))


@dataclass(frozen=True)
class ReadOptions:
    """How a query reads, besides what: Hudi's read switches."""

    #: ``hoodie.datasource.read.extract.partition.values.from.path``: partition columns from the folder
    extract_partition_values_from_path: bool = True
    #: fail on a corrupt log block instead of skipping it (with a warning) as Hudi does
    strict: bool = False
    #: ``hoodie.metadata.enable``: list partitions and files from the metadata table when the
    #: table has one (its ``files`` partition), and skip files with its statistics; the read's
    #: entry points open the table with it (``HudiTable(..., metadata_enable=...)``)
    metadata_enable: bool = True
    #: ``hoodie.memory.merge.max.size`` and ``hoodie.memory.spillable.map.path``: what one slice
    #: merge may hold in memory, and where it spills beyond that
    merge_memory: MergeMemory = MergeMemory()


@dataclass(frozen=True)
class PartitionValues:
    """The typed partition column values of one partition folder; None when the folder's
    name does not determine them exactly (the files' own values are read then)."""

    path: str
    values: tuple[tuple[str, Any], ...] | None


@dataclass(frozen=True)
class KeyGeneratorSpec:
    """The key generator of a table without stored record keys, as the table configuration names it."""

    table_properties: tuple[tuple[str, str], ...]

    def build(self) -> "KeyGenerator":
        return _key_generator(self)


@functools.lru_cache(maxsize=64)
def _key_generator(spec: KeyGeneratorSpec) -> "KeyGenerator":
    from ..config.table_config import TableConfig
    from ..keygen import key_generator_from_table_config

    return key_generator_from_table_config(TableConfig(props=dict(spec.table_properties)))


@dataclass(frozen=True)
class ReadPlan:
    """One query over one table, answered while planning: a value engines execute."""

    location: TableLocation
    query_type: QueryType
    slices: tuple[FileSlice, ...]
    #: output schema: meta columns (when the table stores them) then data columns
    schema: pa.Schema
    merge: MergeConfig
    #: which instants' log blocks are read; None: no log block is (read optimized)
    instants: CommittedInstants | None
    as_of: str | None = None
    begin: str | None = None
    end: str | None = None
    #: incremental queries keep only rows whose ``_hoodie_commit_time`` is in here
    commit_times: frozenset[str] | None = None
    #: file groups replaced by completed replace commits (already left out of ``slices``)
    replaced: frozenset[tuple[str, str]] = frozenset()
    #: base instants whose commit wrote the table's current schema (their base files need no schema evolution)
    table_schema_instants: frozenset[str] = frozenset()
    #: columns whose values come from the partition folder (empty: read them from the files)
    partition_columns: tuple[str, ...] = ()
    partition_values: tuple[PartitionValues, ...] = ()
    #: each folder's values of the key generator's partition columns, in either mode: an engine may take
    #: a base file's partition columns from its folder when the file's statistics prove it stores them
    folder_partition_values: tuple[PartitionValues, ...] = ()
    #: None when record keys are stored in the ``_hoodie_record_key`` meta column
    key_generator: KeyGeneratorSpec | None = None
    options: ReadOptions = ReadOptions()
    partitions: tuple[str, ...] | None = None
    #: filters every output row passes (the slices they rule out are already left out of ``slices``)
    filters: tuple[ColumnFilter, ...] = ()
    #: file slices left out by the metadata table's partition and column statistics
    skipped_slices: int = 0
    #: where partitions and files were listed from: "metadata" (the metadata table) or "storage"
    listing: str = "storage"

    @property
    def base_uri(self) -> str:
        return self.location.base_uri

    @property
    def slices_with_logs(self) -> list[FileSlice]:
        """Slices whose logs are merged (none for read-optimized queries)."""
        if self.instants is None:
            return []
        return [s for s in self.slices if s.log_files]

    @property
    def base_only_slices(self) -> list[FileSlice]:
        """Slices read from their base file alone."""
        if self.instants is None:
            return [s for s in self.slices if s.base_file is not None]
        return [s for s in self.slices if not s.log_files and s.base_file is not None]

    def has_table_schema(self, slice_: FileSlice) -> bool:
        """Whether the slice's base file was written with the table's current schema."""
        return slice_.base_file is not None and slice_.base_file.instant_time in self.table_schema_instants

    def folder_values(self) -> dict[str, dict[str, Any] | None]:
        """Partition path -> its typed partition values (None: not derivable exactly)."""
        return {p.path: (dict(p.values) if p.values is not None else None) for p in self.partition_values}

    def context(self) -> "SliceReadContext":
        """What reading this plan's slices needs (storage opened, key generator built)."""
        from ..file_group.reader import SliceReadContext

        return SliceReadContext.for_plan(self)

    def fingerprint(self) -> str:
        """A digest of the whole plan, equal for equal plans in any process."""
        return self._fingerprint

    @functools.cached_property
    def _fingerprint(self) -> str:
        # computed once per plan object: a cached plan is fingerprinted by every query that reuses it
        return digest_of(self)


def digest_of(value: Any) -> str:
    """SHA-1 of a value's canonical form (sets sorted, schemas as text): stable across processes."""
    return hashlib.sha1(repr(canonical(value)).encode("utf-8")).hexdigest()


_PLAIN = frozenset({str, int, float, bool, bytes, type(None), decimal.Decimal, _dt.date, _dt.datetime})


def canonical(value: Any) -> Any:
    """A repr-stable form of plan values (Python randomises the order of sets of strings)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is FileSlice:  # the bulk of a plan: its files' names and sizes identify it
        base = value.base_file
        return (
            value.partition_path,
            value.file_id,
            value.base_instant_time,
            (base.file_name, base.size) if base is not None else None,
            tuple((log.file_name, log.size) for log in value.log_files),
        )
    if kind is tuple or kind is list:
        if kind is tuple and all(type(v) in _PLAIN for v in value):
            return value  # (a partition's (column, value) pairs, ...) already canonical
        return tuple(canonical(v) for v in value)
    if kind is PartitionValues:  # one per partition folder, twice in a plan: the dataclass form, made directly
        return ("PartitionValues", ("path", canonical(value.path)), ("values", canonical(value.values)))
    if kind is frozenset or kind is set:
        return ("set",) + tuple(sorted((canonical(v) for v in value), key=repr))
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return ("map",) + tuple(sorted(((canonical(k), canonical(v)) for k, v in value.items()), key=repr))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (kind.__name__,) + _canonical_fields(value, _field_names(kind))
    if isinstance(value, pa.Schema):
        return value.to_string(show_field_metadata=True, show_schema_metadata=True)
    return repr(value)


def _canonical_fields(value: Any, names: tuple[str, ...]) -> tuple:
    """(name, canonical form) of a dataclass's fields; a field holding the same object as an
    earlier one (a plan's partition values in both its value fields) is made once."""
    out = []
    made: dict[int, Any] = {}
    for name in names:
        field_value = getattr(value, name)
        key = id(field_value)
        if key not in made:
            made[key] = canonical(field_value)
        out.append((name, made[key]))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))


EARLIEST = "earliest"
_INSTANT_FORMS = "yyyyMMddHHmmssSSS (e.g. 20240418173551906), yyyyMMddHHmmss, 'yyyy-MM-dd HH:mm:ss[.SSS]' or 'yyyy-MM-dd'"
_BEFORE_EVERY_INSTANT = re.compile(r"0+")


def parse_query_time(what: str, value: str | None, table_path: str) -> str | None:
    """A query's ``as_of``, ``begin_time`` or ``end_time`` in Hudi's 17-digit form, or None.

    * ``begin_time`` ``'000'`` (any run of zeros) or ``'earliest'``: None, from the
      first commit on, archived ones included, as Hudi reads them;
    * ``end_time`` ``'000'``: before every instant, an empty window (Hudi compares
      instant times as strings); ``'earliest'`` is only a begin time in Hudi;
    * ``as_of``: instant times only, as Hudi's time travel.
    """
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    before_all = bool(_BEFORE_EVERY_INSTANT.fullmatch(text))
    if what == "begin_time" and (before_all or text.lower() == EARLIEST):
        return None
    if what == "end_time" and before_all:
        return "0" * 17
    try:
        return normalize_instant_time(text)
    except ValueError:
        pass
    accepted = f"use an instant time: {_INSTANT_FORMS}"
    if what == "begin_time":
        accepted += ", or '000' / 'earliest' to start from the first commit"
    elif before_all or text.lower() == EARLIEST:
        accepted += "; '000' and 'earliest' mean 'from the first commit' only as begin_time"
    raise TimelineError(f"Hudi table {table_path}: {what} {str(value)!r} is not an instant time; {accepted}")


# -- planners -----------------------------------------------------------------------------------


#: Plans made again when the timeline changed under one (an instant archived between listing and reading).
PLAN_ATTEMPTS = 3


def plan_fresh(
    open_table: Callable[[], HudiTable], make: Callable[[HudiTable], ReadPlan], table: HudiTable | None = None
) -> ReadPlan:
    """``make(table)`` (a table opened by ``open_table`` when none is given), listing the table
    again when a listed timeline file vanished meanwhile.

    Archival and rollback delete timeline files while readers plan; a listing taken a
    moment before can name a file that is gone. Hudi's readers reload the timeline;
    so does this, a few times, then the error stands.
    """
    with _no_cycle_collection():
        for attempt in range(PLAN_ATTEMPTS):
            try:
                return make(table if table is not None and attempt == 0 else open_table())
            except TimelineChangedError:
                if attempt == PLAN_ATTEMPTS - 1:
                    raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while planning.

    A plan decodes every commit on the timeline and makes objects per file: tens of
    thousands of containers that all stay alive. Each collection the collector
    triggers on the way scans them again, a third of a plan's time on a long
    timeline, and finds nothing (planning makes no reference cycles of note).
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def plan_snapshot(
    table: HudiTable,
    as_of: str | None = None,
    partitions: Iterable[str] | None = None,
    options: ReadOptions = ReadOptions(),
    filters: FilterSpec = None,
    check_files: bool = True,
) -> ReadPlan:
    """``check_files``: fail when a data file a completed commit wrote is missing or cut short
    (inspection views list what is there instead)."""
    return _plan_latest(table, QueryType.SNAPSHOT, as_of, partitions, options, filters, check_files)


def plan_read_optimized(
    table: HudiTable,
    as_of: str | None = None,
    partitions: Iterable[str] | None = None,
    options: ReadOptions = ReadOptions(),
    filters: FilterSpec = None,
) -> ReadPlan:
    return _plan_latest(table, QueryType.READ_OPTIMIZED, as_of, partitions, options, filters, True)


def _plan_latest(
    table: HudiTable,
    query_type: QueryType,
    as_of: str | None,
    partitions: Iterable[str] | None,
    options: ReadOptions,
    filters: FilterSpec,
    check_files: bool,
) -> ReadPlan:
    """The latest file slices as of ``as_of``: snapshot reads merge their logs, read-optimized
    reads take base files only (and count no instants)."""
    as_of = parse_query_time("as_of", as_of, table.base_uri)
    table.config.check_readable()
    table = _table_as_of(table, as_of)
    typed = _parse_filters(table, filters)
    view = table.file_system_view
    read_optimized = query_type is QueryType.READ_OPTIMIZED
    partitions = tuple(partitions) if partitions else None
    replaced = frozenset(view.replaced_file_groups(as_of))
    slices = view.latest_slices(as_of=as_of, partitions=partitions, read_optimized=read_optimized, replaced=replaced)
    instants = view.committed_instants(until=as_of)
    if check_files:
        check_plan_files(view, slices, instants, replaced, partitions, read_logs=not read_optimized)
    slices, skipped = _skip(table, slices, typed, latest=as_of is None)
    return _plan(
        table,
        query_type,
        slices,
        None if read_optimized else instants,
        options,
        as_of=as_of,
        replaced=replaced,
        partitions=partitions,
        filters=typed,
        skipped_slices=skipped,
    )


def _table_as_of(table: HudiTable, since: str | None) -> HudiTable:
    """``table``, or the same table listed from storage when a ``delete_partition`` completed
    after ``since``: the metadata table drops deleted partitions from its partition list, so
    it cannot answer for a time before the deletion (their files stay until cleaned)."""
    if since is None or not table.uses_metadata_table:
        return table
    timeline = table.timeline
    for instant in timeline.completed([Action.REPLACE_COMMIT]):
        if instant.requested_time > since:
            operation = (timeline.commit_summary(instant).operation_type or "").upper()
            if operation == "DELETE_PARTITION":
                return HudiTable(table.base_uri, table.storage.storage_options, metadata_enable=False)
    return table

def _window_key(table: HudiTable, instant: Instant) -> str:
    """Time an incremental window compares: requested (v6) or completion (v8+)."""
    if table.config.version >= 8 and instant.completion_time:
        return instant.completion_time
    return instant.requested_time


def plan_incremental(
    table: HudiTable,
    begin: str | None = None,
    end: str | None = None,
    options: ReadOptions = ReadOptions(),
    filters: FilterSpec = None,
) -> ReadPlan:
    """Rows of the commits in ``(begin, end]``; ``begin`` None (or '000' / 'earliest') starts at the first commit."""
    begin = parse_query_time("begin_time", begin, table.base_uri)
    end = parse_query_time("end_time", end, table.base_uri)
    table = _table_as_of(table, end)
    table.config.check_readable()
    typed = _parse_filters(table, filters)
    if not table.has_meta_fields:
        raise UnsupportedFeatureError(
            f"{table.base_uri}: incremental queries need the _hoodie_commit_time meta column, "
            "but the table is written with hoodie.populate.meta.fields=false"
        )
    timeline = table.timeline
    view = table.file_system_view

    def in_window(key: str) -> bool:
        return (begin is None or key > begin) and (end is None or key <= end)

    selected = [i for i in timeline.completed_writes if in_window(_window_key(table, i))]
    touched: set[tuple[str, str]] = set()
    timeline.prefetch_summaries(selected)
    for instant in selected:
        touched |= timeline.commit_summary(instant).file_ids()
    earliest_active = timeline.completed_writes[0].requested_time if timeline.completed_writes else None
    if earliest_active is None or begin is None or begin < earliest_active:
        # the window reaches back before the active timeline: archived commits count too
        for instant, metadata in timeline.archived_completed_writes():
            if timeline.group(instant.requested_time) is None and in_window(_window_key(table, instant)):
                selected.append(instant)
                touched |= metadata.file_ids()
    commit_times = frozenset(i.requested_time for i in selected)
    replaced: set[tuple[str, str]] = set()
    for instant in timeline.completed([Action.REPLACE_COMMIT]):
        if end is None or _window_key(table, instant) <= end:
            for partition, ids in timeline.commit_summary(instant).replaced_file_ids().items():
                replaced.update((partition, file_id) for file_id in ids)
    instants = view.committed_instants(until=end)
    hidden_bases: frozenset[str] = frozenset()
    if end is not None and table.config.version >= 8:
        # v8+: an instant counts if it completed by the window end (its base files and log blocks)
        late = frozenset(t for t in instants.completed if (timeline.completion_time(t) or t) > end)
        instants = dataclasses.replace(instants, completed=instants.completed - late)
        hidden_bases = late
    slices: list[FileSlice] = []
    if selected:
        slices = view.latest_slices(
            as_of=end,  # the slice as of the window end: base instants (requested times) up to it
            partitions=sorted({p for p, _ in touched}),
            file_groups=frozenset(touched),
            replaced=replaced,
            hidden_base_instants=hidden_bases,
        )
        check_plan_files(view, slices, instants, replaced, file_groups=touched)
    slices, skipped = _skip(table, slices, typed, latest=end is None)
    return _plan(
        table,
        QueryType.INCREMENTAL,
        slices,
        instants,
        options,
        begin=begin,
        end=end,
        commit_times=commit_times,
        replaced=frozenset(replaced),
        filters=typed,
        skipped_slices=skipped,
    )


def _parse_filters(table: HudiTable, filters: FilterSpec) -> tuple[ColumnFilter, ...]:
    return parse_filters(filters, table.schema, f"Hudi table {table.base_uri}: ")


def _skip(
    table: HudiTable, slices: list[FileSlice], filters: tuple[ColumnFilter, ...], latest: bool
) -> tuple[list[FileSlice], int]:
    """The slices the metadata table's statistics cannot rule out for ``filters``, and how many were."""
    if not filters or not table.uses_metadata_table:
        return slices, 0
    from ..metadata.data_skipping import skip_slices

    result = skip_slices(table.metadata_table, table.config.metadata_partitions, slices, filters, latest)
    return list(result.slices), len(slices) - len(result.slices)


def committed_before(table: HudiTable, instant_time: str) -> CommittedInstants:
    """The instants a table service at ``instant_time`` reads (compaction, clustering)."""
    return table.file_system_view.committed_instants(before=instant_time)


def _plan(
    table: HudiTable,
    query_type: QueryType,
    slices: list[FileSlice],
    instants: CommittedInstants | None,
    options: ReadOptions,
    **fields: Any,
) -> ReadPlan:
    """The plan's table-wide facts: schema, merge and key configuration, partition values, file schemas."""
    schema = table.schema
    folder_columns = _partition_columns(table, schema)
    columns = folder_columns if options.extract_partition_values_from_path else ()
    folder_values = _partition_values(table, schema, folder_columns, {s.partition_path for s in slices})
    key_generator = None
    if not table.has_meta_fields:
        key_generator = KeyGeneratorSpec(tuple(sorted(table.config.props.items())))
    return ReadPlan(
        location=TableLocation.of(table.storage),
        query_type=query_type,
        slices=tuple(slices),
        schema=schema,
        merge=table.merge_config,
        instants=instants,
        table_schema_instants=_table_schema_instants(table, {s.base_file.instant_time for s in slices if s.base_file}),
        partition_columns=columns,
        partition_values=folder_values if columns else (),
        folder_partition_values=folder_values,
        key_generator=key_generator,
        options=options,
        listing=table.file_system_view.listing.source,
        **fields,
    )


def _partition_columns(table: HudiTable, schema: pa.Schema) -> tuple[str, ...]:
    """Output columns the key generator writes into partition paths."""
    if not table.config.is_partitioned:
        return ()
    try:
        fields = list(table.key_generator.partition_fields)
    except Exception:
        return ()
    return tuple(f for f in fields if f in schema.names)


def _partition_values(
    table: HudiTable, schema: pa.Schema, columns: tuple[str, ...], folders: Iterable[str]
) -> tuple[PartitionValues, ...]:
    """Each folder's typed values of ``columns``, when the folder's name determines them exactly."""
    if not columns:
        return ()
    data_schema = without_meta_fields(schema)
    out = []
    for folder in sorted(folders):
        try:
            values = table.key_generator.partition_values(folder, data_schema)
        except Exception:
            values = None
        exact = values is not None and all(c in values for c in columns)
        out.append(PartitionValues(folder, tuple((c, values[c]) for c in columns) if exact else None))
    return tuple(out)


def _table_schema_instants(table: HudiTable, instants: Iterable[str]) -> frozenset[str]:
    """The base instants whose commit recorded the table's current data schema."""
    timeline = table.timeline
    data_schema = without_meta_fields(table.schema)
    same_as_table: dict[str, bool] = {}
    out = set()
    for instant in instants:
        group = timeline.group(instant)
        if group is None or not group.latest.is_completed:
            continue
        written = timeline.commit_schema(group.latest)
        if not written:
            continue
        if written not in same_as_table:
            try:
                same_as_table[written] = without_meta_fields(avro_to_arrow(written)).equals(data_schema)
            except Exception:
                same_as_table[written] = False
        if same_as_table[written]:
            out.add(instant)
    return frozenset(out)
