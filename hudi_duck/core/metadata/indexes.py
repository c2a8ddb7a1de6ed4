"""The metadata table's index partitions of table version 6: ``column_stats`` and ``record_index``.

What goes into them, as Hudi 0.14 builds it (``HoodieTableMetadataUtil``):

* ``column_stats``: one record per (data file, indexed column). Base files: ranges from
  the parquet footer (``readRangeFromParquetMetadata``); log files: ranges of the records
  a commit appended (``HoodieAppendHandle`` collects them; total sizes 0); files a clean
  deleted: tombstones (``isDeleted``). Indexed columns: the writer schema's fields, meta
  columns included, or ``hoodie.metadata.index.column.stats.column.list``.
* ``record_index``: one record per record key, where its live record is (partition, file
  id, instant of the write that put it there). Updates in place write nothing; a key
  written into another file group (insert, partition move, clustering) gets a new
  entry; a deleted key a delete.

A write's tasks build both where they write (``WrittenFileIndex``: the footer a handle
kept, the log block it appended, the keys it moved in or dropped; Hudi's
``getRecordIndexUpdates`` rule: inserts get a location, updates in place nothing, deletes
drop the key); so do a compaction's and a clustering's tasks. Without them (an engine
that does not collect them) the records are built from the files the commit wrote (base
files' key column, log blocks of the instant): only the file groups a commit touched are read.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import posixpath
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..avro import models as avro_models
from ..errors import HudiError, SchemaError
from ..file_group.base_file import read_record_keys
from ..file_group.log_blocks import _arrow_schema_of, decode_data_block, decode_delete_block
from ..file_group.log_format import BlockType, read_log_file
from ..schema.meta_fields import RECORD_KEY
from ..storage.storage import Storage
from ..timeline.commit_metadata import NULL_COMMIT, CommitMetadata
from .layout import COLUMN_STATS, RECORD_INDEX, MetadataPartition, file_group_id, file_group_index
from .records import MetadataRecord, RecordLocation, column_stats_record, record_index_record, record_location

_EPOCH = _dt.date(1970, 1, 1)
_NS = avro_models.NAMESPACE


class MetadataIndexError(HudiError):
    """A metadata-table index that cannot be built or used."""


@dataclass(frozen=True)
class IndexSettings:
    """``hoodie.metadata.index.column.stats.*`` and ``hoodie.metadata.record.index.*``."""

    column_stats: bool = False
    #: hoodie.metadata.index.column.stats.column.list (empty: every column of the writer schema)
    column_stats_columns: tuple[str, ...] = ()
    #: hoodie.metadata.index.column.stats.file.group.count
    column_stats_file_groups: int = 2
    record_index: bool = False
    #: hoodie.metadata.record.index.min.filegroup.count / max.filegroup.count
    record_index_min_file_groups: int = 10
    record_index_max_file_groups: int = 10000

    def partitions(self) -> list[MetadataPartition]:
        out = []
        if self.column_stats:
            out.append(COLUMN_STATS)
        if self.record_index:
            out.append(RECORD_INDEX)
        return out


# -- column stats -----------------------------------------------------------------------------


def _wrap(value: Any, dtype: pa.DataType) -> Any:
    """``wrapValueIntoAvro`` for a value of a column of type ``dtype``."""
    if value is None:
        return None
    if pa.types.is_boolean(dtype):
        return (f"{_NS}.BooleanWrapper", {"value": bool(value)})
    if pa.types.is_integer(dtype):
        name = "LongWrapper" if pa.types.is_int64(dtype) or pa.types.is_uint32(dtype) or pa.types.is_uint64(dtype) else "IntWrapper"
        return (f"{_NS}.{name}", {"value": int(value)})
    if pa.types.is_float32(dtype):
        return (f"{_NS}.FloatWrapper", {"value": float(value)})
    if pa.types.is_floating(dtype):
        return (f"{_NS}.DoubleWrapper", {"value": float(value)})
    if pa.types.is_decimal(dtype):
        return (f"{_NS}.DecimalWrapper", {"value": decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-15))})
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return (f"{_NS}.StringWrapper", {"value": str(value)})
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_fixed_size_binary(dtype):
        return (f"{_NS}.BytesWrapper", {"value": bytes(value)})
    if pa.types.is_timestamp(dtype):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        micros = (value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(microseconds=1)
        return (f"{_NS}.TimestampMicrosWrapper", {"value": micros})
    if pa.types.is_date(dtype):
        return (f"{_NS}.DateWrapper", {"value": (value - _EPOCH).days})
    return None  # nested and other kinds are not indexed


def _indexable(dtype: pa.DataType) -> bool:
    return not (pa.types.is_nested(dtype) or pa.types.is_dictionary(dtype) or pa.types.is_null(dtype))


def columns_to_index(schema: pa.Schema, settings: IndexSettings) -> list[str]:
    """The configured columns, else every top-level column of the writer schema (meta columns first)."""
    if settings.column_stats_columns:
        return list(settings.column_stats_columns)
    return [f.name for f in schema if _indexable(f.type)]


def base_file_column_stats(storage: Storage, partition: str, path: str, columns: Iterable[str]) -> list[MetadataRecord]:
    """Ranges of a parquet base file's columns, read from its footer."""
    with storage.open(path) as handle:
        meta = pq.ParquetFile(handle).metadata
    return footer_column_stats(partition, posixpath.basename(path), meta, columns)


def footer_column_stats(partition: str, file_name: str, meta: pq.FileMetaData, columns: Iterable[str]) -> list[MetadataRecord]:
    """Ranges of a base file's columns from its footer (row group statistics): the same
    records whether the footer is read back or kept by the handle that wrote the file."""
    schema = meta.schema.to_arrow_schema()
    wanted = set(columns)
    out = []
    for field in schema:
        if field.name not in wanted or not _indexable(field.type):
            continue
        low = high = None
        nulls = values = size = raw = 0
        for group in range(meta.num_row_groups):
            chunk = next((meta.row_group(group).column(c) for c in range(meta.num_columns)
                          if meta.row_group(group).column(c).path_in_schema == field.name), None)
            if chunk is None:
                continue
            values += chunk.num_values
            size += chunk.total_compressed_size
            raw += chunk.total_uncompressed_size
            stats = chunk.statistics
            if stats is None:
                continue
            nulls += stats.null_count or 0
            if stats.has_min_max:
                low = stats.min if low is None else min(low, stats.min)
                high = stats.max if high is None else max(high, stats.max)
        out.append(column_stats_record(
            partition, file_name, field.name,
            min_value=_wrap(_logical(low, field.type), field.type), max_value=_wrap(_logical(high, field.type), field.type),
            value_count=values, null_count=nulls, total_size=size, total_uncompressed_size=raw,
        ))
    return out


def _logical(value: Any, dtype: pa.DataType) -> Any:
    """Footer statistics come typed by the physical type for some logical types."""
    if value is None:
        return None
    if pa.types.is_string(dtype) and isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def table_column_stats(partition: str, file_name: str, table: pa.Table, columns: Iterable[str]) -> list[MetadataRecord]:
    """Ranges of records in memory (what a log file's appended block holds); sizes are 0 as Hudi's."""
    out = []
    for name in columns:
        if name not in table.column_names:
            continue
        column = table.column(name)
        if not _indexable(column.type):
            continue
        nulls = column.null_count
        low = high = None
        if len(column) - nulls:
            bounds = pc.min_max(column)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
        out.append(column_stats_record(
            partition, file_name, name,
            min_value=_wrap(low, column.type), max_value=_wrap(high, column.type),
            value_count=len(column), null_count=nulls, total_size=0, total_uncompressed_size=0,
        ))
    return out


def _instant_blocks(storage: Storage, path: str, instant_time: str):
    return [b for b in read_log_file(storage.read(path), storage.uri(path)) if b.instant_time == instant_time]


def _log_records(storage: Storage, path: str, instant_time: str) -> tuple[pa.Table | None, list[str]]:
    """The records and deleted keys a log file's blocks of ``instant_time`` hold."""
    tables, deleted = [], []
    for block in _instant_blocks(storage, path, instant_time):
        if block.block_type in (BlockType.AVRO_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK, BlockType.HFILE_DATA_BLOCK):
            target = _arrow_schema_of(block.schema) if block.schema else None
            if target is not None:
                tables.append(decode_data_block(block, target))
        elif block.block_type is BlockType.DELETE_BLOCK:
            deleted.extend(d.record_key for d in decode_delete_block(block))
    table = pa.concat_tables(tables, promote_options="permissive") if tables else None
    return table, deleted


def _stat_records(metadata: CommitMetadata) -> Iterable[tuple[str, Any]]:
    for partition, stats in metadata.partition_to_write_stats.items():
        for stat in stats or ():
            if stat.path:
                yield partition, stat


def log_file_column_stats(partition: str, file_name: str, records: pa.Table | None, columns: list[str]) -> list[MetadataRecord]:
    """Ranges of the records a log file's data block holds; a log file of deletes only
    gets empty ranges, as Hudi records them."""
    if records is None:
        return [
            column_stats_record(partition, file_name, c, value_count=0, null_count=0, total_size=0, total_uncompressed_size=0)
            for c in columns
        ]
    return table_column_stats(partition, file_name, records, columns)


def commit_column_stats_records(
    storage: Storage, metadata: CommitMetadata, instant_time: str, columns: list[str]
) -> list[MetadataRecord]:
    """``convertMetadataToColumnStatsRecords``: ranges of every file a commit wrote, read back
    from the files (when the write tasks did not hand them over, see :class:`WrittenFileIndex`)."""
    out: list[MetadataRecord] = []
    for partition, stat in _stat_records(metadata):
        name = posixpath.basename(stat.path)
        if ".log." in name:
            table, _ = _log_records(storage, stat.path, instant_time)
            out += log_file_column_stats(partition, name, table, columns)
        elif name.endswith(".parquet"):
            out += base_file_column_stats(storage, partition, stat.path, columns)
    return out


@dataclass
class WrittenFileIndex:
    """What one data file a write task wrote changes in the index partitions, as its write
    handle knows it (Hudi builds the same from the handles' write statuses):

    * ``column_stats``: the file's ``column_stats`` records (from the footer the handle
      kept, or the records of the log block it appended); ``None`` when not asked for;
    * ``inserted_keys``: keys whose live record is now in this file group and was not
      before (inserts, keys moved in); ``deleted_keys``: keys whose record this file
      group dropped. Updates in place are in neither."""

    partition_path: str
    file_id: str
    file_name: str
    column_stats: list[MetadataRecord] | None = None
    inserted_keys: pa.Array | None = None
    deleted_keys: pa.Array | None = None


def written_column_stats(
    written: Iterable[WrittenFileIndex], metadata: CommitMetadata
) -> list[MetadataRecord] | None:
    """The ``column_stats`` records of a commit from what its write tasks handed over, in the
    order :func:`commit_column_stats_records` gives them; ``None`` unless every file the
    commit wrote has its records."""
    by_file = {(w.partition_path, w.file_name): w.column_stats for w in written}
    out: list[MetadataRecord] = []
    for partition, stat in _stat_records(metadata):
        name = posixpath.basename(stat.path)
        if ".log." not in name and not name.endswith(".parquet"):
            continue
        records = by_file.get((partition, name))
        if records is None:
            return None
        out += records
    return out


def deleted_files_column_stats_records(partition_files: Mapping[str, Iterable[str]], columns: list[str]) -> list[MetadataRecord]:
    """Tombstones of files a clean deleted (``getColumnStatsRecords(..., isDeleted=true)``)."""
    return [
        column_stats_record(partition, posixpath.basename(path), column, deleted=True)
        for partition, files in partition_files.items()
        for path in files
        for column in columns
    ]


def listing_column_stats_records(storage: Storage, listing: Mapping[str, Mapping[str, int]], columns: list[str]) -> list[MetadataRecord]:
    """Bootstrap: ranges of every base file listed (log files get none, as in Hudi 0.14)."""
    out: list[MetadataRecord] = []
    for partition, files in sorted(listing.items()):
        for name in sorted(files):
            if name.endswith(".parquet"):
                out += base_file_column_stats(storage, partition, posixpath.join(partition, name), columns)
    return out


# -- record index -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordIndexUpdate:
    """What a commit changes in the record index."""

    upserts: tuple[MetadataRecord, ...] = ()
    deletes: tuple[str, ...] = ()


def _base_keys(storage: Storage, path: str) -> list[str]:
    try:
        return read_record_keys(storage, path).to_pylist()
    except SchemaError as exc:
        raise MetadataIndexError(f"{exc}; the record index needs them") from exc


def slice_keys(storage: Storage, table: Any, file_slice: Any) -> list[str]:
    """Live record keys of a file slice (base merged with its logs)."""
    from ..file_group.reader import read_slice
    from ..table.read_plan import plan_snapshot

    plan = plan_snapshot(table, partitions=[file_slice.partition_path])
    for s in plan.slices:
        if s.file_id == file_slice.file_id:
            rows = read_slice(plan.context(), s)
            return plan.context().keys(rows).cast(pa.string()).to_pylist()
    return []


def commit_record_index_update(
    storage: Storage,
    table: Any,
    metadata: CommitMetadata,
    instant_time: str,
    lookup,
) -> RecordIndexUpdate:
    """``getRecordIndexUpdates`` of a write, clustering or replace commit. ``table``: the data
    table before the commit (previous file slices); ``lookup(keys)``: key -> location now."""
    operation = (metadata.operation_type or "").upper()
    if operation in ("COMPACT", "LOG_COMPACT"):
        return RecordIndexUpdate()
    written: dict[str, tuple[str, str]] = {}  # key -> (partition, file id) written by this commit
    removed: set[str] = set()
    view = table.file_system_view if table is not None else None
    for partition, stat in _stat_records(metadata):
        name = posixpath.basename(stat.path)
        if ".log." in name:
            records, deleted = _log_records(storage, stat.path, instant_time)
            keys = records.column(RECORD_KEY).to_pylist() if records is not None and RECORD_KEY in records.column_names else []
            for key in keys:
                written[key] = (partition, stat.file_id)
            removed.update(deleted)
            continue
        if not name.endswith(".parquet"):
            continue
        keys = _base_keys(storage, stat.path)
        previous = None
        if stat.prev_commit not in (None, "", NULL_COMMIT) and view is not None:
            previous = _previous_base(view, partition, stat.file_id)
        if previous is not None:  # a merge: keys kept stay where they are
            old = set(_base_keys(storage, previous))
            removed.update(old.difference(keys))
            keys = [k for k in keys if k not in old]
        for key in keys:
            written[key] = (partition, stat.file_id)
    removed.update(replaced_keys(storage, table, metadata))
    current = lookup(sorted(written)) if written else {}
    upserts = []
    for key, (partition, file_id) in sorted(written.items()):
        known = current.get(key)
        if known is not None and known.file_id == file_id and known.partition_path == partition:
            continue  # an update in place
        upserts.append(record_index_record(key, partition, file_id, instant_time))
    deletes = tuple(sorted(k for k in removed if k not in written))
    return RecordIndexUpdate(tuple(upserts), deletes)


def replaced_keys(storage: Storage, table: Any, metadata: CommitMetadata) -> set[str]:
    """Live keys of the file groups a replace commit replaces (``table``: before the commit)."""
    out: set[str] = set()
    view = table.file_system_view if table is not None else None
    if view is None:
        return out
    for partition, file_ids in (metadata.partition_to_replace_file_ids or {}).items():
        wanted = set(file_ids)
        for file_slice in view.latest_slices(partitions=[partition]):
            if file_slice.file_id in wanted:
                out.update(slice_keys(storage, table, file_slice))
    return out


def record_index_changes(
    keys: Iterable[str], partitions: Iterable[str | None], file_ids: Iterable[str | None], deleted: Iterable[bool], instant_time: str
) -> tuple[list[MetadataRecord], list[str]]:
    """What a set of write-task changes (key, partition, file id, deleted) does to the record
    index, in the order a delta commit writes them: upserts sorted by key, then deleted keys
    sorted. A key deleted in one file group and written into another (a partition move under
    a global index) keeps its new location, as Hudi reduces them by key."""
    moved: dict[str, tuple[str, str]] = {}
    gone: set[str] = set()
    for key, partition, file_id, is_delete in zip(keys, partitions, file_ids, deleted):
        if is_delete:
            gone.add(key)
        else:
            moved[key] = (partition or "", file_id or "")
    upserts = [record_index_record(k, p, f, instant_time) for k, (p, f) in sorted(moved.items())]
    return upserts, sorted(gone.difference(moved))


def _previous_base(view: Any, partition: str, file_id: str) -> str | None:
    for file_slice in view.latest_slices(partitions=[partition]):
        if file_slice.file_id == file_id and file_slice.base_file is not None:
            return file_slice.base_file.path
    return None


def table_record_index_records(storage: Storage, table: Any, instant_time: str) -> list[MetadataRecord]:
    """Bootstrap: one entry per live record of the latest file slices."""
    from ..file_group.reader import read_slice
    from ..table.read_plan import plan_snapshot

    plan = plan_snapshot(table)
    out = []
    for file_slice in plan.slices:
        rows = read_slice(plan.context(), file_slice)
        for key in plan.context().keys(rows).cast(pa.string()).to_pylist():
            out.append(record_index_record(key, file_slice.partition_path, file_slice.file_id, file_slice.base_instant_time))
    return out


def record_index_file_group_count(records: int, settings: IndexSettings) -> int:
    """``estimateFileGroupCount`` with the configured bounds."""
    from .layout import estimate_file_group_count

    return estimate_file_group_count(
        records, min_count=settings.record_index_min_file_groups, max_count=settings.record_index_max_file_groups
    )


def lookup_record_index(metadata_table: Any, keys: Iterable[str]) -> dict[str, RecordLocation]:
    """Where the record index puts each of ``keys`` (absent: not in the table). Reads only
    the file groups the keys map to (``readRecordIndex``)."""
    keys = list(keys)
    if not keys:
        return {}
    slices = metadata_table.view.latest_slices(partitions=[RECORD_INDEX.name])
    count = len(slices)
    if not count:
        return {}
    by_group: dict[str, set[str]] = {}
    for key in keys:
        by_group.setdefault(file_group_id(RECORD_INDEX, file_group_index(key, count)), set()).add(key)
    out: dict[str, RecordLocation] = {}
    for file_slice in slices:
        wanted = by_group.get(file_slice.file_id)
        if not wanted:
            continue
        for key, record in metadata_table.slice_records(file_slice, exact_keys=wanted).items():
            out[key] = record_location(record)
    return out


__all__ = [
    "IndexSettings",
    "MetadataIndexError",
    "RecordIndexUpdate",
    "base_file_column_stats",
    "columns_to_index",
    "commit_column_stats_records",
    "footer_column_stats",
    "log_file_column_stats",
    "written_column_stats",
    "WrittenFileIndex",
    "commit_record_index_update",
    "deleted_files_column_stats_records",
    "listing_column_stats_records",
    "lookup_record_index",
    "record_index_changes",
    "record_index_file_group_count",
    "replaced_keys",
    "table_column_stats",
    "table_record_index_records",
]
