"""Plan a query with the core and render it as SQL for DuckDB."""

from __future__ import annotations

import logging
import time
from typing import Any

from ..core.table.read_plan import (
    ReadOptions,
    ReadPlan,
    parse_query_time,
    plan_incremental,
    plan_read_optimized,
    plan_snapshot,
)
from ..core.table.filters import FilterSpec
from ..core.table.table import HudiTable
from .sql import SqlRenderer

log = logging.getLogger("hudi_duck")


def make_plan(
    kind: str,
    table: HudiTable,
    first: str | None,
    second: str | None,
    options: ReadOptions = ReadOptions(),
    filters: FilterSpec = None,
) -> ReadPlan:
    if kind == "snapshot":
        return plan_snapshot(table, as_of=first, options=options, filters=filters)
    if kind == "read_optimized":
        return plan_read_optimized(table, as_of=first, options=options, filters=filters)
    if kind == "incremental":
        return plan_incremental(table, begin=first, end=second, options=options, filters=filters)
    raise ValueError(f"unknown query kind {kind!r}")


def check_times(kind: str, path: str, first: str | None, second: str | None) -> None:
    """Refuse a bad time argument before the table is opened (the error names path, argument and value)."""
    names = {"snapshot": ("as_of",), "read_optimized": ("as_of",), "incremental": ("begin_time", "end_time")}
    for what, value in zip(names.get(kind, ()), (first, second)):
        parse_query_time(what, value, path)


def render_plan(plan: ReadPlan) -> str:
    """SQL for a plan (its options say where partition values come from and whether
    a corrupt log block fails the read)."""
    started = time.perf_counter()
    renderer = SqlRenderer(plan)
    sql = renderer.render()
    stats = renderer.stats
    log.info(
        "%s %s: %d base files, %d merged slices in %.3fs",
        plan.query_type.value,
        plan.base_uri,
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
    metadata_enable: bool = True,
    filters: FilterSpec = None,
) -> str:
    """SQL of ``hudi_<kind>(path, ...)``; ``options`` are the storage options, ``values_from_path``
    Hudi's ``hoodie.datasource.read.extract.partition.values.from.path``, ``metadata_enable``
    Hudi's ``hoodie.metadata.enable``, ``filters`` the read's filters (see ``core/table/filters.py``)."""
    check_times(kind, path, first, second)
    table = HudiTable(path, options, metadata_enable=metadata_enable)
    read_options = ReadOptions(
        extract_partition_values_from_path=values_from_path, strict=strict, metadata_enable=metadata_enable
    )
    return render_plan(make_plan(kind, table, first, second, read_options, filters))
