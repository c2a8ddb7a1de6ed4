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
from typing import Callable, Iterable

from .. import faults
from ..concurrency.control import WriteConcurrency
from ..config.write_settings import FileSettings, ParquetSettings
from ..errors import HudiError
from ..file_group.file_slice import FileSlice
from ..file_group.naming import base_file_name, parse_base_file, parse_log_file
from ..file_group.reader import SliceReadContext, read_slice_with_stats
from ..table.read_plan import committed_before
from ..table.table import HudiTable
from ..timeline.commit_metadata import CommitMetadata, RuntimeStats, WriteStat
from ..timeline.instant import Action, Instant, parse_instant_time
from ..timeline.plans import CompactionOperation, CompactionPlan
from ..metadata.indexes import WrittenFileIndex
from ..metadata.writer import WrittenIndexes, attach_written_indexes, task_indexes
from ..write.handles import TaskInfo, WriteContext, base_file_index, ensure_partition_metadata
from ..timeline.transaction import CommitParticipant, Transaction
from ..write.markers import IOType, create_marker

LOG_FILE_SIZE_STRATEGY = "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy"
LOG_FILE_NUM_STRATEGY = "org.apache.hudi.table.action.compact.strategy.LogFileNumBasedCompactionStrategy"
BOUNDED_IO_STRATEGY = "org.apache.hudi.table.action.compact.strategy.BoundedIOCompactionStrategy"
UNBOUNDED_STRATEGY = "org.apache.hudi.table.action.compact.strategy.UnBoundedCompactionStrategy"
DAY_BASED_STRATEGY = "org.apache.hudi.table.action.compact.strategy.DayBasedCompactionStrategy"
STRATEGIES = (LOG_FILE_SIZE_STRATEGY, LOG_FILE_NUM_STRATEGY, BOUNDED_IO_STRATEGY, UNBOUNDED_STRATEGY)

_MB = 1024 * 1024


@dataclass(frozen=True)
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
DEFAULT_MAX_PARQUET_SIZE = ParquetSettings().max_file_size


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


def _operation(s: FileSlice) -> CompactionOperation:
    return CompactionOperation(
        base_instant_time=s.base_instant_time,
        delta_file_paths=[log.file_name for log in s.sorted_logs()],
        data_file_path=s.base_file.file_name if s.base_file else None,
        file_id=s.file_id,
        partition_path=s.partition_path,
        metrics=_metrics(s),
        bootstrap_file_path=None,
    )


def delta_commits_since_last_compaction(table: HudiTable) -> tuple[int, str | None]:
    """Completed delta commits after the latest compaction (done or scheduled), and its time."""
    timeline = table.timeline
    compactions = timeline.compaction_times()
    last = max(compactions) if compactions else None
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
    owned: dict[tuple[str, str], str] = {}
    for pending in table.timeline.compaction_plans(log_compaction=log_compaction):
        for key in pending.plan.file_groups:
            owned[key] = pending.requested_time
    return owned


def clustering_file_groups(table: HudiTable) -> dict[tuple[str, str], str]:
    """(partition, file id) -> requested time of the pending clustering that owns the file group."""
    owned: dict[tuple[str, str], str] = {}
    for pending in table.timeline.clustering_plans():
        for key in pending.plan.file_groups:
            owned[key] = pending.requested_time
    return owned


def busy_file_groups(table: HudiTable) -> set[tuple[str, str]]:
    """File groups already under a pending compaction or clustering plan."""
    return set(compaction_file_groups(table)) | set(clustering_file_groups(table))


def plan_compaction(table: HudiTable, settings: CompactionSettings) -> CompactionPlan | None:
    """A ``HoodieCompactionPlan`` for the current latest slices, or None if nothing to do."""
    if not table.config.is_mor:
        raise HudiError(f"{table.base_uri}: compaction applies to MERGE_ON_READ tables only")
    busy = busy_file_groups(table)
    view = table.file_system_view
    slices = [s for s in view.latest_slices() if (s.partition_path, s.file_id) not in busy]
    chosen = select_operations(slices, settings)
    if not chosen:
        return None
    return CompactionPlan(
        operations=[_operation(s) for s in chosen],
        extra_metadata={},
        version=2,
        strategy=None,
        preserve_hoodie_metadata=False,
    )


def schedule_compaction(table: HudiTable, settings: CompactionSettings, instant_time: str) -> Instant | None:
    plan = plan_compaction(table, settings)
    if plan is None:
        return None
    return Transaction.schedule(table.timeline, Action.COMPACTION, plan, instant_time)


def compactions_to_run(table: HudiTable, settings: CompactionSettings, instant_time: str | None = None) -> list[str]:
    """The compactions a compaction job runs: ``instant_time`` (which must be pending), else
    every pending one, else one scheduled now (none if there is nothing to compact)."""
    if not table.config.is_mor:
        raise HudiError(f"{table.base_uri}: compaction applies to MERGE_ON_READ tables only")
    pending = table.timeline.pending_compaction_times()
    if instant_time is not None:
        if instant_time not in pending:
            raise HudiError(f"{table.base_uri}: no pending compaction at {instant_time}")
        return [instant_time]
    if pending:
        return pending
    scheduled = schedule_compaction(table, settings, table.timeline.next_instant_time())
    return [scheduled.requested_time] if scheduled is not None else []


def read_plan(table: HudiTable, instant_time: str) -> CompactionPlan:
    plan = table.timeline.plan(instant_time)
    if not isinstance(plan, CompactionPlan):
        raise HudiError(f"{table.base_uri}: no compaction plan at {instant_time}")
    return plan


def slice_of_operation(table: HudiTable, op: CompactionOperation) -> FileSlice:
    """The file slice an operation compacts (files as listed in the plan)."""
    partition = op.partition
    storage = table.storage
    base = None
    if op.data_file_path:
        name = posixpath.basename(op.data_file_path)
        rel = posixpath.join(partition, name) if partition else name
        base = parse_base_file(partition, name, storage.size(rel))
    logs = []
    for name in op.log_file_names:
        rel = posixpath.join(partition, name) if partition else name
        log = parse_log_file(partition, name, storage.size(rel) if storage.exists(rel) else -1)
        if log is not None and storage.exists(rel):
            logs.append(log)
    return FileSlice(partition, op.file_id or "", op.base_instant_time or "", base, logs)


def compact_operation(
    table: HudiTable,
    ctx: WriteContext,
    op: CompactionOperation,
    task: TaskInfo,
    compaction_time: str,
    indexed: list[WrittenFileIndex] | None = None,
) -> WriteStat:
    """Merge one slice into a new base file; returns its write stat. Runs on executors.
    ``indexed``: gets the file's ``column_stats`` records from the footer just written (a
    compaction moves no key: no record-index change)."""

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
    faults.reach(faults.DATA_FILE_WRITTEN)
    if indexed is not None:
        indexed.append(base_file_index(ctx, result))
    log_size = sum(max(log.size, 0) for log in slice_.log_files)
    updated = int(log_stats.get("dropped_base_rows", 0))  # base records the logs replaced
    return WriteStat(
        file_id=slice_.file_id,
        path=rel,
        prev_commit=slice_.base_instant_time,
        num_writes=result.num_writes,
        num_deletes=0,
        num_update_writes=updated,
        num_inserts=max(result.num_writes - updated, 0),
        total_write_bytes=result.file_size,
        partition_path=partition,
        total_log_records=log_stats.get("log_records", 0),
        total_log_files_compacted=len(slice_.log_files),
        total_log_size_compacted=log_size,
        total_updated_records_compacted=updated,
        total_log_blocks=log_stats.get("log_blocks", 0),
        total_corrupt_log_blocks=log_stats.get("corrupt_blocks", 0),
        total_rollback_blocks=log_stats.get("rollback_blocks", 0),
        file_size_in_bytes=result.file_size,
        runtime_stats=RuntimeStats(
            total_scan_time=scan_ms,
            total_upsert_time=int((time.perf_counter() - started) * 1000),
            total_create_time=0,
        ),
    )


@dataclass
class TasksOutput:
    """What an engine's tasks of a compaction or clustering hand back: their write stats and
    the index records they made where they wrote the files (``None``: the metadata
    table's committer builds them from the files)."""

    stats: list[WriteStat]
    indexes: WrittenIndexes | None = None


def hand_over(txn: Transaction, output: "list[WriteStat] | TasksOutput") -> list[WriteStat]:
    """The stats of a runner's output; its index records go to the instant's metadata delta commit."""
    if isinstance(output, TasksOutput):
        if output.indexes is not None:
            attach_written_indexes(txn, output.indexes)
        return output.stats
    return output


def service_context(txn: Transaction, table: HudiTable, files: FileSettings, moves_keys: bool) -> WriteContext:
    """The write context of a service's tasks: the table's, with the index records the
    metadata table keeps reported by the handles."""
    columns, record_index = task_indexes(txn, table.avro_schema, moves_keys)
    return WriteContext.for_table(table, txn.requested_time, files).with_indexes(columns, record_index)


#: Runs compaction operations (on an engine's workers) and returns their write stats
#: (with the index records they made, if the engine collects them).
OperationRunner = Callable[[list[CompactionOperation], WriteContext], "list[WriteStat] | TasksOutput"]


def run_compaction(
    table: HudiTable,
    instant_time: str,
    files: FileSettings,
    run_operations: OperationRunner,
    participants: Iterable[CommitParticipant] = (),
    concurrency: WriteConcurrency | None = None,
) -> Instant:
    """Execute a scheduled compaction: inflight, merge every operation's slice into a base
    file written with ``files`` (the writes' parquet settings), commit.

    Another process's live run of it is refused (see ``Transaction.resume``; with
    ``concurrency`` this run keeps a heartbeat and commits under the table lock). An
    attempt that died before is rolled back first; a failure now rolls this attempt
    back and leaves the plan requested, so the compaction can run again."""
    plan = read_plan(table, instant_time)
    with Transaction.resume(table.timeline, instant_time, participants, concurrency) as txn:
        txn.begin()
        context = service_context(txn, table, files, moves_keys=False)
        stats = hand_over(txn, run_operations(list(plan.operations or ()), context))
        metadata = CommitMetadata.of(
            stats, compacted=True, extra_metadata={"schema": table.avro_schema}, operation_type="COMPACT"
        )
        return txn.commit(metadata)
