"""Merging one file slice's logs with DuckDB: the core's merge rule as SQL, run on columns.

The log records of a slice are decoded to Arrow (``reader.scan_log_columns``)
and the fold (each key's latest record, deletes, base rows replaced) runs as
one DuckDB query rendered by ``core.merge.sql``: DuckDB sorts and joins in
parallel and spills. Python only plans; no record key becomes a Python object.
Slices the rendering cannot express (binary ordering columns) take the
core's own merge.
"""

from __future__ import annotations

import threading
from typing import Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import UnsupportedFeatureError
from ..core.file_group import reader as core_reader
from ..core.file_group.file_slice import FileSlice
from ..core.file_group.reader import (
    ENTRY_DELETE,
    ENTRY_KEY,
    ENTRY_NATURAL_DELETE,
    ENTRY_NEVER_COMPARED,
    ENTRY_ORDERING,
    ENTRY_ROW,
    ENTRY_SEQ,
    SliceLogMerge,
    SliceReadContext,
    read_base_keys,
    scan_log_columns,
)
from ..core.merge.ordering import EngineOrdering, engine_column, engine_ordering
from ..core.merge.sql import base_survives_sql, latest_log_records_sql, log_ranks_sql

_local = threading.local()
_connection_lock = threading.Lock()
_connection: duckdb.DuckDBPyConnection | None = None


def _cursor() -> duckdb.DuckDBPyConnection:
    """A DuckDB cursor of this thread (one private in-memory database per process)."""
    global _connection
    cursor = getattr(_local, "cursor", None)
    if cursor is None:
        with _connection_lock:
            if _connection is None:
                _connection = duckdb.connect()
            cursor = _local.cursor = _connection.cursor()
    return cursor


def _spec(ctx: SliceReadContext) -> EngineOrdering | None:
    name = ctx.merge.ordering_field
    if not name or name not in ctx.schema.names:
        return None
    return engine_ordering(name, ctx.schema.field(name).type)


SLICE = "_hd_slice"


def merge_sql(ctx: SliceReadContext, spec: EngineOrdering | None) -> str:
    """The merge of slices over relations ``entries`` (log records, ``SLICE`` numbering their slice)
    and ``base`` (slice, key, ordering, row of base records): one row per winning log record, with
    the base row it meets and whether that base row survives."""
    key = f"{SLICE}, {ENTRY_KEY}"
    ranks = log_ranks_sql(
        "entries",
        ctx.merge.mode,
        key=key,
        seq=ENTRY_SEQ,
        is_delete=ENTRY_DELETE,
        never_compared=ENTRY_NEVER_COMPARED,
        natural_delete=ENTRY_NATURAL_DELETE,
    )
    winners = latest_log_records_sql(
        f"({ranks})",
        key=key,
        seq=ENTRY_SEQ,
        ignored="_hd_ignored",
        reset="_hd_reset",
        ordering=ENTRY_ORDERING if spec is not None else None,
        spec=spec,
    )
    survives = base_survives_sql(
        ctx.merge.mode,
        base_ordering="b.base_ordering",
        winner_ordering=f"w.{ENTRY_ORDERING}" if spec is not None else None,
        winner_reset=f"w.{ENTRY_NEVER_COMPARED}",
        winner_is_delete=f"w.{ENTRY_DELETE}",
        spec=spec,
    )
    # only the first base row of a key merges (a duplicate key in a base file keeps its other rows)
    first_base = (
        f"SELECT base_slice, base_key, base_ordering, base_row FROM base "
        f"SEMI JOIN w ON base_slice = w.{SLICE} AND base_key = w.{ENTRY_KEY} "
        "QUALIFY row_number() OVER (PARTITION BY base_slice, base_key ORDER BY base_row) = 1"
    )
    return (
        f"WITH w AS ({winners}), b AS ({first_base}) "
        f"SELECT w.{SLICE} AS slice, w.{ENTRY_ROW} AS log_row, w.{ENTRY_DELETE} AS is_delete, b.base_row, "
        f"(b.base_row IS NOT NULL AND {survives}) AS survives "
        f"FROM w LEFT JOIN b ON b.base_slice = w.{SLICE} AND b.base_key = w.{ENTRY_KEY}"
    )


def _base_relation(ctx: SliceReadContext, slice_: FileSlice, index: int, ordering_type: pa.DataType) -> pa.Table:
    keys, order = read_base_keys(ctx, slice_)
    if keys is None:
        keys = pa.array([], pa.string())
    n = len(keys)
    ordering = engine_column(order).cast(ordering_type) if order is not None else pa.nulls(n, ordering_type)
    return pa.table(
        {
            "base_slice": pa.array(np.full(n, index, dtype=np.int32)),
            "base_key": keys.cast(pa.string()),
            "base_ordering": ordering,
            "base_row": pa.array(np.arange(n, dtype=np.int64)),
        }
    )


def _sorted_rows(rows: pa.ChunkedArray, where: pa.ChunkedArray) -> np.ndarray:
    """The non-null row numbers where ``where`` holds, ascending."""
    chosen = pc.drop_null(pc.filter(rows, where))
    return np.sort(chosen.to_numpy().astype(np.int64, copy=False))


def merge_slice_logs(ctx: SliceReadContext, slice_: FileSlice) -> SliceLogMerge:
    """Decide the rows of a slice with logs (base rows to drop, log rows to add) in DuckDB."""
    return merge_slices(ctx, [slice_])[0]


def merge_slices(ctx: SliceReadContext, slices: Sequence[FileSlice]) -> list[SliceLogMerge]:
    """Merge several slices' logs in one DuckDB query (each slice folds on its own)."""
    try:
        spec = _spec(ctx)
    except UnsupportedFeatureError:
        return [core_reader.merge_slice_logs(ctx, s) for s in slices]
    scanned = [scan_log_columns(ctx, s) for s in slices]
    merged = [SliceLogMerge(ctx.schema.empty_table(), [], c.stats, c.skipped) for c in scanned]
    active = [i for i, c in enumerate(scanned) if c.entries.num_rows]
    if not active:
        return merged
    for i in active:
        ctx.merge.require_supported(ctx.storage.uri(slices[i].log_files[0].path))
    entries = pa.concat_tables(
        [scanned[i].entries.append_column(SLICE, pa.array(np.full(scanned[i].entries.num_rows, i, np.int32))) for i in active]
    )
    ordering_type = entries.schema.field(ENTRY_ORDERING).type
    base = pa.concat_tables([_base_relation(ctx, slices[i], i, ordering_type) for i in active])
    cursor = _cursor()
    try:
        cursor.register("entries", entries)
        cursor.register("base", base)
        outcome = cursor.sql(merge_sql(ctx, spec)).to_arrow_table()
    finally:
        cursor.unregister("entries")
        cursor.unregister("base")
    for i in active:
        mine = outcome.filter(pc.equal(outcome.column("slice"), i))
        survives = mine.column("survives")
        dropped = _sorted_rows(mine.column("base_row"), pc.invert(survives))
        winners = _sorted_rows(mine.column("log_row"), pc.and_not(pc.invert(mine.column("is_delete")), survives))
        log_table = scanned[i].log_table
        log_rows = log_table.take(pa.array(winners)) if len(winners) else ctx.schema.empty_table()
        stats = merged[i].stats
        stats["dropped_base_rows"] = len(dropped)
        stats["log_rows"] = log_rows.num_rows
        merged[i] = SliceLogMerge(log_rows, dropped.tolist(), stats, merged[i].skipped_blocks)
    return merged
