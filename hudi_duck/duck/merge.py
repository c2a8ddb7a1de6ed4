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


def merge_sql(ctx: SliceReadContext, spec: EngineOrdering | None, has_base_ordering: bool) -> str:
    """The slice's merge over relations ``entries`` and ``base`` (key, ordering, row): one row per
    winning log record, with the base row it meets and whether that base row survives."""
    ranks = log_ranks_sql(
        "entries",
        ctx.merge.mode,
        key=ENTRY_KEY,
        seq=ENTRY_SEQ,
        is_delete=ENTRY_DELETE,
        never_compared=ENTRY_NEVER_COMPARED,
        natural_delete=ENTRY_NATURAL_DELETE,
    )
    winners = latest_log_records_sql(
        f"({ranks})",
        key=ENTRY_KEY,
        seq=ENTRY_SEQ,
        ignored="_hd_ignored",
        reset="_hd_reset",
        ordering=ENTRY_ORDERING if spec is not None else None,
        spec=spec,
    )
    survives = base_survives_sql(
        ctx.merge.mode,
        base_ordering="b.base_ordering" if has_base_ordering else None,
        winner_ordering=f"w.{ENTRY_ORDERING}" if spec is not None else None,
        winner_reset=f"w.{ENTRY_NEVER_COMPARED}",
        winner_is_delete=f"w.{ENTRY_DELETE}",
        spec=spec,
    )
    # only the first base row of a key merges (a duplicate key in a base file keeps its other rows)
    first_base = (
        f"SELECT base_key, base_ordering, base_row FROM base WHERE base_key IN (SELECT {ENTRY_KEY} FROM w) "
        "QUALIFY row_number() OVER (PARTITION BY base_key ORDER BY base_row) = 1"
    )
    return (
        f"WITH w AS ({winners}), b AS ({first_base}) "
        f"SELECT w.{ENTRY_ROW} AS log_row, w.{ENTRY_DELETE} AS is_delete, b.base_row, "
        f"(b.base_row IS NOT NULL AND {survives}) AS survives "
        f"FROM w LEFT JOIN b ON b.base_key = w.{ENTRY_KEY}"
    )


def _base_relation(ctx: SliceReadContext, slice_: FileSlice) -> tuple[pa.Table, bool]:
    keys, order = read_base_keys(ctx, slice_)
    if keys is None:
        keys = pa.array([], pa.string())
    ordering = engine_column(order) if order is not None else pa.nulls(len(keys), pa.int64())
    rows = pa.array(np.arange(len(keys), dtype=np.int64))
    table = pa.table({"base_key": keys.cast(pa.string()), "base_ordering": ordering, "base_row": rows})
    return table, order is not None


def _sorted_rows(rows: pa.ChunkedArray, where: pa.ChunkedArray) -> np.ndarray:
    """The non-null row numbers where ``where`` holds, ascending."""
    chosen = pc.drop_null(pc.filter(rows, where))
    return np.sort(chosen.to_numpy().astype(np.int64, copy=False))


def merge_slice_logs(ctx: SliceReadContext, slice_: FileSlice) -> SliceLogMerge:
    """Decide the rows of a slice with logs (base rows to drop, log rows to add) in DuckDB."""
    try:
        spec = _spec(ctx)
    except UnsupportedFeatureError:
        return core_reader.merge_slice_logs(ctx, slice_)
    columns = scan_log_columns(ctx, slice_)
    stats, skipped = columns.stats, columns.skipped
    if columns.entries.num_rows == 0:
        return SliceLogMerge(ctx.schema.empty_table(), [], stats, skipped)
    ctx.merge.require_supported(ctx.storage.uri(slice_.log_files[0].path))
    base, has_base_ordering = _base_relation(ctx, slice_)
    cursor = _cursor()
    entries = columns.entries
    try:
        cursor.register("entries", entries)
        cursor.register("base", base)
        outcome = cursor.sql(merge_sql(ctx, spec, has_base_ordering)).to_arrow_table()
    finally:
        cursor.unregister("entries")
        cursor.unregister("base")
    survives = outcome.column("survives")
    dropped = _sorted_rows(outcome.column("base_row"), pc.invert(survives))
    winners = _sorted_rows(outcome.column("log_row"), pc.and_not(pc.invert(outcome.column("is_delete")), survives))
    log_rows = columns.log_table.take(pa.array(winners)) if len(winners) else ctx.schema.empty_table()
    stats["dropped_base_rows"] = len(dropped)
    stats["log_rows"] = log_rows.num_rows
    return SliceLogMerge(log_rows, dropped.tolist(), stats, skipped)
