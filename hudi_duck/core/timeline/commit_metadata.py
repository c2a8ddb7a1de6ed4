"""Commit metadata: what a completed write instant wrote, file by file.

Table version 6 stores ``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``
as Jackson-pretty-printed JSON; versions 8+ store the same content as an Avro
container file (Hudi 1.x's schema, with more write-stat fields). The typed
records keep every field either version writes, so a file read here encodes
back to the same bytes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, NamedTuple

from ..errors import UnsupportedFeatureError
from ..file_group.naming import file_id_and_instant
from . import codec
from .record import MAP_OF_LISTS, HudiRecord, TimelinePayload, hudi

#: Hudi's ``HoodieWriteStat.NULL_COMMIT``: the previous commit of a newly created file.
NULL_COMMIT = "null"


@dataclass
class RuntimeStats(HudiRecord):
    """``HoodieWriteStat.RuntimeStats`` (JSON order: scan, upsert, create)."""

    total_scan_time: int | None = hudi(0)
    total_upsert_time: int | None = hudi(0)
    total_create_time: int | None = hudi(0)


@dataclass
class WriteStat(HudiRecord):
    """One ``HoodieWriteStat`` / ``HoodieDeltaWriteStat``: what a write did to one file.

    Fields are in the order Hudi 0.14's Jackson writes them (``HoodieWriteStat``,
    then the ``HoodieDeltaWriteStat`` fields of log writes), then the fields only
    Hudi 1.x's Avro record has. Values are kept as written (``None`` = null).
    """

    file_id: str | None = hudi(None)
    path: str | None = hudi(None)
    cdc_stats: dict[str, int] | None = hudi(None)
    #: Commit of the file's previous version; ``"null"`` for a new file (Hudi's NULL_COMMIT).
    prev_commit: str | None = hudi(NULL_COMMIT)
    num_writes: int | None = hudi(0)
    num_deletes: int | None = hudi(0)
    num_update_writes: int | None = hudi(0)
    num_inserts: int | None = hudi(0)
    total_write_bytes: int | None = hudi(0)
    total_write_errors: int | None = hudi(0)
    temp_path: str | None = hudi(None)
    partition_path: str | None = hudi(None)
    total_log_records: int | None = hudi(0)
    total_log_files_compacted: int | None = hudi(0)
    total_log_size_compacted: int | None = hudi(0)
    total_updated_records_compacted: int | None = hudi(0)
    total_log_blocks: int | None = hudi(0)
    total_corrupt_log_blocks: int | None = hudi(0, key="totalCorruptLogBlock")
    total_rollback_blocks: int | None = hudi(0)
    file_size_in_bytes: int | None = hudi(0)
    min_event_time: int | None = hudi(None)
    max_event_time: int | None = hudi(None)
    runtime_stats: RuntimeStats | None = hudi(None, record=RuntimeStats)
    # HoodieDeltaWriteStat (merge-on-read log writes)
    log_version: int | None = hudi(None)
    log_offset: int | None = hudi(None)
    base_file: str | None = hudi(None)
    log_files: list[str] | None = hudi(None)
    records_stats: Any = hudi(None)
    # Hudi 1.x's Avro HoodieWriteStat only
    total_log_files: int | None = hudi(None)
    prev_base_file: str | None = hudi(None)
    total_log_read_time_ms: int | None = hudi(None)
    num_updates: int | None = hudi(None)

    #: Keys of a 0.14 JSON ``HoodieWriteStat``, in Jackson's order.
    JSON_KEYS: ClassVar[tuple[str, ...]] = ()
    #: Keys ``HoodieDeltaWriteStat`` adds after them.
    DELTA_JSON_KEYS: ClassVar[tuple[str, ...]] = ("logVersion", "logOffset", "baseFile", "logFiles", "recordsStats")

    @classmethod
    def for_log(cls, **values: Any) -> "WriteStat":
        """A ``HoodieDeltaWriteStat`` with Hudi's defaults for what is not given."""
        values.setdefault("log_version", 0)
        values.setdefault("log_offset", 0)
        values.setdefault("log_files", [])
        values.setdefault("records_stats", {"val": None})
        return cls(**values)

    @property
    def is_delta(self) -> bool:
        """A log write's stat (``HoodieDeltaWriteStat``)."""
        return self.log_version is not None

    def to_json_record(self) -> dict[str, Any]:
        """The record as 0.14's Jackson writes it: base fields, delta fields of log writes."""
        record = self.to_record()
        keys = WriteStat.JSON_KEYS + (WriteStat.DELTA_JSON_KEYS if self.is_delta else ())
        out = {k: record[k] for k in keys}
        out.update(self.extra)
        return out

    # -- derived values ---------------------------------------------------------------
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
        return self.previous_commit is None

    @property
    def previous_commit(self) -> str | None:
        """The commit of the file's previous version; ``None`` for a new file."""
        prev = self.prev_commit
        return None if prev is None or str(prev).lower() == NULL_COMMIT or prev == "" else str(prev)


_KEYS = tuple(s.key for s in WriteStat.specs())
WriteStat.JSON_KEYS = _KEYS[: _KEYS.index("logVersion")]


def _n(value: int | None) -> int:
    return int(value) if value is not None else 0


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
            records_written=sum(_n(s.num_writes) for s in stats),
            records_inserted=sum(_n(s.num_inserts) for s in stats),
            records_updated=sum(_n(s.num_update_writes) for s in stats),
            records_deleted=sum(_n(s.num_deletes) for s in stats),
            bytes_written=sum(_n(s.total_write_bytes) for s in stats),
            write_errors=sum(_n(s.total_write_errors) for s in stats),
            log_files_written=sum(1 for s in stats if s.is_log_file),
            log_records=sum(_n(s.total_log_records) for s in stats),
            log_blocks=sum(_n(s.total_log_blocks) for s in stats),
            corrupt_log_blocks=sum(_n(s.total_corrupt_log_blocks) for s in stats),
            rollback_blocks=sum(_n(s.total_rollback_blocks) for s in stats),
            log_files_compacted=sum(_n(s.total_log_files_compacted) for s in stats),
            updated_records_compacted=sum(_n(s.total_updated_records_compacted) for s in stats),
        )


@dataclass
class CommitMetadata(TimelinePayload):
    """``HoodieCommitMetadata``; with ``partition_to_replace_file_ids`` it is
    ``HoodieReplaceCommitMetadata``. Also the workload profile of ``.inflight`` files."""

    partition_to_write_stats: dict[str, list[WriteStat]] = hudi(
        record=WriteStat, shape=MAP_OF_LISTS, factory=dict
    )
    compacted: bool | None = hudi(False)
    extra_metadata: dict[str, str] | None = hudi(factory=dict)
    #: Avro only (table version 8+); 0.14's JSON has no version.
    version: int | None = hudi(None)
    operation_type: str | None = hudi(None)
    partition_to_replace_file_ids: dict[str, list[str]] | None = hudi(None)

    @property
    def MODEL(self) -> str:  # type: ignore[override]
        return "HoodieReplaceCommitMetadata" if self.is_replace else "HoodieCommitMetadata"

    @property
    def is_replace(self) -> bool:
        return self.partition_to_replace_file_ids is not None

    @classmethod
    def of(cls, stats: list[WriteStat], **values: Any) -> "CommitMetadata":
        """Metadata of ``stats``, grouped by partition in partition order (as Hudi writes them)."""
        grouped: dict[str, list[WriteStat]] = {}
        for stat in stats:
            grouped.setdefault(stat.partition_path or "", []).append(stat)
        return cls(partition_to_write_stats=dict(sorted(grouped.items())), **values)

    # -- files -----------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, source: str = "") -> "CommitMetadata":  # type: ignore[override]
        """Decode JSON (v6) or Avro (v8+) commit metadata; an empty file is empty metadata."""
        return super().from_bytes(data, source) or cls()

    def to_bytes(self, table_version: int = 6, sync_marker: bytes | None = None) -> bytes:  # type: ignore[override]
        """JSON for table version 6, an Avro container (Hudi 1.x's schema) for 8+."""
        if table_version < 8:
            return codec.encode_json(self.to_json_record())
        if self.writer_schema is None:
            raise UnsupportedFeatureError(
                f"commit metadata of table version {table_version} is written with Hudi 1.x's Avro schema, "
                "which hudi-duck writes only for metadata it read from such a table"
            )
        return super().to_bytes(sync_marker)

    def to_json_record(self) -> dict[str, Any]:
        """The record in the order 0.14's Jackson writes it."""
        out: dict[str, Any] = {
            "partitionToWriteStats": {
                p: [s.to_json_record() for s in stats] if stats is not None else None
                for p, stats in self.partition_to_write_stats.items()
            }
            if self.partition_to_write_stats is not None
            else None
        }
        if self.partition_to_replace_file_ids is not None:
            out["partitionToReplaceFileIds"] = self.partition_to_replace_file_ids
        out["compacted"] = self.compacted
        out["extraMetadata"] = self.extra_metadata
        out["operationType"] = self.operation_type
        out.update(self.extra)
        return out

    # -- accessors -------------------------------------------------------------------
    def iter_stats(self) -> Iterator[tuple[str, WriteStat]]:
        """(partition path, write stat) of every stat, in partition order; the partition is
        the stat's own, else the map key (``.inflight`` profiles leave the stat's empty)."""
        for partition, stats in (self.partition_to_write_stats or {}).items():
            for stat in stats or ():
                yield (stat.partition_path if stat.partition_path is not None else partition), stat

    def write_stats(self) -> list[WriteStat]:
        """Every write stat, in partition order."""
        return [stat for _, stat in self.iter_stats()]

    def totals(self) -> CommitStats:
        """Totals over the write stats (``commits show``)."""
        return CommitStats.of(len(self.partition_to_write_stats or {}), self.write_stats())

    @property
    def partitions(self) -> list[str]:
        return list(self.partition_to_write_stats or {})

    def extra_metadata_items(self) -> dict[str, str]:
        """``extraMetadata`` (an empty map when Hudi wrote null)."""
        return dict(self.extra_metadata or {})

    @property
    def schema(self) -> str | None:
        """Writer schema (Avro JSON) recorded by the commit, if any."""
        value = (self.extra_metadata or {}).get("schema")
        return value or None

    def replaced_file_ids(self) -> dict[str, list[str]]:
        return {p: list(ids or ()) for p, ids in (self.partition_to_replace_file_ids or {}).items()}

    def written_paths(self) -> list[str]:
        return [stat.path for stat in self.write_stats() if stat.path]

    def file_ids(self) -> set[tuple[str, str]]:
        """(partition path, file id) of every file group this commit touched."""
        return {(partition, stat.file_id) for partition, stat in self.iter_stats() if stat.file_id}


# -- what a read plans with --------------------------------------------------------------
_STAT_KEY = {s.attr: s.key for s in WriteStat.specs()}
_META_KEY = {s.attr: s.key for s in CommitMetadata.specs()}


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """One data file a commit's write stat names, as a read checks it against its listing."""

    #: the stat's partition path, else the partition key it is listed under
    partition_path: str
    file_id: str | None
    path: str | None
    #: ``fileSizeInBytes``: the whole base file, or what the write appended to a log file
    size: int
    #: ``logOffset``: where a log write began (0 for base files)
    log_offset: int


@dataclass(frozen=True)
class CommitSummary:
    """The part of a commit's metadata a read plans with: the files it wrote, its writer
    schema, its operation and the file groups it replaced.

    A table's active timeline can hold thousands of commits with a write stat per
    file; planning reads these few fields of each, and decodes no typed
    :class:`WriteStat` (``CommitMetadata`` stays the full, re-encodable record).
    """

    files: tuple[WrittenFile, ...] = ()
    schema: str | None = None
    operation_type: str | None = None
    replaced: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def of_bytes(cls, data: bytes, source: str = "") -> "CommitSummary":
        """The summary of a commit file: Jackson JSON (table version 6) is decoded straight
        into the few fields a summary holds; Avro (8+), an empty file, and JSON the typed
        decoder refuses (damaged, or values of unexpected types) take the codec's path,
        which reads what it can and names what it cannot."""
        if data[:1] == b"{":
            decoded = _decode_json_summary(data)
            if decoded is not None:
                return decoded
        return cls.of_record(codec.decode_record(data, source))

    @classmethod
    def of_record(cls, record: dict[str, Any] | None) -> "CommitSummary":
        """The summary of a decoded commit record (JSON of v6, Avro of v8+); ``None``: empty file."""
        if not record:
            return cls()
        path_key, id_key, part_key = _STAT_KEY["path"], _STAT_KEY["file_id"], _STAT_KEY["partition_path"]
        size_key, offset_key = _STAT_KEY["file_size_in_bytes"], _STAT_KEY["log_offset"]
        files = []
        for partition, stats in (record.get(_META_KEY["partition_to_write_stats"]) or {}).items():
            for stat in stats or ():
                if stat is None:
                    continue
                own = stat.get(part_key)
                files.append(WrittenFile(
                    own if own is not None else partition,
                    stat.get(id_key),
                    stat.get(path_key),
                    max(int(stat.get(size_key) or 0), 0),
                    max(int(stat.get(offset_key) or 0), 0),
                ))
        extra = record.get(_META_KEY["extra_metadata"]) or {}
        replaced = record.get(_META_KEY["partition_to_replace_file_ids"]) or {}
        return cls(
            files=tuple(files),
            schema=extra.get("schema") or None,
            operation_type=record.get(_META_KEY["operation_type"]),
            replaced=tuple((p, tuple(ids or ())) for p, ids in replaced.items()),
        )

    def replaced_file_ids(self) -> dict[str, list[str]]:
        """As :meth:`CommitMetadata.replaced_file_ids`."""
        return {p: list(ids) for p, ids in self.replaced}

    def file_ids(self) -> set[tuple[str, str]]:
        """As :meth:`CommitMetadata.file_ids`."""
        return {(f.partition_path, f.file_id) for f in self.files if f.file_id}

    @functools.cached_property
    def data_files(self) -> tuple[DataFileWritten, ...]:
        """The base and log files written, their paths split and their names parsed (files of
        other names left out): once per summary, which a process keeps, where every plan checks
        the files of every commit on the timeline."""
        out = []
        for written in self.files:
            path = (written.path or "").strip("/")
            if not path:
                continue
            partition, _, name = path.rpartition("/")
            parsed = file_id_and_instant(name)
            if parsed is not None:
                out.append(DataFileWritten(partition, name, path, parsed[0], parsed[1], written))
        return tuple(out)


class DataFileWritten(NamedTuple):
    """A base or log file one write stat names (a named tuple: one per file every commit wrote)."""

    partition: str
    name: str
    path: str  # relative to the base path
    file_id: str
    #: the instant in its name: a base file's commit, a log file's slice (table version 6) or delta commit (8+)
    instant: str
    written: WrittenFile


_JSON_DECODER: Any = None


def _json_decoder() -> Any:
    """A msgspec decoder of v6 commit JSON into the fields a summary needs (built once);
    False where msgspec is not installed (a Python that has only the executors' modules):
    summaries are then read off the codec's record."""
    global _JSON_DECODER
    if _JSON_DECODER is None:
        try:
            import msgspec
        except ImportError:
            _JSON_DECODER = False
            return _JSON_DECODER

        from typing import Optional

        # (built with defstruct: real types, not this module's postponed annotations)
        text = Optional[str]
        stat = msgspec.defstruct(
            "CommitJsonStat",
            [("path", text, None), ("file_id", text, None), ("partition_path", text, None),
             ("file_size_in_bytes", Optional[int], None), ("log_offset", Optional[int], None)],
            rename={f: _STAT_KEY[f] for f in ("path", "file_id", "partition_path", "file_size_in_bytes", "log_offset")},
        )
        commit = msgspec.defstruct(
            "CommitJson",
            [("partition_to_write_stats", Optional[dict[str, Optional[list[Optional[stat]]]]], None),
             ("extra_metadata", Optional[dict[str, Any]], None), ("operation_type", text, None),
             ("partition_to_replace_file_ids", Optional[dict[str, Optional[list[str]]]], None)],
            rename={f: _META_KEY[f] for f in ("partition_to_write_stats", "extra_metadata", "operation_type",
                                               "partition_to_replace_file_ids")},
        )
        _JSON_DECODER = (msgspec.json.Decoder(commit), msgspec.MsgspecError)
    return _JSON_DECODER


def _decode_json_summary(data: bytes) -> CommitSummary | None:
    """The summary of commit JSON, or None when the typed decoder refuses it (or is missing)."""
    built = _json_decoder()
    if not built:
        return None
    decoder, refused = built
    try:
        commit = decoder.decode(data)
    except refused:
        return None
    files = []
    for partition, stats in (commit.partition_to_write_stats or {}).items():
        for stat in stats or ():
            if stat is None:
                continue
            own = stat.partition_path
            files.append(WrittenFile(
                own if own is not None else partition,
                stat.file_id,
                stat.path,
                max(stat.file_size_in_bytes or 0, 0),
                max(stat.log_offset or 0, 0),
            ))
    extra = commit.extra_metadata or {}
    return CommitSummary(
        files=tuple(files),
        schema=extra.get("schema") or None,
        operation_type=commit.operation_type,
        replaced=tuple((p, tuple(ids or ())) for p, ids in (commit.partition_to_replace_file_ids or {}).items()),
    )
