"""File groups and file slices.

A *file group* (partition path + file id) holds versions of the same set of
records. A *file slice* is one version: an optional base file plus the log
files appended to it, identified by its base instant time. Slices are values
(frozen): read plans carry them to other threads and processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..frozen import frozen_value
from .naming import BaseFile, LogFile


@dataclass(frozen=True)
class FileSlice:
    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: BaseFile | None = None
    log_files: tuple[LogFile, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.log_files, tuple):
            object.__setattr__(self, "log_files", tuple(self.log_files))

    @classmethod
    def of_base(cls, base_file: BaseFile) -> "FileSlice":
        """The slice of a base file alone: what a plan makes per file group of a partition
        without logs (made as :func:`~hudi_duck.core.frozen.frozen_value` makes values)."""
        return frozen_value(cls, {
            "partition_path": base_file.partition_path, "file_id": base_file.file_id,
            "base_instant_time": base_file.instant_time, "base_file": base_file, "log_files": (),
        })

    @property
    def has_logs(self) -> bool:
        return bool(self.log_files)

    @property
    def file_group_id(self) -> tuple[str, str]:
        return (self.partition_path, self.file_id)

    @property
    def slice_id(self) -> str:
        """Stable identity: partition/fileId@baseInstant."""
        return f"{self.partition_path}/{self.file_id}@{self.base_instant_time}"

    def sorted_logs(self) -> list[LogFile]:
        return sorted(self.log_files, key=LogFile.sort_key)

    def with_base(self, base_file: BaseFile | None) -> "FileSlice":
        # the constructor, not dataclasses.replace: a file system view makes one per file
        return FileSlice(self.partition_path, self.file_id, self.base_instant_time, base_file, self.log_files)

    def with_logs(self, log_files: Iterable[LogFile]) -> "FileSlice":
        return FileSlice(self.partition_path, self.file_id, self.base_instant_time, self.base_file, tuple(log_files))

    @property
    def total_size(self) -> int:
        size = self.base_file.size if self.base_file else 0
        return size + sum(max(log.size, 0) for log in self.log_files)

    def __repr__(self) -> str:
        base = self.base_file.file_name if self.base_file else None
        logs = [log.file_name for log in self.sorted_logs()]
        return f"FileSlice({self.partition_path!r}, {self.file_id}, base={base}, logs={logs})"


@dataclass
class FileGroup:
    partition_path: str
    file_id: str
    slices: dict[str, FileSlice] = field(default_factory=dict)  # base instant -> slice

    def slice_for(self, base_instant_time: str) -> FileSlice:
        existing = self.slices.get(base_instant_time)
        if existing is None:
            existing = FileSlice(self.partition_path, self.file_id, base_instant_time)
            self.slices[base_instant_time] = existing
        return existing

    def set_base(self, base_instant_time: str, base_file: BaseFile) -> None:
        existing = self.slices.get(base_instant_time)
        logs = existing.log_files if existing is not None else ()
        self.slices[base_instant_time] = FileSlice(self.partition_path, self.file_id, base_instant_time, base_file, logs)

    def add_log(self, base_instant_time: str, log: LogFile) -> None:
        self.add_logs(base_instant_time, (log,))

    def add_logs(self, base_instant_time: str, logs: Iterable[LogFile]) -> None:
        """Append ``logs`` (in order) to the slice of ``base_instant_time``, made once for all of them."""
        current = self.slice_for(base_instant_time)
        self.slices[base_instant_time] = current.with_logs(current.log_files + tuple(logs))

    def ordered_slices(self) -> list[FileSlice]:
        """Slices from oldest to newest base instant."""
        return [self.slices[t] for t in sorted(self.slices)]

    def __repr__(self) -> str:
        return f"FileGroup({self.partition_path!r}, {self.file_id}, slices={sorted(self.slices)})"
