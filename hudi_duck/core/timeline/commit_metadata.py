"""Commit metadata: what a completed write instant wrote, file by file.

Table version 6 stores ``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``
as Jackson-pretty-printed JSON; versions 8+ store the same content as an Avro
container file. Write stats stay plain dicts so every field round-trips.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any, Iterator

import fastavro

from ..errors import CorruptFileError

AVRO_MAGIC = b"Obj\x01"

#: Field order of a write stat as Hudi 0.14/0.15 serialises ``HoodieWriteStat``.
WRITE_STAT_FIELDS = (
    "fileId",
    "path",
    "cdcStats",
    "prevCommit",
    "numWrites",
    "numDeletes",
    "numUpdateWrites",
    "numInserts",
    "totalWriteBytes",
    "totalWriteErrors",
    "tempPath",
    "partitionPath",
    "totalLogRecords",
    "totalLogFilesCompacted",
    "totalLogSizeCompacted",
    "totalUpdatedRecordsCompacted",
    "totalLogBlocks",
    "totalCorruptLogBlock",
    "totalRollbackBlocks",
    "fileSizeInBytes",
    "minEventTime",
    "maxEventTime",
    "runtimeStats",
)
#: Extra fields of ``HoodieDeltaWriteStat`` (MOR log writes), in order.
DELTA_WRITE_STAT_FIELDS = ("logVersion", "logOffset", "baseFile", "logFiles", "recordsStats")


def new_write_stat(**values: Any) -> dict[str, Any]:
    """A write stat with every field Hudi writes, defaults as Hudi leaves them."""
    stat: dict[str, Any] = {
        "fileId": None,
        "path": None,
        "cdcStats": None,
        "prevCommit": "null",
        "numWrites": 0,
        "numDeletes": 0,
        "numUpdateWrites": 0,
        "numInserts": 0,
        "totalWriteBytes": 0,
        "totalWriteErrors": 0,
        "tempPath": None,
        "partitionPath": None,
        "totalLogRecords": 0,
        "totalLogFilesCompacted": 0,
        "totalLogSizeCompacted": 0,
        "totalUpdatedRecordsCompacted": 0,
        "totalLogBlocks": 0,
        "totalCorruptLogBlock": 0,
        "totalRollbackBlocks": 0,
        "fileSizeInBytes": 0,
        "minEventTime": None,
        "maxEventTime": None,
        "runtimeStats": None,
    }
    delta = any(key in values for key in DELTA_WRITE_STAT_FIELDS)
    if delta:
        stat.update({"logVersion": 0, "logOffset": 0, "baseFile": None, "logFiles": [], "recordsStats": {"val": None}})
    unknown = set(values) - set(stat)
    if unknown:
        raise ValueError(f"unknown write stat fields: {sorted(unknown)}")
    stat.update(values)
    return stat


#: Hudi's ``HoodieWriteStat.NULL_COMMIT``: the previous commit of a newly created file.
NULL_COMMIT = "null"


def _count(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key)
    return int(value) if value is not None else 0


@dataclass(frozen=True)
class WriteStat:
    """One ``HoodieWriteStat``: what a write did to one file (typed, read-only view)."""

    partition_path: str
    file_id: str | None
    path: str | None
    #: Commit of the file's previous version; ``None`` for a new file (Hudi writes ``"null"``).
    prev_commit: str | None
    num_writes: int = 0
    num_inserts: int = 0
    num_update_writes: int = 0
    num_deletes: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    file_size_in_bytes: int = 0
    total_log_records: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_blocks: int = 0
    total_rollback_blocks: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    #: Delta stats (merge-on-read log writes): the slice's base file and the log files.
    base_file: str | None = None
    log_files: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, partition: str, raw: dict[str, Any]) -> "WriteStat":
        prev = raw.get("prevCommit")
        return cls(
            partition_path=raw.get("partitionPath") if raw.get("partitionPath") is not None else partition,
            file_id=raw.get("fileId"),
            path=raw.get("path"),
            prev_commit=None if prev is None or str(prev).lower() == NULL_COMMIT else str(prev),
            num_writes=_count(raw, "numWrites"),
            num_inserts=_count(raw, "numInserts"),
            num_update_writes=_count(raw, "numUpdateWrites"),
            num_deletes=_count(raw, "numDeletes"),
            total_write_bytes=_count(raw, "totalWriteBytes"),
            total_write_errors=_count(raw, "totalWriteErrors"),
            file_size_in_bytes=_count(raw, "fileSizeInBytes"),
            total_log_records=_count(raw, "totalLogRecords"),
            total_log_blocks=_count(raw, "totalLogBlocks"),
            total_corrupt_log_blocks=_count(raw, "totalCorruptLogBlock"),
            total_rollback_blocks=_count(raw, "totalRollbackBlocks"),
            total_log_files_compacted=_count(raw, "totalLogFilesCompacted"),
            total_log_size_compacted=_count(raw, "totalLogSizeCompacted"),
            total_updated_records_compacted=_count(raw, "totalUpdatedRecordsCompacted"),
            base_file=raw.get("baseFile") or None,
            log_files=tuple(raw.get("logFiles") or ()),
        )

    @property
    def file_name(self) -> str | None:
        return self.path.rsplit("/", 1)[-1] if self.path else None

    @property
    def is_log_file(self) -> bool:
        """Whether the stat describes a log file (names of log files start with a dot)."""
        name = self.file_name
        return bool(name) and name.startswith(".")

    @property
    def is_new_file(self) -> bool:
        return self.prev_commit is None


@dataclass(frozen=True)
class CommitStats:
    """A commit's totals, counted as ``HoodieCommitMetadata.fetchTotal*`` count them."""

    partitions_written: int
    files_inserted: int  # new files (prevCommit "null")
    files_updated: int
    records_written: int
    records_inserted: int
    records_updated: int
    records_deleted: int
    bytes_written: int
    write_errors: int
    log_files_written: int
    log_records: int
    log_blocks: int
    corrupt_log_blocks: int
    rollback_blocks: int
    log_files_compacted: int
    updated_records_compacted: int

    @classmethod
    def of(cls, partitions: int, stats: list[WriteStat]) -> "CommitStats":
        return cls(
            partitions_written=partitions,
            files_inserted=sum(1 for s in stats if s.is_new_file),
            files_updated=sum(1 for s in stats if not s.is_new_file),
            records_written=sum(s.num_writes for s in stats),
            records_inserted=sum(s.num_inserts for s in stats),
            records_updated=sum(s.num_update_writes for s in stats),
            records_deleted=sum(s.num_deletes for s in stats),
            bytes_written=sum(s.total_write_bytes for s in stats),
            write_errors=sum(s.total_write_errors for s in stats),
            log_files_written=sum(1 for s in stats if s.is_log_file),
            log_records=sum(s.total_log_records for s in stats),
            log_blocks=sum(s.total_log_blocks for s in stats),
            corrupt_log_blocks=sum(s.total_corrupt_log_blocks for s in stats),
            rollback_blocks=sum(s.total_rollback_blocks for s in stats),
            log_files_compacted=sum(s.total_log_files_compacted for s in stats),
            updated_records_compacted=sum(s.total_updated_records_compacted for s in stats),
        )


@dataclass
class CommitMetadata:
    """``HoodieCommitMetadata`` (and its replace-commit subclass)."""

    partition_to_write_stats: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str | None = None
    partition_to_replace_file_ids: dict[str, list[str]] | None = None

    @property
    def is_replace(self) -> bool:
        return self.partition_to_replace_file_ids is not None

    # -- parsing -------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, source: str = "") -> "CommitMetadata":
        """Decode JSON (v6) or Avro (v8+) commit metadata; empty bytes are empty."""
        if not data.strip():
            return cls()
        if data.startswith(AVRO_MAGIC):
            try:
                records = list(fastavro.reader(io.BytesIO(data)))
            except Exception as exc:  # fastavro raises many types
                raise CorruptFileError(f"{source}: not valid Avro commit metadata ({exc})") from exc
            if not records:
                return cls()
            return cls.from_dict(records[0])
        try:
            return cls.from_dict(json.loads(data.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptFileError(f"{source}: not valid JSON commit metadata ({exc})") from exc

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "CommitMetadata":
        stats = raw.get("partitionToWriteStats") or {}
        replace = raw.get("partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats={k: list(v or []) for k, v in stats.items()},
            compacted=bool(raw.get("compacted") or False),
            extra_metadata=dict(raw.get("extraMetadata") or {}),
            operation_type=raw.get("operationType"),
            partition_to_replace_file_ids=(
                {k: list(v or []) for k, v in replace.items()} if replace is not None else None
            ),
        )

    # -- accessors -----------------------------------------------------------
    def write_stats(self) -> Iterator[dict[str, Any]]:
        for stats in self.partition_to_write_stats.values():
            yield from stats

    def stats(self) -> list[WriteStat]:
        """Every write stat, typed, in partition order."""
        return [WriteStat.from_dict(p, raw) for p, items in self.partition_to_write_stats.items() for raw in items]

    def totals(self) -> CommitStats:
        """Totals over the write stats (``commits show``)."""
        stats = self.stats()
        return CommitStats.of(len(self.partition_to_write_stats), stats)

    @property
    def schema(self) -> str | None:
        """Writer schema (Avro JSON) recorded by the commit, if any."""
        value = self.extra_metadata.get("schema")
        return value or None

    def replaced_file_ids(self) -> dict[str, list[str]]:
        return dict(self.partition_to_replace_file_ids or {})

    def written_paths(self) -> list[str]:
        return [stat["path"] for stat in self.write_stats() if stat.get("path")]

    def file_ids(self) -> set[tuple[str, str]]:
        """(partition path, file id) of every file group this commit touched."""
        out = set()
        for partition, stats in self.partition_to_write_stats.items():
            for stat in stats:
                if stat.get("fileId"):
                    out.add((partition, stat["fileId"]))
        return out

    # -- serialising -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"partitionToWriteStats": self.partition_to_write_stats}
        if self.partition_to_replace_file_ids is not None:
            out["partitionToReplaceFileIds"] = self.partition_to_replace_file_ids
        out["compacted"] = self.compacted
        out["extraMetadata"] = self.extra_metadata
        out["operationType"] = self.operation_type
        return out

    def to_json_bytes(self) -> bytes:
        return jackson_pretty(self.to_dict()).encode("utf-8")


# -- Jackson's default pretty printer -----------------------------------------------


def _json_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def jackson_pretty(value: Any, indent: int = 0) -> str:
    """Render JSON the way Jackson's ``DefaultPrettyPrinter`` does.

    Objects break lines with two-space indents and ``" : "`` separators;
    arrays stay on one line (``[ a, b ]``); empty containers are ``{ }`` / ``[ ]``.
    Hudi's v6 commit files look like this, and matching it keeps diffs clean.
    """
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = "  " * (indent + 1)
        parts = [f"{inner}{_json_scalar(str(k))} : {jackson_pretty(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(parts) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, indent) for v in value) + " ]"
    return _json_scalar(value)
