"""Reading one file slice: base file rows merged with its log records.

``merge_slice_logs`` does the work every reader needs for a slice with logs:
scan and decode the log blocks, fold the log records, and decide against the
base file which base rows disappear and which log rows appear. Readers that
scan base files themselves (DuckDB) apply that decision; ``read_slice``
applies it in Arrow for the Python API and for compaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..config.read_settings import MergeMemory
from ..config.table_config import PROPERTIES_FILE
from ..errors import CorruptFileError
from ..merge.fold import LogEntry, fold_log_records, merge_with_base
from ..merge.mode import MergeConfig
from ..merge.ordering import (
    JavaClass,
    column_class,
    delete_ordering,
    delete_values_column,
    engine_column,
    engine_ordering_type,
    ordering_values,
)
from ..schema.evolution import align_to_schema
from ..schema.meta_fields import IS_DELETED, OPERATION, RECORD_KEY
from ..storage.storage import Storage
from ..schema.empty import empty_table
from .file_slice import FileSlice
from .log_blocks import TinyBlockBatches, decode_data_block, decode_delete_block, iter_data_block_sized
from .log_format import BlockType
from .log_scanner import ScanResult, SkippedBlock, report_skipped_blocks, scan_slice_logs

if TYPE_CHECKING:
    from ..keygen.generators import KeyGenerator
    from ..table.fs_view import CommittedInstants

KeyExtractor = Callable[[pa.Table], pa.Array]

_DELETE_OPERATIONS = ("D", "-U")


@dataclass
class SliceReadContext:
    """What reading the slices of one read plan needs: its data, with the storage opened.

    Built from plain data (a read plan, or a table and the instants a table
    service reads), never from callables.
    """

    storage: Storage
    schema: pa.Schema  # output schema (meta columns first when the table has them)
    merge: MergeConfig
    #: which log block instants count; None: none do
    instants: "CommittedInstants | None"
    #: builds record keys of tables without stored keys (None: keys are in ``_hoodie_record_key``)
    key_generator: "KeyGenerator | None" = None
    #: the memory budget of a merge and its spill folder (the read's ``merge_memory``)
    memory: MergeMemory = MergeMemory()

    @classmethod
    def for_plan(cls, plan: Any) -> "SliceReadContext":
        """The context to read a ``ReadPlan``'s slices (storage opened, key generator built)."""
        key_generator = plan.key_generator.build() if plan.key_generator is not None else None
        return cls(plan.location.open(), plan.schema, plan.merge, plan.instants, key_generator, plan.options.merge_memory)

    @classmethod
    def for_table(cls, table: Any, instants: "CommittedInstants | None") -> "SliceReadContext":
        """The context to read a table's slices; virtual-key tables get their key generator."""
        key_generator = None if table.has_meta_fields else table.key_generator
        return cls(table.storage, table.schema, table.merge_config, instants, key_generator)

    def admit(self, instant: str) -> bool:
        """Whether log blocks of ``instant`` are read."""
        return self.instants is not None and self.instants.admits(instant)

    @property
    def key_of(self) -> KeyExtractor | None:
        return self.key_generator.record_keys if self.key_generator is not None else None

    def keys(self, table: pa.Table) -> pa.Array:
        if self.key_generator is not None:
            return self.key_generator.record_keys(table)
        return table.column(RECORD_KEY)


@dataclass
class SliceLogMerge:
    """The outcome of merging a slice's logs with its base file."""

    #: winning log records, in the output schema (an engine that spilled may give an object with
    #: the same ``schema``, ``num_rows`` and ``to_batches`` that reads them from its spill files)
    log_rows: pa.Table
    dropped_base_rows: list[int]  # physical row numbers of base rows that disappear
    stats: dict[str, int] = field(default_factory=dict)
    #: corrupt blocks skipped although a read instant's records may be in them
    skipped_blocks: list[SkippedBlock] = field(default_factory=list)


def _ordering_class(ctx: SliceReadContext) -> JavaClass | None:
    """Java class of the records' ordering values (the reader schema's ordering column)."""
    name = ctx.merge.ordering_field
    if not name or name not in ctx.schema.names:
        return None
    return column_class(ctx.schema.field(name).type)


def _data_entries(raw: pa.Table, aligned: pa.Table, ctx: SliceReadContext, first_row: int) -> list[LogEntry]:
    keys = ctx.keys(aligned).to_pylist()
    field_name = ctx.merge.ordering_field
    column = raw.column(field_name) if field_name and field_name in raw.column_names else None
    orderings = ordering_values(column, len(keys), field_name or "")
    deletes = [False] * len(keys)
    if IS_DELETED in ctx.schema.names and IS_DELETED in aligned.column_names:
        flags = aligned.column(IS_DELETED)
        if pa.types.is_boolean(flags.type):
            deletes = [bool(v) for v in pc.fill_null(flags, False).to_pylist()]
    if OPERATION in ctx.schema.names and OPERATION in aligned.column_names:
        ops = aligned.column(OPERATION).to_pylist()
        deletes = [d or (op in _DELETE_OPERATIONS) for d, op in zip(deletes, ops)]
    return [
        LogEntry(key, is_del, order, first_row + i)
        for i, (key, is_del, order) in enumerate(zip(keys, deletes, orderings))
        if key is not None
    ]


def scan_log_records(
    ctx: SliceReadContext, slice_: FileSlice
) -> tuple[pa.Table, list[LogEntry], dict[str, int], list[SkippedBlock]]:
    """All admitted log records of a slice (output schema), their entries in scan order,
    and the corrupt blocks the scan skipped."""
    scan = scan_slice_logs(ctx.storage, slice_.log_files, ctx.admit)
    tables: list[pa.Table] = []
    entries: list[LogEntry] = []
    rows = 0
    for block in scan.blocks:
        if block.block_type is BlockType.DELETE_BLOCK:
            for record in decode_delete_block(block):
                ordering = delete_ordering(record.ordering_value, record.ordering_wrapper, ctx.merge.table_version)
                entries.append(LogEntry(record.record_key, True, ordering, None))
            continue
        aligned = decode_data_block(block, ctx.schema)
        if aligned.num_rows == 0:
            continue
        raw = _raw_block_table(block, aligned)
        entries.extend(_data_entries(raw, aligned, ctx, rows))
        tables.append(aligned)
        rows += aligned.num_rows
    log_table = pa.concat_tables(tables) if tables else empty_table(ctx.schema)
    stats = {
        "log_blocks": scan.total_blocks,
        "corrupt_blocks": scan.corrupt_blocks,
        "rollback_blocks": scan.rollback_blocks,
        "log_records": len(entries),
    }
    return log_table, entries, stats, scan.skipped


#: Columns of the log entries table (``scan_log_columns``): one row per log record in scan order.
ENTRY_KEY, ENTRY_SEQ, ENTRY_ROW = "_hd_key", "_hd_seq", "_hd_row"
ENTRY_DELETE, ENTRY_NEVER_COMPARED, ENTRY_NATURAL_DELETE, ENTRY_ORDERING = (
    "_hd_is_delete",
    "_hd_never_compared",
    "_hd_natural_delete",
    "_hd_ordering",
)


@dataclass
class LogColumns:
    """A slice's admitted log records as columns: what an engine folds (``merge.sql``).

    ``entries`` has one row per log record in scan order (``ENTRY_*`` columns):
    its key, position, row in ``log_table`` (null for deletes), whether it is a
    delete, whether its ordering value is never compared (``fold``'s resets
    other than commit-time ordering), whether it is a delete in natural order,
    and its ordering value in the engine's form (``ordering.engine_column``)."""

    log_table: pa.Table
    entries: pa.Table
    stats: dict[str, int]
    skipped: list[SkippedBlock]


def _entry_schema(ordering_type: pa.DataType) -> pa.Schema:
    return pa.schema(
        [
            (ENTRY_KEY, pa.string()),
            (ENTRY_SEQ, pa.int64()),
            (ENTRY_ROW, pa.int64()),
            (ENTRY_DELETE, pa.bool_()),
            (ENTRY_NEVER_COMPARED, pa.bool_()),
            (ENTRY_NATURAL_DELETE, pa.bool_()),
            (ENTRY_ORDERING, ordering_type),
        ]
    )


@dataclass
class LogPiece:
    """One log block's records, or a run of a large block's records, as an engine folds them.

    A data piece holds its rows (output schema) and leaves its entries to ``data_entries``, which
    computes them for many pieces at once (a merge of many tiny slices pays per batch of pieces,
    not per block); a delete piece holds its entries. ``first_row`` and ``first_seq`` number its
    records within its slice (row in the slice's log rows, position in the slice's scan)."""

    rows: pa.Table | None
    entries: pa.Table | None
    first_row: int
    first_seq: int
    #: whether the block's writer schema has the ordering field (else its records have none)
    carries_ordering: bool
    #: what the piece's rows hold in memory (estimated for a block decoded in a batch)
    nbytes: int

    @property
    def num_records(self) -> int:
        return self.rows.num_rows if self.rows is not None else (self.entries.num_rows if self.entries is not None else 0)


def _carries_ordering(ctx: SliceReadContext, block_columns: Sequence[str], columns: Sequence[str]) -> bool:
    """Whether a block's records have ordering values: its writer schema and the output have the field."""
    field_name = ctx.merge.ordering_field
    return bool(field_name) and field_name in block_columns and field_name in columns


def data_entries(ctx: SliceReadContext, pieces: Sequence[LogPiece], schema: pa.Schema) -> tuple[pa.Table, np.ndarray]:
    """Entries of the records of data ``pieces`` (in piece order), computed on columns in one pass,
    and for each entry the index of its piece. Records without a key have no entry."""
    counts = np.fromiter((p.rows.num_rows for p in pieces), np.int64, len(pieces))  # type: ignore[union-attr]
    aligned = pieces[0].rows if len(pieces) == 1 else pa.concat_tables([p.rows for p in pieces])  # type: ignore[misc]
    assert aligned is not None
    n = int(counts.sum())
    keys = ctx.keys(aligned)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    deletes = pa.array(np.zeros(n, dtype=bool))
    if IS_DELETED in ctx.schema.names and IS_DELETED in aligned.column_names:
        flags = aligned.column(IS_DELETED)
        if pa.types.is_boolean(flags.type):
            deletes = pc.or_(deletes, pc.fill_null(flags, False).combine_chunks())
    if OPERATION in ctx.schema.names and OPERATION in aligned.column_names:
        is_op = pc.fill_null(pc.is_in(aligned.column(OPERATION), value_set=pa.array(_DELETE_OPERATIONS)), False)
        deletes = pc.or_(deletes, is_op.combine_chunks() if isinstance(is_op, pa.ChunkedArray) else is_op)
    ordering_type = schema.field(ENTRY_ORDERING).type
    carries = np.fromiter((p.carries_ordering for p in pieces), bool, len(pieces))
    field_name = ctx.merge.ordering_field
    if carries.any():
        ordering = engine_column(aligned.column(field_name)).cast(ordering_type)
        if isinstance(ordering, pa.ChunkedArray):
            ordering = ordering.combine_chunks()
        never_np = ~np.repeat(carries, counts)
        if never_np.any():  # no ordering value: natural order for every record of such a block
            ordering = pc.if_else(pa.array(never_np), pa.nulls(n, ordering_type), ordering)
    else:
        ordering = pa.nulls(n, ordering_type)
        never_np = np.ones(n, dtype=bool)
    never = pa.array(never_np)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else counts
    positions = np.arange(n, dtype=np.int64)
    firsts_seq = np.fromiter((p.first_seq for p in pieces), np.int64, len(pieces))
    firsts_row = np.fromiter((p.first_row for p in pieces), np.int64, len(pieces))
    table = pa.Table.from_arrays(
        [
            keys.cast(pa.string()),
            pa.array(positions + np.repeat(firsts_seq - offsets, counts)),
            pa.array(positions + np.repeat(firsts_row - offsets, counts)),
            deletes,
            never,
            pc.and_(deletes, never),  # a delete without ordering value is in natural order
            ordering,
        ],
        schema=schema,
    )
    piece_of = np.repeat(np.arange(len(pieces), dtype=np.int32), counts)
    if keys.null_count:
        valid = pc.is_valid(table.column(ENTRY_KEY)).combine_chunks()
        return table.filter(valid), piece_of[valid.to_numpy(zero_copy_only=False)]
    return table, piece_of


def _delete_block_entries(block, ctx: SliceReadContext, first_seq: int, schema: pa.Schema) -> pa.Table:
    """Entries of a delete block: each key's ordering value in the column's form when Java compares it."""
    records = decode_delete_block(block)
    column = _ordering_class(ctx)
    ordering_type = schema.field(ENTRY_ORDERING).type
    keys, never, natural, values = [], [], [], []
    for record in records:
        ordering = delete_ordering(record.ordering_value, record.ordering_wrapper, ctx.merge.table_version)
        compared = not ordering.is_natural and ordering.java_class is column
        keys.append(record.record_key)
        natural.append(ordering.is_natural)
        never.append(not compared)
        values.append(record.ordering_value if compared else None)
    n = len(records)
    return pa.Table.from_arrays(
        [
            pa.array(keys, pa.string()),
            pa.array(np.arange(first_seq, first_seq + n, dtype=np.int64)),
            pa.nulls(n, pa.int64()),
            pa.array(np.ones(n, dtype=bool)),
            pa.array(never, pa.bool_()),
            pa.array(natural, pa.bool_()),
            delete_values_column(values, ordering_type),
        ],
        schema=schema,
    )


#: Avro data blocks larger than this share of a merge's budget are decoded a run of records at a time.
PIECE_SHARE = 32


def _piece_bytes(ctx: SliceReadContext) -> int:
    return max(ctx.memory.max_size // PIECE_SHARE, 1024**2)


def tiny_block_batches(ctx: SliceReadContext, scans: Sequence[ScanResult]) -> TinyBlockBatches:
    """The small Avro data blocks of the scanned slices of one merge, to be decoded together."""
    return TinyBlockBatches((block for scan in scans for block in scan.blocks), _piece_bytes(ctx), ctx.schema)


def iter_log_pieces(ctx: SliceReadContext, scan: ScanResult, batches: TinyBlockBatches | None = None) -> Iterator[LogPiece]:
    """The admitted log records of a scanned slice, a block (or a run of a large block's records) at
    a time, numbered across the slice in scan order; data pieces get their entries from
    ``data_entries``. ``batches``: the merge's small blocks decoded together (``tiny_block_batches``)."""
    schema = entry_schema(ctx)
    piece_bytes = _piece_bytes(ctx)
    rows = seq = 0
    for block in scan.blocks:
        if block.block_type is BlockType.DELETE_BLOCK:
            part = _delete_block_entries(block, ctx, seq, schema)
            yield LogPiece(None, part, rows, seq, False, part.nbytes)
            seq += part.num_rows
            continue
        carries: bool | None = None
        for aligned, nbytes in iter_data_block_sized(block, ctx.schema, piece_bytes, batches):
            if aligned.num_rows == 0:
                continue
            if carries is None:
                carries = _carries_ordering(ctx, _block_column_names(block, aligned), aligned.column_names)
            yield LogPiece(aligned, None, rows, seq, carries, nbytes)
            rows += aligned.num_rows
            seq += aligned.num_rows


def iter_log_parts(
    ctx: SliceReadContext, scan: ScanResult, batches: TinyBlockBatches | None = None
) -> Iterator[tuple[pa.Table | None, pa.Table]]:
    """``iter_log_pieces`` with each piece's entries: its rows in the output schema (None for a
    delete block) and their entries (no Python object per record of a data block)."""
    schema = entry_schema(ctx)
    for piece in iter_log_pieces(ctx, scan, batches):
        if piece.rows is None:
            assert piece.entries is not None
            yield None, piece.entries
        else:
            yield piece.rows, data_entries(ctx, [piece], schema)[0]


def entry_schema(ctx: SliceReadContext) -> pa.Schema:
    """The schema of a slice's log entries (``ENTRY_*`` columns)."""
    return _entry_schema(engine_ordering_type(ctx.schema, ctx.merge.ordering_field))


def scan_stats(scan: ScanResult, log_records: int) -> dict[str, int]:
    """What a merge reports of its log scan."""
    return {
        "log_blocks": scan.total_blocks,
        "corrupt_blocks": scan.corrupt_blocks,
        "rollback_blocks": scan.rollback_blocks,
        "log_records": log_records,
    }


def scan_log_columns(ctx: SliceReadContext, slice_: FileSlice) -> LogColumns:
    """All admitted log records of a slice and their entries as columns (no Python object per record
    of a data block)."""
    scan = scan_slice_logs(ctx.storage, slice_.log_files, ctx.admit)
    tables: list[pa.Table] = []
    entries: list[pa.Table] = []
    for rows, part in iter_log_parts(ctx, scan, tiny_block_batches(ctx, [scan])):
        entries.append(part)
        if rows is not None:
            tables.append(rows)
    log_table = pa.concat_tables(tables) if tables else empty_table(ctx.schema)
    entry_table = pa.concat_tables(entries) if entries else empty_table(entry_schema(ctx))
    return LogColumns(log_table, entry_table, scan_stats(scan, entry_table.num_rows), scan.skipped)


def _raw_block_table(block, aligned: pa.Table) -> pa.Table:
    """Which columns the block itself carried (ordering from a missing column is 'none')."""
    names = _block_column_names(block, aligned)
    return aligned.select([n for n in aligned.column_names if n in names])


def _block_column_names(block, aligned: pa.Table) -> Sequence[str]:
    """The columns a data block's writer schema has (the output columns when it names none)."""
    from ..schema.avro_arrow import avro_field_names

    if block.block_type is BlockType.PARQUET_DATA_BLOCK:
        try:
            return pq.read_schema(pa.BufferReader(block.content)).names if block.content else []
        except Exception as exc:  # pyarrow raises many types on a damaged footer
            raise CorruptFileError(
                f"{block.file_path}@{block.offset}: cannot read the schema of the parquet data block "
                f"of instant {block.instant_time} ({type(exc).__name__}: {exc})"
            ) from exc
    if block.schema:
        return avro_field_names(block.schema)
    return aligned.column_names


def corrupt_blocks(ctx: SliceReadContext, slice_: FileSlice) -> list[SkippedBlock]:
    """The corrupt blocks a merge of the slice would skip, from the log framing alone (nothing decoded)."""
    return scan_slice_logs(ctx.storage, slice_.log_files, ctx.admit).skipped


def read_base_keys(ctx: SliceReadContext, slice_: FileSlice) -> tuple[pa.Array | None, pa.Array | None]:
    """Record keys and ordering values of a slice's base file, in physical row order."""
    if slice_.base_file is None:
        return None, None
    if ctx.storage.is_local:  # pyarrow's own file reads: a third cheaper than through a Python file object
        parquet = pq.ParquetFile(ctx.storage.abs(slice_.base_file.path))
        return _base_keys(ctx, parquet.read(columns=_base_key_columns(ctx, parquet), use_threads=False))
    with ctx.storage.open(slice_.base_file.path) as handle:
        parquet = pq.ParquetFile(handle)
        return _base_keys(ctx, parquet.read(columns=_base_key_columns(ctx, parquet)))


def iter_base_keys(ctx: SliceReadContext, slice_: FileSlice, batch_rows: int) -> Iterator[tuple[pa.Array, pa.Array | None]]:
    """``read_base_keys`` a batch of rows at a time (keys, ordering values), for merges that
    must not hold a large base file's keys at once."""
    if slice_.base_file is None:
        return
    with ctx.storage.open(slice_.base_file.path) as handle:
        parquet = pq.ParquetFile(handle)
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=_base_key_columns(ctx, parquet)):
            yield _base_keys(ctx, pa.Table.from_batches([batch]))


def _base_key_columns(ctx: SliceReadContext, parquet: pq.ParquetFile) -> list[str]:
    ordering = ctx.merge.base_ordering_field
    names = parquet.schema_arrow.names
    columns = [RECORD_KEY] if ctx.key_of is None else list(names)
    if ordering and ordering in names and ordering not in columns:
        columns.append(ordering)
    return columns


def _base_keys(ctx: SliceReadContext, table: pa.Table) -> tuple[pa.Array, pa.Array | None]:
    keys = ctx.keys(table)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    ordering = ctx.merge.base_ordering_field
    order = None
    if ordering and ordering in table.column_names and ordering in ctx.schema.names:
        # compared as the reader schema's type (an int column widened to long holds Longs)
        order = table.column(ordering).combine_chunks().cast(ctx.schema.field(ordering).type)
    return keys, order


def merge_slice_logs(ctx: SliceReadContext, slice_: FileSlice) -> SliceLogMerge:
    """Decide the rows of a slice with logs: base rows to drop, log rows to add."""
    log_table, entries, stats, skipped = scan_log_records(ctx, slice_)
    if not entries:
        return SliceLogMerge(empty_table(ctx.schema), [], stats, skipped)
    ctx.merge.require_supported(
        f"{ctx.storage.uri(slice_.log_files[0].path)} (merge settings of {ctx.storage.uri(PROPERTIES_FILE)})"
    )
    states = fold_log_records(entries, ctx.merge.mode, _ordering_class(ctx))
    base_keys, base_order = read_base_keys(ctx, slice_)
    outcome = merge_with_base(base_keys, base_order, states, ctx.merge.mode, ordering_field=ctx.merge.ordering_field or "")
    winners = log_table.take(pa.array(outcome.winning_log_rows, pa.int64())) if outcome.winning_log_rows else empty_table(ctx.schema)
    stats["dropped_base_rows"] = len(outcome.dropped_base_rows)
    stats["log_rows"] = winners.num_rows
    return SliceLogMerge(winners, outcome.dropped_base_rows, stats, skipped)


def read_base_file(ctx: SliceReadContext, slice_: FileSlice) -> pa.Table:
    if slice_.base_file is None:
        return empty_table(ctx.schema)
    with ctx.storage.open(slice_.base_file.path) as handle:
        table = pq.ParquetFile(handle).read()
    return align_to_schema(table, ctx.schema, ctx.storage.uri(slice_.base_file.path))


def read_slice_with_stats(ctx: SliceReadContext, slice_: FileSlice) -> tuple[pa.Table, dict[str, int]]:
    """All rows of a slice, merged, in the output schema, and what the merge saw."""
    base = read_base_file(ctx, slice_)
    if not slice_.log_files:
        return base, {}
    merged = merge_slice_logs(ctx, slice_)
    report_skipped_blocks(merged.skipped_blocks)
    if merged.dropped_base_rows:
        keep = pc.invert(
            pc.is_in(pa.array(range(base.num_rows), pa.int64()), pa.array(merged.dropped_base_rows, pa.int64()))
        )
        base = base.filter(keep)
    if merged.log_rows.num_rows == 0:
        return base, merged.stats
    return pa.concat_tables([base, merged.log_rows]), merged.stats


def read_slice(ctx: SliceReadContext, slice_: FileSlice) -> pa.Table:
    """All rows of a slice, merged, in the output schema."""
    return read_slice_with_stats(ctx, slice_)[0]
