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

from .errors import CorruptFileError

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
