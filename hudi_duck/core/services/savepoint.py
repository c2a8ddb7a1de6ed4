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
from typing import Any

from ..avro import models as avro_models
from ..errors import HudiError
from ..table.table import HudiTable
from ..timeline.instant import Action, Instant, State, new_instant_time
from .rollback import (
    execute_rollback_requests,
    requests_from_listing,
    requests_from_markers,
)


def create_savepoint(table: HudiTable, instant_time: str, user: str | None = None, comment: str = "") -> Instant:
    timeline = table.timeline
    target = next((i for i in timeline.completed_writes if i.requested_time == instant_time), None)
    if target is None:
        raise HudiError(f"{table.base_uri}: cannot savepoint {instant_time}: not a completed commit")
    if instant_time in savepoints(table):
        raise HudiError(f"{table.base_uri}: {instant_time} is already savepointed")
    cleaned = [c for c in timeline.completed([Action.CLEAN])]
    for clean in cleaned:
        meta = timeline.avro_details(clean.requested_time, State.COMPLETED) or {}
        retained = meta.get("earliestCommitToRetain") or ""
        if retained and instant_time < retained:
            raise HudiError(
                f"{table.base_uri}: cannot savepoint {instant_time}: cleaning already removed files older "
                f"than {retained}"
            )
    view = table.file_system_view
    partitions: dict[str, Any] = {}
    for s in view.latest_slices(as_of=instant_time, read_optimized=True):
        info = partitions.setdefault(s.partition_path, {"partitionPath": s.partition_path, "savepointDataFile": []})
        info["savepointDataFile"].append(s.base_file.file_name)
    metadata = {
        "savepointedBy": user or _user(),
        "savepointedAt": int(time.time()),
        "comments": comment,
        "partitionMetadata": dict(sorted(partitions.items())),
        "version": 1,
    }
    from ..timeline.instant import Instant as _Instant

    # a savepoint reuses the commit's time: <t>.savepoint.inflight then <t>.savepoint
    inflight = _Instant(instant_time, Action.SAVEPOINT, State.INFLIGHT)
    storage = table.storage
    storage.write(timeline.file_of(inflight), b"")
    completed = _Instant(instant_time, Action.SAVEPOINT, State.COMPLETED)
    storage.write_atomic(timeline.file_of(completed), avro_models.write_container("HoodieSavepointMetadata", metadata))
    return completed


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "hudi-duck"


def savepoints(table: HudiTable) -> list[str]:
    """Times of the completed savepoints, from a listing of the timeline folder.

    A savepoint shares its time with the savepointed commit (``<t>.commit`` and
    ``<t>.savepoint``), so it is looked up by file name, not through the timeline's
    per-time instant groups."""
    storage = table.storage
    out = []
    for info in storage.list(table.config.timeline_path):
        if info.name.endswith(".savepoint") and not info.name.startswith("."):
            out.append(info.name.split(".", 1)[0])
    return sorted(out)


def savepoint_metadata(table: HudiTable, instant_time: str) -> dict[str, Any]:
    """The ``HoodieSavepointMetadata`` of a completed savepoint."""
    path = f"{table.config.timeline_path}/{instant_time}.{Action.SAVEPOINT}"
    return avro_models.read_container(table.storage.read(path), "HoodieSavepointMetadata", table.storage.uri(path)) or {}


def delete_savepoint(table: HudiTable, instant_time: str) -> None:
    storage, folder = table.storage, table.config.timeline_path
    for state in (State.COMPLETED, State.INFLIGHT):
        storage.delete(f"{folder}/{Instant(instant_time, Action.SAVEPOINT, state).file_name(table.config.timeline_layout_version)}")


def restore_to_savepoint(table: HudiTable, savepoint_time: str) -> dict[str, Any]:
    """Undo every instant after a savepoint (newest first) as one restore instant."""
    if savepoint_time not in savepoints(table):
        raise HudiError(f"{table.base_uri}: no savepoint at {savepoint_time} (savepoints: {savepoints(table)})")
    storage, config, timeline = table.storage, table.config, table.timeline
    started = time.perf_counter()
    later = [
        g.latest
        for g in timeline.instant_groups()
        if g.requested_time > savepoint_time
        and any(i.action in Action.WRITE_ACTIONS + (Action.COMPACTION, Action.CLUSTERING, Action.LOG_COMPACTION) for i in g.by_state.values())
    ]
    later.sort(key=lambda i: i.requested_time, reverse=True)
    restore_time = new_instant_time(config.timeline_timezone_utc, after=timeline.last_instant_time)

    def info(instant: Instant) -> dict[str, str]:
        group = timeline.group(instant.requested_time)
        action = instant.action if instant.is_completed or group is None else group.pending_action
        return {"commitTime": instant.requested_time, "action": action}

    plan = {"instantsToRollback": [info(i) for i in later], "version": 1}
    requested = timeline.create_requested(restore_time, Action.RESTORE, avro_models.write_container("HoodieRestorePlan", plan))
    inflight = timeline.transition_to_inflight(requested, b"")
    per_instant: dict[str, list[dict[str, Any]]] = {}
    for instant in later:
        requests = requests_from_markers(storage, config, instant.requested_time)
        if requests is None:
            requests = requests_from_listing(storage, config, timeline, instant)
        target = info(instant)
        metadata = execute_rollback_requests(
            storage, timeline, target, [r.to_avro(storage) for r in requests], restore_time, revert_pending_plan=False
        )
        per_instant[instant.requested_time] = [metadata]
    metadata = {
        "startRestoreTime": restore_time,
        "timeTakenInMillis": int((time.perf_counter() - started) * 1000),
        "instantsToRollback": [i.requested_time for i in later],
        "hoodieRestoreMetadata": per_instant,
        "version": 1,
        "restoreInstantInfo": [info(i) for i in later],
    }
    timeline.complete(inflight, avro_models.write_container("HoodieRestoreMetadata", metadata))
    return metadata


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
        meta: dict[str, Any] = {}
        data = timeline.read_details(instant) if instant.is_completed else b""
        if data:
            source = timeline.storage.uri(timeline.file_of(instant))
            meta = avro_models.read_container(data, "HoodieSavepointMetadata", source) or {}
        files = {
            info.get("partitionPath", partition): tuple(info.get("savepointDataFile") or ())
            for partition, info in sorted((meta.get("partitionMetadata") or {}).items())
        }
        out.append(
            SavepointInfo(
                instant_time=time_,
                state=instant.state,
                completion_time=instant.completion_time,
                savepointed_by=meta.get("savepointedBy"),
                savepointed_at=meta.get("savepointedAt"),
                comments=meta.get("comments"),
                files=files,
            )
        )
    return out
