"""One instant's lifecycle, the same for every action that commits.

``requested`` (with its plan) → ``inflight`` (with its workload profile) →
``completed`` (with its metadata), or aborted. Writes, compaction, clustering,
clean, rollback, restore and savepoints all go through :class:`Transaction`:

* :meth:`Transaction.start` writes ``<t>.<action>.requested`` (a savepoint has no
  requested state: it starts inflight); :meth:`Transaction.resume` picks up a plan
  scheduled earlier (a compaction, clustering, clean, rollback or restore) once it has
  claimed it: another process's live run of it (its heartbeat) is refused, never rolled back;
* :meth:`Transaction.begin` moves it to inflight;
* :meth:`Transaction.commit` deletes data files the markers name but the metadata
  does not (what retried tasks left), lets every *commit participant* act on the
  instant and its metadata, then publishes the completed file. A participant
  that raises aborts the commit: nothing is published. This is where a table
  that must change in the same commit (the metadata table) hooks in;
* after publication only clean-up runs (marker deletion); its failures are
  logged and kept in :attr:`Transaction.warnings`, never raised: the commit stands;
* :meth:`Transaction.abort` (or leaving a ``with`` block by an exception) undoes
  what the instant did. Writes, compactions and clusterings are rolled back at once
  (a rollback instant, as Hudi's eager rollback of failed writes; a compaction or
  clustering goes back to requested and keeps its plan). Cleans, rollbacks and
  restores stay pending: the next run finishes them, as Hudi retries them.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from .. import faults
from ..errors import ConcurrentWriteError, TimelineError, UnsupportedFeatureError
from ..write.markers import delete_markers, list_markers
from .commit_metadata import CommitMetadata
from .instant import Action, Instant, State, new_instant_time

if TYPE_CHECKING:
    from .active import Timeline

log = logging.getLogger("hudi_duck")

#: Actions whose files an abort rolls back at once.
_ROLLED_BACK_ON_ABORT = frozenset(
    {Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING}
)
#: New instant times a writer tries when another writer took the one it chose.
_INSTANT_TIME_ATTEMPTS = 5
#: Table versions whose timeline files hudi-duck writes.
WRITABLE_TABLE_VERSIONS = (6,)


class Phase(str, Enum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"
    ABORTED = "aborted"


class CommitParticipant(Protocol):
    """Takes part in every commit: called with the transaction and the instant's metadata
    once the instant's data files are final, before the completed file is published.
    Raising aborts the commit."""

    def prepare_commit(self, transaction: "Transaction", metadata: Any) -> None: ...


#: Factories of participants every transaction on a table gets (the metadata table writer
#: registers one); a factory returns ``None`` for tables it has nothing to do with.
ParticipantFactory = Callable[["Timeline"], "CommitParticipant | None"]
_PARTICIPANT_FACTORIES: list[ParticipantFactory] = []


def register_participant_factory(factory: ParticipantFactory) -> None:
    """Let ``factory`` add a participant to every transaction started or resumed from now on."""
    if factory not in _PARTICIPANT_FACTORIES:
        _PARTICIPANT_FACTORIES.append(factory)


def _with_registered(timeline: "Timeline", participants: Iterable[CommitParticipant]) -> list[CommitParticipant]:
    """``participants`` plus the registered ones; the metadata table's comes first, whoever
    commits (a table that lists it is never left stale by a commit that did not know of it)."""
    from ..metadata.writer import participant_for  # imported here: it builds on this module

    out = list(participants)
    for factory in [participant_for, *(f for f in _PARTICIPANT_FACTORIES if f is not participant_for)]:
        participant = factory(timeline)
        if participant is not None:
            out.append(participant)
    return out


@dataclass
class Transaction:
    """The lifecycle of one instant on ``timeline`` (see the module docstring)."""

    timeline: "Timeline"
    requested_time: str
    action: str
    participants: list[CommitParticipant] = field(default_factory=list)
    phase: Phase = Phase.REQUESTED
    #: the instant in its latest state
    instant: Instant | None = None
    #: problems of the clean-up after publication (the commit stands)
    warnings: list[str] = field(default_factory=list)
    #: the write's heartbeat, single-writer check, lock and conflict check
    #: (``hudi_duck.core.concurrency.control.WriteConcurrency``); None: none of these
    concurrency: Any = None
    #: an abort also drops the plan (a clustering that lost a conflict can never commit)
    purge_plan: bool = False

    # -- starting ----------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        timeline: "Timeline",
        action: str,
        plan: Any = None,
        instant_time: str | None = None,
        participants: Iterable[CommitParticipant] = (),
        concurrency: Any = None,
    ) -> "Transaction":
        """A new instant: ``<t>.<action>.requested`` holding ``plan`` (a payload or bytes).

        A savepoint has no requested state: it starts inflight, at the time of the
        commit it pins (``instant_time``). With ``concurrency`` the instant's heartbeat
        starts before its requested file appears (another writer that sees the file
        sees the heartbeat), and a single writer refuses to run beside a live one."""
        check_writable(timeline)
        chosen = instant_time
        for attempt in range(_INSTANT_TIME_ATTEMPTS):
            if chosen is None:
                instant_time = timeline.next_instant_time() if attempt == 0 else new_instant_time(
                    timeline.config.timeline_timezone_utc, after=instant_time
                )
            txn = cls(timeline, instant_time, action, _with_registered(timeline, participants), concurrency=concurrency)
            if concurrency is not None:
                concurrency.starting(timeline, instant_time)
            try:
                if action == Action.SAVEPOINT:
                    txn.instant = timeline.create_inflight(instant_time, action, _bytes(plan, timeline))
                    txn.phase = Phase.INFLIGHT
                    faults.reach(faults.INFLIGHT_WRITTEN, action)
                else:
                    txn.instant = timeline.create_requested(instant_time, action, _bytes(plan, timeline))
                    faults.reach(faults.REQUESTED_WRITTEN, action)
            except TimelineError:
                # the time is another instant's, and so is the heartbeat file both beat: this
                # writer stops beating but leaves the file (deleting it would make that live
                # instant look dead to this writer's own single-writer check a moment later)
                if concurrency is not None:
                    concurrency.lost_race()
                if chosen is not None or attempt + 1 == _INSTANT_TIME_ATTEMPTS:
                    raise
                continue  # another writer took this instant time: take the next one
            except BaseException:
                txn._stop_concurrency()
                raise
            break
        if concurrency is not None:
            try:
                concurrency.started(txn)
            except BaseException:
                # nothing was written under the instant yet: it simply goes
                timeline.delete_instant(txn.requested_time)
                txn.phase = Phase.ABORTED
                txn._stop_concurrency()
                raise
        return txn

    @classmethod
    def schedule(cls, timeline: "Timeline", action: str, plan: Any, instant_time: str) -> Instant:
        """Only request an instant (a plan to run later, e.g. a compaction)."""
        return cls.start(timeline, action, plan, instant_time).instant

    @classmethod
    def resume(
        cls,
        timeline: "Timeline",
        requested_time: str,
        participants: Iterable[CommitParticipant] = (),
        concurrency: Any = None,
    ) -> "Transaction":
        """The transaction of an instant requested earlier (a scheduled plan, a pending clean,
        rollback or restore), run by this process from now on.

        An instant whose heartbeat is alive is another process's run at work: refused with
        :class:`~hudi_duck.core.errors.ConcurrentWriteError`, nothing rolled back. With
        ``concurrency`` (as a write takes it) this run's heartbeat starts, under the table lock
        with optimistic concurrency control, and its commit is checked as a table service's.
        An inflight compaction or clustering of an attempt that died (heartbeat expired or
        absent) is rolled back first, so the plan runs again from the start."""
        from ..concurrency.control import refuse_live_run
        from ..concurrency.settings import ConcurrencySettings

        check_writable(timeline)
        group = timeline.group(requested_time)
        action = group.pending_action if group is not None else "instant"
        if concurrency is None:
            refuse_live_run(timeline.storage, requested_time, action, ConcurrencySettings())
            return cls._resumed(timeline, requested_time, participants)
        with concurrency.resuming(timeline, requested_time, action) as seen:
            # read again under the claim: another run may have finished or moved the instant on
            current = timeline.reload()
            concurrency.claimed_inflight(seen, current, requested_time, action)
            txn = cls._resumed(current, requested_time, participants)
        txn.concurrency = concurrency
        return txn

    @classmethod
    def _resumed(
        cls, timeline: "Timeline", requested_time: str, participants: Iterable[CommitParticipant]
    ) -> "Transaction":
        """The resumed transaction, once claimed: an attempt that died is rolled back."""
        group = timeline.group(requested_time)
        if group is None:
            raise TimelineError(f"{timeline.storage.uri()}: no instant {requested_time} on the timeline")
        if group.latest.is_completed:
            raise TimelineError(f"{timeline.storage.uri()}: {group.pending_action} {requested_time} already completed")
        requested = group.by_state.get(State.REQUESTED)
        if requested is None:
            raise TimelineError(f"{timeline.storage.uri()}: {requested_time} has no requested state to resume")
        txn = cls(timeline, requested_time, requested.action, _with_registered(timeline, participants), instant=requested)
        inflight = group.by_state.get(State.INFLIGHT)
        if inflight is not None:
            if requested.action in _ROLLED_BACK_ON_ABORT:
                txn._rollback(inflight)
                if timeline.state_file(requested_time, State.REQUESTED) is None:
                    # a write keeps no plan: rolled back, there is nothing left to resume
                    raise TimelineError(f"{timeline.storage.uri()}: {requested_time} was a failed write; it is rolled back")
                txn.instant = requested
            else:
                txn.instant, txn.phase = inflight, Phase.INFLIGHT
        return txn

    # -- the phases ----------------------------------------------------------------------------
    def begin(self, profile: Any = None) -> Instant:
        """requested → inflight, with the workload profile (a payload or bytes)."""
        if self.phase is Phase.INFLIGHT:
            return self.instant
        self._expect(Phase.REQUESTED, "begin")
        try:
            self.instant = self.timeline.transition_to_inflight(self.instant, _bytes(profile, self.timeline))
        except TimelineError:
            if self.timeline.reload().state_file(self.requested_time, State.INFLIGHT) is None:
                raise
            self.give_up()
            raise ConcurrentWriteError(
                f"{self.timeline.storage.uri()}: {self.action} {self.requested_time} was started by another process "
                "at the same moment (its inflight file appeared first); that run goes on, this one stops and rolls "
                "nothing back. Run it again once that run is done, if it failed"
            ) from None
        self.phase = Phase.INFLIGHT
        faults.reach(faults.INFLIGHT_WRITTEN, self.action)
        return self.instant

    def commit(self, metadata: Any) -> Instant:
        """Publish the instant with ``metadata`` (see the module docstring)."""
        if self.phase is Phase.REQUESTED:
            self.begin()
        self._expect(Phase.INFLIGHT, "commit")
        faults.reach(faults.DATA_FILES_WRITTEN, self.action)
        scope = self.concurrency.committing(self, metadata) if self.concurrency is not None else nullcontext()
        with scope:  # optimistic concurrency control: the lock and the conflict check
            if isinstance(metadata, CommitMetadata):
                self._reconcile_markers(metadata)
            for participant in self.participants:
                participant.prepare_commit(self, metadata)
            faults.reach(faults.BEFORE_COMPLETED, self.action)
            self._publish(metadata)
        faults.reach(faults.COMPLETED_WRITTEN, self.action)
        self._after_commit()
        faults.reach(faults.CLEANED_UP, self.action)
        return self.instant

    def abort(self) -> None:
        """Undo the instant (a no-op once it completed or aborted)."""
        if self.phase in (Phase.COMPLETED, Phase.ABORTED) or self.instant is None:
            return
        try:
            if self.action in _ROLLED_BACK_ON_ABORT:
                # under optimistic concurrency control the rollback holds the table lock, so
                # no other writer's recovery runs it at the same time
                scope = self.concurrency.locked(f"rolling back {self.requested_time}") if self.concurrency else nullcontext()
                with scope:
                    if self.timeline.reload().group(self.requested_time) is not None:  # else undone already
                        self._rollback(self.instant)
                        if self.purge_plan:
                            self.timeline.reload().delete_instant(self.requested_time)
            elif self.action == Action.SAVEPOINT:
                self.timeline.delete_savepoint(self.requested_time)
            # cleans, rollbacks and restores stay pending: the next run finishes them
            self.phase = Phase.ABORTED
        finally:
            self._stop_concurrency()

    @property
    def committed(self) -> bool:
        return self.phase is Phase.COMPLETED

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is not None and not self.committed:
            try:
                self.abort()
            except Exception as undo_error:  # the next writer rolls it back
                log.error(
                    "%s %s failed and could not be undone at once (%s); the next write rolls it back",
                    self.action, self.requested_time, undo_error,
                )
        return False

    # -- internals -----------------------------------------------------------------------------
    def _expect(self, phase: Phase, what: str) -> None:
        if self.phase is not phase:
            raise TimelineError(f"cannot {what} {self.action} {self.requested_time}: it is {self.phase.value}")

    def _reconcile_markers(self, metadata: CommitMetadata) -> None:
        """Delete data files a retried task left behind (marked, but in no write stat)."""
        storage = self.timeline.storage
        written = {stat.path for stat in metadata.write_stats()}
        for marker in list_markers(storage, self.requested_time):
            if marker.data_path not in written and storage.exists(marker.data_path):
                storage.delete(marker.data_path)

    def _publish(self, metadata: Any) -> None:
        content = _bytes(metadata, self.timeline)
        try:
            self.instant = self.timeline.complete(self.instant, content)
        except BaseException:
            # the completed file appears atomically: if it is there, the commit landed
            landed = self.timeline.reload().state_file(self.requested_time, State.COMPLETED)
            if landed is None and not self._savepoint_landed():
                raise
            self.instant = landed or self.instant.with_state(State.COMPLETED)
        self.phase = Phase.COMPLETED

    def _savepoint_landed(self) -> bool:
        return self.action == Action.SAVEPOINT and self.requested_time in self.timeline.reload().savepoints()

    def _after_commit(self) -> None:
        """Clean-up after publication: reported, never raised (the commit stands)."""
        try:
            self._stop_concurrency()
        except Exception as exc:
            self._warn(f"{self.action} {self.requested_time} committed, but its heartbeat could not be deleted: {exc}")
        if self.action not in _ROLLED_BACK_ON_ABORT:
            return  # only data-writing actions leave markers
        try:
            delete_markers(self.timeline.storage, self.requested_time)
        except Exception as exc:
            self._warn(f"{self.action} {self.requested_time} committed, but its markers could not be deleted: {exc}")

    def _warn(self, message: str) -> None:
        log.warning(message)
        self.warnings.append(message)

    def give_up(self) -> None:
        """Another run of this resumed instant owns it now: nothing is undone (an abort would
        roll back the other run's work) and its heartbeat is left alone. What this run wrote
        is marked; the other run's commit deletes marked files its metadata does not name."""
        self.phase = Phase.ABORTED
        if self.concurrency is not None:
            self.concurrency.lost_race()

    def _stop_concurrency(self) -> None:
        if self.concurrency is not None:
            self.concurrency.finished()

    def _rollback(self, instant: Instant) -> None:
        from ..services.rollback import rollback

        timeline = self.timeline
        rollback(timeline.storage, timeline.config, timeline, instant)


def check_writable(timeline: "Timeline") -> None:
    """hudi-duck writes the timeline of table version 6 only: refuse before anything is written."""
    version = timeline.config.version
    if version not in WRITABLE_TABLE_VERSIONS:
        raise UnsupportedFeatureError(
            f"{timeline.storage.uri()}: hudi-duck writes table version 6; this table is version {version} "
            "(write it with Apache Hudi 1.x)"
        )


def _bytes(payload: Any, timeline: "Timeline") -> bytes:
    """A payload's file content: commit metadata as the table version wants it."""
    if payload is None:
        return b""
    if isinstance(payload, (bytes, bytearray)):
        return bytes(payload)
    if isinstance(payload, CommitMetadata):
        return payload.to_bytes(timeline.config.version)
    return payload.to_bytes()
