"""Write markers: which data files an in-progress write created.

Hudi writes a marker ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<IO type>``
before creating each data file (direct markers). If the write dies, the next
writer rolls it back by deleting exactly the files its markers name.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import Enum

from .. import faults
from ..config.table_config import METAFOLDER
from ..storage.storage import Storage

TEMP_FOLDER = f"{METAFOLDER}/.temp"
MARKER_SUFFIX = ".marker."


class IOType(str, Enum):
    CREATE = "CREATE"  # a new base file
    MERGE = "MERGE"  # a new version of a base file (copy-on-write update)
    APPEND = "APPEND"  # a log file


@dataclass(frozen=True)
class Marker:
    partition_path: str
    file_name: str
    io_type: IOType

    @property
    def data_path(self) -> str:
        return posixpath.join(self.partition_path, self.file_name) if self.partition_path else self.file_name


def marker_dir(instant_time: str) -> str:
    return f"{TEMP_FOLDER}/{instant_time}"


def marker_path(instant_time: str, partition_path: str, file_name: str, io_type: IOType) -> str:
    name = f"{file_name}{MARKER_SUFFIX}{io_type.value}"
    folder = marker_dir(instant_time)
    return f"{folder}/{partition_path}/{name}" if partition_path else f"{folder}/{name}"


def create_marker(storage: Storage, instant_time: str, partition_path: str, file_name: str, io_type: IOType) -> None:
    """Record the intent to write a data file; written before the file itself."""
    storage.write(marker_path(instant_time, partition_path, file_name, io_type), b"")
    faults.reach(faults.MARKER_WRITTEN)


def list_markers(storage: Storage, instant_time: str) -> list[Marker]:
    folder = marker_dir(instant_time)
    out = []
    for info in storage.walk_files(folder):
        if MARKER_SUFFIX not in info.name:
            continue
        file_name, io_type = info.name.rsplit(MARKER_SUFFIX, 1)
        rel_dir = posixpath.dirname(info.path)
        partition = rel_dir[len(folder) :].strip("/")
        try:
            out.append(Marker(partition, file_name, IOType(io_type)))
        except ValueError:
            continue
    return sorted(out, key=lambda m: m.data_path)


def delete_markers(storage: Storage, instant_time: str) -> None:
    """Markers are deleted once an instant completes or is rolled back."""
    storage.delete(marker_dir(instant_time), recursive=True)
