"""Render a core :class:`ReadPlan` as DuckDB SQL over ``read_parquet``.

Layout of the generated query (branches are left out when empty)::

    -- slices without logs: DuckDB scans their base files directly
    SELECT cols FROM read_parquet([schema file, base files...])
    UNION ALL
    -- slices with logs: base rows minus the ones the logs replace or delete ...
    SELECT cols FROM read_parquet([schema file, base files...]) ANTI JOIN dropped rows
    UNION ALL
    -- ... plus the winning log records, merged by the core and cached as parquet
    SELECT cols FROM read_parquet([merged log rows...])

The first file of every base scan is an empty parquet file with the expected
schema, so binding never opens a table file and DuckDB's file pruning (on
partition values derived from the path) really skips files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import pyarrow as pa

from ..core.file_group import parquet_stats
from ..core.file_group.file_slice import FileSlice
from ..core.schema.meta_fields import COMMIT_TIME
from ..core.storage.storage import url_protocol
from ..core.table.filters import ColumnFilter
from ..core.table.read_plan import ReadPlan
from . import cache, lazy
from . import whole as whole_slices
from .quoting import list_literal, quote_ident, quote_literal

FILENAME_COL = "_hd_filename"
#: Above this many partition folders, a folder's values are looked up in a MAP instead of a CASE.
MAX_CASE_FOLDERS = 16
ROW_COL = "file_row_number"
#: Prefix of a partition column's value as stored in the file, beside the folder's value.
STORED_PREFIX = "_hd_stored_"

_PROVE_ALL_UP_TO = 256  # base files in hive-style folders a plan proves whatever their size
_PROOF_MIN_BYTES = 1 << 20  # beyond that count, files at least this big (~600 KB of rows past the bloom filter)


@dataclass
class RenderStats:
    base_files: int = 0
    merged_slices: int = 0
    log_rows: int = 0
    dropped_rows: int = 0
    branches: int = 0
    notes: list[str] = field(default_factory=list)


class SqlRenderer:
    """Turns one read plan into one SQL statement.

    Every format question (which files, which schema each base file has, the
    partition values of each folder, which instants count) is answered by the
    plan; this only spells the answers in DuckDB's SQL and registers the
    plan's merges with ``lazy``.
    """

    def __init__(self, plan: ReadPlan):
        self.plan = plan
        self.schema: pa.Schema = plan.schema
        self.stats = RenderStats()
        #: the partition columns of hive-style folders, in path order
        self._hive_columns: tuple[str, ...] = ()
        self._folder_values = self._renderable_folder_values()

    # -- columns ----------------------------------------------------------------------
    def _renderable_folder_values(self) -> dict[str, dict[str, Any] | None]:
        """Each folder's partition values, when every one of them is an exact SQL literal
        of the column's type (else the files' own values are read)."""
        if not self.plan.options.extract_partition_values_from_path or not self.plan.partition_columns:
            return {}
        types = {f.name: f.type for f in self.schema}
        out: dict[str, dict[str, Any] | None] = {}
        for folder, values in self.plan.folder_values().items():
            renderable = values is not None and all(
                _duckdb_type(types[c]) and _literal_ok(values[c]) for c in self.plan.partition_columns
            )
            out[folder] = values if renderable else None
        return out

    def _projection(self) -> str:
        """Output columns, in the table schema's order."""
        return ", ".join(quote_ident(f.name) for f in self.schema)

    def _branch(
        self, scan: str, partition_dirs: dict[str, dict] | None, *conditions: str, folder: str | None = None,
        others_stored: bool = False,
    ) -> str:
        """One ``SELECT`` over ``scan``; partition columns of prunable files come from the path.

        Taking a partition value from the file's folder (as Hive and Hudi's
        partition pruning do) lets DuckDB skip whole files on a partition filter
        without opening them. The folder value is computed once per row, in an
        inner projection, and the file's own value is kept beside it for the guard.
        ``folder`` is the SQL of a row's folder (default: the folder of its file);
        with ``others_stored`` rows of folders not in ``partition_dirs`` keep their
        stored values.
        """
        if not partition_dirs:
            return f"SELECT {self._projection()} FROM {scan}{self._where_with(*conditions)}"
        inner = []
        for fld in self.schema:
            name = quote_ident(fld.name)
            if fld.name in self.plan.partition_columns:
                value = self._folder_value_sql(fld.name, partition_dirs, folder)
                if others_stored:
                    known = ", ".join(quote_literal(d) for d in sorted(partition_dirs))
                    value = f"(CASE WHEN {folder} IN ({known}) THEN {value} ELSE {name} END)"
                inner.append(f"{value} AS {name}")
                inner.append(f"{name} AS {quote_ident(STORED_PREFIX + fld.name)}")
            else:
                inner.append(name)
        inner.extend(quote_ident(c) for c in (FILENAME_COL, ROW_COL) if any(c in cond for cond in conditions))
        where = self._where_with(*conditions, self._path_value_guard())
        return f"SELECT {self._projection()} FROM (SELECT {', '.join(inner)} FROM {scan}){where}"

    def _path_value_guard(self) -> str:
        """A row check that a file's own partition values equal its folder's.

        They differ only in tables where a global index kept a record in its old
        partition while its partition column changed
        (``hoodie.*.update.partition.path=false``). Hudi then returns the file's
        value; rather than silently return the folder's, the query fails and says
        how to read such a table.
        """
        checks = [
            f"{quote_ident(name)} IS NOT DISTINCT FROM {quote_ident(STORED_PREFIX + name)}"
            for name in self.plan.partition_columns
        ]
        message = quote_literal(
            f"Hudi table {self.plan.base_uri}: a record's partition column differs from its partition folder "
            "(written with a global index and update.partition.path=false); read it with "
            "extract_partition_values_from_path := false"
        )
        return f"(CASE WHEN {' AND '.join(checks)} THEN true ELSE error({message}) END)"

    def _folder_value_sql(self, name: str, partition_dirs: dict[str, dict], folder: str | None = None) -> str:
        fld = self.schema.field(name)
        folder = folder or f"parse_dirpath({quote_ident(FILENAME_COL)})"
        if len(partition_dirs) > MAX_CASE_FOLDERS:  # one hash lookup, not a comparison per folder
            entries = ", ".join(
                f"{quote_literal(d)}: CAST({_sql_literal(values[name])} AS {_duckdb_type(fld.type)})"
                for d, values in sorted(partition_dirs.items())
            )
            return f"(MAP {{{entries}}}[{folder}])"
        cases = " ".join(
            f"WHEN {quote_literal(d)} THEN {_sql_literal(values[name])}" for d, values in sorted(partition_dirs.items())
        )
        return f"CAST(CASE {folder} {cases} END AS {_duckdb_type(fld.type)})"

    def _split_prunable(self, slices: list[FileSlice]) -> tuple[dict[str, dict], list[FileSlice], list[FileSlice]]:
        dirs: dict[str, dict] = {}
        seen: set[str] = set()
        prunable, rest = [], []
        for s in slices:
            values = self._folder_values.get(s.partition_path)
            if values is None:
                rest.append(s)
            else:
                if s.partition_path not in seen:  # one URI per folder, not per file
                    seen.add(s.partition_path)
                    dirs[self.plan.location.uri(s.partition_path)] = values
                prunable.append(s)
        return dirs, prunable, rest

    def _where_with(self, *conditions: str) -> str:
        """The commit-time filter and extra row conditions as one WHERE clause."""
        parts = [c for c in conditions if c]
        where = self._where()
        if where:
            parts.append(f"({where[len(' WHERE '):]})")
        return f" WHERE {' AND '.join(parts)}" if parts else ""

    def _where(self) -> str:
        if self.plan.commit_times is None:
            return ""
        if not self.plan.commit_times:
            return " WHERE false"
        times = ", ".join(quote_literal(t) for t in sorted(self.plan.commit_times))
        return f" WHERE {quote_ident(COMMIT_TIME)} IN ({times})"

    # -- base files grouped by the schema they were written with ----------------------
    def _group_base_files(self, slices: list[FileSlice]) -> list[tuple[list[str], bool, dict[str, dict] | None]]:
        """Base file scans to run: (files, schema evolved?, partition folders with path values)."""
        groups = []
        dirs, prunable, rest = self._split_prunable([s for s in slices if s.base_file is not None])
        table_schema = self.plan.table_schema_instants
        uri = self.plan.location.uri
        for members, partition_dirs in ((prunable, dirs), (rest, None)):
            same, other = [], []
            for s in members:
                base = s.base_file
                (same if base.instant_time in table_schema else other).append(uri(base.path))
            for files, evolved in ((same, False), (other, True)):
                if files:
                    groups.append((files, evolved, partition_dirs))
        return groups

    def _scan(self, files: list[str], evolved: bool, with_rows: bool = False) -> str:
        return scan_sql(self.schema, files, evolved, with_rows)

    # -- base files whose folders are DuckDB hive partitions -------------------------------
    # A proof reads the start of a footer (0.1-0.3 ms a file, once per process) to spare the
    # row check (a few ns a row): worth it for files holding many rows, or when there are few
    # files. Thousands of small files (a Hudi base file of a few rows is ~430 KB, nearly all
    # bloom filter) would make a first plan pay a second or more for little.
    def _split_hive(self, slices: list[FileSlice]) -> tuple[list[str], list[FileSlice]]:
        """Base files DuckDB can read with ``hive_partitioning`` (partition values from the path),
        and the other slices.

        A file qualifies when its folder is ``col=text/...`` with texts DuckDB parses back to
        exactly the folder's values, it has the table's schema, and its footer statistics prove
        that every row stores those values (then the folder's value *is* the file's value, in
        both ``extract_partition_values_from_path`` modes, and no row needs checking). DuckDB
        then prunes files on partition filters itself and aggregates per partition.
        """
        # a footer read per file: local files only (an object store would take requests for each)
        if url_protocol(self.plan.location.base_uri) not in ("file", "local"):
            return [], slices
        folders = self._hive_folders({s.partition_path for s in slices})
        if not folders:
            return [], slices
        few = sum(1 for s in slices if s.partition_path in folders) <= _PROVE_ALL_UP_TO
        if not few and not any(s.base_file is not None and s.base_file.size >= _PROOF_MIN_BYTES for s in slices):
            return [], slices
        storage = self.plan.location.open()
        hive, rest = [], []
        for s in slices:
            values = folders.get(s.partition_path)
            if values is not None and s.base_file is not None and self.plan.has_table_schema(s):
                if (few or s.base_file.size >= _PROOF_MIN_BYTES) and parquet_stats.holds_only(
                    storage, s.base_file.path, values
                ):
                    hive.append(self.plan.location.uri(s.base_file.path))
                    continue
            rest.append(s)
        return hive, rest

    def _hive_folders(self, partitions: set[str]) -> dict[str, dict[str, Any]]:
        """Partition path -> values, for the folders of ``partitions`` that are exactly DuckDB hive
        partitions."""
        if "=" in self.plan.location.files_uri or "=" in str(cache.cache_dir()):
            return {}
        types = {f.name: f.type for f in self.schema}
        out: dict[str, dict[str, Any]] = {}
        for p in self.plan.folder_partition_values:
            if p.path not in partitions or p.values is None or not p.values:
                continue
            texts = [(c, _hive_text(v)) for c, v in p.values]
            if any(t is None or c not in types or _duckdb_type(types[c]) is None for c, t in texts):
                continue
            if p.path.strip("/").split("/") == [f"{c}={t}" for c, t in texts]:
                out[p.path] = dict(p.values)
                self._hive_columns = tuple(c for c, _ in p.values)
        return out

    def _hive_scan(self, files: list[str]) -> str:
        columns = self._hive_columns
        hive_types = ", ".join(f"{quote_literal(c)}: {_duckdb_type(self.schema.field(c).type)}" for c in columns)
        first = cache.hive_schema_file(
            self.schema, tuple((c, _HIVE_PLACEHOLDER[_duckdb_type(self.schema.field(c).type)]) for c in columns)
        )
        return (
            f"read_parquet({list_literal([first] + files)}, hive_partitioning=true, hive_types={{{hive_types}}}, "
            "hive_types_autocast=false)"
        )

    # -- branches ---------------------------------------------------------------------------
    def _base_only_branches(self) -> list[str]:
        branches = []
        hive, slices = self._split_hive(self.plan.base_only_slices)
        if hive:
            self.stats.base_files += len(hive)
            branches.append(f"SELECT {self._projection()} FROM {self._hive_scan(hive)}{self._where_with()}")
        for files, evolved, dirs in self._group_base_files(slices):
            self.stats.base_files += len(files)
            branches.append(self._branch(self._scan(files, evolved), dirs))
        return branches

    def _merge_branches(self) -> list[str]:
        """Base rows of slices with logs (minus replaced ones) and their winning log rows.

        Nothing is merged here: the plan is registered with ``lazy`` and a slice
        is merged when DuckDB first reads it, so pruned partitions cost nothing.
        A merge is shared by strict and lenient plans: what it skipped is
        recorded with it and judged per plan.
        """
        if not self.plan.slices_with_logs:
            return []
        token, state = lazy.REGISTRY.register_read(self.plan)
        # merged log rows (and whole merged jobs) of one partition, by folder; of several partitions
        dirs_of: dict[bool, dict[str, dict]] = {False: {}, True: {}}
        prunable: dict[bool, list[str]] = {False: [], True: []}
        unprunable: dict[bool, list[str]] = {False: [], True: []}
        whole_partitions: set[str] = set()
        for key, members in (state.jobs or {k: (k,) for k in state.slices}).items():
            uri = lazy.logrows_uri(key, token)
            whole = key in state.whole
            # a job of slices in several partitions: its rows carry their own partition values
            folders = {state.slices[m].partition_path for m in members}
            values = self._folder_values.get(next(iter(folders))) if len(folders) == 1 else None
            if values is not None:
                dirs_of[whole][uri.rsplit("/", 1)[0]] = values
                prunable[whole].append(uri)
            else:
                unprunable[whole].append(uri)
                if whole:
                    whole_partitions.update(folders)
            self.stats.merged_slices += len(members)
        if self.plan.options.strict:
            lazy.REGISTRY.check_strict(state.job_keys, token)
        branches = []
        in_whole = {m for key in state.whole for m in state.jobs[key]}
        with_base = [s for k, s in state.slices.items() if s.base_file is not None and k not in in_whole]
        # a row's file by DuckDB's hash of its name (an integer for Python, not the name), unless
        # two of the plan's base files share a hash
        keep_function, file_of_row = lazy.KEEP_FUNCTION, quote_ident(FILENAME_COL)
        if state.file_ids() is not None:
            keep_function, file_of_row = lazy.KEEP_AT_FUNCTION, f"hash({quote_ident(FILENAME_COL)})"
        keep = f"{keep_function}({quote_literal(token)}, {file_of_row}, {ROW_COL})"
        for files, evolved, dirs in self._group_base_files(with_base):
            self.stats.base_files += len(files)
            branches.append(self._branch(self._scan(files, evolved, with_rows=True), dirs, keep))
        for files, dirs in ((prunable[False], dirs_of[False]), (unprunable[False], None)):
            if files:
                branches.append(self._branch(self._scan(files, False), dirs))
        whole_schema = whole_slices.whole_schema(self.schema)
        if prunable[True]:
            branches.append(self._branch(scan_sql(whole_schema, prunable[True], False), dirs_of[True]))
        if unprunable[True]:
            branches.append(self._whole_branch(scan_sql(whole_schema, unprunable[True], False), whole_partitions))
        return branches

    def _whole_branch(self, scan: str, partitions: set[str]) -> str:
        """Rows of whole merged jobs of several partitions: partition values from each row's
        partition path, checked as for base files (folders without values keep the stored ones)."""
        dirs = {p: self._folder_values[p] for p in partitions if self._folder_values.get(p) is not None}
        folder = quote_ident(whole_slices.PARTITION_COL)
        return self._branch(scan, dirs, folder=folder, others_stored=len(dirs) < len(partitions))

    def render(self) -> str:
        branches = self._base_only_branches() + self._merge_branches()
        self.stats.branches = len(branches)
        if not branches:
            sql = f"SELECT {self._projection()} FROM read_parquet({quote_literal(cache.schema_file(self.schema))})"
        else:
            sql = "\nUNION ALL\n".join(branches)
        if self.plan.filters:
            sql = f"SELECT * FROM ({sql}) WHERE {filters_sql(self.plan.filters)}"
        return sql


def scan_sql(schema: pa.Schema, files: list[str], evolved: bool, with_rows: bool = False) -> str:
    """``read_parquet`` of files bound to ``schema`` (an empty file with it comes first), with the
    file name in ``FILENAME_COL``; files of other schemas (``evolved``) are read by name."""
    options = [f"filename={quote_literal(FILENAME_COL)}"]
    if evolved:
        options.append("union_by_name=true")
    if with_rows:
        options.append("file_row_number=true")
    paths = [cache.schema_file(schema)] + files
    return f"read_parquet({list_literal(paths)}, {', '.join(options)})"


def filters_sql(filters: Iterable[ColumnFilter]) -> str:
    """The conjunction of a plan's filters as a SQL condition."""
    return " AND ".join(f"{quote_ident(f.column)} {f.op} {_filter_literal(f.value)}" for f in filters)


def _filter_literal(value: object) -> str:
    import datetime as _dt
    import decimal
    import math

    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"CAST({quote_literal(repr(value))} AS DOUBLE)"
    if isinstance(value, decimal.Decimal):
        return f"CAST({quote_literal(str(value))} AS DECIMAL(38, {max(0, -value.as_tuple().exponent)}))"
    if isinstance(value, _dt.datetime):
        kind = "TIMESTAMPTZ" if value.tzinfo is not None else "TIMESTAMP"
        return f"{kind} {quote_literal(value.isoformat(sep=' '))}"
    return _sql_literal(value)


_DUCKDB_TYPES = {
    pa.string(): "VARCHAR",
    pa.large_string(): "VARCHAR",
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.bool_(): "BOOLEAN",
    pa.date32(): "DATE",
}


def _duckdb_type(dtype: pa.DataType) -> str | None:
    if pa.types.is_decimal(dtype):
        return f"DECIMAL({dtype.precision}, {dtype.scale})"
    return _DUCKDB_TYPES.get(dtype)


#: The hive value of the empty schema file's folder, per type (any value of the type: the file has no rows).
_HIVE_PLACEHOLDER = {
    "VARCHAR": "x", "TINYINT": "0", "SMALLINT": "0", "INTEGER": "0", "BIGINT": "0", "DATE": "1970-01-01",
}
_HIVE_TEXT = re.compile(r"[A-Za-z0-9_.-]+")


def _hive_text(value: object) -> str | None:
    """How a hive folder spells ``value`` so that DuckDB reads back exactly ``value``; None: no such spelling
    (no escapes, nothing DuckDB reads as NULL)."""
    import datetime as _dt

    if isinstance(value, bool) or isinstance(value, _dt.datetime):
        return None
    if isinstance(value, (str, int, _dt.date)):
        text = value.isoformat() if isinstance(value, _dt.date) else str(value)
        if _HIVE_TEXT.fullmatch(text) and text.upper() not in ("NULL", "__HIVE_DEFAULT_PARTITION__"):
            return text
    return None


def _literal_ok(value: object) -> bool:
    """Values that render as exact SQL literals (datetimes are left to the files)."""
    import datetime as _dt
    import decimal

    if isinstance(value, _dt.datetime):
        return False
    return value is None or isinstance(value, (str, int, bool, _dt.date, decimal.Decimal))


def _sql_literal(value: object) -> str:
    import datetime as _dt

    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    return quote_literal(str(value))
