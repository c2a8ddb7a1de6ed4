"""Conflict resolution at commit time (optimistic concurrency control).

As Hudi's ``SimpleConcurrentFileWritesConflictResolutionStrategy``: under the table
lock, a committing write compares the file groups it wrote or replaced with those of
every instant that completed since it started, and of compactions and clusterings
scheduled since. Overlap is a conflict and the committing write fails; disjoint file
groups (e.g. inserts into new file groups) commit side by side. A compaction planned
before the write does not conflict with it (its log files open the compaction's slice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import WriteConflictError
from ..timeline.commit_metadata import CommitMetadata
from ..timeline.instant import Action

if TYPE_CHECKING:
    from ..timeline.active import Timeline

FileGroupId = tuple[str, str]  # (partition path, file id)


@dataclass(frozen=True)
class ConcurrentOperation:
    """An instant and the file groups it changes."""

    instant_time: str
    action: str
    file_groups: frozenset[FileGroupId]
    is_compaction: bool = False

    def describe(self) -> str:
        return f"{self.action} {self.instant_time}"


@dataclass(frozen=True)
class TimelineSnapshot:
    """What a write saw when it started: the instants it need not check against."""

    completed: frozenset[str]
    known: frozenset[str]

    @classmethod
    def of(cls, timeline: "Timeline") -> "TimelineSnapshot":
        groups = timeline.instant_groups()
        return cls(
            completed=frozenset(g.requested_time for g in groups if g.latest.is_completed),
            known=frozenset(g.requested_time for g in groups),
        )


def commit_file_groups(metadata: CommitMetadata) -> frozenset[FileGroupId]:
    """File groups a write's metadata names: written ones and replaced ones."""
    groups = {(partition, stat.file_id or "") for partition, stat in metadata.iter_stats() if stat.file_id}
    for partition, ids in metadata.replaced_file_ids().items():
        groups.update((partition, file_id) for file_id in ids)
    return frozenset(groups)


def candidates(timeline: "Timeline", current_time: str, snapshot: TimelineSnapshot) -> list[ConcurrentOperation]:
    """Instants a write started at ``snapshot`` must not overlap: writes completed since,
    and compactions / clusterings scheduled since."""
    out = []
    for group in timeline.instant_groups():
        time_ = group.requested_time
        if time_ == current_time:
            continue
        latest = group.latest
        was_compaction = any(i.action in (Action.COMPACTION, Action.LOG_COMPACTION) for i in group.by_state.values())
        if latest.is_completed:
            if time_ in snapshot.completed or latest.action not in Action.WRITE_ACTIONS:
                continue
            metadata = timeline.commit_metadata(latest)
            out.append(ConcurrentOperation(time_, latest.action, commit_file_groups(metadata), was_compaction))
        elif time_ not in snapshot.known:
            planned = _planned_file_groups(timeline, time_, group.pending_action)
            if planned is not None:
                out.append(ConcurrentOperation(time_, group.pending_action, planned, was_compaction))
    return out


def _planned_file_groups(timeline: "Timeline", requested_time: str, action: str) -> frozenset[FileGroupId] | None:
    """File groups of a pending compaction or clustering plan (None: another pending action)."""
    if action in (Action.COMPACTION, Action.LOG_COMPACTION):
        plan = timeline.plan(requested_time)
        return frozenset(plan.file_groups) if plan is not None else frozenset()
    if action in (Action.CLUSTERING, Action.REPLACE_COMMIT):
        for planned in timeline.clustering_plans():
            if planned.requested_time == requested_time:
                return frozenset(planned.plan.file_groups)
    return None


#: what becomes of the instant that loses a conflict: a write is rolled back; a clustering
#: is rolled back and its plan dropped (it rewrites file groups as of its instant, so it can
#: never include the other write: the next clustering plans again)
WRITE_RETRY = "is rolled back; {other} stands. Retry the write (it will read the other instant's data)"
CLUSTERING_RETRY = (
    "is rolled back and its plan dropped; {other} stands. The next clustering plans again, with that instant's data"
)


def resolve_conflicts(
    timeline: "Timeline",
    current_time: str,
    current_action: str,
    metadata: CommitMetadata,
    snapshot: TimelineSnapshot,
    outcome: str = WRITE_RETRY,
) -> None:
    """Raise :class:`WriteConflictError` if the write overlaps an instant it did not see."""
    mine = commit_file_groups(metadata)
    if not mine:
        return
    for other in candidates(timeline, current_time, snapshot):
        if other.is_compaction and other.instant_time < current_time:
            continue  # planned before this write: its logs go into the compaction's new slice
        overlap = sorted(mine & other.file_groups)
        if overlap:
            shown = ", ".join(f"{p}/{f}" if p else f for p, f in overlap[:5])
            more = f" and {len(overlap) - 5} more" if len(overlap) > 5 else ""
            raise WriteConflictError(
                f"{timeline.storage.uri()}: write conflict: {current_action} {current_time} and "
                f"{other.describe()} both changed file group(s) {shown}{more}. {current_action} {current_time} "
                + outcome.format(other=other.describe())
            )

