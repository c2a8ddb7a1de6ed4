"""Cleaning: deleting file slices no retained query needs, as Hudi's CleanPlanner does.

Policies (``hoodie.cleaner.policy``):

* ``KEEP_LATEST_COMMITS``: keep every slice a query as of any of the last N
  commits could read (N = ``hoodie.cleaner.commits.retained``);
* ``KEEP_LATEST_FILE_VERSIONS``: keep the newest N slices of each file group;
* ``KEEP_LATEST_BY_HOURS``: keep what commits of the last N hours need.

Never deleted: the latest slice of a file group, savepointed files, slices a
pending compaction or clustering needs. File groups replaced before the
earliest retained commit are deleted entirely. A plan
(``HoodieCleanerPlan``) is written as ``.clean.requested``, the result as
``HoodieCleanMetadata`` in ``.clean``.
"""

from __future__ import annotations

import datetime as _dt
import posixpath
import time
from dataclasses import dataclass

from .. import faults
from ..file_group.file_slice import FileGroup, FileSlice
from ..table.table import HudiTable
from ..timeline.instant import Action, Instant, State, format_instant_time
from ..timeline.plans import ActionInstant, CleanerPlan, CleanFileInfo
from ..timeline.service_metadata import CleanMetadata, CleanPartitionMetadata
from ..timeline.transaction import Transaction
from ..concurrency.control import WriteConcurrency
from ..concurrency.settings import ConcurrencySettings
from .compaction import busy_file_groups

KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"


@dataclass(frozen=True)
class CleanSettings:
    """``hoodie.cleaner.*`` / ``hoodie.clean.max.commits``: what a clean keeps and when it runs."""

    policy: str = KEEP_LATEST_COMMITS
    commits_retained: int = 10
    file_versions_retained: int = 3
    hours_retained: int = 24
    max_commits: int = 1  # commits since the last clean before cleaning again


def savepointed_files(table: HudiTable) -> set[str]:
    """Relative paths of every file a completed savepoint protects."""
    out: set[str] = set()
    timeline = table.timeline
    for time_ in timeline.savepoints():
        metadata = timeline.savepoint_metadata(time_)
        for partition, names in (metadata.files() if metadata else {}).items():
            out.update(posixpath.join(partition, name) if partition else name for name in names)
    return out


def savepoint_times(table: HudiTable) -> list[str]:
    return table.timeline.savepoints()


def commits_timeline(table: HudiTable) -> list[Instant]:
    return table.timeline.completed(Action.WRITE_ACTIONS)


def earliest_commit_to_retain(table: HudiTable, settings: CleanSettings) -> Instant | None:
    commits = commits_timeline(table)
    if settings.policy == KEEP_LATEST_COMMITS:
        if len(commits) <= settings.commits_retained:
            return None
        earliest = commits[len(commits) - settings.commits_retained]
    elif settings.policy == KEEP_LATEST_BY_HOURS:
        utc = table.config.timeline_timezone_utc
        now = _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None) if utc else _dt.datetime.now()
        cutoff = format_instant_time(now - _dt.timedelta(hours=settings.hours_retained))
        later = [c for c in commits if c.requested_time >= cutoff]
        if not later or len(later) == len(commits):
            return None
        earliest = later[0]
    else:
        return None
    if settings.policy == KEEP_LATEST_COMMITS:
        # never past a pending write (CleanPlanner.getEarliestCommitToRetain): the earliest
        # retained commit is then the last completed one before it. Pending compactions are
        # not on this (commits) timeline; their slices are protected one by one instead.
        pending = table.timeline.pending(Action.WRITE_ACTIONS)
        if pending and pending[0].requested_time < earliest.requested_time:
            before = [c for c in commits if c.requested_time < pending[0].requested_time]
            return before[-1] if before else None
    return earliest


def _slice_files(s: FileSlice, is_mor: bool) -> list[str]:
    files = []
    if s.base_file is not None:
        files.append(s.base_file.path)
    if is_mor:
        files.extend(log.path for log in s.log_files)
    return files


def _all_slices_desc(group: FileGroup) -> list[FileSlice]:
    return list(reversed(group.ordered_slices()))


def pending_compaction_slices(table: HudiTable) -> dict[tuple[str, str], set[str]]:
    """(partition, file id) -> base instants of the slices pending compactions will read."""
    out: dict[tuple[str, str], set[str]] = {}
    for pending in table.timeline.compaction_plans():
        for op in pending.plan.operations or ():
            out.setdefault((op.partition, op.file_id), set()).add(op.base_instant_time or "")
    return out


def files_to_clean(table: HudiTable, settings: CleanSettings) -> tuple[dict[str, list[str]], Instant | None]:
    """Relative paths to delete per partition, and the earliest commit retained."""
    view = table.file_system_view
    is_mor = table.config.is_mor
    protected = savepointed_files(table)
    busy = busy_file_groups(table)
    compacting = pending_compaction_slices(table)
    earliest = earliest_commit_to_retain(table, settings)
    if settings.policy in (KEEP_LATEST_COMMITS, KEEP_LATEST_BY_HOURS) and earliest is None:
        return {}, None
    replaced_before: set[tuple[str, str]] = set()
    timeline = table.timeline
    for instant in timeline.completed([Action.REPLACE_COMMIT]):
        if earliest is None or instant.requested_time < earliest.requested_time:
            for partition, ids in timeline.commit_metadata(instant).replaced_file_ids().items():
                replaced_before.update((partition, i) for i in ids)
    out: dict[str, list[str]] = {}
    for group in view.file_groups():
        key = (group.partition_path, group.file_id)
        slices = _all_slices_desc(group)
        if not slices:
            continue
        deletions: list[str] = []
        if key in replaced_before and key not in busy:
            for s in slices:
                deletions += [f for f in _slice_files(s, True) if f not in protected]
        elif settings.policy == KEEP_LATEST_FILE_VERSIONS:
            kept = 0
            needs = compacting.get(key)
            for s in slices:
                files = _slice_files(s, is_mor)
                if any(f in protected for f in files):
                    continue
                if needs and s.base_instant_time >= min(needs):
                    # the slice a pending compaction reads, and the one it opens
                    continue
                if kept < settings.file_versions_retained:
                    kept += 1
                    continue
                deletions += files
        else:
            latest = slices[0].base_instant_time
            before = [s.base_instant_time for s in slices if s.base_instant_time < earliest.requested_time]
            last_before = before[0] if before else None
            for s in slices:
                t = s.base_instant_time
                files = _slice_files(s, is_mor)
                if any(f in protected for f in files):
                    continue
                if t == latest:
                    continue
                if settings.policy == KEEP_LATEST_COMMITS and t == last_before:
                    continue
                if t in compacting.get(key, ()):
                    continue  # isFileSliceNeededForPendingMajorOrMinorCompaction
                if t < earliest.requested_time:
                    deletions += files
        if deletions:
            out.setdefault(group.partition_path, []).extend(deletions)
    return out, earliest


def plan_clean(table: HudiTable, settings: CleanSettings) -> CleanerPlan | None:
    files, earliest = files_to_clean(table, settings)
    if not files:
        return None
    storage = table.storage
    latest = table.timeline.latest_completed_write
    return CleanerPlan(
        earliest_instant_to_retain=(
            ActionInstant(earliest.requested_time, earliest.action, State.COMPLETED.value) if earliest is not None else None
        ),
        last_completed_commit_timestamp=latest.requested_time if latest else "",
        policy=settings.policy,
        files_to_be_deleted_per_partition={},
        version=2,
        file_paths_to_be_deleted_per_partition={
            partition: [CleanFileInfo(storage.uri(path), False) for path in sorted(paths)]
            for partition, paths in sorted(files.items())
        },
        partitions_to_be_deleted=[],
    )


def needs_clean(table: HudiTable, settings: CleanSettings) -> bool:
    """Enough commits since the last clean (``hoodie.clean.max.commits``)."""
    timeline = table.timeline
    cleans = timeline.completed([Action.CLEAN])
    last = cleans[-1].requested_time if cleans else None
    since = [c for c in commits_timeline(table) if last is None or c.requested_time > last]
    return len(since) >= settings.max_commits


def schedule_clean(table: HudiTable, settings: CleanSettings, instant_time: str) -> Instant | None:
    plan = plan_clean(table, settings)
    if plan is None:
        return None
    return Transaction.schedule(table.timeline, Action.CLEAN, plan, instant_time)


def run_clean(table: HudiTable, settings: CleanSettings, concurrency: ConcurrencySettings | None = None) -> str | None:
    """Finish cleans a crashed run left pending, then plan and run one; returns its time
    (``None`` when nothing needs deleting). With ``concurrency`` each clean keeps a
    heartbeat and commits under the table lock (optimistic concurrency control)."""
    for pending in pending_cleans(table):
        execute_clean(table, table.timeline.state_file(pending.requested_time, State.REQUESTED), concurrency)
    requested = schedule_clean(table, settings, table.timeline.next_instant_time())
    if requested is None:
        return None
    execute_clean(table, requested, concurrency)
    return requested.requested_time


def _relative(table: HudiTable, path: str) -> str:
    root = table.storage.uri("").rstrip("/")
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def execute_clean(table: HudiTable, requested: Instant, concurrency: ConcurrencySettings | None = None) -> CleanMetadata:
    """Delete the planned files and complete the clean (a clean that fails stays pending
    and runs again; deleting is idempotent)."""
    started = time.perf_counter()
    timeline = table.timeline
    plan = timeline.plan(requested.requested_time) or CleanerPlan(policy=KEEP_LATEST_COMMITS)
    control = WriteConcurrency(table.storage, concurrency) if concurrency is not None else None
    with Transaction.resume(timeline, requested.requested_time, concurrency=control) as txn:
        txn.begin(plan)  # Hudi's .clean.inflight repeats the plan
        metadata = delete_planned_files(table, plan, requested.requested_time)
        metadata.time_taken_in_millis = int((time.perf_counter() - started) * 1000)
        txn.commit(metadata)
    return metadata


def delete_planned_files(table: HudiTable, plan: CleanerPlan, clean_time: str) -> CleanMetadata:
    """Delete what ``plan`` names; the clean's metadata says what was deleted and what failed."""
    partitions: dict[str, CleanPartitionMetadata] = {}
    total = 0
    for partition, infos in (plan.file_paths_to_be_deleted_per_partition or {}).items():
        success, failed, patterns = [], [], []
        for info in infos or ():
            rel = _relative(table, info.file_path)
            name = posixpath.basename(rel)
            patterns.append(name)
            try:
                if table.storage.exists(rel):
                    table.storage.delete(rel)
                    faults.reach(faults.CLEAN_FILE_DELETED)
                success.append(name)
                total += 1
            except OSError:
                failed.append(name)
        partitions[partition] = CleanPartitionMetadata(
            partition_path=partition,
            policy=plan.policy or KEEP_LATEST_COMMITS,
            delete_path_patterns=patterns,
            success_delete_files=success,
            failed_delete_files=failed,
            is_partition_deleted=False,
        )
    earliest = plan.earliest_instant_to_retain
    return CleanMetadata(
        start_clean_time=clean_time,
        time_taken_in_millis=0,
        total_files_deleted=total,
        earliest_commit_to_retain=earliest.timestamp if earliest is not None else "",
        last_completed_commit_timestamp=plan.last_completed_commit_timestamp or "",
        partition_metadata=partitions,
        version=2,
        bootstrap_partition_metadata={},
    )


def pending_cleans(table: HudiTable) -> list[Instant]:
    return table.timeline.pending([Action.CLEAN])


# -- reading cleans (pending and completed) ---------------------------------------------------


def _file_name(path: str) -> str:
    return posixpath.basename(path)


@dataclass(frozen=True)
class CleanPartition:
    """What a clean planned and did in one partition (files by name)."""

    partition_path: str
    policy: str | None
    files_to_delete: tuple[str, ...]  # the plan (``deletePathPatterns`` once completed)
    deleted_files: tuple[str, ...] | None  # None while the clean is pending
    failed_files: tuple[str, ...] | None
    partition_deleted: bool


@dataclass(frozen=True)
class CleanInfo:
    """A clean instant: its plan (``HoodieCleanerPlan``) and result (``HoodieCleanMetadata``)."""

    instant_time: str
    state: State
    completion_time: str | None
    policy: str | None
    earliest_commit_to_retain: str | None
    last_completed_commit: str | None
    total_files_deleted: int | None
    time_taken_ms: int | None
    partitions: tuple[CleanPartition, ...]


def _clean_partitions(plan: CleanerPlan, metadata: CleanMetadata | None) -> tuple[CleanPartition, ...]:
    if metadata is None:
        dropped = set(plan.partitions_to_be_deleted or ())
        return tuple(
            CleanPartition(p, plan.policy, tuple(_file_name(f) for f in files), None, None, p in dropped)
            for p, files in sorted(plan.planned_files().items())
        )
    return tuple(
        CleanPartition(
            partition_path=info.partition_path if info.partition_path is not None else partition,
            policy=info.policy,
            files_to_delete=tuple(info.delete_path_patterns or ()),
            deleted_files=tuple(_file_name(f) for f in info.success_delete_files or ()),
            failed_files=tuple(_file_name(f) for f in info.failed_delete_files or ()),
            partition_deleted=bool(info.is_partition_deleted),
        )
        for partition, info in sorted(metadata.partition_metadata.items())
    )


def clean_infos(timeline) -> list[CleanInfo]:
    """Every clean on the active timeline, oldest first."""
    out = []
    for group in timeline.instant_groups():
        if not any(i.action == Action.CLEAN for i in group.by_state.values()):
            continue
        latest = group.latest
        plan = timeline.plan(group.requested_time) or CleanerPlan()
        metadata = timeline.payload(latest) if latest.is_completed else None
        earliest = plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else None
        if metadata is not None:
            earliest = metadata.earliest_commit_to_retain or earliest
        policies = {p.policy for p in (metadata.partition_metadata.values() if metadata else ())}
        policy = plan.policy or (policies.pop() if len(policies) == 1 else None)
        last = (metadata.last_completed_commit_timestamp if metadata else None) or plan.last_completed_commit_timestamp
        out.append(
            CleanInfo(
                instant_time=group.requested_time,
                state=latest.state,
                completion_time=latest.completion_time if latest.is_completed else None,
                policy=policy,
                earliest_commit_to_retain=earliest or None,
                last_completed_commit=last or None,
                total_files_deleted=metadata.total_files_deleted if metadata is not None else None,
                time_taken_ms=metadata.time_taken_in_millis if metadata is not None else None,
                partitions=_clean_partitions(plan, metadata),
            )
        )
    return out
