"""The ``hudi_*`` inspection functions: a view's rows as a cached parquet file DuckDB scans.

A view (``views``) is built as an Arrow table with exact types, written once
into the cache folder, and the table function becomes ``SELECT * FROM
read_parquet('<file>')``: thousands of rows cost one file, and DuckDB reads
lists, maps and timestamps with their types. Files are content-addressed: views
of the timeline are keyed by the timeline's (and archive's) file names, so a
repeated query reads nothing but the timeline listing; the log-block dump is
keyed by the log files' names and sizes; views of the latest file slices by
their content. They follow the cache's rules (``cache.py``): sealed, checked
before DuckDB reads them, rebuilt when damaged, evicted least recently used.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

import pyarrow as pa

from ..core.errors import HudiError
from ..core.table.table import HudiTable
from . import cache
from .sql import quote_literal
from .views import FILES, LOG_FILES, View, ViewArgs, build_view, get_view, views
from .views.files import list_log_files, log_files_signature

log = logging.getLogger("hudi_duck")

#: Bump when a view's rows or schema change meaning, so cached files are rebuilt.
VIEW_FORMAT = 1


def kinds() -> frozenset[str]:
    """``hudi_duck_plan`` kinds served here (``hudi_<kind>`` in SQL)."""
    return frozenset(views())


def timeline_signature(table: HudiTable) -> list[str]:
    """Changes whenever an instant (savepoints included) appears, moves on or vanishes."""
    timeline = table.timeline
    layout = timeline.layout_version
    return [i.file_name(layout) for i in timeline.instants] + [i.file_name(layout) for i in timeline.savepoint_instants]


def archive_signature(table: HudiTable) -> list[tuple[str, int]]:
    folder = table.config.archive_path
    try:
        entries = table.storage.list(folder)
    except (FileNotFoundError, OSError):
        return []
    return sorted((e.path, e.size) for e in entries if not e.is_dir)


def _key(view: View, table: HudiTable, args: ViewArgs) -> str | None:
    """Cache key from what the view's rows depend on; None when only its rows can tell."""
    parts: list[Any] = [VIEW_FORMAT, view.name, args.time, args.include_archived, table.base_uri]
    parts += [sorted(table.config.props.items()), view.schema.to_string(), timeline_signature(table)]
    if args.include_archived:
        parts.append(archive_signature(table))
    if view.depends_on == LOG_FILES:
        parts.append(log_files_signature(list_log_files(table)))
    elif view.depends_on == FILES:
        return None
    return cache.digest("inspect", *parts)


def _content_key(view: View, data: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    return cache.digest("inspect", VIEW_FORMAT, view.name, hashlib.sha1(sink.getvalue().to_pybytes()).hexdigest())


def view_file(kind: str, table: HudiTable, args: ViewArgs) -> str:
    """The cached parquet file holding a view's rows (built on first use)."""
    view = get_view(kind)
    args = view.normalized(args, table.base_uri)
    started = time.perf_counter()
    key = _key(view, table, args)
    if key is not None:
        path = cache.cached_parquet(key, "inspect", lambda: view.build(table, args))
    else:
        data = view.build(table, args)
        path = cache.cached_parquet(_content_key(view, data), "inspect", lambda: data)
    log.info("hudi_%s %s in %.3fs", kind, table.base_uri, time.perf_counter() - started)
    return path


def plan_sql(
    kind: str,
    path: str,
    time_arg: str | None,
    include_archived: bool | None,
    options: dict[str, Any],
    metadata_enable: bool = True,
) -> str:
    """SQL for ``hudi_<kind>(path, ...)``: a scan of the view's cached parquet file; file
    listings come from the metadata table unless ``metadata_enable`` is false."""
    if kind not in kinds():
        raise HudiError(f"unknown Hudi function kind {kind!r}")
    table = HudiTable(path, options, metadata_enable=metadata_enable)
    file = view_file(kind, table, ViewArgs(time_arg, bool(include_archived)))
    return f"SELECT * FROM read_parquet({quote_literal(file)})"


def inspect(table: HudiTable, kind: str, time_arg: str | None = None, include_archived: bool = False) -> pa.Table:
    """A view's rows as an Arrow table (the Python API; same rows as SQL)."""
    return build_view(kind, table, ViewArgs(time_arg, include_archived))
