"""Write handles: how one write task turns records into data files.

Named after Hudi's handles, and run wherever the data is (Spark executors):

* **create**: inserts into new file groups (rolling over to a new file group
  at ``hoodie.parquet.max.file.size``);
* **merge**: copy-on-write update of one file group: the latest base file's
  rows merged with incoming records into a new base file version;
* **append**: merge-on-read update of one file group: incoming records as a
  log data block and deletes as a delete block, in a new log file.

Each handle writes its marker first and returns Hudi write stats (``WriteStat``).
Record merging follows ``merge.fold`` (the same rule readers apply).
"""

from __future__ import annotations

import dataclasses
import posixpath
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..config.write_settings import FileSettings
from ..errors import WriteError
from ..file_group import base_file as base_files
from ..file_group.log_blocks import (
    DeleteRecord,
    encode_avro_records,
    encode_delete_records,
    encode_parquet_records,
)
from ..file_group.log_format import BlockType, HeaderKey, encode_block
from ..file_group.naming import (
    PARTITION_METAFILE,
    base_file_name,
    log_file_name,
    new_file_id,
    parse_log_file,
    partition_depth,
    partition_metafile_text,
)
from ..merge.fold import LogEntry, fold_log_records, merge_with_base
from ..merge.mode import MergeMode
from ..merge.ordering import NATURAL, JavaClass, column_class, ordering_values
from ..schema.avro_arrow import add_meta_fields_avro, avro_json, avro_to_arrow
from ..schema.evolution import align_to_schema
from ..schema.meta_fields import (
    COMMIT_SEQNO,
    COMMIT_TIME,
    FILE_NAME,
    META_FIELDS,
    PARTITION_PATH,
    RECORD_KEY,
    with_meta_fields,
    without_meta_fields,
)
from ..storage.storage import Storage
from ..timeline.commit_metadata import RuntimeStats, WriteStat
from .. import faults
from ..metadata.indexes import WrittenFileIndex, footer_column_stats, log_file_column_stats
from .markers import IOType, create_marker

#: Columns the writer adds to incoming records: deletes (soft or hard) and hard
#: deletes (the ``delete`` operation), which carry no ordering value.
DELETE_FLAG = "_hd_is_delete"
HARD_DELETE_FLAG = "_hd_hard_delete"


@dataclass
class WriteContext:
    """Everything a task needs to write for one instant (picklable)."""

    base_uri: str
    instant_time: str
    avro_schema: str  # writer schema (no meta fields), Avro JSON
    merge_mode: MergeMode
    ordering_field: str | None
    is_mor: bool
    storage_options: dict[str, Any] = field(default_factory=dict)
    populate_meta_fields: bool = True
    #: how base files and log files are written (the same for writes, compaction, clustering)
    files: FileSettings = field(default_factory=FileSettings)
    #: False under ``EventTimeAvroPayload``: an incoming soft delete wins without comparing
    soft_deletes_ordered: bool = True
    #: ``hoodie.properties`` of a table that keeps no ``_hoodie_record_key``
    #: (hoodie.populate.meta.fields=false): its key generator derives stored rows' keys
    virtual_key_table: dict[str, str] = field(default_factory=dict)
    #: columns the metadata table's ``column_stats`` partition indexes (``None``: not kept);
    #: handles given an ``indexed`` list build each file's records from what they wrote
    column_stats_columns: tuple[str, ...] | None = None
    #: the metadata table keeps a ``record_index``: handles report the keys they moved in or dropped
    record_index: bool = False
    #: the records were located with the record index itself (hoodie.index.type=RECORD_INDEX):
    #: a record sent to a file group's log is there in the index; other indexes locate keys
    #: from base files, which may hold keys a log deleted (the index is asked then)
    located_by_record_index: bool = False

    @classmethod
    def for_table(cls, table: Any, instant_time: str, files: FileSettings) -> "WriteContext":
        """The context of a table service rewriting ``table``'s files (a ``HudiTable``):
        the table's schema, merge rule and meta-field choice, with ``files``."""
        schema = table.avro_schema
        if not schema:
            raise WriteError(f"{table.base_uri}: the table has no schema yet (no commits)")
        merge = table.merge_config
        return cls(
            base_uri=table.base_uri,
            instant_time=instant_time,
            avro_schema=schema,
            merge_mode=merge.mode if isinstance(merge.mode, MergeMode) else MergeMode(merge.mode),
            ordering_field=merge.ordering_field,
            is_mor=table.config.is_mor,
            storage_options=dict(table.storage.storage_options),
            populate_meta_fields=table.config.populate_meta_fields,
            files=files,
            virtual_key_table={} if table.config.populate_meta_fields else dict(table.config.props),
        )

    @property
    def max_file_size(self) -> int:
        return self.files.parquet.max_file_size

    def with_indexes(self, column_stats_columns: tuple[str, ...] | None, record_index: bool) -> "WriteContext":
        """This context with handles reporting the index records the metadata table keeps."""
        return dataclasses.replace(self, column_stats_columns=column_stats_columns, record_index=record_index)

    def with_max_file_size(self, size: int) -> "WriteContext":
        """This context writing base files of up to ``size`` bytes (clustering's target size)."""
        parquet = dataclasses.replace(self.files.parquet, max_file_size=size)
        return dataclasses.replace(self, files=dataclasses.replace(self.files, parquet=parquet))

    @cached_property
    def virtual_key_generator(self):
        """The table's key generator (virtual-key tables only), built once per task."""
        if not self.virtual_key_table:
            return None
        from ..config.table_config import TableConfig
        from ..keygen import key_generator_from_table_config

        return key_generator_from_table_config(TableConfig(props=dict(self.virtual_key_table)))

    @cached_property
    def storage(self) -> Storage:
        return Storage(self.base_uri, self.storage_options)

    @cached_property
    def data_schema(self) -> pa.Schema:
        return without_meta_fields(avro_to_arrow(self.avro_schema))

    @cached_property
    def full_schema(self) -> pa.Schema:
        return with_meta_fields(self.data_schema) if self.populate_meta_fields else self.data_schema

    @cached_property
    def log_schema_json(self) -> str:
        """The SCHEMA header of log blocks: the writer schema with meta fields."""
        return avro_json(add_meta_fields_avro(self.avro_schema))

    def write_base(
        self,
        rel: str,
        records: pa.Table,
        *,
        file_id: str,
        partition_path: str,
        record_keys: pa.Array,
        task: "TaskInfo",
        max_file_size: int | None = None,
        commit_time: str | None = None,
        preserve_meta: Any = False,
        overwrite: bool = False,
    ) -> base_files.BaseFileWriteResult:
        """Write one base file with this write's parquet settings and meta-field choice
        (``max_file_size``: this file's limit when not the settings')."""
        return base_files.write_base_file(
            self.storage,
            rel,
            records,
            self.avro_schema,
            commit_time=commit_time or self.instant_time,
            file_id=file_id,
            partition_path=partition_path,
            record_keys=record_keys,
            seqno_start=0,  # every file counts its records from 0, as Hudi's handles do
            task_partition_id=task.partition_id,
            settings=self.files.parquet,
            max_file_size=max_file_size,
            populate_meta_fields=self.populate_meta_fields,
            preserve_meta=preserve_meta,
            overwrite=overwrite,
        )

    def __getstate__(self):
        state = dict(self.__dict__)
        for cached in ("storage", "data_schema", "full_schema", "log_schema_json", "virtual_key_generator"):
            state.pop(cached, None)
        return state


@dataclass
class TaskInfo:
    """Where in the engine a handle runs: names files and sequence numbers."""

    partition_id: int = 0
    stage_id: int = 0
    attempt_id: int = 0

    @property
    def write_token(self) -> str:
        return f"{self.partition_id}-{self.stage_id}-{self.attempt_id}"


def ensure_partition_metadata(ctx: WriteContext, partition_path: str, task: TaskInfo) -> None:
    """Write ``.hoodie_partition_metadata`` once per partition (temp file, then rename; one put on an object store)."""
    storage = ctx.storage
    target = posixpath.join(partition_path, PARTITION_METAFILE) if partition_path else PARTITION_METAFILE
    if storage.exists(target):
        return
    text = partition_metafile_text(ctx.instant_time, partition_depth(partition_path)).encode("utf-8")
    if storage.is_object_store:  # one put writes the object whole; a rename would be copy + delete
        storage.write(target, text)
        return
    temp = f"{target}_{task.partition_id}"
    storage.write(temp, text)
    try:
        if not storage.exists(target):
            storage.rename(temp, target)
    finally:
        storage.delete(temp)


def _runtime(start: float, key: str) -> RuntimeStats:
    """Hudi's runtime stats with the time spent in ``key`` (``total_create_time`` / ``total_upsert_time``)."""
    stats = RuntimeStats()
    setattr(stats, key, int((time.perf_counter() - start) * 1000))
    return stats


def _keys(table: pa.Table) -> pa.Array:
    column = table.column(RECORD_KEY)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def record_keys_of(ctx: WriteContext, table: pa.Table) -> pa.Array:
    """Record keys of rows: the meta column, or (virtual keys) the key generator's."""
    if RECORD_KEY in table.column_names:
        return _keys(table)
    generator = ctx.virtual_key_generator
    if generator is None:
        raise WriteError("records carry no _hoodie_record_key and the table's key generator is unknown")
    return generator.record_keys(table).cast(pa.string())


def _delete_flags(table: pa.Table) -> list[bool]:
    if DELETE_FLAG not in table.column_names:
        return [False] * table.num_rows
    return [bool(v) for v in pc.fill_null(table.column(DELETE_FLAG), False).to_pylist()]


def _ordering_column(ctx: WriteContext, table: pa.Table) -> pa.Array | None:
    """A table's ordering column in the writer schema's type (as Hudi's Avro records hold it)."""
    name = ctx.ordering_field
    if not name or name not in table.column_names or name not in ctx.data_schema.names:
        return None
    column = table.column(name)
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return column.cast(ctx.data_schema.field(name).type)


def _ordering_class(ctx: WriteContext) -> JavaClass | None:
    name = ctx.ordering_field
    if not name or name not in ctx.data_schema.names:
        return None
    return column_class(ctx.data_schema.field(name).type)


def _incoming_entries(ctx: WriteContext, incoming: pa.Table) -> list[LogEntry]:
    keys = _keys(incoming).to_pylist()
    deletes = _delete_flags(incoming)
    orderings = ordering_values(_ordering_column(ctx, incoming), len(keys), ctx.ordering_field or "")
    entries = []
    for row, (key, is_delete, ordering) in enumerate(zip(keys, deletes, orderings)):
        if is_delete and DELETE_FLAG in incoming.column_names and _is_hard_delete(incoming, row):
            ordering = NATURAL
        entries.append(LogEntry(key, is_delete, ordering, row))
    return entries


def _is_hard_delete(incoming: pa.Table, row: int) -> bool:
    """Deletes of the ``delete`` operation carry no ordering value (they always win)."""
    if HARD_DELETE_FLAG not in incoming.column_names:
        return False
    return bool(incoming.column(HARD_DELETE_FLAG)[row].as_py())


def _with_meta(ctx: WriteContext, table: pa.Table, file_name: str, partition_path: str) -> pa.Table:
    """Records with their meta columns filled as Hudi writes them for new rows."""
    data = align_to_schema(table, ctx.data_schema, "incoming records")
    if not ctx.populate_meta_fields:
        return data
    n = table.num_rows
    keys = _keys(table)
    columns = {
        COMMIT_TIME: pa.array([ctx.instant_time] * n, pa.string()),
        COMMIT_SEQNO: pa.nulls(n, pa.string()),
        RECORD_KEY: keys.cast(pa.string()),
        PARTITION_PATH: pa.array([partition_path] * n, pa.string()),
        FILE_NAME: pa.array([file_name] * n, pa.string()),
    }
    arrays = [columns[name] for name in META_FIELDS] + list(data.columns)
    return pa.Table.from_arrays(arrays, schema=ctx.full_schema)


# -- create handle -----------------------------------------------------------------------


def create_files(
    ctx: WriteContext,
    partition_path: str,
    records: pa.Table,
    task: TaskInfo,
    file_id: str | None = None,
    operation_io: IOType = IOType.CREATE,
    preserve_meta: bool = False,
    indexed: list[WrittenFileIndex] | None = None,
) -> list[WriteStat]:
    """Write inserts into new file groups; one write stat per file.

    ``preserve_meta`` keeps the records' commit time and sequence number
    (clustering rewrites files without changing when records were written).
    ``indexed``: gets each file's :class:`WrittenFileIndex` (every key written is new there).
    """
    stats = []
    if records.num_rows == 0:
        return stats
    ensure_partition_metadata(ctx, partition_path, task)
    remaining = records.drop_columns([c for c in (DELETE_FLAG, HARD_DELETE_FLAG) if c in records.column_names])
    next_index = 0
    while remaining.num_rows:
        start = time.perf_counter()
        fid = file_id if (file_id and not stats) else new_file_id(next_index)
        next_index += 1
        name = base_file_name(fid, task.write_token, ctx.instant_time)
        rel = posixpath.join(partition_path, name) if partition_path else name
        create_marker(ctx.storage, ctx.instant_time, partition_path, name, operation_io)
        result = ctx.write_base(
            rel,
            remaining,
            file_id=fid,
            partition_path=partition_path,
            record_keys=record_keys_of(ctx, remaining),
            task=task,
            # a given file id is a bucket (bucket index): one file group, no rollover
            max_file_size=0 if file_id else None,
            preserve_meta=preserve_meta,
        )
        faults.reach(faults.DATA_FILE_WRITTEN)
        stat = result.to_write_stat(prev_commit="null", num_inserts=result.num_writes)
        stat.runtime_stats = _runtime(start, "total_create_time")
        stats.append(stat)
        if indexed is not None:
            keys = record_keys_of(ctx, remaining).slice(0, result.rows_consumed) if ctx.record_index else None
            indexed.append(base_file_index(ctx, result, inserted=keys, deleted=None))
        if result.rows_consumed <= 0:
            raise WriteError(f"cannot write a single record within hoodie.parquet.max.file.size={ctx.files.parquet.max_file_size}")
        remaining = remaining.slice(result.rows_consumed)
    return stats


# -- merge handle (copy-on-write update) ---------------------------------------------------


def _read_base(ctx: WriteContext, rel_path: str) -> pa.Table:
    with ctx.storage.open(rel_path) as handle:
        table = pq.read_table(handle)
    return align_to_schema(table, ctx.full_schema, ctx.storage.uri(rel_path))


def merge_file(
    ctx: WriteContext,
    partition_path: str,
    file_id: str,
    base_rel_path: str,
    base_instant: str,
    incoming: pa.Table,
    task: TaskInfo,
    indexed: list[WrittenFileIndex] | None = None,
) -> list[WriteStat]:
    """Rewrite a file group's base file with incoming updates, deletes and inserts
    (``indexed``: gets the file's :class:`WrittenFileIndex`)."""
    start = time.perf_counter()
    ensure_partition_metadata(ctx, partition_path, task)
    old = _read_base(ctx, base_rel_path)
    entries = _incoming_entries(ctx, incoming)
    # duplicates of a key (no precombine): the last one, as Hudi's keyToNewRecords map keeps it
    states = fold_log_records(entries, MergeMode.COMMIT_TIME_ORDERING, _ordering_class(ctx))
    old_keys = record_keys_of(ctx, old)
    outcome = merge_with_base(
        old_keys, _ordering_column(ctx, old), states, ctx.merge_mode, ctx.soft_deletes_ordered, ctx.ordering_field or ""
    )
    dropped = set(outcome.dropped_base_rows)
    if dropped:
        mask = np.ones(old.num_rows, dtype=bool)
        mask[np.fromiter(dropped, dtype=np.int64, count=len(dropped))] = False
        kept = old.filter(pa.array(mask))
    else:
        kept = old
    new_rows = incoming.take(pa.array(outcome.winning_log_rows, pa.int64())) if outcome.winning_log_rows else None
    name = base_file_name(file_id, task.write_token, ctx.instant_time)
    rel = posixpath.join(partition_path, name) if partition_path else name
    parts = [kept]
    preserve = [True] * kept.num_rows
    if new_rows is not None and new_rows.num_rows:
        parts.append(_with_meta(ctx, new_rows, name, partition_path))
        preserve += [False] * new_rows.num_rows
    merged = pa.concat_tables([p.select(ctx.full_schema.names) for p in parts]) if len(parts) > 1 else kept
    create_marker(ctx.storage, ctx.instant_time, partition_path, name, IOType.MERGE)
    result = ctx.write_base(
        rel,
        merged,
        file_id=file_id,
        partition_path=partition_path,
        record_keys=record_keys_of(ctx, merged),
        task=task,
        max_file_size=1 << 62,
        preserve_meta=pa.array(preserve, pa.bool_()),
    )
    faults.reach(faults.DATA_FILE_WRITTEN)
    winners = pa.array(outcome.winning_log_rows, pa.int64())
    new_keys = _keys(incoming).take(winners) if len(winners) else pa.array([], pa.string())
    updates = 0
    if len(new_keys):
        updates = int(pc.sum(pc.is_in(new_keys.cast(pa.string()), value_set=old_keys.cast(pa.string()))).as_py() or 0)
    deletes = len(dropped) - updates
    if indexed is not None:
        indexed.append(_merged_file_index(ctx, result, old_keys, sorted(dropped), new_keys))
    stat = result.to_write_stat(
        prev_commit=base_instant,
        num_inserts=len(new_keys) - updates,
        num_update_writes=updates,
        num_deletes=max(deletes, 0),
    )
    stat.runtime_stats = _runtime(start, "total_upsert_time")
    return [stat]


# -- append handle (merge-on-read update) -----------------------------------------------------


def _maps_as_dicts(value: Any, dtype: pa.DataType) -> Any:
    """Arrow's Python value of type ``dtype`` with every map (lists of pairs,
    empty ones included) as a dict, as fastavro wants them."""
    if value is None:
        return None
    if pa.types.is_map(dtype):
        item_type = dtype.item_type
        return {k: _maps_as_dicts(v, item_type) for k, v in value}
    if pa.types.is_struct(dtype):
        return {
            dtype.field(i).name: _maps_as_dicts(value.get(dtype.field(i).name), dtype.field(i).type)
            for i in range(dtype.num_fields)
        }
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        return [_maps_as_dicts(v, dtype.value_type) for v in value]
    return value


def _avro_rows(table: pa.Table) -> list[dict[str, Any]]:
    map_columns = {f.name: f.type for f in table.schema if _has_map(f.type)}
    rows = table.to_pylist()
    if map_columns:
        for row in rows:
            for name, dtype in map_columns.items():
                row[name] = _maps_as_dicts(row[name], dtype)
    return rows


def _has_map(dtype: pa.DataType) -> bool:
    if pa.types.is_map(dtype):
        return True
    if pa.types.is_struct(dtype):
        return any(_has_map(dtype.field(i).type) for i in range(dtype.num_fields))
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _has_map(dtype.value_type)
    return False


def next_log_version(storage: Storage, partition_path: str, file_id: str, base_instant: str) -> int:
    """Version of a new log file of a slice: one past the highest existing (no appends)."""
    highest = 0
    for info in storage.list(partition_path):
        log = parse_log_file(partition_path, info.name)
        if log is not None and log.file_id == file_id and log.instant_time == base_instant:
            highest = max(highest, log.version)
    return highest + 1


def append_log(
    ctx: WriteContext,
    partition_path: str,
    file_id: str,
    base_instant: str,
    base_file: str | None,
    incoming: pa.Table,
    task: TaskInfo,
    indexed: list[WrittenFileIndex] | None = None,
) -> list[WriteStat]:
    """Append incoming updates (data block) and deletes (delete block) as a new log file.

    ``indexed``: gets the file's :class:`WrittenFileIndex`. The records an append handle gets
    were located in its file group (inserts go to new or small base files): its data block
    moves in only keys the record index does not place here (a key a log deleted, found
    again in the base file), its delete block drops keys."""
    start = time.perf_counter()
    ensure_partition_metadata(ctx, partition_path, task)
    entries = _incoming_entries(ctx, incoming)
    # duplicates of a key (no precombine) fold as a reader folds them from one log block
    states = fold_log_records(entries, ctx.merge_mode, _ordering_class(ctx))
    data_rows = sorted(s.row for s in states.values() if not s.is_delete and s.row is not None)
    ordering_column = _ordering_column(ctx, incoming)
    deletes = [
        DeleteRecord(key, partition_path, *_delete_ordering(incoming, s.row, ordering_column))
        for key, s in states.items()
        if s.is_delete
    ]
    blocks = []
    header = {HeaderKey.INSTANT_TIME: ctx.instant_time, HeaderKey.SCHEMA: ctx.log_schema_json}
    records = None
    if data_rows:
        records = _with_meta(ctx, incoming.take(pa.array(data_rows, pa.int64())), file_id, partition_path)
        if ctx.populate_meta_fields:
            seqnos = [f"{ctx.instant_time}_{task.partition_id}_{i}" for i in range(records.num_rows)]
            records = records.set_column(records.schema.get_field_index(COMMIT_SEQNO), COMMIT_SEQNO, pa.array(seqnos, pa.string()))
        else:  # virtual keys: the block schema keeps the meta fields, left empty as in base files
            n = records.num_rows
            records = pa.Table.from_arrays(
                [pa.nulls(n, pa.string()) for _ in META_FIELDS] + list(records.columns),
                names=list(META_FIELDS) + records.column_names,
            )
        if ctx.files.log.block_format == "parquet":
            content = encode_parquet_records(records, ctx.log_schema_json, ctx.files.parquet.compression)
            blocks.append(encode_block(BlockType.PARQUET_DATA_BLOCK, dict(header), content))
        else:
            content = encode_avro_records(_avro_rows(records), ctx.log_schema_json)
            blocks.append(encode_block(BlockType.AVRO_DATA_BLOCK, dict(header), content))
    if deletes:
        content = encode_delete_records(deletes)
        blocks.append(encode_block(BlockType.DELETE_BLOCK, dict(header), content))
    if not blocks:
        return []
    version = next_log_version(ctx.storage, partition_path, file_id, base_instant)
    name = log_file_name(file_id, base_instant, version, task.write_token)
    rel = posixpath.join(partition_path, name) if partition_path else name
    create_marker(ctx.storage, ctx.instant_time, partition_path, name, IOType.APPEND)
    payload = b"".join(blocks)
    ctx.storage.write(rel, payload)
    faults.reach(faults.DATA_FILE_WRITTEN)
    log_files = sorted(
        info.name
        for info in ctx.storage.list(partition_path)
        if (lf := parse_log_file(partition_path, info.name)) is not None
        and lf.file_id == file_id
        and lf.instant_time == base_instant
    )
    stat = WriteStat.for_log(
        file_id=file_id,
        path=rel,
        prev_commit=base_instant,
        num_writes=len(data_rows) + len(deletes),
        num_deletes=len(deletes),
        num_update_writes=len(data_rows),
        num_inserts=0,
        total_write_bytes=len(payload),
        partition_path=partition_path,
        file_size_in_bytes=len(payload),
        runtime_stats=_runtime(start, "total_upsert_time"),
        log_version=version,
        log_offset=0,
        base_file=base_file or "",
        log_files=log_files,
    )
    if indexed is not None:
        inserted = deleted = None
        if ctx.record_index:
            deleted = pa.array([d.record_key for d in deletes], pa.string())
            inserted = _moved_in(ctx, partition_path, file_id, records)
        indexed.append(_log_file_index(ctx, partition_path, file_id, name, records, inserted, deleted))
    return [stat]


# -- what handles report for the metadata table's indexes --------------------------------------


def base_file_index(
    ctx: WriteContext,
    result: base_files.BaseFileWriteResult,
    inserted: pa.Array | None = None,
    deleted: pa.Array | None = None,
) -> WrittenFileIndex:
    """What a new base file changes in the index partitions: its footer's ``column_stats``
    records (when the context keeps them), the keys it took in and dropped."""
    columns = ctx.column_stats_columns
    stats = None
    if columns is not None:
        stats = footer_column_stats(result.partition_path, result.file_name, result.parquet_metadata, columns)
    return WrittenFileIndex(
        result.partition_path, result.file_id, result.file_name, stats,
        inserted_keys=inserted.cast(pa.string()) if inserted is not None else None,
        deleted_keys=deleted,
    )


def _merged_file_index(
    ctx: WriteContext, result: base_files.BaseFileWriteResult, old_keys: pa.Array, dropped_rows: list[int], new_keys: pa.Array
) -> WrittenFileIndex:
    """A merge keeps the keys it kept where they are: keys new to the file group are
    inserted, keys of the old base file that are gone are deleted."""
    if not ctx.record_index:
        return base_file_index(ctx, result, None, None)
    old = old_keys.cast(pa.string())
    new = new_keys.cast(pa.string())
    inserted = new.filter(pc.invert(pc.is_in(new, value_set=old))) if len(new) else new
    gone = old.take(pa.array(dropped_rows, pa.int64())) if dropped_rows else pa.array([], pa.string())
    deleted = gone.filter(pc.invert(pc.is_in(gone, value_set=new))) if len(gone) and len(new) else gone
    return base_file_index(ctx, result, inserted, deleted)


def _moved_in(ctx: WriteContext, partition_path: str, file_id: str, records: pa.Table | None) -> pa.Array:
    """Keys of a log data block the record index does not place in this file group."""
    if records is None or not records.num_rows or ctx.located_by_record_index:
        return pa.array([], pa.string())
    from ..metadata.files_reader import MetadataTable
    from ..metadata.indexes import lookup_record_index

    keys = record_keys_of(ctx, records).cast(pa.string()).to_pylist()
    known = lookup_record_index(MetadataTable(ctx.storage), keys)
    moved = [
        k for k in keys
        if (where := known.get(k)) is None or where.file_id != file_id or where.partition_path != partition_path
    ]
    return pa.array(moved, pa.string())


def _log_file_index(
    ctx: WriteContext,
    partition_path: str,
    file_id: str,
    name: str,
    records: pa.Table | None,
    inserted: pa.Array | None,
    deleted: pa.Array | None,
) -> WrittenFileIndex:
    stats = None
    if ctx.column_stats_columns is not None:
        if records is not None:  # as a reader decodes the block: in the block schema's types
            target = avro_to_arrow(ctx.log_schema_json)
            if records.schema != target:
                records = records.cast(target)
        stats = log_file_column_stats(partition_path, name, records, list(ctx.column_stats_columns))
    return WrittenFileIndex(partition_path, file_id, name, stats, inserted_keys=inserted, deleted_keys=deleted)


def _delete_ordering(incoming: pa.Table, row: int | None, column: pa.Array | None) -> tuple[Any, str | None]:
    """Ordering value (and its wrapper) a delete block entry carries: the record's own
    for soft deletes (``column``: the ordering column in the writer schema's type, as
    Hudi's payload holds it), none for the ``delete`` operation."""
    from ..file_group.log_blocks import wrapper_for_type

    if row is None or column is None or _is_hard_delete(incoming, row):
        return None, None
    value = column[row].as_py()
    wrapper = wrapper_for_type(column.type)
    if value is None or wrapper is None:
        return None, None
    return value, wrapper
