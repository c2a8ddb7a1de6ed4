"""Python API: Hudi reads as Arrow record batch readers, no SQL needed.

Each read plans with the core and runs the same SQL the DuckDB table functions
run, on a private DuckDB connection, so results are identical.
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from .core.config.read_settings import MergeMemory
from .core.table.filters import FilterSpec
from .core.table.read_plan import QueryType, ReadOptions, ReadPlan, plan_fresh
from .core.table.table import HudiTable
from .duck.inspect import inspect as _inspect
from .duck.planner import make_plan, render_plan
from .duck.sql import quote_ident


def _execute(
    sql: str, columns: Sequence[str] | None, filter_sql: str | None, table: HudiTable, filesystems: list[Any] | None
) -> pa.RecordBatchReader:
    from .duck import connect
    from .duck.object_store import ReadStorage

    con = connect(filesystems=filesystems)
    ReadStorage(con).prepare(table.storage)
    projection = ", ".join(quote_ident(c) for c in columns) if columns else "*"
    where = f" WHERE {filter_sql}" if filter_sql else ""
    query = f"SELECT {projection} FROM ({sql}){where}"
    return arrow_reader(con.sql(query))


def arrow_reader(relation: Any) -> pa.RecordBatchReader:
    """A record batch reader over a DuckDB relation (DuckDB 1.x and 2.x spell it differently)."""
    for name in ("to_arrow_reader", "fetch_arrow_reader", "fetch_record_batch"):
        method = getattr(relation, name, None)
        if method is not None:
            return method()
    raise AttributeError("this DuckDB version offers no Arrow reader on query results")


def arrow_table(relation: Any) -> pa.Table:
    """An Arrow table of a DuckDB relation (``con.sql(...)``), on DuckDB 1.x and 2.x."""
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        method = getattr(relation, name, None)
        if method is not None:
            return method()
    raise AttributeError("this DuckDB version offers no Arrow table on query results")


class HudiTableReader:
    """A table opened for reading from Python (notebook-friendly ``repr``).

    ``strict``: fail with :class:`CorruptFileError` on a corrupt log block
    instead of skipping it (with a warning) as Apache Hudi does.
    ``metadata_enable`` (Hudi's ``hoodie.metadata.enable``): plan from the
    table's metadata table when it has one; false lists the table's folders.
    ``memory_merge_max_size`` and ``memory_spillable_map_path`` (Hudi's
    ``hoodie.memory.merge.max.size``, bytes or e.g. ``'2GiB'``, and
    ``hoodie.memory.spillable.map.path``): what one file slice's merge holds in
    memory before it spills, and where the spill files go.

    The reads take ``filter``, a SQL condition DuckDB applies to the rows, and
    ``filters``, ``(column, op, value)`` tuples or a string ``"city = sf AND
    fare > 10"`` known while planning: only rows passing them are returned, and
    files the metadata table's statistics rule out are never opened.
    """

    def __init__(
        self,
        path: str,
        storage_options: dict[str, Any] | None = None,
        filesystems: list[Any] | None = None,
        extract_partition_values_from_path: bool = True,
        strict: bool = False,
        metadata_enable: bool = True,
        memory_merge_max_size: int | str | None = None,
        memory_spillable_map_path: str | None = None,
    ):
        self.merge_memory = MergeMemory.of(memory_merge_max_size, memory_spillable_map_path)
        self.table = HudiTable(path, storage_options, metadata_enable=metadata_enable)
        self.filesystems = filesystems
        self.extract_partition_values_from_path = extract_partition_values_from_path
        self.strict = strict
        self.metadata_enable = metadata_enable

    @property
    def options(self) -> ReadOptions:
        return ReadOptions(self.extract_partition_values_from_path, self.strict, self.metadata_enable, self.merge_memory)

    def plan(
        self,
        kind: str = QueryType.SNAPSHOT.value,
        first: str | None = None,
        second: str | None = None,
        filters: FilterSpec = None,
    ) -> ReadPlan:
        """The read plan of a query (``kind``: snapshot, read_optimized, incremental; times as
        the read methods take them): a value, the same one the SQL functions run."""

        def reopen() -> HudiTable:  # a fresh listing replaces the opened table's
            self.table = HudiTable(
                self.table.base_uri, self.table.storage.storage_options, metadata_enable=self.metadata_enable
            )
            return self.table

        return plan_fresh(reopen, lambda table: make_plan(kind, table, first, second, self.options, filters), self.table)

    def _read(self, kind: str, first: str | None, second: str | None, columns, filter, filters) -> pa.RecordBatchReader:
        sql = render_plan(self.plan(kind, first, second, filters))
        return _execute(sql, columns, filter, self.table, self.filesystems)

    def snapshot(
        self,
        as_of: str | None = None,
        columns: Sequence[str] | None = None,
        filter: str | None = None,
        filters: FilterSpec = None,
    ) -> pa.RecordBatchReader:
        return self._read(QueryType.SNAPSHOT.value, as_of, None, columns, filter, filters)

    def read_optimized(
        self,
        as_of: str | None = None,
        columns: Sequence[str] | None = None,
        filter: str | None = None,
        filters: FilterSpec = None,
    ) -> pa.RecordBatchReader:
        return self._read(QueryType.READ_OPTIMIZED.value, as_of, None, columns, filter, filters)

    def incremental(
        self,
        begin_time: str | None = None,
        end_time: str | None = None,
        columns: Sequence[str] | None = None,
        filter: str | None = None,
        filters: FilterSpec = None,
    ) -> pa.RecordBatchReader:
        """Records committed in ``(begin_time, end_time]``; ``begin_time`` None, ``'000'``
        or ``'earliest'`` starts at the first commit."""
        return self._read(QueryType.INCREMENTAL.value, begin_time, end_time, columns, filter, filters)

    # -- inspection views (the hudi_* inspection functions; see README) -------------------------
    def timeline(self) -> list[dict[str, Any]]:
        """One dict per instant (the rows of ``hudi_timeline``)."""
        return _inspect(self.table, "timeline").to_pylist()

    def file_slices(self, as_of: str | None = None) -> list[dict[str, Any]]:
        """One dict per file slice a snapshot reads (the rows of ``hudi_file_slices``)."""
        return _inspect(self.table, "file_slices", as_of).to_pylist()

    def inspect(self, view: str, time: str | None = None, include_archived: bool = False) -> pa.Table:
        """Any inspection view by name (``"commits"``, ``"log_blocks"`` ...) as a ``pyarrow.Table``."""
        return _inspect(self.table, view, time, include_archived)

    def commits(self, include_archived: bool = False) -> pa.Table:
        """One row per write instant with its write statistics (``hudi_commits``)."""
        return _inspect(self.table, "commits", include_archived=include_archived)

    def commit_files(self, instant: str | None = None, include_archived: bool = False) -> pa.Table:
        """One row per file a commit wrote (``hudi_commit_files``)."""
        return _inspect(self.table, "commit_files", instant, include_archived)

    def partitions(self, as_of: str | None = None) -> pa.Table:
        """One row per partition of the snapshot (``hudi_partitions``)."""
        return _inspect(self.table, "partitions", as_of)

    def compactions(self) -> pa.Table:
        """One row per compaction operation, pending or completed (``hudi_compactions``)."""
        return _inspect(self.table, "compactions")

    def clustering(self) -> pa.Table:
        """One row per clustering input file slice (``hudi_clustering``)."""
        return _inspect(self.table, "clustering")

    def cleans(self) -> pa.Table:
        """One row per clean (``hudi_cleans``)."""
        return _inspect(self.table, "cleans")

    def clean_partitions(self) -> pa.Table:
        """One row per partition of each clean (``hudi_clean_partitions``)."""
        return _inspect(self.table, "clean_partitions")

    def rollbacks(self) -> pa.Table:
        """One row per rollback (``hudi_rollbacks``)."""
        return _inspect(self.table, "rollbacks")

    def rollback_files(self) -> pa.Table:
        """One row per file a rollback touched (``hudi_rollback_files``)."""
        return _inspect(self.table, "rollback_files")

    def savepoints(self) -> pa.Table:
        """One row per savepoint (``hudi_savepoints``)."""
        return _inspect(self.table, "savepoints")

    def schema_columns(self, as_of: str | None = None) -> pa.Table:
        """One row per column of the schema, latest or as of an instant (``hudi_schema``)."""
        return _inspect(self.table, "schema", as_of)

    def schema_history(self, include_archived: bool = False) -> pa.Table:
        """One row per commit that changed the schema (``hudi_schema_history``)."""
        return _inspect(self.table, "schema_history", include_archived=include_archived)

    def log_blocks(self) -> pa.Table:
        """One row per log block of every log file (``hudi_log_blocks``)."""
        return _inspect(self.table, "log_blocks")

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    def __repr__(self) -> str:
        cfg = self.table.config
        latest = self.table.timeline.latest_completed_write
        return (
            f"<Hudi table {cfg.name!r} at {self.table.base_uri}: {cfg.table_type.value}, version {cfg.version}, "
            f"{len(self.table.timeline)} instants, latest commit "
            f"{latest.requested_time if latest else None}, partitioned by {cfg.partition_fields or 'nothing'}>"
        )

    def _repr_html_(self) -> str:
        import html

        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in self.summary().items()
        )
        return f"<table>{rows}</table>"

    def summary(self) -> dict[str, Any]:
        cfg = self.table.config
        latest = self.table.timeline.latest_completed_write
        return {
            "name": cfg.name,
            "path": self.table.base_uri,
            "type": cfg.table_type.value,
            "table version": cfg.version,
            "record key": ",".join(cfg.record_key_fields),
            "partition fields": ",".join(cfg.partition_fields) or "-",
            "ordering field": ",".join(cfg.ordering_fields) or "-",
            "instants": len(self.table.timeline),
            "latest commit": latest.requested_time if latest else "-",
            "columns": len(self.table.schema),
        }


def open_table(
    path: str,
    storage_options: dict[str, Any] | None = None,
    filesystems: list[Any] | None = None,
    extract_partition_values_from_path: bool = True,
    strict: bool = False,
    metadata_enable: bool = True,
    memory_merge_max_size: int | str | None = None,
    memory_spillable_map_path: str | None = None,
) -> HudiTableReader:
    """Open a table for Python reads (see the SQL functions for the partition-values, strict,
    metadata_enable and merge memory switches)."""
    return HudiTableReader(
        path,
        storage_options,
        filesystems,
        extract_partition_values_from_path,
        strict,
        metadata_enable,
        memory_merge_max_size,
        memory_spillable_map_path,
    )


def read_snapshot(path: str, as_of: str | None = None, columns: Sequence[str] | None = None, filter: str | None = None, storage_options: dict[str, Any] | None = None, filesystems: list[Any] | None = None, strict: bool = False, metadata_enable: bool = True, filters: FilterSpec = None, memory_merge_max_size: int | str | None = None, memory_spillable_map_path: str | None = None) -> pa.RecordBatchReader:
    """Latest (or as-of) snapshot of a table as a ``pyarrow.RecordBatchReader``."""
    reader = open_table(path, storage_options, filesystems, strict=strict, metadata_enable=metadata_enable,
                        memory_merge_max_size=memory_merge_max_size, memory_spillable_map_path=memory_spillable_map_path)
    return reader.snapshot(as_of, columns, filter, filters)


def read_read_optimized(path: str, as_of: str | None = None, columns: Sequence[str] | None = None, filter: str | None = None, storage_options: dict[str, Any] | None = None, filesystems: list[Any] | None = None, metadata_enable: bool = True, filters: FilterSpec = None) -> pa.RecordBatchReader:
    """Base files only (read-optimized view) as a ``pyarrow.RecordBatchReader``."""
    reader = open_table(path, storage_options, filesystems, metadata_enable=metadata_enable)
    return reader.read_optimized(as_of, columns, filter, filters)


def read_incremental(path: str, begin_time: str | None = None, end_time: str | None = None, columns: Sequence[str] | None = None, filter: str | None = None, storage_options: dict[str, Any] | None = None, filesystems: list[Any] | None = None, strict: bool = False, metadata_enable: bool = True, filters: FilterSpec = None, memory_merge_max_size: int | str | None = None, memory_spillable_map_path: str | None = None) -> pa.RecordBatchReader:
    """Records committed in ``(begin_time, end_time]`` as a ``pyarrow.RecordBatchReader``
    (``begin_time`` None, ``'000'`` or ``'earliest'``: from the first commit)."""
    reader = open_table(path, storage_options, filesystems, strict=strict, metadata_enable=metadata_enable,
                        memory_merge_max_size=memory_merge_max_size, memory_spillable_map_path=memory_spillable_map_path)
    return reader.incremental(begin_time, end_time, columns, filter, filters)


def inspect_table(
    path: str,
    view: str,
    time: str | None = None,
    include_archived: bool = False,
    storage_options: dict[str, Any] | None = None,
    metadata_enable: bool = True,
) -> pa.Table:
    """An inspection view of a table as a ``pyarrow.Table``: ``inspect_table(path, "commits")``
    gives the rows of ``hudi_commits(path)``; ``time`` is the view's ``as_of`` / ``instant``."""
    return _inspect(HudiTable(path, storage_options, metadata_enable=metadata_enable), view, time, include_archived)
