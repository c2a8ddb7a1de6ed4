"""Compaction of merge-on-read tables: plans and execution.

Scheduling writes ``<t>.compaction.requested`` with a ``HoodieCompactionPlan``:
one operation per file slice with log files, chosen by a strategy. Executing
an operation merges the slice's base file and logs (with the readers' merge
code, ``file_group_reader.read_slice``) into a new base file named with the
compaction instant; the instant completes as a ``commit`` with
``compacted=true`` and ``operationType=COMPACT``.

Logs written after a compaction is scheduled belong to the new slice it opens,
so readers stay correct while it is pending.
"""

from __future__ import annotations

import datetime as _dt
import posixpath
import time
from dataclasses import dataclass
from typing import Any

from ..avro import models as avro_models
from ..errors import HudiError
from ..file_group.file_slice import FileSlice
from ..file_group.naming import base_file_name, parse_base_file, parse_log_file
from ..file_group.reader import SliceReadContext, read_slice_with_stats
from ..table.read_plan import committed_before
from ..table.table import HudiTable
from ..timeline.commit_metadata import CommitMetadata, new_write_stat
from ..timeline.instant import Action, Instant, State, parse_instant_time
from ..write.handles import TaskInfo, WriteContext, ensure_partition_metadata
from ..write.markers import IOType, create_marker, delete_markers, list_markers

LOG_FILE_SIZE_STRATEGY = "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy"
LOG_FILE_NUM_STRATEGY = "org.apache.hudi.table.action.compact.strategy.LogFileNumBasedCompactionStrategy"
BOUNDED_IO_STRATEGY = "org.apache.hudi.table.action.compact.strategy.BoundedIOCompactionStrategy"
UNBOUNDED_STRATEGY = "org.apache.hudi.table.action.compact.strategy.UnBoundedCompactionStrategy"
DAY_BASED_STRATEGY = "org.apache.hudi.table.action.compact.strategy.DayBasedCompactionStrategy"
STRATEGIES = (LOG_FILE_SIZE_STRATEGY, LOG_FILE_NUM_STRATEGY, BOUNDED_IO_STRATEGY, UNBOUNDED_STRATEGY)

_MB = 1024 * 1024


@dataclass
class CompactionSettings:
    """``hoodie.compact.*`` / ``hoodie.compaction.*`` options that shape a plan."""

    strategy: str = LOG_FILE_SIZE_STRATEGY
    target_io_mb: int = 512000
    log_file_size_threshold: int = 0
    log_file_num_threshold: int = 0
    max_delta_commits: int = 5
    max_delta_seconds: int = 3600
    trigger_strategy: str = "NUM_COMMITS"


#: ``hoodie.parquet.max.file.size`` default: the write size Hudi assumes for a slice without base file.
DEFAULT_MAX_PARQUET_SIZE = 120 * _MB


def slice_metrics(slices: list[FileSlice], default_base_size: int = DEFAULT_MAX_PARQUET_SIZE) -> dict[str, float]:
    """Metrics of a compaction operation / clustering group, as Hudi 0.14 computes them
    (``CompactionStrategy.captureMetrics`` / ``FileSliceMetricUtils``): sizes in whole MB
    (``FSUtils.getSizeInMB`` is a long division), write size = base size or the default
    max parquet size when there is no base file."""
    log_size = sum(max(log.size, 0) for s in slices for log in s.log_files)
    read = sum(s.base_file.size if s.base_file else 0 for s in slices)
    write = sum(s.base_file.size if s.base_file and s.base_file.size > 0 else default_base_size for s in slices)
    read_mb = (read + log_size) // _MB
    write_mb = write // _MB
    return {
        "TOTAL_IO_READ_MB": float(read_mb),
        "TOTAL_IO_WRITE_MB": float(write_mb),
        "TOTAL_IO_MB": float(read_mb + write_mb),
        "TOTAL_LOG_FILES_SIZE": float(log_size),
        "TOTAL_LOG_FILES": float(sum(len(s.log_files) for s in slices)),
    }


def _metrics(s: FileSlice) -> dict[str, float]:
    return slice_metrics([s])


def _operation(s: FileSlice) -> dict[str, Any]:
    return {
        "baseInstantTime": s.base_instant_time,
        "deltaFilePaths": [log.file_name for log in s.sorted_logs()],
        "dataFilePath": s.base_file.file_name if s.base_file else None,
        "fileId": s.file_id,
        "partitionPath": s.partition_path,
        "metrics": _metrics(s),
        "bootstrapFilePath": None,
    }


def delta_commits_since_last_compaction(table: HudiTable) -> tuple[int, str | None]:
    """Completed delta commits after the latest compaction (done or scheduled), and its time."""
    timeline = table.timeline
    last = None
    for group in timeline.instant_groups():
        if any(i.action == Action.COMPACTION for i in group.by_state.values()):
            last = group.requested_time
    count = sum(1 for i in timeline.completed([Action.DELTA_COMMIT]) if last is None or i.requested_time > last)
    return count, last


def needs_compaction(table: HudiTable, settings: CompactionSettings) -> bool:
    """The inline trigger (``hoodie.compact.inline.trigger.strategy``)."""
    count, last = delta_commits_since_last_compaction(table)
    by_count = count >= settings.max_delta_commits
    reference = last
    if reference is None:
        firsts = table.timeline.completed([Action.DELTA_COMMIT])
        reference = firsts[0].requested_time if firsts else None
    elapsed = 0.0
    if reference is not None:
        then = parse_instant_time(reference, table.config.timeline_timezone_utc)
        now = _dt.datetime.now(_dt.timezone.utc) if table.config.timeline_timezone_utc else _dt.datetime.now()
        elapsed = (now.replace(tzinfo=None) - then.replace(tzinfo=None)).total_seconds()
    by_time = elapsed >= settings.max_delta_seconds
    strategy = settings.trigger_strategy
    if strategy == "NUM_COMMITS" or strategy == "NUM_COMMITS_AFTER_LAST_REQUEST":
        return by_count
    if strategy == "TIME_ELAPSED":
        return by_time
    if strategy == "NUM_OR_TIME":
        return by_count or by_time
    if strategy == "NUM_AND_TIME":
        return by_count and by_time
    raise HudiError(f"unknown hoodie.compact.inline.trigger.strategy {strategy}")


def select_operations(slices: list[FileSlice], settings: CompactionSettings) -> list[FileSlice]:
    """Apply the compaction strategy: which slices, in which order."""
    candidates = [s for s in slices if s.log_files]
    strategy = settings.strategy
    if strategy == LOG_FILE_SIZE_STRATEGY:
        candidates = [s for s in candidates if sum(max(l.size, 0) for l in s.log_files) >= settings.log_file_size_threshold]
        candidates.sort(key=lambda s: -sum(max(l.size, 0) for l in s.log_files))
    elif strategy == LOG_FILE_NUM_STRATEGY:
        candidates = [s for s in candidates if len(s.log_files) >= settings.log_file_num_threshold]
        candidates.sort(key=lambda s: -len(s.log_files))
    elif strategy == UNBOUNDED_STRATEGY:
        return candidates
    elif strategy != BOUNDED_IO_STRATEGY:
        raise HudiError(f"compaction strategy {strategy} is not supported (use one of {', '.join(STRATEGIES)})")
    # BoundedIOCompactionStrategy.orderAndFilter: take operations until the target IO is
    # used up (the operation that crosses it is included)
    chosen, remaining = [], settings.target_io_mb
    for s in candidates:
        remaining -= int(_metrics(s)["TOTAL_IO_MB"])
        chosen.append(s)
        if remaining <= 0:
            break
    return chosen


def compaction_file_groups(table: HudiTable, log_compaction: bool = True) -> dict[tuple[str, str], str]:
    """(partition, file id) -> requested time of the pending (log) compaction plan that owns the file group."""
    timeline = table.timeline
    times = timeline.pending_compaction_times() + (timeline.pending_log_compaction_times() if log_compaction else [])
    owned: dict[tuple[str, str], str] = {}
    for time_ in times:
        plan = timeline.avro_details(time_, State.REQUESTED) or {}
        for op in plan.get("operations") or []:
            owned[(op.get("partitionPath") or "", op.get("fileId"))] = time_
    return owned


def clustering_file_groups(table: HudiTable) -> dict[tuple[str, str], str]:
    """(partition, file id) -> requested time of the pending clustering that owns the file group."""
    timeline = table.timeline
    owned: dict[tuple[str, str], str] = {}
    for instant in timeline.pending_clustering():
        plan = timeline.avro_details(instant.requested_time, State.REQUESTED) or {}
        for group in ((plan.get("clusteringPlan") or {}).get("inputGroups")) or []:
            for piece in group.get("slices") or []:
                owned[(piece.get("partitionPath") or "", piece.get("fileId"))] = instant.requested_time
    return owned


def busy_file_groups(table: HudiTable) -> set[tuple[str, str]]:
    """File groups already under a pending compaction or clustering plan."""
    return set(compaction_file_groups(table)) | set(clustering_file_groups(table))


def plan_compaction(table: HudiTable, settings: CompactionSettings) -> dict[str, Any] | None:
    """A ``HoodieCompactionPlan`` for the current latest slices, or None if nothing to do."""
    if not table.config.is_mor:
        raise HudiError(f"{table.base_uri}: compaction applies to MERGE_ON_READ tables only")
    busy = busy_file_groups(table)
    view = table.file_system_view
    slices = [s for s in view.latest_slices() if (s.partition_path, s.file_id) not in busy]
    chosen = select_operations(slices, settings)
    if not chosen:
        return None
    return {
        "operations": [_operation(s) for s in chosen],
        "extraMetadata": {},
        "version": 2,
        "strategy": None,
        "preserveHoodieMetadata": False,
    }


def schedule_compaction(table: HudiTable, settings: CompactionSettings, instant_time: str) -> Instant | None:
    plan = plan_compaction(table, settings)
    if plan is None:
        return None
    return table.timeline.create_requested(
        instant_time, Action.COMPACTION, avro_models.write_container("HoodieCompactionPlan", plan)
    )


def read_plan(table: HudiTable, instant_time: str) -> dict[str, Any]:
    plan = table.timeline.avro_details(instant_time, State.REQUESTED)
    if plan is None:
        raise HudiError(f"{table.base_uri}: no compaction plan at {instant_time}")
    return plan


def slice_of_operation(table: HudiTable, op: dict[str, Any]) -> FileSlice:
    """The file slice an operation compacts (files as listed in the plan)."""
    partition = op.get("partitionPath") or ""
    storage = table.storage
    base = None
    if op.get("dataFilePath"):
        name = posixpath.basename(op["dataFilePath"])
        rel = posixpath.join(partition, name) if partition else name
        base = parse_base_file(partition, name, storage.size(rel))
    logs = []
    for path in op.get("deltaFilePaths") or []:
        name = posixpath.basename(path)
        rel = posixpath.join(partition, name) if partition else name
        log = parse_log_file(partition, name, storage.size(rel) if storage.exists(rel) else -1)
        if log is not None and storage.exists(rel):
            logs.append(log)
    return FileSlice(partition, op["fileId"], op.get("baseInstantTime") or "", base, logs)


def compact_operation(
    table: HudiTable, ctx: WriteContext, op: dict[str, Any], task: TaskInfo, compaction_time: str
) -> dict[str, Any]:
    """Merge one slice into a new base file; returns its write stat. Runs on executors."""

    started = time.perf_counter()
    slice_ = slice_of_operation(table, op)
    read_ctx = SliceReadContext.for_table(table, committed_before(table, compaction_time))
    merged, log_stats = read_slice_with_stats(read_ctx, slice_)
    scan_ms = int((time.perf_counter() - started) * 1000)
    partition = slice_.partition_path
    ensure_partition_metadata(ctx, partition, task)
    name = base_file_name(slice_.file_id, task.write_token, compaction_time)
    rel = posixpath.join(partition, name) if partition else name
    create_marker(table.storage, compaction_time, partition, name, IOType.CREATE)
    result = ctx.write_base(
        rel,
        merged,
        commit_time=compaction_time,
        file_id=slice_.file_id,
        partition_path=partition,
        record_keys=read_ctx.keys(merged),
        task=task,
        max_file_size=1 << 62,
        preserve_meta=True,
        overwrite=True,
    )
    log_size = sum(max(log.size, 0) for log in slice_.log_files)
    updated = int(log_stats.get("dropped_base_rows", 0))  # base records the logs replaced
    stat = new_write_stat(
        fileId=slice_.file_id,
        path=rel,
        prevCommit=slice_.base_instant_time,
        numWrites=result.num_writes,
        numDeletes=0,
        numUpdateWrites=updated,
        numInserts=max(result.num_writes - updated, 0),
        totalWriteBytes=result.file_size,
        partitionPath=partition,
        totalLogRecords=log_stats.get("log_records", 0),
        totalLogFilesCompacted=len(slice_.log_files),
        totalLogSizeCompacted=log_size,
        totalUpdatedRecordsCompacted=updated,
        totalLogBlocks=log_stats.get("log_blocks", 0),
        totalCorruptLogBlock=log_stats.get("corrupt_blocks", 0),
        totalRollbackBlocks=log_stats.get("rollback_blocks", 0),
        fileSizeInBytes=result.file_size,
        runtimeStats={
            "totalScanTime": scan_ms,
            "totalUpsertTime": int((time.perf_counter() - started) * 1000),
            "totalCreateTime": 0,
        },
    )
    return stat


def start_compaction(table: HudiTable, instant_time: str) -> Instant:
    """Move a compaction to inflight, undoing a previous failed attempt first."""
    timeline = table.timeline
    group = timeline.group(instant_time)
    if group is None:
        raise HudiError(f"{table.base_uri}: no compaction instant {instant_time}")
    if group.latest.is_completed:
        raise HudiError(f"{table.base_uri}: compaction {instant_time} already completed")
    inflight = group.by_state.get(State.INFLIGHT)
    if inflight is not None:
        # a previous attempt died: remove what it wrote, start over from requested
        for marker in list_markers(table.storage, instant_time):
            table.storage.delete(marker.data_path)
        delete_markers(table.storage, instant_time)
        timeline.delete_instant(instant_time, [State.INFLIGHT])
    requested = timeline.state_file(instant_time, State.REQUESTED)
    return timeline.transition_to_inflight(requested, b"")


def commit_compaction(table: HudiTable, inflight: Instant, stats: list[dict[str, Any]], schema: str) -> Instant:
    partitions: dict[str, list[dict[str, Any]]] = {}
    for stat in stats:
        partitions.setdefault(stat.get("partitionPath") or "", []).append(stat)
    metadata = CommitMetadata(
        partition_to_write_stats=dict(sorted(partitions.items())),
        compacted=True,
        extra_metadata={"schema": schema},
        operation_type="COMPACT",
    )
    done = table.timeline.complete(inflight, metadata.to_json_bytes())
    delete_markers(table.storage, inflight.requested_time)
    return done


# -- reading plans (pending and completed) ------------------------------------------------


@dataclass(frozen=True)
class CompactionOperation:
    """One file slice of a ``HoodieCompactionPlan``; files are named, not pathed."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: str | None
    log_files: tuple[str, ...]
    metrics: dict[str, float]

    @classmethod
    def from_avro(cls, raw: dict[str, Any]) -> "CompactionOperation":
        data = raw.get("dataFilePath")
        return cls(
            partition_path=raw.get("partitionPath") or "",
            file_id=raw.get("fileId") or "",
            base_instant_time=raw.get("baseInstantTime") or "",
            base_file=posixpath.basename(data) if data else None,
            log_files=tuple(posixpath.basename(p) for p in raw.get("deltaFilePaths") or ()),
            metrics={k: float(v) for k, v in (raw.get("metrics") or {}).items()},
        )


@dataclass(frozen=True)
class CompactionPlan:
    """A compaction or log compaction instant with its plan and where it stands."""

    instant_time: str
    action: str  # compaction | logcompaction
    state: State
    completion_time: str | None
    operations: tuple[CompactionOperation, ...]
    extra_metadata: dict[str, str]


def compaction_plans(timeline) -> list[CompactionPlan]:
    """Every (log) compaction on the active timeline whose plan is still there, oldest first."""
    out = []
    for group in timeline.instant_groups():
        requested = group.by_state.get(State.REQUESTED)
        if requested is None or requested.action not in (Action.COMPACTION, Action.LOG_COMPACTION):
            continue
        raw = timeline.avro_details(group.requested_time, State.REQUESTED) or {}
        latest = group.latest
        out.append(
            CompactionPlan(
                instant_time=group.requested_time,
                action=requested.action,
                state=latest.state,
                completion_time=latest.completion_time if latest.is_completed else None,
                operations=tuple(CompactionOperation.from_avro(op) for op in raw.get("operations") or ()),
                extra_metadata=dict(raw.get("extraMetadata") or {}),
            )
        )
    return out
