"""Inspection views: a table's timeline, plans and files as typed Arrow tables.

Each view is the Hudi CLI's ``commits show``, ``compaction show``, ``show
logfile metadata`` ... as rows: built in Python from the core's typed timeline
payloads, then handed to DuckDB (``hudi_*`` table functions) or returned to
Python callers (``HudiTableReader``). Instant times stay ``VARCHAR`` in Hudi's
``yyyyMMddHHmmssSSS`` form: they join with ``_hoodie_commit_time``, compare in
time order, and their time zone is the table's (``hoodie.table.timeline.timezone``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import pyarrow as pa

from ...core.errors import HudiError
from ...core.table.read_plan import parse_query_time
from ...core.table.table import HudiTable


@dataclass(frozen=True)
class ViewArgs:
    """The arguments a view takes: an instant time (``as_of`` / ``instant``) and the archive switch."""

    time: str | None = None
    include_archived: bool = False


#: What a view's rows depend on, which decides how its result is cached.
TIMELINE = "timeline"  # timeline (and archive) files only: cached by their names
LOG_FILES = "log_files"  # also every log file: cached by their names and sizes
FILES = "files"  # also the data files a snapshot lists: cached by the rows' content


@dataclass(frozen=True)
class View:
    name: str  # the SQL function is hudi_<name>
    schema: pa.Schema
    rows: Callable[[HudiTable, ViewArgs], Iterable[dict[str, Any]]]
    depends_on: str = TIMELINE
    #: Name of the time argument in SQL and Python (``as_of`` / ``instant``), if the view takes one.
    time_arg: str | None = None
    archive_arg: bool = False

    def build(self, table: HudiTable, args: ViewArgs) -> pa.Table:
        return pa.Table.from_pylist(list(self.rows(table, args)), schema=self.schema)

    def normalized(self, args: ViewArgs, table_path: str) -> ViewArgs:
        """Arguments with the instant time in Hudi's 17-digit form (the read functions'
        rules and errors); arguments the view does not take are dropped."""
        archived = bool(args.include_archived) and self.archive_arg
        if self.time_arg is None:
            return ViewArgs(None, archived)
        return ViewArgs(parse_query_time(self.time_arg, args.time, table_path), archived)


def schema(*columns: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, dtype) for name, dtype in columns])


STRING = pa.string()
BIGINT = pa.int64()
INT = pa.int32()
BOOL = pa.bool_()
DOUBLE = pa.float64()
STRINGS = pa.list_(STRING)
STRING_MAP = pa.map_(STRING, STRING)
DOUBLE_MAP = pa.map_(STRING, DOUBLE)
TIMESTAMP_TZ = pa.timestamp("us", tz="UTC")


def _registry() -> dict[str, View]:
    from . import files, history, services, timeline

    views: dict[str, View] = {}
    for module in (timeline, files, services, history):
        for view in module.VIEWS:
            views[view.name] = view
    return views


_VIEWS: dict[str, View] | None = None


def views() -> dict[str, View]:
    """Every inspection view by name."""
    global _VIEWS
    if _VIEWS is None:
        _VIEWS = _registry()
    return _VIEWS


def get_view(name: str) -> View:
    found = views().get(name)
    if found is None:
        raise HudiError(f"unknown Hudi inspection view {name!r}; known: {', '.join(sorted(views()))}")
    return found


def build_view(name: str, table: HudiTable, args: ViewArgs | None = None) -> pa.Table:
    """The rows of one view as an Arrow table with the view's exact schema."""
    view = get_view(name)
    return view.build(table, view.normalized(args or ViewArgs(), table.base_uri))
