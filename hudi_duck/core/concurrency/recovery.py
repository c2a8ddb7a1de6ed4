"""What a writer does before it starts an instant, so that no earlier failure blocks it.

* plans of pending instants that cannot be read (half-written by a writer that died,
  empty, damaged) are dropped as Hudi drops them: a clean or rollback whose plan is
  unreadable is deleted (Hudi deletes empty cleans and "bad rollback plan" files; a new
  clean or rollback is planned when needed), a compaction whose plan is unreadable is
  undone if nothing depends on it; each with a warning naming the file;
* failed writes are rolled back as ``hoodie.cleaner.policy.failed.writes`` says,
  respecting live heartbeats (``rollback.rollback_failed_writes``);
* leftovers go: temporary files of atomic writes (``.hoodie/.*.tmp``) older than a
  heartbeat's expiry, and the markers (``.hoodie/.temp/<instant>``) and heartbeats of
  instants that completed or are gone, as Hudi removes them after a commit or a rollback.
  Files of writers still in flight are never touched.
"""

from __future__ import annotations

import logging
import posixpath
import time
from dataclasses import dataclass, field

from ..config.table_config import METAFOLDER, TableConfig
from ..errors import HudiError
from ..file_group.naming import parse_base_file, parse_log_file
from ..storage.storage import TEMPORARY_SUFFIX, Storage
from ..timeline.active import Timeline
from ..timeline.instant import Action, State
from ..write.markers import TEMP_FOLDER, delete_markers, list_markers
from . import heartbeat
from .settings import ConcurrencySettings

log = logging.getLogger("hudi_duck")

#: pending actions that cannot run without their plan
_PLANNED_ACTIONS = (Action.CLEAN, Action.ROLLBACK, Action.COMPACTION, Action.LOG_COMPACTION)


@dataclass
class Recovery:
    """What :func:`recover` did."""

    rolled_back: list[str] = field(default_factory=list)
    #: leftover files and folders removed (table-relative)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def recover(storage: Storage, config: TableConfig, timeline: Timeline, settings: ConcurrencySettings | None = None) -> Recovery:
    """Everything a writer does before starting an instant (see the module docstring)."""
    from ..services.rollback import rollback_failed_writes

    settings = settings or ConcurrencySettings()
    outcome = Recovery()
    outcome.warnings += drop_unreadable_plans(storage, timeline)
    timeline = timeline.reload()
    outcome.rolled_back = rollback_failed_writes(storage, config, timeline, settings)
    try:
        outcome.removed = remove_leftovers(storage, timeline.reload(), settings)
    except Exception as exc:  # tidying never fails a write
        message = f"{storage.uri()}: leftover files could not be removed: {exc}"
        log.warning(message)
        outcome.warnings.append(message)
    return outcome


# -- unreadable plans ---------------------------------------------------------------------------


def unreadable_plan(timeline: Timeline, requested_time: str) -> str | None:
    """Why the plan of a pending clean, rollback or compaction cannot be used (None: it can)."""
    group = timeline.group(requested_time)
    requested = group.by_state.get(State.REQUESTED) if group is not None else None
    if requested is None or requested.action not in _PLANNED_ACTIONS or group.latest.is_completed:
        return None
    try:
        plan = timeline.payload(requested)
    except HudiError as exc:
        return str(exc)
    if plan is None:
        return "the plan file is empty"
    if requested.action == Action.ROLLBACK and plan.instant_to_rollback is None:
        return "the plan names no instant to roll back"
    if requested.action in (Action.COMPACTION, Action.LOG_COMPACTION) and not plan.operations:
        return "the plan has no operations"
    return None


def drop_unreadable_plans(storage: Storage, timeline: Timeline) -> list[str]:
    """Drop pending cleans, rollbacks and compactions whose plan cannot be used; the warnings."""
    warnings = []
    for group in list(timeline.instant_groups()):
        replace = _unreadable_replace(timeline, group.requested_time)
        if replace is not None:
            log.warning(replace)
            warnings.append(replace)
            continue
        reason = unreadable_plan(timeline, group.requested_time)
        if reason is None:
            continue
        requested = group.by_state[State.REQUESTED]
        where = storage.uri(timeline.file_of(requested))
        action = requested.action
        if action in (Action.COMPACTION, Action.LOG_COMPACTION):
            dependent = files_based_on(storage, group.requested_time)
            if dependent:
                message = (
                    f"pending {action} {group.requested_time} has an unreadable plan {where} ({reason}), but log "
                    f"files are based on it (e.g. {dependent[0]}); it is kept: restore the plan file from a backup"
                )
                log.warning(message)
                warnings.append(message)
                continue
            _undo_attempt(storage, group.requested_time)
        timeline.delete_instant(group.requested_time)
        heartbeat.delete_heartbeat(storage, group.requested_time)
        message = (
            f"pending {action} {group.requested_time} dropped: its plan {where} cannot be read ({reason}); "
            + ("the next clean plans again" if action == Action.CLEAN else
               "its target is rolled back again if still pending" if action == Action.ROLLBACK else
               "the next compaction plans again")
        )
        log.warning(message)
        warnings.append(message)
    return warnings


def _unreadable_replace(timeline: Timeline, requested_time: str) -> str | None:
    """A pending replacecommit / clustering whose requested file cannot be read: the
    warning (it counts as a failed write, rolled back once no heartbeat is alive)."""
    group = timeline.group(requested_time)
    requested = group.by_state.get(State.REQUESTED) if group is not None else None
    if requested is None or requested.action not in (Action.REPLACE_COMMIT, Action.CLUSTERING) or group.latest.is_completed:
        return None
    try:
        timeline.payload(requested)
    except HudiError as exc:
        return (
            f"pending {requested.action} {requested_time}: its requested file "
            f"{timeline.storage.uri(timeline.file_of(requested))} cannot be read ({exc}); it is no clustering plan "
            "that can run and is rolled back as a failed write"
        )
    return None


def files_based_on(storage: Storage, instant_time: str) -> list[str]:
    """Log files whose file slice starts at ``instant_time`` (written beside a pending compaction)."""
    out = []
    for info in storage.walk_files("", skip_dirs=(METAFOLDER,)):
        partition = posixpath.dirname(info.path)
        log_file = parse_log_file(partition, info.name)
        if log_file is not None and log_file.instant_time == instant_time:
            out.append(info.path)
    return out


def _undo_attempt(storage: Storage, instant_time: str) -> None:
    """Delete base files an attempt of a compaction wrote (by its markers, else by name)."""
    markers = list_markers(storage, instant_time)
    if markers:
        for marker in markers:
            storage.delete(marker.data_path)
    else:
        for info in storage.walk_files("", skip_dirs=(METAFOLDER,)):
            base = parse_base_file(posixpath.dirname(info.path), info.name)
            if base is not None and base.instant_time == instant_time:
                storage.delete(info.path)
    delete_markers(storage, instant_time)


# -- leftovers ----------------------------------------------------------------------------------


def remove_leftovers(storage: Storage, timeline: Timeline, settings: ConcurrencySettings) -> list[str]:
    """Remove what writers that finished or died left behind; the removed paths.

    Marker folders are listed before the timeline is read again: a marker folder exists
    only after its instant's requested file, so an instant missing from the later
    timeline was rolled back or archived, not yet to come."""
    removed: list[str] = []
    now = time.time()
    expiry = settings.heartbeat_expiry_seconds
    marker_dirs = [info for info in storage.list(TEMP_FOLDER) if info.is_dir]
    heartbeats = [info for info in storage.list(heartbeat.HEARTBEAT_FOLDER) if not info.is_dir]
    timeline = timeline.reload()

    def finished(instant_time: str) -> bool:
        group = timeline.group(instant_time)
        if group is not None:
            return group.latest.is_completed
        return not heartbeat.is_alive(storage, instant_time, expiry, now)

    for info in marker_dirs:
        if finished(info.name):
            delete_markers(storage, info.name)
            removed.append(info.path)
    for info in heartbeats:
        if finished(info.name):
            storage.delete(info.path)
            removed.append(info.path)
    for folder in (METAFOLDER, f"{METAFOLDER}/archived", TEMP_FOLDER):
        for info in storage.list(folder):
            if info.is_dir or not (info.name.startswith(".") and info.name.endswith(TEMPORARY_SUFFIX)):
                continue
            modified = storage.mtime(info.path)
            if modified is not None and now - modified > expiry:
                storage.delete(info.path)
                removed.append(info.path)
    if removed:
        log.info("removed %d leftover files and folders of finished writers from %s", len(removed), storage.uri())
    return removed
