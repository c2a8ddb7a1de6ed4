"""Registering the ``hudi_*`` table functions on a DuckDB connection."""

from __future__ import annotations

import threading
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from ..core.config.read_settings import MergeMemory
from ..core.errors import HudiError
from ..core.storage.storage import options_for
from . import inspect as inspection
from . import lazy
from .avro import register_duckdb_avro
from .object_store import ReadStorage
from .planner import plan_sql, storage_for

PLAN_FUNCTION = "hudi_duck_plan"
#: ``hudi_duck_plan`` for the inspection functions that list files, plus ``metadata_enable``.
INSPECT_FUNCTION = "hudi_duck_inspect"
#: The reads' planner: ``hudi_duck_plan``'s arguments plus read options (``strict``,
#: ``metadata_enable``, ``filters``, the merge's memory budget and spill folder).
READ_FUNCTION = "hudi_duck_read"


def _macro_sql() -> str:
    """The macro definitions: every ``sql/*.sql`` file, in name order (packaged as
    ``hudi_duck/sql``, or the source tree's ``sql`` folder)."""
    folders = []
    try:
        folders.append(resources.files("hudi_duck").joinpath("sql"))
    except (FileNotFoundError, ModuleNotFoundError):
        pass
    folders.append(Path(__file__).resolve().parents[2] / "sql")
    for folder in folders:
        try:
            files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql") and f.is_file()), key=lambda f: f.name)
        except (FileNotFoundError, NotADirectoryError, OSError):
            continue
        if files:
            return "\n".join(f.read_text() for f in files)
    raise HudiError("hudi-duck is installed without its SQL macro files (hudi_duck/sql/*.sql); reinstall the package")


class _Planner:
    """The Python side of ``hudi_duck_plan``: returns SQL for one call."""

    def __init__(self, storage_options: dict[str, Any] | None, reads: ReadStorage):
        self.storage_options = storage_options or {}
        self.reads = reads
        self.lock = threading.Lock()

    def __call__(
        self, kind: str | None, path: str | None, first: str | None, second: str | None, values_from_path: bool | None = True
    ) -> str:
        return self.inspect(kind, path, first, second, values_from_path, True)

    def inspect(
        self,
        kind: str | None,
        path: str | None,
        first: str | None,
        second: str | None,
        values_from_path: bool | None,
        metadata_enable: bool | None,
    ) -> str:
        """``hudi_duck_inspect``: ``hudi_duck_plan`` with Hudi's ``hoodie.metadata.enable``."""
        if path is None:
            raise HudiError(f"{kind or 'hudi'}: the table path is NULL")
        options = self._options_for(path)
        use_metadata = metadata_enable is not False
        if kind in ("snapshot", "read_optimized", "incremental"):
            self.reads.prepare(storage_for(path, options))
        with self.lock:
            if kind in ("snapshot", "read_optimized", "incremental"):
                return plan_sql(kind, path, first, second, options, values_from_path is not False, metadata_enable=use_metadata)
            if kind in inspection.kinds():
                return inspection.plan_sql(kind, path, first, values_from_path, options, use_metadata)
        raise HudiError(f"unknown Hudi function kind {kind!r}")

    def read(
        self,
        kind: str | None,
        path: str | None,
        first: str | None,
        second: str | None,
        values_from_path: bool | None,
        strict: bool | None,
        metadata_enable: bool | None = True,
        filters: str | None = None,
        merge_max_size: str | None = None,
        spill_path: str | None = None,
    ) -> str:
        """``hudi_duck_read``: SQL of a snapshot, read-optimized or incremental read."""
        if path is None:
            raise HudiError(f"hudi_{kind or 'read'}: the table path is NULL")
        if kind not in ("snapshot", "read_optimized", "incremental"):
            raise HudiError(f"unknown Hudi read kind {kind!r}")
        try:
            memory = MergeMemory.of(merge_max_size, spill_path)
        except ValueError as exc:
            raise HudiError(f"hudi_{kind} {path}: {exc}") from None
        options = self._options_for(path)
        self.reads.prepare(storage_for(path, options))
        with self.lock:
            return plan_sql(
                kind,
                path,
                first,
                second,
                options,
                values_from_path is not False,
                strict is True,
                metadata_enable is not False,
                filters,
                memory,
            )

    def _options_for(self, path: str) -> dict[str, Any]:
        return options_for(self.storage_options, path)


def register(
    con: duckdb.DuckDBPyConnection,
    storage_options: dict[str, Any] | None = None,
    filesystems: list[Any] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Register the ``hudi_*`` table functions on ``con``: the reads (``hudi_snapshot``,
    ``hudi_read_optimized``, ``hudi_incremental``) and the inspection views
    (``hudi_timeline``, ``hudi_commits``, ``hudi_log_blocks`` ...; see README).

    ``storage_options`` are fsspec options (per protocol, e.g. ``{"s3": {...}}``,
    or flat): the planner opens tables with them and DuckDB reads the tables' files
    with the same ones (``object_store``). ``filesystems`` are fsspec filesystem
    instances DuckDB should read through instead (e.g. a ``memory://`` filesystem).
    """
    register_duckdb_avro()
    for fs in filesystems or []:
        con.register_filesystem(fs)
    if lazy.PROTOCOL not in con.list_filesystems():
        con.register_filesystem(lazy.LazySliceFileSystem())
    planner = _Planner(storage_options, ReadStorage(con))
    lazy.hash_on(con)
    for name in (PLAN_FUNCTION, INSPECT_FUNCTION, READ_FUNCTION, lazy.KEEP_FUNCTION, lazy.KEEP_AT_FUNCTION):
        try:
            con.remove_function(name)
        except Exception:
            pass
    # the base-row filters of merged slices: a row's file by name, or by DuckDB's hash of it
    for name, function, file_type in (
        (lazy.KEEP_FUNCTION, lazy.keep_rows, "VARCHAR"),
        (lazy.KEEP_AT_FUNCTION, lazy.keep_rows_by_id, "UBIGINT"),
    ):
        con.create_function(
            name, function, ["VARCHAR", file_type, "BIGINT"], "BOOLEAN",
            type="arrow", null_handling="special", side_effects=False,
        )
    con.create_function(
        PLAN_FUNCTION,
        planner,
        ["VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "BOOLEAN"],
        "VARCHAR",
        null_handling="special",
        exception_handling="default",
        side_effects=True,
    )
    con.create_function(
        INSPECT_FUNCTION,
        planner.inspect,
        ["VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "BOOLEAN", "BOOLEAN"],
        "VARCHAR",
        null_handling="special",
        exception_handling="default",
        side_effects=True,
    )
    con.create_function(
        READ_FUNCTION,
        planner.read,
        ["VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "BOOLEAN", "BOOLEAN", "BOOLEAN", "VARCHAR", "VARCHAR", "VARCHAR"],
        "VARCHAR",
        null_handling="special",
        exception_handling="default",
        side_effects=True,
    )
    con.execute(_macro_sql())
    return con


def connect(
    database: str = ":memory:",
    storage_options: dict[str, Any] | None = None,
    filesystems: list[Any] | None = None,
    **kwargs: Any,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the ``hudi_*`` table functions registered.

    DuckDB's ``parquet_metadata_cache`` is on unless ``config`` sets it: a Hudi base file's
    footer carries the bloom filter of its record keys (hundreds of KB, even for a few rows),
    and parsing it again on every query costs more than scanning a small file's rows.
    Base files are never changed once written, so parsed footers stay valid."""
    con = duckdb.connect(database, **kwargs)
    if "parquet_metadata_cache" not in (kwargs.get("config") or {}):
        con.execute("SET parquet_metadata_cache = true")
    return register(con, storage_options, filesystems)
