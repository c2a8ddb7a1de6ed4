"""Plan a query with the core and render it as SQL for DuckDB."""

from __future__ import annotations

import logging
import time
from typing import Any

from ..core.table.read_plan import ReadPlan, parse_query_time, plan_incremental, plan_read_optimized, plan_snapshot
from ..core.table.table import HudiTable
from . import cache
from .sql import SqlRenderer

log = logging.getLogger("hudi_duck")


def timeline_signature(table: HudiTable) -> str:
    """Changes whenever an instant appears, completes or vanishes."""
    names = [i.file_name(table.timeline.layout_version) for i in table.timeline.instants]
    return cache.digest(names)


def make_plan(kind: str, table: HudiTable, first: str | None, second: str | None) -> ReadPlan:
    if kind == "snapshot":
        return plan_snapshot(table, as_of=first)
    if kind == "read_optimized":
        return plan_read_optimized(table, as_of=first)
    if kind == "incremental":
        return plan_incremental(table, begin=first, end=second)
    raise ValueError(f"unknown query kind {kind!r}")


def check_times(kind: str, path: str, first: str | None, second: str | None) -> None:
    """Refuse a bad time argument before the table is opened (the error names path, argument and value)."""
    names = {"snapshot": ("as_of",), "read_optimized": ("as_of",), "incremental": ("begin_time", "end_time")}
    for what, value in zip(names.get(kind, ()), (first, second)):
        parse_query_time(what, value, path)


def render_plan(plan: ReadPlan, values_from_path: bool = True, strict: bool = False) -> str:
    """SQL for a plan; ``values_from_path`` mirrors Hudi's
    ``hoodie.datasource.read.extract.partition.values.from.path``; a ``strict``
    plan fails on a corrupt log block instead of skipping it."""
    started = time.perf_counter()
    renderer = SqlRenderer(plan, timeline_signature(plan.table), values_from_path, strict)
    sql = renderer.render()
    stats = renderer.stats
    log.info(
        "%s %s: %d base files, %d merged slices in %.3fs",
        plan.query_type.value,
        plan.table.base_uri,
        stats.base_files,
        stats.merged_slices,
        time.perf_counter() - started,
    )
    return sql


def plan_sql(
    kind: str,
    path: str,
    first: str | None,
    second: str | None,
    options: dict[str, Any],
    values_from_path: bool = True,
    strict: bool = False,
) -> str:
    check_times(kind, path, first, second)
    table = HudiTable(path, options)
    return render_plan(make_plan(kind, table, first, second), values_from_path, strict)
