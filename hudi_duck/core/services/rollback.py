"""Rollback: undo a failed (pending) or the latest completed write instant.

As Hudi 0.14 does it:

1. ``<t>.rollback.requested`` holds a ``HoodieRollbackPlan``: per file group,
   the files to delete (new base files) and the log files whose blocks must be
   undone. Plans come from the write's markers, or (without markers) from its
   commit metadata / a listing of files carrying its instant time.
2. ``.rollback.inflight``; then base files are deleted and, for log files, a
   *rollback command block* targeting the instant is appended as a new log
   file version (readers then skip the instant's blocks).
3. The rolled-back instant's timeline files are removed, then
   ``<t>.rollback`` (``HoodieRollbackMetadata``) completes the rollback.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass

from .. import faults
from ..concurrency import heartbeat
from ..concurrency.settings import ConcurrencySettings, FailedWritesPolicy
from ..config.table_config import TableConfig
from ..errors import HudiError, TimelineError
from ..file_group.log_format import BlockType, CommandType, HeaderKey, encode_block
from ..file_group.naming import parse_base_file, parse_log_file
from ..storage.storage import Storage
from ..table.table import HudiTable
from ..timeline.active import Timeline
from ..timeline.instant import Action, Instant, State, new_instant_time
from ..timeline.plans import InstantInfo, RollbackPlan, RollbackRequest
from ..timeline.service_metadata import RollbackMetadata, RollbackPartitionMetadata
from ..timeline.transaction import Transaction
from ..write.handles import next_log_version
from ..write.markers import IOType, delete_markers, list_markers

ROLLBACK_WRITE_TOKEN = "1-0-1"


def _delete_request(storage: Storage, partition: str, rel: str) -> RollbackRequest:
    """A request deleting one data file (a base file the instant wrote)."""
    return RollbackRequest(partition, file_id="", latest_base_instant="", files_to_be_deleted=[storage.uri(rel)],
                           log_blocks_to_be_deleted={})


def _log_request(storage: Storage, partition: str, file_id: str, base_instant: str, rel_log: str) -> RollbackRequest:
    """A request rolling back the instant's blocks in one log file."""
    return RollbackRequest(
        partition,
        file_id=file_id,
        latest_base_instant=base_instant,
        files_to_be_deleted=[],
        log_blocks_to_be_deleted={_log_uri(storage, rel_log): _file_size(storage, rel_log)},
    )


def _log_uri(storage: Storage, rel: str) -> str:
    """A log file's path as Hudi 0.14 records it in rollback plans and metadata.

    Java takes it from the qualified ``HoodieLogFile`` path, so local files carry
    ``file:`` (the v6 rollback fixture: ``file:/opt/.../.<id>_<t>.log.1_0-33-43``),
    while deleted base files are plain paths.
    """
    uri = storage.uri(rel)
    if storage.is_local and uri.startswith("/"):
        return "file:" + uri
    return uri


def _relative(storage: Storage, path: str) -> str:
    """A plan path (absolute, maybe ``file:``-prefixed) back to a table-relative path."""
    root = storage.uri("").rstrip("/")
    for prefix in ("file://", "file:"):
        if path.startswith(prefix) and not root.startswith(prefix):
            path = path[len(prefix) :]
    if path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return path


def _file_size(storage: Storage, rel: str) -> int:
    try:
        return storage.size(rel)
    except Exception:
        return 0


def requests_from_markers(storage: Storage, config: TableConfig, instant_time: str) -> list[RollbackRequest] | None:
    markers = list_markers(storage, instant_time)
    if not markers:
        return None
    requests = []
    for marker in markers:
        if marker.io_type in (IOType.CREATE, IOType.MERGE):
            if storage.exists(marker.data_path):
                requests.append(_delete_request(storage, marker.partition_path, marker.data_path))
            continue
        log = parse_log_file(marker.partition_path, marker.file_name)
        if log is None or not storage.exists(log.path):
            continue
        requests.append(_log_request(storage, marker.partition_path, log.file_id, log.instant_time, log.path))
    return requests


def requests_from_listing(
    storage: Storage, config: TableConfig, timeline: Timeline, instant: Instant
) -> list[RollbackRequest]:
    """Without markers: base files named with the instant, logs its write stats name."""
    partitions: set[str] = set()
    log_paths: dict[str, tuple[str, str, str]] = {}
    completed = timeline.state_file(instant.requested_time, State.COMPLETED)
    if completed is not None:
        metadata = timeline.commit_metadata(completed)
        partitions.update(metadata.partitions)
        for partition, stat in metadata.iter_stats():
            log = parse_log_file(partition, posixpath.basename(stat.path or ""))
            if log is not None:
                log_paths[log.path] = (partition, log.file_id, log.instant_time)
    else:
        from ..table.fs_view import FileSystemView

        partitions.update(FileSystemView(storage, config, timeline).partitions)
    requests = []
    for partition in sorted(partitions):
        for info in storage.list(partition):
            base = parse_base_file(partition, info.name)
            if base is not None and base.instant_time == instant.requested_time:
                requests.append(_delete_request(storage, partition, base.path))
    for path, (partition, file_id, base_instant) in sorted(log_paths.items()):
        if storage.exists(path):
            requests.append(_log_request(storage, partition, file_id, base_instant, path))
    return requests


def instant_info(instant: Instant, timeline: Timeline) -> InstantInfo:
    """What a rollback plan names: the instant's time and its action (the pending action
    for a pending instant, e.g. ``compaction`` rather than ``commit``)."""
    group = timeline.group(instant.requested_time)
    action = instant.action
    if group is not None and not instant.is_completed:
        action = group.pending_action
    return InstantInfo(instant.requested_time, action)


def plan_rollback(storage: Storage, config: TableConfig, timeline: Timeline, instant: Instant) -> RollbackPlan:
    """The plan to undo ``instant``: from its markers, else from a listing."""
    requests = requests_from_markers(storage, config, instant.requested_time)
    if requests is None:
        requests = requests_from_listing(storage, config, timeline, instant)
    return RollbackPlan(instant_to_rollback=instant_info(instant, timeline), rollback_requests=requests, version=1)


def schedule_rollback(
    storage: Storage, config: TableConfig, timeline: Timeline, instant: Instant, rollback_time: str | None = None
) -> tuple[Instant, RollbackPlan]:
    """Write ``<t>.rollback.requested`` with the plan to undo ``instant``."""
    plan = plan_rollback(storage, config, timeline, instant)
    rollback_time = rollback_time or new_instant_time(config.timeline_timezone_utc, after=timeline.last_instant_time)
    return Transaction.schedule(timeline, Action.ROLLBACK, plan, rollback_time), plan


def _append_rollback_block(storage: Storage, rel_log: str, target: str, rollback_time: str) -> tuple[str, int]:
    partition = posixpath.dirname(rel_log)
    log = parse_log_file(partition, posixpath.basename(rel_log))
    if log is None:
        raise TimelineError(f"not a log file: {storage.uri(rel_log)}")
    # header order as Hudi 0.14 serialises it (the v6 rollback fixture's log.2 is byte-identical)
    header = {
        HeaderKey.INSTANT_TIME: rollback_time,
        HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK_BLOCK)),
        HeaderKey.TARGET_INSTANT_TIME: target,
    }
    block = encode_block(BlockType.COMMAND_BLOCK, header, b"")
    version = next_log_version(storage, partition, log.file_id, log.instant_time)
    from ..file_group.naming import log_file_name

    name = log_file_name(log.file_id, log.instant_time, version, ROLLBACK_WRITE_TOKEN)
    path = posixpath.join(partition, name) if partition else name
    storage.write(path, block)
    return path, len(block)


def execute_rollback_requests(
    storage: Storage,
    timeline: Timeline,
    target: InstantInfo,
    requests: list[RollbackRequest],
    rollback_time: str,
    revert_pending_plan: bool = True,
) -> RollbackMetadata:
    """Undo an instant's files as planned, remove the instant; returns rollback metadata.

    ``revert_pending_plan``: a pending compaction / clustering goes back to requested
    (its plan stays); a restore passes False to remove it entirely."""
    started = time.perf_counter()
    partitions: dict[str, RollbackPartitionMetadata] = {}

    def partition_meta(partition: str) -> RollbackPartitionMetadata:
        return partitions.setdefault(
            partition, RollbackPartitionMetadata(partition, rollback_log_files={}, log_files_from_failed_commit={})
        )

    # a pending compaction or clustering keeps its plan (decided before the instant is unpublished)
    keep_plan = revert_pending_plan and keeps_plan(timeline, target.commit_time)
    _unpublish(timeline, target.commit_time)
    deleted = 0
    for request in requests:
        meta = partition_meta(request.partition_path or "")
        for path in request.files_to_be_deleted or []:
            rel = _relative(storage, path)
            if storage.exists(rel):
                storage.delete(rel)
                deleted += 1
                faults.reach(faults.ROLLBACK_FILE_DELETED)
            meta.success_delete_files.append(path)
        for path, size in (request.log_blocks_to_be_deleted or {}).items():
            rel = _relative(storage, path)
            written, written_size = _append_rollback_block(storage, rel, target.commit_time, rollback_time)
            faults.reach(faults.ROLLBACK_BLOCK_WRITTEN)
            meta.rollback_log_files[_log_uri(storage, written)] = written_size
            meta.log_files_from_failed_commit[path] = int(size)
    metadata = RollbackMetadata(
        start_rollback_time=rollback_time,
        time_taken_in_millis=int((time.perf_counter() - started) * 1000),
        total_files_deleted=deleted,
        commits_rollback=[target.commit_time],
        partition_metadata=partitions,
        version=1,
        instants_rollback=[InstantInfo(target.commit_time, target.action)],
    )
    # the rolled-back instant disappears before the rollback completes, as in Hudi;
    # a pending compaction or clustering keeps its plan (Hudi reverts it to requested)
    if keep_plan:
        timeline.delete_instant(target.commit_time, [State.INFLIGHT])
    else:
        timeline.delete_instant(target.commit_time)
    faults.reach(faults.ROLLBACK_INSTANT_DELETED)
    delete_markers(storage, target.commit_time)
    return metadata


def _unpublish(timeline: Timeline, requested_time: str) -> None:
    """A completed instant stops being committed before any of its files go (Hudi's
    ``revertToInflight``): a crash half-way through the rollback leaves readers the
    state before the instant, never part of it."""
    group = timeline.group(requested_time)
    if group is not None and group.latest.is_completed and len(group.by_state) > 1:
        timeline.delete_instant(requested_time, [State.COMPLETED])
        faults.reach(faults.ROLLBACK_UNPUBLISHED)


def keeps_plan(timeline: Timeline, requested_time: str) -> bool:
    """A pending compaction / log compaction / clustering: rolling it back reverts it to
    requested (``rollbackInflightCompaction`` / ``rollbackInflightClustering``) instead of
    deleting the plan. For compactions this matters: logs written while it was pending
    are named after its instant and belong to the slice it opens."""
    group = timeline.group(requested_time)
    if group is None or group.latest.is_completed:
        return False
    if any(i.action in (Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING) for i in group.by_state.values()):
        return True
    return any(i.requested_time == requested_time for i in timeline.pending_clustering())


def execute_rollback(
    storage: Storage, config: TableConfig, timeline: Timeline, requested: Instant, plan: RollbackPlan
) -> RollbackMetadata:
    """Carry out a scheduled rollback and complete it (one that fails stays pending;
    the next writer finishes it)."""
    with Transaction.resume(timeline, requested.requested_time) as txn:
        txn.begin()
        metadata = execute_rollback_requests(
            storage, timeline, plan.instant_to_rollback, plan.requests, requested.requested_time
        )
        txn.commit(metadata)
    return metadata


def rollback(storage: Storage, config: TableConfig, timeline: Timeline, instant: Instant) -> RollbackMetadata:
    requested, plan = schedule_rollback(storage, config, timeline, instant)
    return execute_rollback(storage, config, timeline, requested, plan)


def complete_pending_rollbacks(storage: Storage, config: TableConfig, timeline: Timeline) -> list[str]:
    """Finish rollbacks a crashed writer left requested or inflight (a rollback whose
    plan cannot be read is dropped first, see ``hudi_duck.core.concurrency.recovery``)."""
    done = []
    for instant in timeline.pending([Action.ROLLBACK]):
        requested = timeline.state_file(instant.requested_time, State.REQUESTED)
        plan = timeline.plan(instant.requested_time)
        if requested is None or not isinstance(plan, RollbackPlan) or plan.instant_to_rollback is None:
            continue
        execute_rollback(storage, config, timeline, requested, plan)
        done.append(instant.requested_time)
    return done


def rollback_failed_writes(
    storage: Storage, config: TableConfig, timeline: Timeline, settings: ConcurrencySettings | None = None
) -> list[str]:
    """Roll back pending writes (not compaction or clustering plans) whose writer is gone,
    oldest first, as ``hoodie.cleaner.policy.failed.writes`` says.

    A write whose heartbeat (``.hoodie/.heartbeat/<instant>``) is alive belongs to a
    writer at work: EAGER (the single-writer default) refuses to run beside it with
    :class:`ConcurrentWriteError`, LAZY (multi-writer) leaves it alone; NEVER rolls back
    nothing. An absent or expired heartbeat means the writer died.
    """
    settings = settings or ConcurrencySettings()
    rolled = complete_pending_rollbacks(storage, config, timeline)
    if settings.failed_writes is FailedWritesPolicy.NEVER:
        return rolled
    clustering = {i.requested_time for i in timeline.pending_clustering()}
    for instant in sorted(timeline.pending([Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT]), key=lambda i: i.requested_time):
        time_ = instant.requested_time
        if time_ in clustering:
            continue
        if heartbeat.is_alive(storage, time_, settings.heartbeat_expiry_seconds):
            if settings.failed_writes is FailedWritesPolicy.EAGER:
                from ..concurrency.control import in_flight_error

                raise in_flight_error(storage, time_, settings)
            continue
        # the heartbeat stops only after the completed file landed: look again
        fresh = timeline.reload()
        current = fresh.group(time_)
        if current is None or current.latest.is_completed:
            continue
        rollback(storage, config, fresh, current.latest)
        heartbeat.delete_heartbeat(storage, time_)
        rolled.append(time_)
    return rolled


# -- rolling back on request: the preconditions -------------------------------------------------------


def rollback_instant(table: HudiTable, instant_time: str | None = None) -> RollbackMetadata:
    """Roll back a pending write, a started compaction or clustering, or the latest completed
    commit (default: the latest completed write), refusing what would lose data."""
    timeline = table.timeline
    instant = rollback_target(table, instant_time)
    return rollback(table.storage, table.config, timeline, instant)


def rollback_target(table: HudiTable, instant_time: str | None = None) -> Instant:
    """The instant :func:`rollback_instant` undoes, after checking it may be undone."""
    path, timeline = table.base_uri, table.timeline
    if instant_time is None:
        latest = timeline.latest_completed_write
        if latest is None:
            raise HudiError(f"{path}: nothing to roll back")
        instant_time = latest.requested_time
    group = timeline.group(instant_time)
    if group is None:
        raise HudiError(f"{path}: no instant {instant_time} on the timeline")
    instant = group.latest
    if not instant.is_completed and instant.is_requested and keeps_plan(timeline, instant.requested_time):
        raise HudiError(
            f"{path}: {group.pending_action} {instant.requested_time} has not started; there is nothing to roll back"
        )
    if instant.is_completed:
        later = [i for i in timeline.completed_writes if i.requested_time > instant.requested_time]
        if later:
            raise HudiError(
                f"{path}: {instant.requested_time} is not the latest commit ({len(later)} later); "
                "restore to a savepoint instead"
            )
        if instant.requested_time in timeline.savepoints():
            raise HudiError(f"{path}: {instant.requested_time} is savepointed; delete the savepoint first")
        missing = cleaned_predecessor(table, instant)
        if missing:
            raise HudiError(
                f"{path}: cannot roll back {instant.requested_time}: cleaning already removed {missing}, "
                "which the table would need again afterwards"
            )
    return instant


def cleaned_predecessor(table: HudiTable, instant: Instant) -> str | None:
    """A file a completed instant superseded that cleaning has deleted since (rolling the
    instant back would then lose data), or None. Hudi does not check this; e.g. with
    KEEP_LATEST_FILE_VERSIONS=1 the previous base file of a copy-on-write commit is gone."""
    timeline, storage = table.timeline, table.storage
    if timeline.was_action(instant.requested_time, Action.COMPACTION):
        plan = timeline.plan(instant.requested_time)
        for op in (plan.operations or []) if plan is not None else []:
            partition = op.partition
            names = ([op.base_file_name] if op.data_file_path else []) + list(op.log_file_names)
            for name in names:
                rel = posixpath.join(partition, name) if partition else name
                if not storage.exists(rel):
                    return rel
        return None
    metadata = timeline.commit_metadata(instant)
    ext = "." + table.config.base_file_extension.lstrip(".")
    listed: dict[str, list] = {}

    def bases(partition: str) -> list:
        if partition not in listed:
            listed[partition] = [b for b in (parse_base_file(partition, f.name) for f in storage.list(partition)) if b]
        return listed[partition]

    for partition, stat in metadata.iter_stats():
        prev = stat.previous_commit
        if prev is None or not (stat.path or "").endswith(ext):
            continue
        if not any(b.file_id == stat.file_id and b.instant_time == prev for b in bases(partition)):
            return f"the base file of {partition}/{stat.file_id} at {prev}"
    for partition, ids in metadata.replaced_file_ids().items():
        for file_id in ids:
            if not any(b.file_id == file_id for b in bases(partition)):
                return f"the replaced file group {partition}/{file_id}"
    return None


# -- reading rollbacks (pending and completed) -------------------------------------------------


@dataclass(frozen=True)
class RollbackFile:
    """A file a rollback deletes or appends a rollback block to.

    ``kind``: ``deleted`` / ``delete_failed`` (files of the rolled-back instant),
    ``rollback_log`` (a log file holding the rollback command block),
    ``failed_commit_log`` (a log file the rolled-back instant appended to);
    pending rollbacks list their plan: ``to_delete`` / ``to_roll_back``.
    """

    partition_path: str
    path: str  # as Hudi recorded it (absolute, maybe ``file:``-prefixed)
    kind: str
    size: int | None = None

    @property
    def file_name(self) -> str:
        return posixpath.basename(self.path)


@dataclass(frozen=True)
class RollbackInfo:
    """A rollback instant: its plan (``HoodieRollbackPlan``) and result (``HoodieRollbackMetadata``)."""

    instant_time: str
    state: State
    completion_time: str | None
    rolled_back_instants: tuple[str, ...]
    rolled_back_action: str | None
    total_files_deleted: int | None
    time_taken_ms: int | None
    partitions: tuple[str, ...]
    files: tuple[RollbackFile, ...]


def _rollback_files_done(metadata: RollbackMetadata) -> list[RollbackFile]:
    out = []
    for key, info in sorted(metadata.partition_metadata.items()):
        partition = info.partition_path if info.partition_path is not None else key
        out += [RollbackFile(partition, p, "deleted") for p in info.success_delete_files or ()]
        out += [RollbackFile(partition, p, "delete_failed") for p in info.failed_delete_files or ()]
        out += [RollbackFile(partition, p, "rollback_log", int(n)) for p, n in (info.rollback_log_files or {}).items()]
        out += [
            RollbackFile(partition, p, "failed_commit_log", int(n))
            for p, n in (info.log_files_from_failed_commit or {}).items()
        ]
    return out


def _rollback_files_planned(plan: RollbackPlan) -> list[RollbackFile]:
    out = []
    for request in plan.requests:
        partition = request.partition_path or ""
        out += [RollbackFile(partition, p, "to_delete") for p in request.files_to_be_deleted or ()]
        out += [
            RollbackFile(partition, p, "to_roll_back", int(n)) for p, n in (request.log_blocks_to_be_deleted or {}).items()
        ]
    return out


def rollback_infos(timeline: Timeline) -> list[RollbackInfo]:
    """Every rollback on the active timeline, oldest first."""
    out = []
    for group in timeline.instant_groups():
        if not any(i.action == Action.ROLLBACK for i in group.by_state.values()):
            continue
        latest = group.latest
        plan = timeline.plan(group.requested_time) or RollbackPlan()
        metadata = timeline.payload(latest) if latest.is_completed else None
        target = plan.instant_to_rollback
        if metadata is not None:
            instants = tuple(metadata.commits_rollback or ())
            infos = metadata.instants_rollback
            action = infos[0].action if infos else (target.action if target else None)
            files = _rollback_files_done(metadata)
            partitions = tuple(
                sorted({p.partition_path if p.partition_path is not None else k for k, p in metadata.partition_metadata.items()})
            )
        else:
            instants = (target.commit_time,) if target is not None and target.commit_time else ()
            action = target.action if target is not None else None
            files = _rollback_files_planned(plan)
            partitions = tuple(sorted({f.partition_path for f in files}))
        out.append(
            RollbackInfo(
                instant_time=group.requested_time,
                state=latest.state,
                completion_time=latest.completion_time if latest.is_completed else None,
                rolled_back_instants=instants,
                rolled_back_action=action,
                total_files_deleted=metadata.total_files_deleted if metadata is not None else None,
                time_taken_ms=metadata.time_taken_in_millis if metadata is not None else None,
                partitions=partitions,
                files=tuple(files),
            )
        )
    return out
