"""Archival: moving old instants from the active timeline into ``.hoodie/archived``.

Like Hudi 0.14's archiver for table version 6: once more than
``hoodie.keep.max.commits`` commits are active, the oldest are archived until
``hoodie.keep.min.commits`` remain, but never an instant at or after the
earliest pending instant, a savepoint, or the oldest commit the last clean
retained (its files may still be read). Completed clean and rollback
instants are archived per action the same way (more than max: down to min),
independently of the commits. Savepoint and restore instants stay. Entries are written to a new archive log file first,
then the active files are deleted (completed files last).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import faults
from ..table.table import HudiTable
from ..timeline.archived import meta_entries_for, write_archive_file
from ..timeline.instant import Action, State


@dataclass(frozen=True)
class ArchivalSettings:
    """``hoodie.keep.min.commits`` / ``hoodie.keep.max.commits``."""

    min_commits: int = 20
    max_commits: int = 30


def instants_to_archive(table: HudiTable, settings: ArchivalSettings, before: str | None = None) -> list[str]:
    """Requested times of the instants to archive, oldest first (only those earlier than
    ``before``, when given)."""
    timeline = table.timeline
    # HoodieTimelineArchiver.getCleanInstantsToArchive: completed clean and rollback
    # instants, per action, once more than max are active, down to min
    services: list[str] = []
    for action in (Action.CLEAN, Action.ROLLBACK):
        done = timeline.completed([action])
        if len(done) > settings.max_commits:
            services += [i.requested_time for i in done[: len(done) - settings.min_commits]]
    chosen = sorted(set(_commits_to_archive(table, settings)) | set(services))
    return [t for t in chosen if before is None or t < before]


def _commits_to_archive(table: HudiTable, settings: ArchivalSettings) -> list[str]:
    """``getCommitInstantsToArchive``: the oldest completed commits beyond min, within the bounds."""
    timeline = table.timeline
    commits = timeline.completed(Action.WRITE_ACTIONS)
    if len(commits) <= settings.max_commits:
        return []
    bounds = []
    # the oldest pending write, compaction or clustering (not a pending clean / rollback)
    write_like = set(Action.WRITE_ACTIONS) | {Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING}
    pending = [
        g.requested_time
        for g in timeline.instant_groups()
        if not g.latest.is_completed and any(i.action in write_like for i in g.by_state.values())
    ]
    if pending:
        bounds.append(min(pending))
    savepoints = timeline.savepoints()
    if savepoints:
        bounds.append(min(savepoints))
    cleans = timeline.completed([Action.CLEAN])
    if cleans:
        last_clean = timeline.payload(cleans[-1])
        if last_clean is not None and last_clean.earliest_commit_to_retain:
            bounds.append(last_clean.earliest_commit_to_retain)
    # a replace commit stays active until the file groups it replaced are cleaned:
    # readers only know they are replaced from the active timeline
    existing = {(g.partition_path, g.file_id) for g in table.file_system_view.file_groups()}
    for instant in timeline.completed([Action.REPLACE_COMMIT]):
        replaced = timeline.commit_metadata(instant).replaced_file_ids()
        if any((p, f) in existing for p, ids in replaced.items() for f in ids):
            bounds.append(instant.requested_time)
            break
    # the metadata table's delta commits count only while their data instants are active:
    # nothing after its latest compaction is archived (nothing at all before one)
    from ..metadata.writer import archival_bound

    mdt_bound = archival_bound(table.storage, table.config)
    if mdt_bound is not None:
        bounds.append(mdt_bound)
    limit = min(bounds) if bounds else None
    count = len(commits) - settings.min_commits
    return [c.requested_time for c in commits[:count] if limit is None or c.requested_time < limit]


def archive(table: HudiTable, settings: ArchivalSettings, before: str | None = None) -> list[str]:
    """Archive what ``instants_to_archive`` picks; returns the archived times."""
    times = instants_to_archive(table, settings, before)
    if not times:
        return []
    storage, config, timeline = table.storage, table.config, table.timeline
    entries = meta_entries_for(storage, config, timeline, times)
    write_archive_file(storage, config, entries)
    faults.reach(faults.ARCHIVE_FILE_WRITTEN)
    for time_ in times:
        timeline.delete_instant(time_, [State.REQUESTED, State.INFLIGHT])
    faults.reach(faults.ARCHIVE_PENDING_DELETED)
    for time_ in times:
        timeline.delete_instant(time_)
    faults.reach(faults.ARCHIVE_COMPLETED_DELETED)
    return times
