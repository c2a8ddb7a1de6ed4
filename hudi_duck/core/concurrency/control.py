"""What a write instant does to live beside other writers: its heartbeat, the
single-writer check, and (optimistic concurrency control) the table lock and conflict
check around its commit. :class:`~hudi_duck.core.timeline.transaction.Transaction`
calls it at each phase."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import ConcurrentWriteError
from ..storage.storage import Storage
from ..timeline.commit_metadata import CommitMetadata
from ..timeline.instant import Action, State
from . import heartbeat
from .conflict import TimelineSnapshot, resolve_conflicts
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
            if current.state_file(txn.requested_time, State.INFLIGHT) is None:
                raise ConcurrentWriteError(
                    f"{self.storage.uri()}: {txn.action} {txn.requested_time} was rolled back by another writer "
                    "while it was in flight (its timeline files are gone); it is not committed. Retry the write"
                )
            if isinstance(metadata, CommitMetadata) and self.snapshot is not None:
                resolve_conflicts(current, txn.requested_time, txn.action, metadata, self.snapshot)
            yield

    def finished(self) -> None:
        """The instant completed or was undone: the heartbeat stops and its file goes."""
        if self.beat is not None:
            self.beat.stop()
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


def in_flight_error(storage: Storage, instant_time: str, settings: ConcurrencySettings) -> ConcurrentWriteError:
    """The single-writer refusal: names the instant, its heartbeat file and what to do."""
    last = heartbeat.last_heartbeat(storage, instant_time)
    ago = f"{max(0.0, time.time() - last):.1f}s ago" if last is not None else "recently"
    return ConcurrentWriteError(
        f"{storage.uri()}: another writer's instant {instant_time} is in flight: its heartbeat "
        f"{storage.uri(heartbeat.heartbeat_path(instant_time))} beat {ago} (alive for "
        f"{settings.heartbeat_expiry_seconds:.0f}s: hoodie.client.heartbeat.interval_in_ms x "
        "hoodie.client.heartbeat.tolerable.misses). It is not rolled back and nothing was written. Wait for that "
        "write to finish (if its job died, its heartbeat expires and the next write rolls it back), or let writers "
        "run side by side with hoodie.write.concurrency.mode=optimistic_concurrency_control and a "
        "hoodie.write.lock.provider"
    )
