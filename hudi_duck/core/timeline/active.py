"""The active timeline: every instant of a table and the files describing it.

Only *completed* write instants make data visible. Pending compactions and
clusterings matter to file-slice planning; failed (inflight) writes must be
ignored by readers until a rollback removes their files.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, Iterable, TypeVar

from ..config.table_config import TableConfig
from ..errors import CorruptFileError, TableNotFoundError, TimelineChangedError, TimelineError
from ..storage import kept
from ..storage.storage import Storage
from . import codec, summary_store
from .commit_metadata import CommitMetadata, CommitSummary
from .instant import Action, Instant, State
from .plans import ClusteringPlan, CompactionPlan, RequestedReplaceMetadata, plan_class_of
from .record import TimelinePayload
from .service_metadata import SavepointMetadata, metadata_class_of

P = TypeVar("P")
log = logging.getLogger("hudi_duck")

_PENDING_ACTION_FAMILY = {
    # layout 1 keeps the pending action's requested/inflight files next to the
    # completed file of another action; these map the completed action back.
    Action.COMPACTION: Action.COMMIT,
    Action.LOG_COMPACTION: Action.DELTA_COMMIT,
    Action.CLUSTERING: Action.REPLACE_COMMIT,
}


#: States from the latest (completed) to the first (requested).
_LATEST_FIRST = (State.COMPLETED, State.INFLIGHT, State.REQUESTED)


@dataclass
class InstantFiles:
    """All timeline files of one requested time, by state."""

    requested_time: str
    by_state: dict[State, Instant] = field(default_factory=dict)

    @property
    def latest(self) -> Instant:
        by_state = self.by_state
        for state in _LATEST_FIRST:
            found = by_state.get(state)
            if found is not None:
                return found
        raise ValueError(f"instant {self.requested_time} has no state files")

    @property
    def pending_action(self) -> str:
        """The action name of the requested/inflight state (e.g. ``compaction``)."""
        for state in (State.REQUESTED, State.INFLIGHT):
            if state in self.by_state:
                return self.by_state[state].action
        return self.latest.action


@dataclass(frozen=True)
class PlannedInstant(Generic[P]):
    """A compaction or clustering instant with its plan and where it stands."""

    requested_time: str
    #: the requested action: compaction / logcompaction, clustering (layout 2) or
    #: replacecommit (layout 1 clustering)
    action: str
    latest: Instant
    plan: P

    @property
    def state(self) -> State:
        return self.latest.state

    @property
    def completion_time(self) -> str | None:
        return self.latest.completion_time if self.latest.is_completed else None

    @property
    def is_pending(self) -> bool:
        return not self.latest.is_completed


class Timeline:
    """A table's active timeline (layout 1 or 2)."""

    def __init__(self, storage: Storage, config: TableConfig, groups: dict[str, InstantFiles]):
        self.storage = storage
        self.config = config
        self.layout_version = config.timeline_layout_version
        self.timeline_dir = config.timeline_path
        self._groups = dict(sorted(groups.items()))
        self._payload_cache: dict[tuple[str, str, State], Any] = {}
        self._summary_cache: dict[tuple[str, str, State], CommitSummary] = {}
        #: local commit files whose summaries this timeline took: key -> (file name, stat signature)
        self._signatures: dict[tuple[str, str, State], tuple[str, summary_store.Signature]] = {}
        self._file_signatures: dict[str, summary_store.Signature] = {}
        #: what the summary store held when it was first asked (None: not asked), and whether a
        #: commit was decoded since (the store is written again only then)
        self._stored: dict[tuple[str, summary_store.Signature], summary_store.KeptSummary] | None = None
        self._decoded_new = False
        #: savepoint files (they share the time of the commit they pin, so live apart)
        self.savepoint_instants: list[Instant] = []

    # -- loading ------------------------------------------------------------------
    @classmethod
    def load(cls, storage: Storage, config: TableConfig) -> "Timeline":
        groups: dict[str, InstantFiles] = {}
        savepoints: list[Instant] = []
        parse = Instant.parse_file_name
        for name in storage.file_names(config.timeline_path):
            instant = parse(name)
            if instant is None:
                continue
            if instant.action == Action.SAVEPOINT:
                # a savepoint reuses the time of the commit it pins
                savepoints.append(instant)
                continue
            group = groups.get(instant.requested_time)
            if group is None:  # (made once per requested time, not once per state file)
                group = groups[instant.requested_time] = InstantFiles(instant.requested_time)
            previous = group.by_state.get(instant.state)
            if previous is not None and previous.action != instant.action:
                # e.g. '<ts>.compaction.requested' and '<ts>.commit' are one instant;
                # two *different* completed actions at one time are corrupt.
                if instant.state is State.COMPLETED:
                    raise TimelineError(
                        f"{storage.uri(config.timeline_path)}: two completed instants share time "
                        f"{instant.requested_time} ({previous.action}, {instant.action})"
                    )
            group.by_state[instant.state] = instant
        timeline = cls(storage, config, groups)
        timeline.savepoint_instants = sorted(savepoints, key=lambda i: (i.requested_time, i.state.rank))
        return timeline

    # -- instants -----------------------------------------------------------------
    @cached_property
    def instants(self) -> list[Instant]:
        """Each instant in its latest state, ordered by requested time."""
        return [group.latest for group in self._groups.values()]

    def group(self, requested_time: str) -> InstantFiles | None:
        return self._groups.get(requested_time)

    def instant_groups(self) -> list[InstantFiles]:
        """Every requested time with all its state files."""
        return list(self._groups.values())

    def completed(self, actions: Iterable[str] | None = None) -> list[Instant]:
        wanted = set(actions) if actions is not None else None
        out = [i for i in self.instants if i.is_completed and (wanted is None or i.action in wanted)]
        if wanted is not None and Action.SAVEPOINT in wanted:
            out += [i for i in self.savepoint_instants if i.is_completed]
            out.sort(key=lambda i: i.requested_time)
        return out

    def pending(self, actions: Iterable[str] | None = None) -> list[Instant]:
        wanted = set(actions) if actions is not None else None
        out = []
        for group in self._groups.values():
            latest = group.latest
            if latest.is_completed:
                continue
            if wanted is None or latest.action in wanted:
                out.append(latest)
        return out

    @cached_property
    def completed_writes(self) -> list[Instant]:
        """Completed commit/deltacommit/replacecommit instants (incl. compaction,
        log compaction and clustering results), in requested-time order."""
        return self.completed(Action.WRITE_ACTIONS)

    @cached_property
    def completed_write_times(self) -> frozenset[str]:
        return frozenset(i.requested_time for i in self.completed_writes)

    def is_completed(self, requested_time: str) -> bool:
        group = self._groups.get(requested_time)
        return bool(group and group.latest.is_completed)

    def completion_time(self, requested_time: str) -> str | None:
        group = self._groups.get(requested_time)
        if group is None or not group.latest.is_completed:
            return None
        return group.latest.completion_time

    def was_action(self, requested_time: str, action: str) -> bool:
        """Whether the instant at ``requested_time`` was scheduled as ``action``."""
        group = self._groups.get(requested_time)
        return bool(group and any(i.action == action for i in group.by_state.values()))

    def pending_compaction_times(self) -> list[str]:
        return [i.requested_time for i in self.pending([Action.COMPACTION])]

    def pending_log_compaction_times(self) -> list[str]:
        return [i.requested_time for i in self.pending([Action.LOG_COMPACTION])]

    def compaction_times(self) -> frozenset[str]:
        """Requested times of compactions, pending or done: where file slices begin."""
        return frozenset(
            g.requested_time for g in self._groups.values() if any(i.action == Action.COMPACTION for i in g.by_state.values())
        )

    # -- plans: the one reader of compaction and clustering plans ------------------------------
    def compaction_plans(
        self, pending_only: bool = True, log_compaction: bool = True
    ) -> list[PlannedInstant[CompactionPlan]]:
        """Compactions (and log compactions) with their plans, oldest first: the pending ones,
        or every one whose plan is still on the active timeline."""
        actions = (Action.COMPACTION, Action.LOG_COMPACTION) if log_compaction else (Action.COMPACTION,)
        out = []
        for group in self._groups.values():
            requested = group.by_state.get(State.REQUESTED)
            if requested is None or requested.action not in actions:
                continue
            if pending_only and group.latest.is_completed:
                continue
            plan = self.payload(requested) or CompactionPlan()
            out.append(PlannedInstant(group.requested_time, requested.action, group.latest, plan))
        return out

    def clustering_plans(self, pending_only: bool = True) -> list[PlannedInstant[ClusteringPlan]]:
        """Clusterings with their plans, oldest first.

        Layout 2 names clustering ``clustering`` until it completes; layout 1 writes a
        pending ``replacecommit`` whose requested file holds ``operationType=CLUSTER``
        (insert overwrite writes other or no content there).
        """
        out = []
        for group in self._groups.values():
            requested = group.by_state.get(State.REQUESTED)
            if requested is None or requested.action not in (Action.CLUSTERING, Action.REPLACE_COMMIT):
                continue
            if pending_only and group.latest.is_completed:
                continue
            try:
                content = self.payload(requested)
            except CorruptFileError as exc:
                # no readable clustering plan: a failed write as far as anyone can tell
                # (its heartbeat decides whether it is rolled back)
                log.warning("%s: not read as a clustering plan: %s", self.storage.uri(self.file_of(requested)), exc)
                continue
            if not isinstance(content, RequestedReplaceMetadata) or not content.is_clustering:
                continue
            out.append(PlannedInstant(group.requested_time, requested.action, group.latest, content.clustering_plan))
        return out

    def pending_clustering(self) -> list[Instant]:
        """Pending clustering instants (layout 2 ``clustering``; layout 1 pending
        ``replacecommit`` whose requested file holds a clustering plan)."""
        return [p.latest for p in self.clustering_plans()]

    # -- savepoints: the one listing of savepoints --------------------------------------------
    def savepoints(self) -> list[str]:
        """Times of the completed savepoints (a savepoint shares its commit's time)."""
        return sorted({i.requested_time for i in self.savepoint_instants if i.is_completed})

    def savepoint_metadata(self, requested_time: str) -> SavepointMetadata | None:
        """The metadata of a completed savepoint (``None`` when there is none)."""
        instant = self.savepoint_state_file(requested_time, State.COMPLETED)
        return self.payload(instant) if instant is not None else None

    def savepoint_state_file(self, requested_time: str, state: State) -> Instant | None:
        return next(
            (i for i in self.savepoint_instants if i.requested_time == requested_time and i.state is state), None
        )

    def next_instant_time(self) -> str:
        """A fresh instant time after every instant of this timeline."""
        from .instant import new_instant_time

        return new_instant_time(self.config.timeline_timezone_utc, after=self.last_instant_time)

    @property
    def last_instant_time(self) -> str | None:
        return self.instants[-1].requested_time if self.instants else None

    @property
    def latest_completed_write(self) -> Instant | None:
        writes = self.completed_writes
        return writes[-1] if writes else None

    # -- instant files --------------------------------------------------------------
    def file_of(self, instant: Instant) -> str:
        return f"{self.timeline_dir}/{instant.file_name(self.layout_version)}"

    def read_details(self, instant: Instant) -> bytes:
        path = self.file_of(instant)
        try:
            return self.storage.read(path)
        except (FileNotFoundError, TableNotFoundError) as exc:
            raise TimelineChangedError(
                f"timeline file {self.storage.uri(path)} was listed but is gone (archived or rolled back meanwhile)"
            ) from exc
        except Exception as exc:
            raise TimelineError(f"cannot read timeline file {self.storage.uri(path)}: {exc}") from exc

    def state_file(self, requested_time: str, state: State) -> Instant | None:
        group = self._groups.get(requested_time)
        return group.by_state.get(state) if group else None

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """Commit metadata of a completed write instant (cached)."""
        payload = self.payload(instant)
        return payload if isinstance(payload, CommitMetadata) else CommitMetadata()

    def commit_summary(self, instant: Instant) -> CommitSummary:
        """What a read plans with of a completed write's commit metadata (:class:`CommitSummary`).

        Cached in this timeline, and for the process: a completed instant's file never
        changes, and a table opened again (every query plans on a fresh table) takes it
        without decoding it again. A local file is known by its ``stat`` (device, inode,
        size, modified and changed times: any rewrite changes the last), so it is not even
        read again; a file on an object store by its bytes."""
        key = (instant.requested_time, instant.action, instant.state)
        found = self._summary_cache.get(key)
        if found is None:
            if payload_class(instant) is not CommitMetadata:
                found = CommitSummary()
            else:
                found = self._summary_of_file(instant)
            self._summary_cache[key] = found
        return found

    def commit_schema(self, instant: Instant) -> str | None:
        """The schema a completed write's commit recorded (its summary's ``schema``): taken from
        what an earlier process kept without decoding the rest of the summary, as a plan asks
        it of every base file's commit."""
        key = (instant.requested_time, instant.action, instant.state)
        found = self._summary_cache.get(key)
        if found is not None:
            return found.schema
        if self.storage.is_local and payload_class(instant) is CommitMetadata:
            path = self.file_of(instant)
            try:
                signature = self._signature(path)
            except OSError:
                return self.commit_summary(instant).schema  # (which names the problem)
            known = _known_summary(self.storage.uri(path), signature)
            if known is not None:
                return known.schema
            kept_one = self._kept_summary(path, signature)
            if kept_one is not None:
                return kept_one.schema
        return self.commit_summary(instant).schema

    def _kept_summary(self, path: str, signature: summary_store.Signature) -> summary_store.KeptSummary | None:
        """What an earlier process kept of the commit file at ``path`` as it is now (its entry
        taken at the first question of this timeline)."""
        if self._stored is None:
            self._load_stored()
        return self._stored.get((path.rpartition("/")[2], signature))

    def prefetch_summaries(self, instants: Iterable[Instant]) -> None:
        """Read the commit files of ``instants`` whose summaries this timeline lacks in one go:
        on an object store side by side, where a plan would otherwise wait for one GET after
        another (a plan checks every completed commit). A file that cannot be read here is
        left to :meth:`commit_summary`, which names it."""
        if self.storage.is_local:
            return  # (known by their stat, mostly not read at all)
        wanted = {}
        for instant in instants:
            key = (instant.requested_time, instant.action, instant.state)
            if key not in self._summary_cache and payload_class(instant) is CommitMetadata:
                wanted[self.file_of(instant)] = (key, instant)
        if len(wanted) < 2:
            return
        for path, data in self.storage.read_many(list(wanted)).items():
            if isinstance(data, (bytes, bytearray)):
                key, _ = wanted[path]
                self._summary_cache[key] = _summary_of(self.storage.uri(path), bytes(data))

    def commit_signatures(self, instants: Iterable[Instant]) -> list[tuple[str, summary_store.Signature]] | None:
        """(file name, ``stat`` signature) of each instant's timeline file: what identifies its
        bytes without reading them. None on an object store, or when a file is gone."""
        if not self.storage.is_local:
            return None
        out = []
        for instant in instants:
            path = self.file_of(instant)
            try:
                out.append((path.rpartition("/")[2], self._signature(path)))
            except OSError:
                return None
        return out

    def _signature(self, path: str) -> summary_store.Signature:
        """A local timeline file's ``stat`` signature, taken once per timeline (a plan asks it of
        every commit file for the schemas, then for its check)."""
        found = self._file_signatures.get(path)
        if found is None:
            found = self._file_signatures[path] = self.storage.signature(path)
        return found

    def _summary_of_file(self, instant: Instant) -> CommitSummary:
        path = self.file_of(instant)
        uri = self.storage.uri(path)
        if not self.storage.is_local:
            return _summary_of(uri, self.read_details(instant))
        try:
            signature = self._signature(path)
        except FileNotFoundError as exc:
            raise TimelineChangedError(
                f"timeline file {uri} was listed but is gone (archived or rolled back meanwhile)"
            ) from exc
        except OSError as exc:
            raise TimelineError(f"cannot read timeline file {uri}: {exc}") from exc
        size = signature[2]
        name = path.rpartition("/")[2]
        found = _known_summary(uri, signature)
        if found is None:
            kept_one = self._kept_summary(path, signature)
            found = kept_one.summary() if kept_one is not None else None
            if found is not None:
                _keep_summary((uri, signature), found, size)
        if found is None:
            data = self.read_details(instant)
            found = _summary_of(uri, data)
            if len(data) != size:  # (not read as it was when looked at)
                return found
            _keep_summary((uri, signature), found, len(data))
            self._decoded_new = True
        self._signatures[(instant.requested_time, instant.action, instant.state)] = (name, signature)
        return found

    def _load_stored(self) -> None:
        """Take the summaries a process before this one kept for this timeline folder."""
        self._stored = {}
        if not self.storage.is_local:
            return
        folder = self.storage.uri(self.timeline_dir)
        data = kept.load(summary_store.KIND, folder)
        if not data:
            return
        self._stored = summary_store.decode_for(folder, data)

    def keep_summaries(self) -> None:
        """Keep the summaries of this timeline's commit files for later processes, when this
        timeline decoded a commit file they lacked (a plan calls it once it checked the commits).
        The kept summaries this timeline did not ask for go into the new entry as they were."""
        if kept.store() is None or not self._decoded_new or self._stored is None:
            return
        self._decoded_new = False
        entries: dict[tuple[str, summary_store.Signature], Any] = {
            (name, sig): self._summary_cache[key] for key, (name, sig) in self._signatures.items() if key in self._summary_cache
        }
        on_timeline = {self.file_of(i).rpartition("/")[2] for i in self.completed_writes}
        for (name, sig), summary in (self._stored or {}).items():
            if name in on_timeline:
                entries.setdefault((name, sig), summary)
        summary_store.save_later(self.storage.uri(self.timeline_dir), sorted(entries.items(), key=lambda e: e[0]))

    def payload(self, instant: Instant) -> Any:
        """The typed record of one state file (cached): the plan of a requested instant,
        the workload profile of an inflight write, the metadata of a completed instant;
        ``None`` for an empty file or a state that carries nothing."""
        key = (instant.requested_time, instant.action, instant.state)
        if key in self._payload_cache:
            return self._payload_cache[key]
        cls = payload_class(instant)
        value = None
        if cls is not None:
            value = cls.from_bytes(self.read_details(instant), self.storage.uri(self.file_of(instant)))
        self._payload_cache[key] = value
        return value

    def plan(self, requested_time: str) -> Any:
        """The plan of ``<t>.<action>.requested`` (``None`` if absent or empty)."""
        requested = self.state_file(requested_time, State.REQUESTED)
        return self.payload(requested) if requested is not None else None

    def avro_details(self, requested_time: str, state: State) -> dict[str, Any] | None:
        """The record of one state file as a plain dict, as Hudi wrote it."""
        instant = self.state_file(requested_time, state)
        if instant is None:
            return None
        return codec.decode_record(self.read_details(instant), self.storage.uri(self.file_of(instant)))

    # -- the archived timeline ------------------------------------------------------------
    @cached_property
    def archived_instants(self) -> list:
        """Instants moved to the archived timeline (v6 archive logs / v8+ LSM history)."""
        from .archived import load_archived_timeline

        return load_archived_timeline(self.storage, self.config)

    def archived_completed_writes(self) -> list[tuple[Instant, CommitMetadata]]:
        """Completed write instants of the archived timeline with their commit metadata."""
        out = []
        for archived in self.archived_instants:
            if not archived.is_completed or archived.action not in Action.WRITE_ACTIONS:
                continue
            metadata = archived.commit_metadata() or CommitMetadata()
            out.append((archived.to_instant(), metadata))
        return out

    # -- derived views --------------------------------------------------------------
    def latest_schema(self, before_or_on: str | None = None) -> str | None:
        """Writer schema of the latest completed write (optionally as of a time)."""
        found = self.latest_schema_instant(before_or_on)
        return found[1] if found else None

    def latest_schema_instant(self, before_or_on: str | None = None) -> tuple[Instant, str] | None:
        """The latest completed write carrying a writer schema, and that schema."""
        for instant in reversed(self.completed_writes):
            if before_or_on is not None and instant.requested_time > before_or_on:
                continue
            schema = self.commit_schema(instant)
            if schema:
                return instant, schema
        return None

    def replaced_file_groups(self, before_or_on: str | None = None) -> set[tuple[str, str]]:
        """(partition, file id) pairs replaced by completed replace commits."""
        out: set[tuple[str, str]] = set()
        for instant in self.completed([Action.REPLACE_COMMIT]):
            if before_or_on is not None and instant.requested_time > before_or_on:
                continue
            for partition, ids in self.commit_summary(instant).replaced_file_ids().items():
                out.update((partition, file_id) for file_id in ids)
        return out

    # -- writing instants (the commit protocol) ---------------------------------------------
    def _write_state(self, instant: Instant, content: bytes) -> Instant:
        path = self.file_of(instant)
        if not self.storage.write_if_absent(path, content):
            raise TimelineError(f"timeline file already exists: {self.storage.uri(path)}")
        self._record(instant)
        return instant

    def _record(self, instant: Instant) -> None:
        """Note a state file just written (savepoints live apart: they share a commit's time)."""
        if instant.action == Action.SAVEPOINT:
            others = [i for i in self.savepoint_instants if (i.requested_time, i.state) != (instant.requested_time, instant.state)]
            self.savepoint_instants = sorted(others + [instant], key=lambda i: (i.requested_time, i.state.rank))
        else:
            group = self._groups.setdefault(instant.requested_time, InstantFiles(instant.requested_time))
            group.by_state[instant.state] = instant
        self._invalidate()

    def create_requested(self, requested_time: str, action: str, content: bytes = b"") -> Instant:
        """Start an instant: ``<t>.<action>.requested``."""
        if requested_time in self._groups:
            raise TimelineError(f"instant {requested_time} already exists on {self.storage.uri(self.timeline_dir)}")
        return self._write_state(Instant(requested_time, action, State.REQUESTED), content)

    def create_inflight(self, requested_time: str, action: str, content: bytes = b"") -> Instant:
        """Start an instant without a requested state (a savepoint: ``<t>.savepoint.inflight``)."""
        if action != Action.SAVEPOINT and requested_time in self._groups:
            raise TimelineError(f"instant {requested_time} already exists on {self.storage.uri(self.timeline_dir)}")
        return self._write_state(Instant(requested_time, action, State.INFLIGHT), content)

    def transition_to_inflight(self, requested: Instant, content: bytes = b"") -> Instant:
        return self._write_state(Instant(requested.requested_time, requested.action, State.INFLIGHT), content)

    def complete(self, inflight: Instant, content: bytes, completion_time: str | None = None) -> Instant:
        """Publish an instant: its completed file appears last, atomically."""
        completed = inflight.with_state(State.COMPLETED)
        if self.layout_version >= 2:
            from .instant import new_instant_time

            completed = Instant(
                completed.requested_time,
                completed.action,
                State.COMPLETED,
                completion_time or new_instant_time(self.config.timeline_timezone_utc, after=inflight.requested_time),
            )
        path = self.file_of(completed)
        if not self.storage.create_atomic(path, content):
            raise TimelineError(f"timeline file already exists: {self.storage.uri(path)}")
        self._record(completed)
        return completed

    def delete_savepoint(self, requested_time: str) -> None:
        """Remove a savepoint's files (completed first)."""
        for instant in sorted(self.savepoint_instants, key=lambda i: -i.state.rank):
            if instant.requested_time == requested_time:
                self.storage.delete(self.file_of(instant))
        self.savepoint_instants = [i for i in self.savepoint_instants if i.requested_time != requested_time]
        self._invalidate()

    def delete_instant(self, requested_time: str, states: Iterable[State] | None = None) -> None:
        """Remove an instant's files (rollback of a failed write removes them all)."""
        group = self._groups.get(requested_time)
        if group is None:
            return
        wanted = set(states) if states is not None else set(group.by_state)
        # completed file first, so a crash never leaves a completed instant without its plan
        for state in sorted(wanted, key=lambda s: -s.rank):
            instant = group.by_state.get(state)
            if instant is not None:
                self.storage.delete(self.file_of(instant))
                del group.by_state[state]
        if not group.by_state:
            del self._groups[requested_time]
        self._invalidate()

    def _invalidate(self) -> None:
        for name in ("instants", "completed_writes", "completed_write_times", "archived_instants"):
            self.__dict__.pop(name, None)
        self._payload_cache.clear()
        self._summary_cache.clear()
        self._signatures.clear()

    def reload(self) -> "Timeline":
        return Timeline.load(self.storage, self.config)

    def __len__(self) -> int:
        return len(self._groups)

    def __repr__(self) -> str:
        shown = ", ".join(str(i) for i in self.instants[-5:])
        more = f"{len(self)} instants" + (f", last: {shown}" if shown else "")
        return f"Timeline({self.storage.uri()}, layout {self.layout_version}, {more})"


#: Commit summaries decoded in this process (with the size of their file), by (file URI, file
#: bytes) or, for a local file, (file URI, its ``stat`` signature): equal bytes, equal summary.
_SUMMARIES: "OrderedDict[tuple[str, Any], tuple[CommitSummary, int]]" = OrderedDict()
_SUMMARIES_LOCK = threading.Lock()
#: Bytes of commit files the summaries above are kept for (the least recently used go first).
SUMMARY_CACHE_BYTES = 64 << 20
_summary_bytes = 0


def _summary_of(uri: str, data: bytes) -> CommitSummary:
    """The summary of one commit file's bytes, decoded once per process."""
    key = (uri, data)
    found = _known_summary(*key)
    if found is None:
        found = CommitSummary.of_bytes(data, uri)
        _keep_summary(key, found, len(data))
    return found


def _known_summary(uri: str, identity: Any) -> CommitSummary | None:
    """A summary this process decoded of the file ``uri`` known by ``identity`` (its bytes, or
    its local ``stat`` signature)."""
    key = (uri, identity)
    with _SUMMARIES_LOCK:
        kept = _SUMMARIES.get(key)
        if kept is None:
            return None
        _SUMMARIES.move_to_end(key)
        return kept[0]


def _keep_summary(key: tuple[str, Any], summary: CommitSummary, nbytes: int) -> None:
    """Keep a decoded summary, the least recently used going first past ``SUMMARY_CACHE_BYTES``
    of the commit files' sizes."""
    global _summary_bytes
    if nbytes > SUMMARY_CACHE_BYTES // 4:
        return
    with _SUMMARIES_LOCK:
        if key in _SUMMARIES:
            return
        _SUMMARIES[key] = (summary, nbytes)
        _summary_bytes += nbytes
        while _summary_bytes > SUMMARY_CACHE_BYTES:
            _, (_, dropped) = _SUMMARIES.popitem(last=False)
            _summary_bytes -= dropped


def clear_summary_cache() -> None:
    global _summary_bytes
    with _SUMMARIES_LOCK:
        _SUMMARIES.clear()
        _summary_bytes = 0
    summary_store.forget_entries()


def payload_class(instant: Instant) -> type[TimelinePayload] | None:
    """The record type a state file holds (``None``: the state carries nothing typed)."""
    action = instant.action
    if instant.is_requested:
        if action in Action.WRITE_ACTIONS and action != Action.REPLACE_COMMIT:
            return None  # requested commits and delta commits are empty
        return plan_class_of(action)
    if instant.is_inflight:
        if action in Action.WRITE_ACTIONS:
            return CommitMetadata  # the workload profile (replace commits: empty for clustering)
        return plan_class_of(action) if action == Action.CLEAN else None
    if action in Action.WRITE_ACTIONS:
        return CommitMetadata
    return metadata_class_of(action)
