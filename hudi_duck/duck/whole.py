"""Tiny file slices merged whole: every row of the slices in one sealed cache entry.

A plan of many tiny slices (small log files over small base files) would otherwise have DuckDB
scan each base file twice (once for the merge's base keys, once for the snapshot, filtered by
``hudi_duck_keep`` file by file) beside the merged log rows. For a job of such slices the merge
reads all their base files once, in one DuckDB ``read_parquet`` (parallel, in C++), folds the
logs against them with the same rule as every merge (``merge.merge_slices``), and writes the
slices' complete rows (surviving base rows and winning log rows, every column, as the snapshot
returns them) to the job's cache entry. The snapshot then reads these slices from that file only.

Each row carries its slice's partition path (``PARTITION_COL``, not part of the output), so a read
that takes partition values from the folders checks and computes them as it does for base files.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.file_group.file_slice import FileSlice
from ..core.file_group.reader import SliceLogMerge, SliceReadContext
from ..core.merge.ordering import engine_column
from ..core.schema.meta_fields import RECORD_KEY
from ..core.table.read_plan import ReadPlan
from . import cache, merge
from .quoting import quote_ident, quote_literal

#: The partition path of each row of a whole merged job (dropped from the query's output).
PARTITION_COL = "_hd_partition"
_FILE = "_hd_file"
_WINNERS_ROW_GROUP = 64 * 1024
_ROW = "_hd_row"
#: Ordering types whose values DuckDB hands back as the base file's own (else base keys are read
#: per file by pyarrow, as for any other merge).
_DUCK_ORDERING_TYPES = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_date32,
    pa.types.is_timestamp,
    pa.types.is_decimal,
    pa.types.is_boolean,
)


def whole_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of a whole merged job's cache entry: the output schema and each row's partition path."""
    return schema.append(pa.field(PARTITION_COL, pa.string()))


def _ordering_from_duckdb(ctx: SliceReadContext) -> bool:
    name = ctx.merge.ordering_field
    if not name or name not in ctx.schema.names:
        return True
    dtype = ctx.schema.field(name).type
    return any(check(dtype) for check in _DUCK_ORDERING_TYPES)


def materialize(plan: ReadPlan, ctx: SliceReadContext, slices: Sequence[FileSlice], path: str | Path, key: str) -> list[SliceLogMerge]:
    """Merge ``slices`` and write all their rows as sealed cache entry ``key`` at ``path``.

    Returns each slice's merge outcome (what it dropped, its statistics and skipped blocks) for
    the job's record; the rows themselves are only in the file."""
    from .sql import FILENAME_COL, ROW_COL, scan_sql

    cursor = merge._cursor()
    tag = uuid.uuid4().hex
    table, files_view, dropped_view = f"_hd_whole_{tag}", f"_hd_files_{tag}", f"_hd_dropped_{tag}"
    winners_view = f"_hd_winners_{tag}"
    uris = {i: plan.location.uri(s.base_file.path) for i, s in enumerate(slices) if s.base_file is not None}
    projection = ", ".join(quote_ident(f.name) for f in ctx.schema)
    scans = []
    for evolved in (False, True):
        group = [uri for i, uri in uris.items() if plan.has_table_schema(slices[i]) != evolved]
        if group:
            scan = scan_sql(ctx.schema, group, evolved, with_rows=True)
            scans.append(f"SELECT {projection}, {quote_ident(FILENAME_COL)}, {ROW_COL} FROM {scan}")
    files = pa.table(
        {
            _FILE: pa.array(list(uris.values()), pa.string()),
            merge.SLICE: pa.array(list(uris), pa.int32()),
            PARTITION_COL: pa.array([slices[i].partition_path for i in uris], pa.string()),
        }
    )
    winners_file = Path(path).with_name(f".{Path(path).name}.{tag}.winners.tmp")
    merged: list[SliceLogMerge] = []
    # the base files are read by DuckDB's threads while this one decodes the log blocks
    reading = _BaseRead(f"CREATE TABLE {table} AS {' UNION ALL '.join(scans)}") if scans else None
    try:
        cursor.register(files_view, files)

        def base_relation(active: list[int], ordering_type: pa.DataType) -> pa.Table:
            if reading is not None:
                reading.wait()
            return _base_relation(cursor, ctx, table if scans else None, files, active, ordering_type)

        use_duckdb = ctx.key_generator is None and _ordering_from_duckdb(ctx)
        merged, joined = merge.merge_slices_joined(ctx, slices, base_relation if use_duckdb else None)
        if reading is not None:
            reading.wait()
        if joined is not None:  # held in memory: DuckDB scans them where they are
            cursor.register(winners_view, _joined_winners_table(ctx, slices, joined))
            winners_scan = winners_view
        else:
            _write_winners(ctx, slices, merged, winners_file)
            winners_scan = f"read_parquet([{quote_literal(cache.schema_file(whole_schema(ctx.schema)))}, {quote_literal(str(winners_file))}])"
        cursor.register(dropped_view, _dropped(uris, merged))
        parts = []
        if scans:
            parts.append(
                f"SELECT {', '.join('b.' + quote_ident(f.name) for f in ctx.schema)}, f.{PARTITION_COL} FROM {table} AS b "
                f"ANTI JOIN {dropped_view} AS d ON b.{quote_ident(FILENAME_COL)} = d.{_FILE} AND b.{ROW_COL} = d.{_ROW} "
                f"JOIN {files_view} AS f ON b.{quote_ident(FILENAME_COL)} = f.{_FILE}"
            )
        parts.append(f"SELECT {projection}, {PARTITION_COL} FROM {winners_scan}")
        cache.write_query_parquet(cursor, " UNION ALL ".join(parts), path, key)
    finally:
        for view in (files_view, dropped_view, winners_view):
            try:
                cursor.unregister(view)
            except Exception:  # never registered (an earlier step failed)
                pass
        if reading is not None:
            reading.join()
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
        for outcome in merged:
            if isinstance(outcome.log_rows, merge.SpilledRows):
                outcome.log_rows.release()
        try:
            os.unlink(winners_file)
        except OSError:
            pass
    return merged


class _BaseRead:
    """A DuckDB statement run on its own cursor in a thread (DuckDB releases the GIL while it reads)."""

    def __init__(self, statement: str):
        self._cursor = merge._cursor().cursor()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(statement,), name="hudi-duck-base-read", daemon=True)
        self._thread.start()

    def _run(self, statement: str) -> None:
        try:
            self._cursor.execute(statement)
        except BaseException as exc:  # raised where the rows are needed
            self._error = exc
        finally:
            self._cursor.close()

    def join(self) -> None:
        self._thread.join()

    def wait(self) -> None:
        """Wait for the statement; its error, if any, is raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error


def _base_relation(
    cursor, ctx: SliceReadContext, table: str | None, files: pa.Table, active: list[int], ordering_type: pa.DataType
) -> pa.Table:
    """The fold's ``base`` relation from the base rows DuckDB read: for each base row of an active
    slice its slice, key, ordering value (in the engine's form, as ``reader.read_base_keys`` gives
    it) and physical row number."""
    from .sql import FILENAME_COL, ROW_COL

    ordering = ctx.merge.base_ordering_field
    with_ordering = bool(ordering) and ordering in ctx.schema.names
    if table is None:
        rows = pa.table({FILENAME_COL: pa.array([], pa.string()), ROW_COL: pa.array([], pa.int64()),
                         RECORD_KEY: pa.array([], pa.string())})
    else:
        columns = [quote_ident(FILENAME_COL), ROW_COL, quote_ident(RECORD_KEY)] + ([quote_ident(ordering)] if with_ordering else [])
        rows = cursor.sql(f"SELECT {', '.join(columns)} FROM {table}").to_arrow_table()
    names = files.column(_FILE).to_pylist()
    slice_of = dict(zip(names, files.column(merge.SLICE).to_pylist()))
    encoded = pc.dictionary_encode(rows.column(FILENAME_COL).combine_chunks())
    lookup = np.array([slice_of[n] for n in encoded.dictionary.to_pylist()], dtype=np.int32)
    index = lookup[encoded.indices.to_numpy(zero_copy_only=False)] if len(lookup) else np.empty(0, np.int32)
    wanted = np.isin(index, np.asarray(active, dtype=np.int32))
    mask = pa.array(wanted)
    keys = rows.column(RECORD_KEY).filter(mask).combine_chunks()
    n = len(keys)
    if with_ordering:
        order = rows.column(ordering).filter(mask).combine_chunks().cast(ctx.schema.field(ordering).type)
        ordering_values = engine_column(order).cast(ordering_type)
    else:
        ordering_values = pa.nulls(n, ordering_type)
    return pa.table(
        {
            "base_slice": pa.array(index[wanted], pa.int32()),
            "base_key": keys.cast(pa.string()),
            "base_ordering": ordering_values,
            "base_row": rows.column(ROW_COL).filter(mask).combine_chunks().cast(pa.int64()),
        }
    )


def _write_winners(ctx: SliceReadContext, slices: Sequence[FileSlice], merged: list[SliceLogMerge], path: Path) -> None:
    """The winning log rows of every slice, with their partition path, as a parquet file DuckDB reads
    as it reads a merge's cached log rows."""
    schema = whole_schema(ctx.schema)
    with pq.ParquetWriter(str(path), schema, compression="lz4") as writer:
        pending: list[pa.RecordBatch] = []
        rows = 0
        for s, outcome in zip(slices, merged):
            for batch in outcome.log_rows.to_batches():
                partition = pa.array([s.partition_path] * batch.num_rows, pa.string())
                columns = [batch.column(i) for i in range(batch.num_columns)] + [partition]
                pending.append(pa.RecordBatch.from_arrays(columns, schema=schema))
                rows += batch.num_rows
            if rows >= _WINNERS_ROW_GROUP:  # one row group per many tiny slices, not one per slice
                writer.write_table(pa.Table.from_batches(pending, schema=schema))
                pending, rows = [], 0
        writer.write_table(pa.Table.from_batches(pending, schema=schema))


def _joined_winners_table(ctx: SliceReadContext, slices: Sequence[FileSlice], joined: merge.JoinedWinners) -> pa.Table:
    """Winning rows held in one table, each with its slice's partition path: the job's entry takes
    them from memory (``_write_winners`` writes rows a merge left in spill files)."""
    partitions = pa.array([s.partition_path for s in slices], pa.string()).take(pa.array(joined.slice_of, pa.int32()))
    columns = [joined.rows.column(i) for i in range(joined.rows.num_columns)] + [partitions]
    return pa.Table.from_arrays(columns, schema=whole_schema(ctx.schema))


def _dropped(uris: dict[int, str], merged: list[SliceLogMerge]) -> pa.Table:
    """(file, row) of every base row the logs replace or delete."""
    names: list[str] = []
    rows: list[np.ndarray] = []
    for i, uri in uris.items():
        dropped = np.asarray(merged[i].dropped_base_rows, dtype=np.int64)
        names.extend([uri] * len(dropped))
        rows.append(dropped)
    return pa.table(
        {
            _FILE: pa.array(names, pa.string()),
            _ROW: pa.array(np.concatenate(rows) if rows else np.empty(0, np.int64), pa.int64()),
        }
    )
