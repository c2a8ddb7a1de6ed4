"""File system view: the file slices a query reads, as of an instant.

Rules (the ones Apache Hudi and hudi-rs agree on):

* A base file counts only if the instant that wrote it completed (or predates
  the active timeline, i.e. was archived).
* Table version 6 names a log file after its slice's base instant; a log of a
  pending compaction belongs to the slice before it ("merged file slice").
  Versions 8+ name a log after the delta commit that wrote it and place it in
  the slice with the greatest base instant at or before that commit's
  completion time.
* File groups replaced by completed replace commits (insert overwrite,
  delete partition, clustering) disappear.
* A query as of time T reads, per file group, the slice with the greatest base
  instant <= T (requested-time semantics, as hudi-rs does).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Iterable, Protocol

from ..config.table_config import METAFOLDER, TableConfig
from ..file_group.file_slice import FileGroup, FileSlice
from ..file_group.naming import (
    BaseFile,
    LogFile,
    is_partition_metafile,
    parse_base_file,
    parse_log_file,
)
from ..storage.storage import Storage
from ..timeline.active import Timeline
from ..timeline.instant import Action

#: Folders that are never partitions.
_SKIP_DIRS = (METAFOLDER,)


@dataclass(frozen=True)
class Partition:
    path: str  # relative partition path ('' for non-partitioned tables)


@dataclass(frozen=True)
class CommittedInstants:
    """Which instants count for a read: the timeline's answers as data, taken when planning.

    An instant counts when it completed on the active timeline (``completed``)
    or predates the active timeline's first write (``earliest_active``: it was
    archived, Hudi's ``containsOrBeforeTimelineStarts``), and it is within the
    read's bounds: at most ``until`` (time travel, an incremental window's
    end) and before ``before`` (compaction and clustering read the instants
    before their own).
    """

    completed: frozenset[str]
    #: earliest write (any state) of the active timeline; None: it has none, every instant predates it
    earliest_active: str | None
    until: str | None = None
    before: str | None = None

    def is_committed(self, instant_time: str) -> bool:
        if instant_time in self.completed:
            return True
        return self.earliest_active is None or instant_time < self.earliest_active

    def admits(self, instant_time: str) -> bool:
        """Whether data of ``instant_time`` (a log block, a base file) is read."""
        if self.until is not None and instant_time > self.until:
            return False
        if self.before is not None and instant_time >= self.before:
            return False
        return self.is_committed(instant_time)

    def bounded(self, until: str | None = None, before: str | None = None) -> "CommittedInstants":
        return replace(self, until=until, before=before)


class StorageListing:
    """Partitions and their files found by listing the table's folders
    (Hudi's ``FileSystemBackedTableMetadata``)."""

    source = "storage"

    def __init__(self, storage: Storage, config: TableConfig):
        self.storage = storage
        self.config = config
        #: entries of the partition folders the search for partitions listed, each kept for
        #: the first ``files`` of its partition (one listing per folder, not two)
        self._walked: dict[str, list] = {}

    def partitions(self) -> list[str]:
        """Partition paths, found by their ``.hoodie_partition_metadata`` marker."""
        found: list[str] = []
        stack = [""]
        while stack:
            current = stack.pop()
            entries = self.storage.list_entries(current, unsized=is_partition_metafile)
            if any((not is_dir) and is_partition_metafile(name) for name, _, is_dir in entries):
                found.append(current)
                self._walked[current] = entries
            for name, _, is_dir in entries:
                if is_dir and name not in _SKIP_DIRS and not name.startswith("."):
                    stack.append(f"{current}/{name}" if current else name)
        if not found and not self.config.is_partitioned:
            found.append("")
        return sorted(found)

    def files(self, partition: str) -> list[tuple[str, int]]:
        """(file name, size) of the files directly in ``partition``, but its partition metafile
        (as the metadata table's ``files`` partition lists them)."""
        entries = self._walked.pop(partition, None)
        if entries is None:
            entries = self.storage.list_entries(partition, unsized=is_partition_metafile)
        return [(name, size) for name, size, is_dir in entries if not is_dir and not is_partition_metafile(name)]


class FileListing(Protocol):
    """Where a file system view gets partitions and files: storage or the metadata table."""

    source: str

    def partitions(self) -> list[str]: ...

    def files(self, partition: str) -> list[tuple[str, int]]: ...


class FileSystemView:
    """Lists a table's data files once and answers slice questions from memory."""

    def __init__(self, storage: Storage, config: TableConfig, timeline: Timeline, listing: FileListing | None = None):
        self.storage = storage
        self.config = config
        self.timeline = timeline
        self.listing: FileListing = listing if listing is not None else StorageListing(storage, config)
        self.base_ext = config.base_file_extension
        self.files_listed = 0
        self._committed: CommittedInstants | None = None

    # -- listing ----------------------------------------------------------------
    @cached_property
    def partitions(self) -> list[str]:
        """Partition paths of the table (the listing's answer, sorted)."""
        return sorted(self.listing.partitions())

    def list_partition(self, partition: str) -> tuple[list[BaseFile], list[LogFile]]:
        bases: list[BaseFile] = []
        logs: list[LogFile] = []
        base_ext = self.base_ext
        files = self.listing.files(partition)
        self.files_listed += len(files)
        for name, size in files:
            if name.startswith("."):
                log = parse_log_file(partition, name, size)
                if log is not None and not log.is_cdc:
                    logs.append(log)
                continue
            base = parse_base_file(partition, name, size)
            if base is not None and base.extension == base_ext:
                bases.append(base)
        return bases, logs

    # -- commit status ----------------------------------------------------------------
    @cached_property
    def _earliest_active_write(self) -> str | None:
        """Earliest instant of a write action on the active timeline (any state).

        Files older than this were written by archived instants and count as
        committed, as Hudi's ``containsOrBeforeTimelineStarts`` does.
        """
        times = []
        for group in self.timeline.instant_groups():
            if any(i.action in Action.WRITE_ACTIONS for i in group.by_state.values()):
                times.append(group.requested_time)
        return min(times) if times else None

    @property
    def committed(self) -> CommittedInstants:
        """Every instant that counts as committed (no bounds), as the timeline says now."""
        completed = self.timeline.completed_write_times
        known = self._committed
        if known is None or known.completed is not completed:
            known = self._committed = CommittedInstants(completed, self._earliest_active_write)
        return known

    def committed_instants(self, until: str | None = None, before: str | None = None) -> CommittedInstants:
        """The committed instants at most ``until`` and before ``before``."""
        return self.committed.bounded(until, before)

    def is_committed(self, instant_time: str) -> bool:
        return self.committed.is_committed(instant_time)

    @cached_property
    def _compaction_times(self) -> frozenset[str]:
        """Requested times of compactions (pending or done): slice boundaries."""
        return self.timeline.compaction_times()

    # -- file groups -----------------------------------------------------------------
    def file_groups(self, partitions: Iterable[str] | None = None) -> list[FileGroup]:
        """Every file group with its committed slices (no as-of filtering yet)."""
        wanted = self.partitions if partitions is None else list(partitions)
        groups: list[FileGroup] = []
        for partition in wanted:
            groups.extend(self._groups_of_partition(partition))
        return groups

    def _groups_of_partition(self, partition: str) -> list[FileGroup]:
        bases, logs = self.list_partition(partition)
        return self._groups_of_listing(partition, bases, logs)

    def _groups_of_listing(self, partition: str, bases: list[BaseFile], logs: list[LogFile]) -> list[FileGroup]:
        groups: dict[str, FileGroup] = {}
        is_committed = self.committed.is_committed
        for base in bases:
            if is_committed(base.instant_time):
                group = groups.get(base.file_id)
                if group is None:
                    group = groups[base.file_id] = FileGroup(partition, base.file_id)
                group.set_base(base.instant_time, base)
        if logs:
            # file groups of logs alone come in Hudi's log order; else only a slice's logs need it
            in_order = any(log.file_id not in groups for log in logs)
            if in_order:
                logs.sort(key=LogFile.sort_key)
            #: (file id, slice) -> its logs: each slice is made once, however many logs it has
            slice_logs: dict[tuple[str, str], list[LogFile]] = {}
            for log in logs:
                group = groups.get(log.file_id)
                if group is None:
                    group = groups[log.file_id] = FileGroup(partition, log.file_id)
                key = self._slice_key_of_log(group, log)
                if key is not None:
                    slice_logs.setdefault((log.file_id, key), []).append(log)
            for (file_id, key), in_slice in slice_logs.items():
                if len(in_slice) > 1 and not in_order:
                    in_slice.sort(key=LogFile.sort_key)  # Hudi's log order within the slice
                groups[file_id].add_logs(key, in_slice)
        return [g for g in groups.values() if g.slices]

    def _slice_key_of_log(self, group: FileGroup, log: LogFile) -> str | None:
        if self.config.version >= 8:
            return self._slice_key_v8(group, log)
        # version 6: the log file names its slice's base instant; accept it when
        # that instant is committed or is a compaction (which opens a new slice).
        if self.is_committed(log.instant_time) or log.instant_time in self._compaction_times:
            return log.instant_time
        return None

    def _slice_key_v8(self, group: FileGroup, log: LogFile) -> str | None:
        if not self.is_committed(log.instant_time):
            return None
        completion = self.timeline.completion_time(log.instant_time) or log.instant_time
        candidates = [t for t, s in group.slices.items() if s.base_file is not None and t <= completion]
        if candidates:
            return max(candidates)
        return log.instant_time  # a log-only slice

    # -- slices as of an instant ----------------------------------------------------------
    def replaced_file_groups(self, as_of: str | None) -> set[tuple[str, str]]:
        return self.timeline.replaced_file_groups(as_of)

    def latest_slices(
        self,
        as_of: str | None = None,
        partitions: Iterable[str] | None = None,
        read_optimized: bool = False,
        file_groups: frozenset[tuple[str, str]] | None = None,
        replaced: frozenset[tuple[str, str]] | set[tuple[str, str]] | None = None,
        hidden_base_instants: frozenset[str] = frozenset(),
    ) -> list[FileSlice]:
        """The slice each visible file group shows as of ``as_of`` (None: latest).

        ``file_groups`` keeps only these (partition, file id) pairs;
        ``hidden_base_instants`` hides base files written by instants that do not
        count for the query (an incremental read ending before a compaction completed).
        """
        if replaced is None:
            replaced = self.replaced_file_groups(as_of)
        out: list[FileSlice] = []
        for partition in self.partitions if partitions is None else list(partitions):
            bases, logs = self.list_partition(partition)
            if not logs and as_of is None and not hidden_base_instants:
                simple = self._base_only_slices(partition, bases)
                if simple is not None:
                    out.extend(
                        s for s in simple
                        if (partition, s.file_id) not in replaced
                        and (file_groups is None or (partition, s.file_id) in file_groups)
                    )
                    continue
            for group in self._groups_of_listing(partition, bases, logs):
                if (group.partition_path, group.file_id) in replaced:
                    continue
                if file_groups is not None and (group.partition_path, group.file_id) not in file_groups:
                    continue
                chosen = self._slice_as_of(group, as_of, read_optimized, hidden_base_instants)
                if chosen is not None:
                    out.append(chosen)
        return out

    def _base_only_slices(self, partition: str, bases: list[BaseFile]) -> list[FileSlice] | None:
        """The latest slices of a partition without log files whose file groups each have one
        committed base file (a partition only ever inserted into, or cleaned down to one
        version per file group): each base file is its slice. ``None`` when a file group has
        several."""
        is_committed = self.committed.is_committed
        seen: set[str] = set()
        out = []
        for base in bases:
            if not is_committed(base.instant_time):
                continue
            if base.file_id in seen:
                return None
            seen.add(base.file_id)
            out.append(FileSlice.of_base(base))
        return out

    def _slice_as_of(
        self,
        group: FileGroup,
        as_of: str | None,
        read_optimized: bool,
        hidden_base_instants: frozenset[str] = frozenset(),
    ) -> FileSlice | None:
        slices = group.slices
        if len(slices) == 1 and not hidden_base_instants:
            # (the common case: one slice per file group, nothing to order or merge)
            (only,) = slices.values()
            if as_of is not None and only.base_instant_time > as_of:
                return None
            if read_optimized:
                return only.with_logs(()) if only.base_file is not None else None
            return only
        ordered = [s for s in group.ordered_slices() if as_of is None or s.base_instant_time <= as_of]
        if hidden_base_instants:
            ordered = [
                s.with_base(None) if s.base_file is not None and s.base_instant_time in hidden_base_instants else s
                for s in ordered
            ]
            ordered = [s for s in ordered if s.base_file is not None or s.log_files]
        if read_optimized:
            with_base = [s for s in ordered if s.base_file is not None]
            if not with_base:
                return None
            return with_base[-1].with_logs(())
        if not ordered:
            return None
        latest = ordered[-1]
        if latest.base_file is None and len(ordered) > 1 and latest.base_instant_time in self._compaction_times:
            # pending (or not-yet-visible) compaction: merge with the previous slice
            previous = ordered[-2]
            return FileSlice(
                previous.partition_path,
                previous.file_id,
                previous.base_instant_time,
                previous.base_file,
                previous.log_files + latest.log_files,
            )
        return latest

    def __repr__(self) -> str:
        return f"FileSystemView({self.storage.uri()}, partitions={len(self.partitions)})"


def relative_partition_of(path: str) -> str:
    return posixpath.dirname(path)
