"""What an instant does to live beside other writers: its heartbeat, the
single-writer check, and (optimistic concurrency control) the table lock and conflict
check around its commit. :class:`~hudi_duck.core.timeline.transaction.Transaction`
calls it at each phase.

A table service run on its own (a scheduled compaction or clustering, a pending clean,
rollback or restore) *resumes* an instant another process may be running: it first
claims it (:meth:`WriteConcurrency.resuming`). A live heartbeat of the instant means
another run of it is at work: the claim is refused and nothing is rolled back. Else
this run's heartbeat starts; under optimistic concurrency control the check and the
first beat happen under the table lock, so of two runs racing exactly one goes on.
At commit, a clustering is checked against the writes it did not read (it rewrites
their file groups as of its instant); a compaction never conflicts (writes after its
plan go to the file slice it opens), as in Hudi."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import ConcurrentWriteError, WriteConflictError
from ..storage.storage import Storage
from ..timeline.commit_metadata import CommitMetadata
from ..timeline.instant import Action, State
from . import heartbeat
from .conflict import CLUSTERING_RETRY, TimelineSnapshot, resolve_conflicts
from .lock import LockProvider, lock_provider, table_lock
from .settings import ConcurrencySettings

if TYPE_CHECKING:
    from ..timeline.active import Timeline
    from ..timeline.transaction import Transaction

log = logging.getLogger("hudi_duck")


@dataclass
class WriteConcurrency:
    """One write instant's side of concurrency control (see the module docstring)."""

    storage: Storage
    settings: ConcurrencySettings = field(default_factory=ConcurrencySettings)
    beat: heartbeat.Heartbeat | None = None
    snapshot: TimelineSnapshot | None = None
    #: the instant was resumed (a table service run on its own), not started by this write
    resumed: bool = False
    _lock: LockProvider | None = None

    # -- the lock ------------------------------------------------------------------------
    def locked(self, purpose: str):
        """The table lock under optimistic concurrency control; nothing for a single writer."""
        if not self.settings.is_optimistic:
            return nullcontext()
        if self._lock is None:
            self._lock = lock_provider(self.storage, self.settings)
        return table_lock(self._lock, self.settings, purpose)

    # -- the phases ----------------------------------------------------------------------
    def starting(self, timeline: "Timeline", instant_time: str) -> None:
        """Before the requested file: start beating, note what the write sees."""
        self.snapshot = TimelineSnapshot.of(timeline)
        self.beat = heartbeat.Heartbeat(self.storage, instant_time, self.settings.heartbeat_interval_ms / 1000.0).start()

    def started(self, txn: "Transaction") -> None:
        """After the requested file: a single writer refuses to run beside a live writer
        (whoever looks second sees the other, so two racing writers never both proceed)."""
        if self.settings.is_optimistic:
            return
        others = live_writes(txn.timeline.reload(), self.settings, exclude=txn.requested_time)
        if others:
            raise in_flight_error(self.storage, others[0], self.settings)

    @contextmanager
    def committing(self, txn: "Transaction", metadata: Any) -> Iterator[None]:
        """Around participants and publication: the lock (optimistic concurrency control),
        then the conflict check against what completed since the write started."""
        with self.locked(f"committing {txn.action} {txn.requested_time}"):
            current = txn.timeline.reload()
            if self.resumed:
                self._check_still_ours(txn, current, metadata)
            if current.state_file(txn.requested_time, State.INFLIGHT) is None:
                raise ConcurrentWriteError(
                    f"{self.storage.uri()}: {txn.action} {txn.requested_time} was rolled back by another writer "
                    "while it was in flight (its timeline files are gone); it is not committed. Retry the write"
                )
            if isinstance(metadata, CommitMetadata) and self.snapshot is not None:
                if self.resumed:
                    try:
                        resolve_conflicts(current, txn.requested_time, txn.action, metadata, self.snapshot, CLUSTERING_RETRY)
                    except WriteConflictError:
                        txn.purge_plan = True  # the plan can never include the other write
                        raise
                else:
                    resolve_conflicts(current, txn.requested_time, txn.action, metadata, self.snapshot)
            yield

    def finished(self) -> None:
        """The instant completed or was undone: the heartbeat stops and its file goes."""
        if self.beat is not None:
            self.beat.stop()
            self.beat = None

    # -- resumed instants (table services run on their own) -------------------------------
    @contextmanager
    def resuming(self, timeline: "Timeline", requested_time: str, action: str) -> Iterator["Timeline"]:
        """Claim a resumed instant (see the module docstring); the block gets the timeline as
        it was read *before* the heartbeat was checked. Inside the block (still under the
        lock) the caller rolls back an attempt that died; leaving it by an exception stops
        this run's heartbeat.

        Every run of the instant beats the same heartbeat file, so once this run beats, a
        live other run can no longer be told from this one. A run writes its heartbeat
        before its inflight file: an inflight file in the timeline read before the check,
        whose heartbeat the check found silent, is an attempt that died. One that appears
        only later is a run that started meanwhile (see :meth:`claimed_inflight`)."""
        with self.locked(f"resuming {action} {requested_time}"):
            seen = timeline.reload()
            refuse_live_run(self.storage, requested_time, action, self.settings)
            self.resumed = True
            self.snapshot = _read_by(seen, requested_time) if action in _CHECKED_SERVICES else None
            self.beat = heartbeat.Heartbeat(self.storage, requested_time, self.settings.heartbeat_interval_ms / 1000.0).start()
            try:
                yield seen
            except BaseException:
                self.finished()
                raise

    def claimed_inflight(self, seen: "Timeline", current: "Timeline", requested_time: str, action: str) -> None:
        """Refuse a resumed instant whose inflight file appeared between the timeline read
        before the heartbeat check (``seen``) and now (``current``): another run checked at
        the same moment and began first. It is alive (it beat before its inflight file), so
        nothing is rolled back and its heartbeat stays."""
        if seen.state_file(requested_time, State.INFLIGHT) is not None:
            return
        if current.state_file(requested_time, State.INFLIGHT) is None:
            return
        self.lost_race()
        raise ConcurrentWriteError(
            f"{self.storage.uri()}: {action} {requested_time} was started by another process at the same moment "
            "(its inflight file appeared while this run claimed the plan); that run goes on, this one stops and "
            "rolls nothing back. Run it again once that run is done, if it failed"
        )

    def _check_still_ours(self, txn: "Transaction", current: "Timeline", metadata: Any) -> None:
        """A resumed instant whose inflight file or data files are gone was taken over by
        another run (this one stalled past its heartbeat's expiry): it gives up, undoing nothing."""
        gone = (
            current.state_file(txn.requested_time, State.INFLIGHT) is None
            or current.state_file(txn.requested_time, State.COMPLETED) is not None
        )
        missing = []
        if not gone and isinstance(metadata, CommitMetadata):
            missing = [stat.path for stat in metadata.write_stats() if stat.path and not self.storage.exists(stat.path)]
        if not gone and not missing:
            return
        txn.give_up()
        what = "its inflight state is gone" if gone else f"its file {self.storage.uri(missing[0])} is gone"
        raise ConcurrentWriteError(
            f"{self.storage.uri()}: {txn.action} {txn.requested_time} was taken over by another run while this one "
            f"was in flight ({what}): its heartbeat was silent for longer than "
            f"{self.settings.heartbeat_expiry_seconds:.0f}s (hoodie.client.heartbeat.interval_in_ms x "
            "hoodie.client.heartbeat.tolerable.misses). This run is not committed and undoes nothing; the other run "
            "finishes the plan"
        )

    def lost_race(self) -> None:
        """Another run of the same instant got ahead (single writer, started at the same
        moment), or another writer took the instant time this one chose: stop beating but
        leave the heartbeat file, which is the other's."""
        if self.beat is not None:
            self.beat.stop(delete=False)
            self.beat = None


def live_writes(timeline: "Timeline", settings: ConcurrencySettings, exclude: str | None = None) -> list[str]:
    """Pending writes (not compaction or clustering plans) whose heartbeat is alive."""
    clustering = {i.requested_time for i in timeline.pending_clustering()}
    now = time.time()
    return [
        i.requested_time
        for i in timeline.pending([Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT])
        if i.requested_time != exclude
        and i.requested_time not in clustering
        and heartbeat.is_alive(timeline.storage, i.requested_time, settings.heartbeat_expiry_seconds, now)
    ]


#: resumed actions whose commit runs the conflict check (Hudi checks clustering; a
#: compaction's commit never conflicts: writes after its plan go to the slice it opens)
_CHECKED_SERVICES = frozenset({Action.CLUSTERING, Action.REPLACE_COMMIT})


def _read_by(timeline: "Timeline", service_time: str) -> TimelineSnapshot:
    """What a table service at ``service_time`` has read: the writes completed before its
    instant (it reads the table as of its instant); every other write completed by
    its commit is checked against it."""
    groups = timeline.instant_groups()
    return TimelineSnapshot(
        completed=frozenset(g.requested_time for g in groups if g.latest.is_completed and g.requested_time < service_time),
        known=frozenset(g.requested_time for g in groups),
    )


def refuse_live_run(storage: Storage, instant_time: str, action: str, settings: ConcurrencySettings) -> None:
    """A resumed instant whose heartbeat is alive is another process's run at work: refuse
    before anything is rolled back or written."""
    if heartbeat.is_alive(storage, instant_time, settings.heartbeat_expiry_seconds):
        raise live_run_error(storage, instant_time, action, settings)


def _live_heartbeat(storage: Storage, instant_time: str, settings: ConcurrencySettings, unknown: str) -> str:
    """The part of a refusal that names the live heartbeat, its expiry options and what was left alone."""
    last = heartbeat.last_heartbeat(storage, instant_time)
    ago = f"{max(0.0, time.time() - last):.1f}s ago" if last is not None else unknown
    return (
        f"its heartbeat {storage.uri(heartbeat.heartbeat_path(instant_time))} beat {ago} (alive for "
        f"{settings.heartbeat_expiry_seconds:.0f}s: hoodie.client.heartbeat.interval_in_ms x "
        "hoodie.client.heartbeat.tolerable.misses). It is not rolled back and nothing was written"
    )


def live_run_error(storage: Storage, instant_time: str, action: str, settings: ConcurrencySettings) -> ConcurrentWriteError:
    """Another process runs ``action`` ``instant_time``: names its heartbeat and what to do."""
    return ConcurrentWriteError(
        f"{storage.uri()}: {action} {instant_time} is being run by another process: "
        f"{_live_heartbeat(storage, instant_time, settings, 'just now')}. Wait for that "
        "run to finish; if its job died, its heartbeat expires after that time and the next run rolls the attempt "
        "back and runs the plan again"
    )


def in_flight_error(storage: Storage, instant_time: str, settings: ConcurrencySettings) -> ConcurrentWriteError:
    """The single-writer refusal: names the instant, its heartbeat file and what to do."""
    return ConcurrentWriteError(
        f"{storage.uri()}: another writer's instant {instant_time} is in flight: "
        f"{_live_heartbeat(storage, instant_time, settings, 'recently')}. Wait for that "
        "write to finish (if its job died, its heartbeat expires and the next write rolls it back), or let writers "
        "run side by side with hoodie.write.concurrency.mode=optimistic_concurrency_control and a "
        "hoodie.write.lock.provider"
    )
