"""Plan a query with the core and render it as SQL for DuckDB."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..core.config.read_settings import MergeMemory
from ..core.table.read_plan import (
    ReadOptions,
    ReadPlan,
    parse_query_time,
    plan_fresh,
    plan_incremental,
    plan_read_optimized,
    plan_snapshot,
)
from ..core.storage import kept
from ..core.storage.storage import Storage, get_storage
from ..core.table.filters import FilterSpec
from ..core.table.table import HudiTable
from . import cache
from .sql import SqlRenderer


def _load_planning_modules() -> None:
    """Load what planning any table uses with the planner, as ``import hudi`` loads hudi-rs
    whole: the key generators, the metadata table's reader, the commit JSON decoder and the
    local filesystem. A query needs them all the same; a first plan no longer pays for them."""
    import fsspec.implementations.local  # noqa: F401

    from ..core import keygen  # noqa: F401
    from ..core.metadata import files_reader  # noqa: F401
    from ..core.timeline import commit_metadata

    commit_metadata._json_decoder()


_load_planning_modules()
# what a process learnt of a table's files (commit summaries, checked plans, the metadata
# table's listing) is kept in the cache for the next process
kept.use_store(cache.KeptFiles())

log = logging.getLogger("hudi_duck")
HOODIE_DIR = ".hoodie"


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


@dataclass(frozen=True)
class _PlanKey:
    """A query's arguments; its plan is reused while the table's timeline stays the same."""

    kind: str
    path: str
    first: str | None
    second: str | None
    storage_options: str
    read_options: ReadOptions
    filters: str = "None"


@dataclass
class _CachedPlan:
    timeline_state: tuple
    plan: ReadPlan
    #: The rendered SQL of a plan that merges nothing (rendering it again gives the same text).
    sql: str | None = None
    #: The schema files that SQL binds to, checked again whenever it is reused.
    bound: tuple[cache.SchemaFile, ...] = ()


_PLANS: "OrderedDict[_PlanKey, _CachedPlan]" = OrderedDict()
_PLANS_LOCK = threading.Lock()
MAX_CACHED_PLANS = 64


_STORAGES: "OrderedDict[tuple[str, str], Storage]" = OrderedDict()


def storage_for(path: str, options: dict[str, Any]) -> Storage:
    """The table's :class:`Storage`, built once per path and options: every query of a table
    checks its timeline, and building one (fsspec's URL parsing) cost a tenth of a warm plan."""
    key = (path, _options_key(options))
    with _PLANS_LOCK:
        storage = _STORAGES.get(key)
        if storage is not None:
            _STORAGES.move_to_end(key)
            return storage
    storage = get_storage(path, options)
    with _PLANS_LOCK:
        _STORAGES[key] = storage
        while len(_STORAGES) > MAX_CACHED_PLANS:
            _STORAGES.popitem(last=False)
    return storage


def _options_key(options: dict[str, Any]) -> str:
    return repr(sorted((k, repr(v)) for k, v in options.items())) if options else "[]"


def _timeline_state(storage: Storage) -> tuple:
    """What a plan depends on besides the files it names: the entries of ``.hoodie`` (timeline
    files, ``hoodie.properties``) and of the version 8+ timeline folder, with sizes and times.

    Every change of which files a query reads goes through the timeline: a write,
    rollback, clean, compaction or clustering adds or changes instant files."""
    entries = _folder_state(storage, HOODIE_DIR)
    state = [(name, size, mtime) for name, size, mtime, _ in entries]
    for folder in ("timeline",):
        if any(is_dir and name == folder for name, _, _, is_dir in entries):
            state.extend(
                (f"{folder}/{name}", size, mtime) for name, size, mtime, _ in _folder_state(storage, f"{HOODIE_DIR}/{folder}")
            )
    return tuple(state)


def _folder_state(storage: Storage, rel: str) -> list[tuple[str, int, float | None, bool]]:
    """(name, size, mtime, is a folder) of the entries of ``rel``, sorted. A local folder is read
    with one ``scandir`` (a timeline folder holds thousands of instant files, and every query
    checks it)."""
    if not storage.is_local:
        return [(e.name, e.size, e.mtime, e.is_dir) for e in storage.list(rel)]
    out = []
    try:
        with os.scandir(storage.abs(rel)) as entries:
            for entry in entries:
                try:
                    info = entry.stat()
                except FileNotFoundError:
                    continue  # gone since the folder was read
                out.append((entry.name, info.st_size, info.st_mtime, entry.is_dir()))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(out)


def _logs_unchanged(plan: ReadPlan, storage: Storage) -> bool:
    """The log files a cached plan merges still have the sizes it planned with."""
    for slice_ in plan.slices_with_logs:
        for log_file in slice_.log_files:
            try:
                size = os.stat(storage.abs(log_file.path)).st_size if storage.is_local else storage.size(log_file.path)
            except OSError:
                return False
            if size != log_file.size:
                return False
    return True


def cached_plan(key: _PlanKey, options: dict[str, Any], filters: FilterSpec = None) -> ReadPlan:
    """The plan of a query, reused while the table's timeline (and its log files) are unchanged."""
    storage = storage_for(key.path, options)
    state = _timeline_state(storage)
    with _PLANS_LOCK:
        cached = _PLANS.get(key)
        if cached is not None:
            _PLANS.move_to_end(key)
    if cached is not None and cached.timeline_state == state and _logs_unchanged(cached.plan, storage):
        return cached.plan
    plan = plan_fresh(
        lambda: HudiTable(key.path, options, metadata_enable=key.read_options.metadata_enable),
        lambda table: make_plan(key.kind, table, key.first, key.second, key.read_options, filters),
    )
    with _PLANS_LOCK:
        _PLANS[key] = _CachedPlan(state, plan)
        _PLANS.move_to_end(key)
        while len(_PLANS) > MAX_CACHED_PLANS:
            _PLANS.popitem(last=False)
    return plan


def clear_plan_cache() -> None:
    with _PLANS_LOCK:
        _PLANS.clear()
        _STORAGES.clear()


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
    merge_memory: MergeMemory = MergeMemory(),
) -> str:
    """SQL of ``hudi_<kind>(path, ...)``; ``options`` are the storage options, ``values_from_path``
    Hudi's ``hoodie.datasource.read.extract.partition.values.from.path``, ``metadata_enable``
    Hudi's ``hoodie.metadata.enable``, ``filters`` the read's filters (see ``core/table/filters.py``),
    ``merge_memory`` Hudi's ``hoodie.memory.merge.max.size`` and ``hoodie.memory.spillable.map.path``."""
    check_times(kind, path, first, second)
    read_options = ReadOptions(
        extract_partition_values_from_path=values_from_path,
        strict=strict,
        metadata_enable=metadata_enable,
        merge_memory=merge_memory,
    )
    key = _PlanKey(kind, path, first, second, _options_key(options), read_options, repr(filters))
    plan = cached_plan(key, options, filters)
    if plan.slices_with_logs:  # merges are registered with ``lazy`` afresh on every render
        return render_plan(plan)
    with _PLANS_LOCK:
        entry = _PLANS.get(key)
    if entry is not None and entry.plan is plan and entry.sql is not None:
        for file in entry.bound:  # rebuilt if the cache folder lost it
            file.ensure()
        return entry.sql
    with cache.recording_bound_files() as bound:
        sql = render_plan(plan)
    if entry is not None and entry.plan is plan:
        entry.sql, entry.bound = sql, tuple(bound)
    return sql
