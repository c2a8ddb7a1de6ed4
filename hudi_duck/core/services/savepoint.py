"""Savepoints and restore.

A savepoint (``<t>.savepoint``, ``HoodieSavepointMetadata``) pins the base files
a snapshot as of a completed commit reads, so cleaning keeps them. Restore
rolls back every instant after a savepoint, newest first, recording it as one
``restore`` instant (``HoodieRestorePlan`` / ``HoodieRestoreMetadata``).
"""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass

from ..errors import HudiError
from ..table.table import HudiTable
from ..timeline.instant import Action, Instant, State, new_instant_time
from ..timeline.plans import InstantInfo, RestorePlan
from ..timeline.service_metadata import (
    RestoreMetadata,
    RollbackMetadata,
    SavepointMetadata,
    SavepointPartitionMetadata,
)
from ..timeline.transaction import Transaction
from .rollback import execute_rollback_requests, plan_rollback


def create_savepoint(table: HudiTable, instant_time: str | None = None, user: str | None = None, comment: str = "") -> Instant:
    """Savepoint a completed commit (default: the latest)."""
    timeline = table.timeline
    if instant_time is None:
        latest = timeline.latest_completed_write
        if latest is None:
            raise HudiError(f"{table.base_uri}: nothing to savepoint (no completed commit)")
        instant_time = latest.requested_time
    target = next((i for i in timeline.completed_writes if i.requested_time == instant_time), None)
    if target is None:
        raise HudiError(f"{table.base_uri}: cannot savepoint {instant_time}: not a completed commit")
    if instant_time in timeline.savepoints():
        raise HudiError(f"{table.base_uri}: {instant_time} is already savepointed")
    for clean in timeline.completed([Action.CLEAN]):
        metadata = timeline.payload(clean)
        retained = metadata.earliest_commit_to_retain if metadata is not None else ""
        if retained and instant_time < retained:
            raise HudiError(
                f"{table.base_uri}: cannot savepoint {instant_time}: cleaning already removed files older "
                f"than {retained}"
            )
    view = table.file_system_view
    partitions: dict[str, SavepointPartitionMetadata] = {}
    for s in view.latest_slices(as_of=instant_time, read_optimized=True):
        info = partitions.setdefault(s.partition_path, SavepointPartitionMetadata(s.partition_path))
        info.savepoint_data_file.append(s.base_file.file_name)
    metadata = SavepointMetadata(
        savepointed_by=user or _user(),
        savepointed_at=int(time.time()),
        comments=comment,
        partition_metadata=dict(sorted(partitions.items())),
        version=1,
    )
    # a savepoint reuses the commit's time: <t>.savepoint.inflight then <t>.savepoint
    with Transaction.start(timeline, Action.SAVEPOINT, instant_time=instant_time) as txn:
        return txn.commit(metadata)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "hudi-duck"


def savepoints(table: HudiTable) -> list[str]:
    """Times of the completed savepoints."""
    return table.timeline.savepoints()


def savepoint_metadata(table: HudiTable, instant_time: str) -> SavepointMetadata | None:
    """The ``HoodieSavepointMetadata`` of a completed savepoint."""
    return table.timeline.savepoint_metadata(instant_time)


def delete_savepoint(table: HudiTable, instant_time: str) -> None:
    table.timeline.delete_savepoint(instant_time)


def restore_to_savepoint(table: HudiTable, savepoint_time: str) -> RestoreMetadata:
    """Undo every instant after a savepoint (newest first) as one restore instant."""
    storage, config, timeline = table.storage, table.config, table.timeline
    if savepoint_time not in timeline.savepoints():
        raise HudiError(f"{table.base_uri}: no savepoint at {savepoint_time} (savepoints: {timeline.savepoints()})")
    started = time.perf_counter()
    later = [
        g.latest
        for g in timeline.instant_groups()
        if g.requested_time > savepoint_time
        and any(i.action in Action.WRITE_ACTIONS + (Action.COMPACTION, Action.CLUSTERING, Action.LOG_COMPACTION) for i in g.by_state.values())
    ]
    later.sort(key=lambda i: i.requested_time, reverse=True)
    restore_time = new_instant_time(config.timeline_timezone_utc, after=timeline.last_instant_time)

    def info(instant: Instant) -> InstantInfo:
        group = timeline.group(instant.requested_time)
        action = instant.action if instant.is_completed or group is None else group.pending_action
        return InstantInfo(instant.requested_time, action)

    infos = [info(i) for i in later]
    failed = _failed_restore(timeline, savepoint_time)
    if failed is not None:
        # a restore to the same savepoint that died half-way: finish it under its own instant
        restore_time = failed.requested_time
        infos = timeline.plan(restore_time).instants_to_rollback
        txn = Transaction.resume(timeline, restore_time)
    else:
        txn = Transaction.start(timeline, Action.RESTORE, RestorePlan(instants_to_rollback=infos, version=1), instant_time=restore_time)
    with txn:
        txn.begin()
        per_instant: dict[str, list[RollbackMetadata]] = {}
        for instant in later:
            target = info(instant)
            rollback_plan = plan_rollback(storage, config, timeline, instant)
            per_instant[instant.requested_time] = [
                execute_rollback_requests(
                    storage, timeline, target, rollback_plan.requests, restore_time, revert_pending_plan=False
                )
            ]
        metadata = RestoreMetadata(
            start_restore_time=restore_time,
            time_taken_in_millis=int((time.perf_counter() - started) * 1000),
            instants_to_rollback=[i.commit_time for i in infos],
            hoodie_restore_metadata=per_instant,
            version=1,
            restore_instant_info=[InstantInfo(i.commit_time, i.action) for i in infos],
        )
        txn.commit(metadata)
    return metadata


def _failed_restore(timeline, savepoint_time: str) -> Instant | None:
    """The latest pending restore if it restores to ``savepoint_time`` (Hudi's
    ``scheduleAndGetRestorePlan``: the savepoint is the last one before the oldest
    instant its plan rolls back)."""
    pending = sorted(timeline.pending([Action.RESTORE]), key=lambda i: i.requested_time)
    if not pending:
        return None
    plan = timeline.plan(pending[-1].requested_time)
    if not isinstance(plan, RestorePlan) or not plan.instants_to_rollback:
        return None
    oldest = plan.instants_to_rollback[-1].commit_time
    before = [s for s in timeline.savepoints() if s < oldest]
    return pending[-1] if before and before[-1] == savepoint_time else None


# -- reading savepoints --------------------------------------------------------------------------


@dataclass(frozen=True)
class SavepointInfo:
    """A savepoint (``HoodieSavepointMetadata``): the commit it pins and the base files kept."""

    instant_time: str  # the savepointed commit's time (the savepoint shares it)
    state: State
    completion_time: str | None
    savepointed_by: str | None
    savepointed_at: int | None  # seconds since the epoch
    comments: str | None
    #: partition -> base file names the savepoint protects
    files: dict[str, tuple[str, ...]]


def savepoint_infos(timeline) -> list[SavepointInfo]:
    """Every savepoint on the active timeline (pending ones without metadata), oldest first."""
    latest: dict[str, Instant] = {}
    for instant in timeline.savepoint_instants:
        known = latest.get(instant.requested_time)
        if known is None or instant.state.rank > known.state.rank:
            latest[instant.requested_time] = instant
    out = []
    for time_, instant in sorted(latest.items()):
        meta = timeline.payload(instant) if instant.is_completed else None
        out.append(
            SavepointInfo(
                instant_time=time_,
                state=instant.state,
                completion_time=instant.completion_time,
                savepointed_by=meta.savepointed_by if meta else None,
                savepointed_at=meta.savepointed_at if meta else None,
                comments=meta.comments if meta else None,
                files=meta.files() if meta else {},
            )
        )
    return out
