"""Merging one file slice's logs with DuckDB: the core's merge rule as SQL, run on columns.

The log records of a slice are decoded to Arrow a block (or a run of a large
block's records) at a time (``reader.iter_log_pieces``) and the fold (each key's
latest record, deletes, base rows replaced) runs as one DuckDB query rendered
by ``core.merge.sql``: DuckDB sorts and joins in parallel and spills. Python
only plans; no record key becomes a Python object. A merge whose decoded
records pass its memory budget (``hoodie.memory.merge.max.size``) spills them
to parquet files and folds those (:class:`Spill`). Slices the rendering cannot
express (binary ordering columns) take the core's own merge.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.config.read_settings import MERGE_MAX_SIZE, SPILLABLE_MAP_PATH, MergeMemory
from ..core.errors import HudiError, UnsupportedFeatureError
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
    entry_schema,
    LogPiece,
    data_entries,
    iter_base_keys,
    iter_log_pieces,
    read_base_keys,
    scan_stats,
    tiny_block_batches,
)
from ..core.file_group.log_scanner import SkippedBlock, scan_slice_logs
from ..core.merge.ordering import EngineOrdering, engine_column, engine_ordering
from ..core.merge.sql import base_survives_sql, latest_log_records_sql, log_ranks_sql
from ..core.schema.empty import empty_table
from .quoting import quote_literal

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
                # merges match rows by slice, key and row number, never by position: DuckDB need not
                # keep input order, so its threads fill tables and write cache entries without waiting
                _connection = duckdb.connect(config={"preserve_insertion_order": False})
            cursor = _local.cursor = _connection.cursor()
    return cursor


def _spec(ctx: SliceReadContext) -> EngineOrdering | None:
    name = ctx.merge.ordering_field
    if not name or name not in ctx.schema.names:
        return None
    return engine_ordering(name, ctx.schema.field(name).type)


SLICE = "_hd_slice"


def merge_sql(
    ctx: SliceReadContext, spec: EngineOrdering | None, one_record_per_key: bool = False, one_base_row_per_key: bool = False
) -> str:
    """The merge of slices over relations ``entries`` (log records, ``SLICE`` numbering their slice)
    and ``base`` (slice, key, ordering, row of base records): one row per winning log record, with
    the base row it meets and whether that base row survives. ``one_record_per_key``: no key of
    ``entries`` appears twice in a slice (nothing to rank); ``one_base_row_per_key``: nor of
    ``base`` (each base row is its key's first)."""
    key = f"{SLICE}, {ENTRY_KEY}"
    ranks = log_ranks_sql(
        "entries",
        ctx.merge.mode,
        key=key,
        seq=ENTRY_SEQ,
        is_delete=ENTRY_DELETE,
        never_compared=ENTRY_NEVER_COMPARED,
        natural_delete=ENTRY_NATURAL_DELETE,
        one_record_per_key=one_record_per_key,
    )
    winners = latest_log_records_sql(
        f"({ranks})",
        key=key,
        seq=ENTRY_SEQ,
        ignored="_hd_ignored",
        reset="_hd_reset",
        ordering=ENTRY_ORDERING if spec is not None else None,
        spec=spec,
        one_record_per_key=one_record_per_key,
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
    base_rows = "SELECT base_slice, base_key, base_ordering, base_row FROM base"
    first_base = base_rows if one_base_row_per_key else (
        f"{base_rows} SEMI JOIN w ON base_slice = w.{SLICE} AND base_key = w.{ENTRY_KEY} "
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
    return _base_table(index, keys, order, ordering_type, 0)


def _base_table(index: int, keys: pa.Array, order: pa.Array | None, ordering_type: pa.DataType, first: int) -> pa.Table:
    """The ``base`` relation of base rows ``first ..`` of slice ``index``."""
    n = len(keys)
    ordering = engine_column(order).cast(ordering_type) if order is not None else pa.nulls(n, ordering_type)
    return pa.table(
        {
            "base_slice": pa.array(np.full(n, index, dtype=np.int32)),
            "base_key": keys.cast(pa.string()),
            "base_ordering": ordering,
            "base_row": pa.array(np.arange(first, first + n, dtype=np.int64)),
        }
    )


def merge_slice_logs(ctx: SliceReadContext, slice_: FileSlice) -> SliceLogMerge:
    """Decide the rows of a slice with logs (base rows to drop, log rows to add) in DuckDB.

    A merge that spilled returns its log rows as :class:`SpilledRows`: the caller
    reads them (``to_batches``) and then releases them (``release``)."""
    return merge_slices(ctx, [slice_])[0]


#: The ``base`` relation (base_slice, base_key, base_ordering, base_row) of the given slice numbers,
#: with the ordering column in the given engine type; by default read per base file with pyarrow.
BaseRelation = Callable[[list[int], pa.DataType], pa.Table]


def merge_slices(
    ctx: SliceReadContext, slices: Sequence[FileSlice], base_relation: BaseRelation | None = None
) -> list[SliceLogMerge]:
    """Merge several slices' logs in one DuckDB query (each slice folds on its own).

    ``base_relation`` gives the base keys of an in-memory merge when the caller already holds
    the base files' rows (a whole-slice merge reads them in DuckDB); a spilled merge reads them
    itself.

    Decoded log records stay in memory while they fit in a quarter of the read's
    ``hoodie.memory.merge.max.size``; past it they go to parquet files in a
    spill folder (``hoodie.memory.spillable.map.path``) and the fold runs in
    DuckDB over those files with half the budget as its ``memory_limit`` (DuckDB
    spills there too). The spill folder is removed on every error, and by
    ``release`` once the winning rows are read."""
    return _merge_job(ctx, slices, base_relation, joined=False)[0]


@dataclass
class JoinedWinners:
    """The winning log rows of all slices of one merge in one table (in slice order), and the
    slice of each row: a job of many tiny slices writes them at once, not slice by slice."""

    rows: pa.Table
    slice_of: np.ndarray  # int32, one per row


def merge_slices_joined(
    ctx: SliceReadContext, slices: Sequence[FileSlice], base_relation: BaseRelation | None = None
) -> tuple[list[SliceLogMerge], JoinedWinners | None]:
    """``merge_slices`` with the winning rows of an in-memory merge joined (the outcomes' own
    ``log_rows`` are then empty; their statistics count them). A merge that spilled, or that the
    core merges, gives None and its rows in the outcomes as ``merge_slices`` does."""
    return _merge_job(ctx, slices, base_relation, joined=True)


def _merge_job(
    ctx: SliceReadContext, slices: Sequence[FileSlice], base_relation: BaseRelation | None, joined: bool
) -> tuple[list[SliceLogMerge], JoinedWinners | None]:
    try:
        spec = _spec(ctx)
    except UnsupportedFeatureError:
        return [core_reader.merge_slice_logs(ctx, s) for s in slices], None
    spill = Spill(ctx.memory)
    try:
        decoded = _collect(ctx, slices, spill)
        collected = decoded.slices
        active = [i for i, c in enumerate(collected) if c.records]
        for i in active:
            ctx.merge.require_supported(ctx.storage.uri(slices[i].log_files[0].path))
        if spill.active and active:
            return _merge_spilled(ctx, slices, collected, active, spec, spill), None
        spill.remove()  # nothing to fold from it
    except BaseException:
        spill.remove()
        raise
    return _merge_in_memory(ctx, slices, decoded, active, spec, base_relation, joined)


@dataclass
class _Collected:
    """One slice's decoded log records: its rows in memory, or (once the merge spills) in its spill file."""

    stats: dict[str, int]
    skipped: list[SkippedBlock]
    records: int = 0
    rows: list[pa.Table] = field(default_factory=list)


@dataclass
class _Decoded:
    """A merge's decoded log records: each slice's, and the entries of all slices (``SLICE`` says
    whose) while they are held in memory (once the merge spills, they are in its spill file)."""

    slices: list[_Collected]
    entries: list[pa.Table] = field(default_factory=list)


#: Data pieces whose entries are computed together (a merge of many tiny slices pays per batch of
#: pieces, not per log block); their rows are held anyway, so the batch adds no memory of its own.
PENDING_PIECES = 4096


def _collect(ctx: SliceReadContext, slices: Sequence[FileSlice], spill: "Spill") -> _Decoded:
    """Decode every slice's log blocks; spill them all once they pass ``HELD_SHARE`` of the budget."""
    schema = entry_schema(ctx)
    scans = [scan_slice_logs(ctx.storage, slice_.log_files, ctx.admit) for slice_ in slices]
    batches = tiny_block_batches(ctx, scans)
    decoded = _Decoded([_Collected({}, scan.skipped) for scan in scans])
    limit = ctx.memory.max_size // HELD_SHARE
    held = 0
    pending: list[LogPiece] = []
    owners: list[int] = []
    pending_rows = 0

    def hold(nbytes: int) -> None:
        nonlocal held
        if not spill.active:
            held += nbytes
            if held > limit:
                _spill_held(decoded, spill)

    def keep(entries: pa.Table, owner: np.ndarray) -> None:
        entries = entries.append_column(SLICE, pa.array(owner, pa.int32()))
        counts = np.bincount(owner, minlength=len(scans))
        for i in np.flatnonzero(counts).tolist():  # the slices these entries are of, not every slice
            decoded.slices[i].records += int(counts[i])
        hold(entries.nbytes)
        if spill.active:
            spill.write(ENTRIES, entries)
        else:
            decoded.entries.append(entries)

    def flush() -> None:
        nonlocal pending, owners, pending_rows
        if pending:
            entries, piece_of = data_entries(ctx, pending, schema)
            keep(entries, np.asarray(owners, np.int32)[piece_of])
        pending, owners, pending_rows = [], [], 0

    for i, scan in enumerate(scans):
        mine = decoded.slices[i]
        for piece in iter_log_pieces(ctx, scan, batches):
            if piece.rows is None:  # a delete block: its entries are decoded with it
                assert piece.entries is not None
                keep(piece.entries, np.full(piece.entries.num_rows, i, np.int32))
                continue
            hold(piece.nbytes)
            if spill.active:
                spill.write(_rows_name(i), piece.rows)
            else:
                mine.rows.append(piece.rows)
            pending.append(piece)
            owners.append(i)
            pending_rows += piece.rows.num_rows
            if len(pending) >= PENDING_PIECES or pending_rows >= SPILL_ROW_GROUP:
                flush()
    flush()
    for mine, scan in zip(decoded.slices, scans):
        mine.stats = scan_stats(scan, mine.records)
    return decoded


def _spill_held(decoded: _Decoded, spill: "Spill") -> None:
    """Start spilling: what the merge holds so far goes to the spill files, in scan order."""
    spill.start()
    for table in decoded.entries:
        spill.write(ENTRIES, table)
    decoded.entries = []
    for j, earlier in enumerate(decoded.slices):
        for table in earlier.rows:
            spill.write(_rows_name(j), table)
        earlier.rows = []


def _rows_name(index: int) -> str:
    return f"rows-{index}"


def _merge_in_memory(
    ctx: SliceReadContext,
    slices: Sequence[FileSlice],
    decoded: _Decoded,
    active: list[int],
    spec: EngineOrdering | None,
    base_relation: BaseRelation | None = None,
    joined: bool = False,
) -> tuple[list[SliceLogMerge], JoinedWinners | None]:
    empty = empty_table(ctx.schema)
    collected = decoded.slices
    merged = [SliceLogMerge(empty, [], c.stats, c.skipped) for c in collected]
    if not active:
        return merged, (JoinedWinners(empty, np.empty(0, np.int32)) if joined else None)
    entries = pa.concat_tables(decoded.entries)
    ordering_type = entries.schema.field(ENTRY_ORDERING).type
    if base_relation is not None:
        base = base_relation(active, ordering_type)
    else:
        base = pa.concat_tables([_base_relation(ctx, slices[i], i, ordering_type) for i in active])
    keys = entries.column(ENTRY_KEY)
    log_keys = pc.unique(keys)
    base = _meeting(base, log_keys)
    sql = merge_sql(
        ctx, spec, one_record_per_key=len(log_keys) == len(keys), one_base_row_per_key=_distinct(base.column("base_key"))
    )
    cursor = _cursor()
    try:
        cursor.register("entries", entries)
        cursor.register("base", base)
        outcome = cursor.sql(sql).to_arrow_table()
    finally:
        cursor.unregister("entries")
        cursor.unregister("base")
    dropped_of, winners_of = _rows_by_slice(outcome)
    none = np.empty(0, np.int64)
    if joined:
        return merged, _joined_winners(collected, active, winners_of, dropped_of, merged, empty)
    for i in active:
        dropped, winners = dropped_of.get(i, none), winners_of.get(i, none)
        rows = collected[i].rows
        log_table = pa.concat_tables(rows) if rows else empty
        log_rows = log_table.take(pa.array(winners)) if len(winners) else empty
        merged[i] = _outcome(merged[i], log_rows, dropped)
    return merged, None


def _distinct(keys: pa.ChunkedArray) -> bool:
    """No base key twice (in any slice): true of base files, and then the fold need not look for
    a base key's first row. (Log keys are told distinct by their ``unique``, which the fold
    needs anyway: no record ranked.)"""
    return pc.count_distinct(keys).as_py() == len(keys)


def _meeting(base: pa.Table, log_keys: pa.Array) -> pa.Table:
    """The base rows whose key is among ``log_keys`` (of any slice; the fold matches slices):
    the others meet no winner, so the fold's join need not see them."""
    if base.num_rows == 0:
        return base
    return base.filter(pc.is_in(base.column("base_key"), value_set=log_keys))


def _joined_winners(
    collected: list[_Collected],
    active: list[int],
    winners_of: dict[int, np.ndarray],
    dropped_of: dict[int, np.ndarray],
    merged: list[SliceLogMerge],
    empty: pa.Table,
) -> JoinedWinners:
    """Every active slice's winning rows taken at once from all their log rows (one ``take``,
    not one per slice); each outcome keeps what it dropped and counts its winners."""
    none = np.empty(0, np.int64)
    counts = np.array([sum(t.num_rows for t in collected[i].rows) for i in active], np.int64)
    starts = dict(zip(active, (np.cumsum(counts) - counts).tolist()))
    picks = [(i, winners_of[i]) for i in active if i in winners_of]
    for i in active:
        merged[i] = _outcome(merged[i], empty, dropped_of.get(i, none), log_row_count=len(winners_of.get(i, none)))
    if not picks:
        return JoinedWinners(empty, np.empty(0, np.int32))
    rows = pa.concat_tables([t for i in active for t in collected[i].rows])
    taken = rows.take(pa.array(np.concatenate([w + starts[i] for i, w in picks])))
    slice_of = np.concatenate([np.full(len(w), i, np.int32) for i, w in picks])
    return JoinedWinners(taken, slice_of)


def _rows_by_slice(outcome: pa.Table) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Each slice's base rows that go and log rows that win (ascending), from the fold's outcome:
    a base row goes when it meets a winner and does not survive; a log row wins when it is no
    delete and its base row (if any) does not survive (a null decides nothing)."""
    slices = outcome.column("slice").to_numpy()
    survives = outcome.column("survives")
    is_delete = outcome.column("is_delete")
    base_rows, log_rows = outcome.column("base_row"), outcome.column("log_row")
    replaced = _is_false(survives)
    dropped = replaced & pc.is_valid(base_rows).to_numpy()
    winners = replaced & _is_false(is_delete) & pc.is_valid(log_rows).to_numpy()
    return (
        _group(slices[dropped], pc.fill_null(base_rows, 0).to_numpy()[dropped]),
        _group(slices[winners], pc.fill_null(log_rows, 0).to_numpy()[winners]),
    )


def _is_false(column: pa.ChunkedArray) -> np.ndarray:
    return ~pc.fill_null(column, True).to_numpy()


def _group(slices: np.ndarray, rows: np.ndarray) -> dict[int, np.ndarray]:
    """Rows by slice, each ascending."""
    order = np.lexsort((rows, slices))
    slices, rows = slices[order], rows[order].astype(np.int64, copy=False)
    found, starts = np.unique(slices, return_index=True)
    ends = list(starts[1:]) + [len(slices)]
    return {int(i): rows[a:b] for i, a, b in zip(found, starts, ends)}


def _outcome(
    merge: SliceLogMerge, log_rows: "pa.Table | SpilledRows", dropped: np.ndarray, log_row_count: int | None = None
) -> SliceLogMerge:
    """The merge's result; a spilled merge keeps its dropped rows as an array (no object per row).
    ``log_row_count``: the winners when they are held elsewhere (``JoinedWinners``)."""
    stats = merge.stats
    stats["dropped_base_rows"] = len(dropped)
    stats["log_rows"] = log_rows.num_rows if log_row_count is None else log_row_count
    rows = dropped if isinstance(log_rows, SpilledRows) else dropped.tolist()
    return SliceLogMerge(log_rows, rows, stats, merge.skipped_blocks)


# -- merging from spill files ---------------------------------------------------------------------------

ENTRIES = "entries"
BASE = "base"
#: Decoded log records a merge holds in memory are at most this share of its budget (past it they
#: spill); the decoding itself, the fold's results and the winning rows on their way to the cache
#: take the rest. A spilled fold runs in DuckDB with ``DUCKDB_SHARE`` of the budget.
HELD_SHARE = 4
DUCKDB_SHARE = 2
#: rows per row group of spilled log rows: the winners are taken a row group at a time
SPILL_ROW_GROUP = 64 * 1024
#: DuckDB needs a few blocks per thread to run the fold at all
MIN_DUCKDB_MEMORY = 64 * 1024**2
SPILL_PREFIX = "hudi-duck-spill-"


class Spill:
    """A merge's spill folder (``hoodie.memory.spillable.map.path``): decoded log records and base
    keys as parquet files, and DuckDB's own temporary files. Created on first need, removed whole."""

    def __init__(self, memory: MergeMemory):
        self.memory = memory
        self.folder: Path | None = None
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._users = 0

    @property
    def active(self) -> bool:
        return self.folder is not None

    def start(self) -> Path:
        parent = Path(self.memory.spill_folder)
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.folder = Path(tempfile.mkdtemp(prefix=f"{_spill_prefix()}{os.getpid()}-", dir=parent))
        except OSError as exc:
            raise self.error(parent, exc) from exc
        _remove_orphans(parent)
        return self.folder

    def path(self, name: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{name}.parquet"

    def write(self, name: str, table: pa.Table) -> None:
        """Append ``table`` to the spill file ``name``."""
        try:
            writer = self._writers.get(name)
            if writer is None:
                writer = self._writers[name] = pq.ParquetWriter(self.path(name), table.schema, compression="lz4")
            writer.write_table(table, row_group_size=SPILL_ROW_GROUP)
        except OSError as exc:
            raise self.error(self.path(name), exc) from exc

    def finish(self) -> None:
        """Close the spill files (their footers written), so they can be read."""
        writers, self._writers = self._writers, {}
        for name, writer in writers.items():
            try:
                writer.close()
            except OSError as exc:
                raise self.error(self.path(name), exc) from exc

    def share(self, users: int) -> None:
        """The folder is removed once ``users`` holders of its rows have released them."""
        self._users = users

    def release(self) -> None:
        self._users -= 1
        if self._users <= 0:
            self.remove()

    def remove(self) -> None:
        """Remove the folder and everything in it (also after a failure)."""
        for writer in self._writers.values():
            try:
                writer.close()
            except Exception:  # the folder goes anyway
                pass
        self._writers = {}
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def error(self, where: Path, exc: BaseException) -> HudiError:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return HudiError(
            f"hudi-duck cannot spill a file slice merge to {where}: {reason}. The merge's decoded log records "
            f"passed {MERGE_MAX_SIZE} ({self.memory.max_size} bytes); set {SPILLABLE_MAP_PATH} "
            "(memory_spillable_map_path) to a writable folder with free space, or raise "
            f"{MERGE_MAX_SIZE} (memory_merge_max_size)"
        )


def _spill_prefix() -> str:
    """Spill folders are named for their host and process, so orphans can be told apart."""
    host = "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"
    return f"{SPILL_PREFIX}{host}-"


def _remove_orphans(parent: Path) -> None:
    """Remove spill folders of this host's processes that died while merging (they could not)."""
    prefix = _spill_prefix()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        shutil.rmtree(parent / name, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's live process
        return True
    return True


@dataclass
class SpilledRows:
    """The winning log rows of one slice, still in its spill file: taken a row group at a time.

    Quacks like the ``pa.Table`` an in-memory merge returns (``schema``, ``num_rows``,
    ``to_batches``); ``release`` removes the spill folder."""

    schema: pa.Schema
    path: Path
    winners: np.ndarray  # row numbers in the spill file, ascending
    spill: Spill
    released: bool = False

    @property
    def num_rows(self) -> int:
        return len(self.winners)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        if not len(self.winners):
            return
        parquet = pq.ParquetFile(self.path)
        offset = 0
        for group in range(parquet.num_row_groups):
            n = parquet.metadata.row_group(group).num_rows
            lo, hi = np.searchsorted(self.winners, [offset, offset + n])
            if hi > lo:
                taken = parquet.read_row_group(group).take(pa.array(self.winners[lo:hi] - offset))
                for batch in taken.to_batches():
                    yield pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
            offset += n

    def release(self) -> None:
        """Done with these rows: the spill folder goes once every slice of the merge released its rows."""
        if not self.released:
            self.released = True
            self.spill.release()


def _merge_spilled(
    ctx: SliceReadContext,
    slices: Sequence[FileSlice],
    collected: list[_Collected],
    active: list[int],
    spec: EngineOrdering | None,
    spill: Spill,
) -> list[SliceLogMerge]:
    """The fold in DuckDB over the spill files, with DuckDB's memory bounded and spilling to the
    same folder; only the row numbers it decides come back to Python."""
    ordering_type = entry_schema(ctx).field(ENTRY_ORDERING).type
    spill.write(BASE, _base_table(0, pa.array([], pa.string()), None, ordering_type, 0))  # the file's schema
    for i in active:
        first = 0
        for keys, order in iter_base_keys(ctx, slices[i], SPILL_ROW_GROUP):
            spill.write(BASE, _base_table(i, keys, order, ordering_type, first))
            first += len(keys)
    spill.finish()
    dropped, winners = _fold_spilled(ctx, spec, spill, active)
    merged = [SliceLogMerge(empty_table(ctx.schema), [], c.stats, c.skipped) for c in collected]
    spill.share(len(active))
    for i in active:
        log_rows = SpilledRows(ctx.schema, spill.path(_rows_name(i)), winners[i], spill)
        merged[i] = _outcome(merged[i], log_rows, dropped[i])
    return merged


def _fold_spilled(
    ctx: SliceReadContext, spec: EngineOrdering | None, spill: Spill, active: list[int]
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Dropped base rows and winning log rows of each slice, from the fold over the spill files."""
    assert spill.folder is not None
    limit = max(ctx.memory.max_size // DUCKDB_SHARE, MIN_DUCKDB_MEMORY)
    con = duckdb.connect(
        config={
            "memory_limit": f"{limit}B",
            "temp_directory": str(spill.folder / "duckdb"),
            "preserve_insertion_order": False,
        }
    )
    con.execute("SET enable_progress_bar = false")
    dropped: dict[int, list[np.ndarray]] = {i: [] for i in active}
    winners: dict[int, list[np.ndarray]] = {i: [] for i in active}
    try:
        for name in (ENTRIES, BASE):
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({quote_literal(spill.path(name))})")
        reader = _reader(con.sql(merge_sql(ctx, spec)))
        try:
            for batch in reader:
                _split(batch, dropped, winners)
        finally:
            reader.close()
            del reader
    except duckdb.Error as exc:
        raise spill.error(spill.folder, exc) from exc
    finally:
        con.close()
    return (
        {i: np.sort(np.concatenate(v)) if v else np.empty(0, np.int64) for i, v in dropped.items()},
        {i: np.sort(np.concatenate(v)) if v else np.empty(0, np.int64) for i, v in winners.items()},
    )


def _split(batch: pa.RecordBatch, dropped: dict[int, list[np.ndarray]], winners: dict[int, list[np.ndarray]]) -> None:
    """File a batch of the fold's outcome under its slices: base rows that go, log rows that win."""
    slices = batch.column("slice").to_numpy(zero_copy_only=False)
    survives = pc.fill_null(batch.column("survives"), False).to_numpy(zero_copy_only=False)
    deletes = pc.fill_null(batch.column("is_delete"), False).to_numpy(zero_copy_only=False)
    base_rows = batch.column("base_row")
    log_rows = batch.column("log_row")
    has_base = pc.is_valid(base_rows).to_numpy(zero_copy_only=False)
    has_log = pc.is_valid(log_rows).to_numpy(zero_copy_only=False)
    base_values = pc.fill_null(base_rows, 0).to_numpy(zero_copy_only=False)
    log_values = pc.fill_null(log_rows, 0).to_numpy(zero_copy_only=False)
    for i in np.unique(slices):
        mine = slices == i
        dropped[int(i)].append(base_values[mine & has_base & ~survives].astype(np.int64))
        winners[int(i)].append(log_values[mine & has_log & ~deletes & ~survives].astype(np.int64))


def _reader(relation: duckdb.DuckDBPyRelation) -> pa.RecordBatchReader:
    """The rows of a query a batch at a time (DuckDB 1.x and 2.x spell it differently)."""
    for name in ("to_arrow_reader", "fetch_arrow_reader", "fetch_record_batch"):
        method = getattr(relation, name, None)
        if method is not None:
            return method(SPILL_ROW_GROUP)
    raise AttributeError("this DuckDB version offers no Arrow reader on query results")
