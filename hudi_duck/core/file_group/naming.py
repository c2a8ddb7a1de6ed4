"""File names of data files: base files, log files and partition metadata.

* base file: ``<fileId>_<writeToken>_<instantTime>.parquet``
* log file:  ``.<fileId>_<instantTime>.log.<version>_<writeToken>[.cdc]``
  (very old writers omit ``_<writeToken>``). In table version 6 the instant is
  the base instant of the file slice; in 8+ it is the delta commit that wrote it.
* write token: ``<taskPartitionId>-<stageId>-<taskAttemptId>``
* ``.hoodie_partition_metadata`` marks every partition folder.
"""

from __future__ import annotations

import datetime as _dt
import re
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..frozen import frozen_value

PARTITION_METAFILE = ".hoodie_partition_metadata"
PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"
LOG_EXTENSION = "log"
ARCHIVE_EXTENSION = "archive"
CDC_SUFFIX = ".cdc"

_LOG_FILE = re.compile(
    r"^\.(?P<file_id>[^_]+)_(?P<instant>[^.]*)\.(?P<ext>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>\d+-\d+-\d+))?(?P<cdc>\.cdc)?$"
)
_BASE_FILE = re.compile(
    r"^(?P<file_id>[^_]+)_(?P<token>[^_]+)_(?P<instant>\d+)(?P<ext>\.[a-z]+)$"
)
_WRITE_TOKEN = re.compile(r"^(\d+)-(\d+)-(\d+)$")


class _JoinedPath:
    """A data file's ``path``, joined on first use and kept in the instance: what
    ``functools.cached_property`` does, without the lock it takes per instance before
    Python 3.12 (a plan of 5,000 files spent longer on that lock than on the joins)."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__["path"] = _join(obj.partition_path, obj.file_name)
        return value


@dataclass(frozen=True)
class BaseFile:
    """A columnar base file of a file slice."""

    partition_path: str
    file_name: str
    file_id: str
    write_token: str
    instant_time: str
    extension: str
    size: int = 0

    #: path relative to the table base path (kept: a process keeps its base files, and every
    #: plan looks their paths up)
    path = _JoinedPath()


def _join(partition_path: str, file_name: str) -> str:
    """``posixpath.join`` for a partition path and a file name in it (a plan joins one per file)."""
    if not partition_path:
        return file_name
    return partition_path + file_name if partition_path.endswith("/") else f"{partition_path}/{file_name}"


def _token_key(token: str | None) -> tuple[int, int, int]:
    if not token:
        return (-1, -1, -1)
    match = _WRITE_TOKEN.match(token)
    if not match:
        return (-1, -1, -1)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3)))


@dataclass(frozen=True)
class LogFile:
    """A log file of a file group (an append-only sequence of log blocks)."""

    partition_path: str
    file_name: str
    file_id: str
    instant_time: str
    version: int
    write_token: str | None
    is_cdc: bool = False
    size: int = -1

    #: path relative to the table base path
    path = _JoinedPath()

    def sort_key(self) -> tuple:
        """Hudi's log file order: instant, version, then write token.

        A ``None`` write token sorts first, as in Hudi's comparator.
        """
        return (self.instant_time, self.version, _token_key(self.write_token), self.write_token or "")


def _parse_base_name(name: str) -> tuple[str, str, str, str] | None:
    """(file id, write token, instant, extension) of a base file name."""
    if name.startswith("."):
        return None
    match = _BASE_FILE.match(name)
    return match.groups() if match else None  # (the four named groups, in order)


#: :func:`_parse_base_name`, cached for the names of the commits' write stats (a process reads
#: them of every commit once); a listing's names are cached as whole base files instead
_base_name_parts = lru_cache(maxsize=1 << 16)(_parse_base_name)


@lru_cache(maxsize=1 << 16)
def parse_base_file(partition_path: str, name: str, size: int = 0) -> BaseFile | None:
    """Parse a base file name; ``None`` for anything else (cached: a base file is a value of its
    folder, name and size, and a process plans the same files again after every commit)."""
    parts = _parse_base_name(name)
    if parts is None:
        return None
    file_id, token, instant, ext = parts
    return frozen_value(BaseFile, {
        "partition_path": partition_path, "file_name": name, "file_id": file_id, "write_token": token,
        "instant_time": instant, "extension": ext, "size": size,
    })


@lru_cache(maxsize=1 << 16)
def _log_name_parts(name: str) -> tuple[str, str, int, str | None, bool] | None:
    """(file id, instant, version, write token, is cdc) of a log file name (cached)."""
    match = _LOG_FILE.match(name)
    if not match or match.group("ext") != LOG_EXTENSION:
        return None
    file_id, instant, version, token, cdc = match.group("file_id", "instant", "version", "token", "cdc")
    return file_id, instant, int(version), token, cdc is not None


@lru_cache(maxsize=1 << 16)
def parse_log_file(partition_path: str, name: str, size: int = -1) -> LogFile | None:
    """Parse a log file name; ``None`` for anything else (cached, as :func:`parse_base_file`)."""
    parts = _log_name_parts(name)
    if parts is None:
        return None
    file_id, instant, version, token, is_cdc = parts
    return LogFile(partition_path, name, file_id, instant, version, token, is_cdc, size)


def file_id_and_instant(name: str) -> tuple[str, str] | None:
    """(file id, instant time) of a base or log file name (a log file's names its slice's base
    instant in table version 6); ``None`` for anything else. No file object is made: a plan
    reads this of every file the commits on the timeline wrote."""
    if name.startswith("."):
        log = _log_name_parts(name)
        return (log[0], log[1]) if log is not None else None
    base = _base_name_parts(name)
    return (base[0], base[2]) if base is not None else None


def is_partition_metafile(name: str) -> bool:
    return name.startswith(PARTITION_METAFILE_PREFIX)


# -- building names (writer side) ------------------------------------------------


def make_write_token(task_partition_id: int, stage_id: int, task_attempt_id: int) -> str:
    return f"{task_partition_id}-{stage_id}-{task_attempt_id}"


def new_file_id(index: int = 0) -> str:
    """A new file group id: a random UUID plus the writer's file index."""
    return f"{uuid.uuid4()}-{index}"


def base_file_name(file_id: str, write_token: str, instant_time: str, extension: str = ".parquet") -> str:
    return f"{file_id}_{write_token}_{instant_time}{extension}"


def log_file_name(file_id: str, instant_time: str, version: int, write_token: str, cdc: bool = False) -> str:
    return f".{file_id}_{instant_time}.{LOG_EXTENSION}.{version}_{write_token}" + (CDC_SUFFIX if cdc else "")


def partition_metafile_text(commit_time: str, depth: int, now: _dt.datetime | None = None) -> str:
    """Content of ``.hoodie_partition_metadata`` (a Java properties file)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    stamp = now.astimezone(_dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    return f"#partition metadata\n#{stamp}\ncommitTime={commit_time}\npartitionDepth={depth}\n"


def partition_depth(partition_path: str) -> int:
    return 0 if not partition_path else len(partition_path.strip("/").split("/"))
