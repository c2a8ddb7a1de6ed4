"""The archived timeline: instants moved out of the active timeline by archival.

Two layouts exist:

* **Layout 1 (table version <= 6)**: ``.hoodie/archived/.commits_.archive.<N>_<writeToken>``
  are Hudi *log files* (fileId ``commits``, empty base instant, extension ``archive``).
  Each holds Avro data blocks (header ``SCHEMA`` only) of ``HoodieArchivedMetaEntry``
  records, **one record per instant state** (requested, inflight and completed files
  are archived as separate entries). :class:`ArchivedTimelineV1` reads them, and
  :func:`write_archive_file` writes them as Hudi 0.14's ``HoodieTimelineArchiver`` does.
* **Layout 2 (table version 8+)**: the LSM timeline under ``.hoodie/timeline/history/``:
  ``_version_`` (latest snapshot number), ``manifest_<N>`` (JSON list of the valid
  files) and ``<minInstant>_<maxInstant>_<level>.parquet`` files of
  ``HoodieLSMTimelineInstant`` rows, one row per *completed* instant.
  :class:`LSMTimeline` reads it. No fixture holds archived data: the reader follows
  Java's ``LSMTimeline``/``LSMTimelineWriter`` source and is only tested against
  synthetic folders built the same way.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..avro import models as avro_models
from ..config.table_config import TableConfig
from ..errors import CorruptFileError, UnsupportedFeatureError
from ..file_group.log_blocks import avro_block_records
from ..file_group.log_format import BlockType, HeaderKey, encode_block, read_log_file
from ..storage.storage import FileInfo, Storage
from . import codec
from .codec import jackson_pretty
from .commit_metadata import CommitMetadata, WriteStat
from .instant import Action, Instant, State, format_instant_time

#: ``HoodieArchivedTimeline.HOODIE_COMMIT_ARCHIVE_LOG_FILE_PREFIX`` + log-file naming.
ARCHIVE_FILE_ID = "commits"
ARCHIVE_EXTENSION = "archive"
ARCHIVE_FILE_PREFIX = f".{ARCHIVE_FILE_ID}_.{ARCHIVE_EXTENSION}."
#: ``HoodieLogFormat.UNKNOWN_WRITE_TOKEN``: the token of archive logs (no task context).
UNKNOWN_WRITE_TOKEN = "1-0-1"
#: ``hoodie.commits.archival.batch``: records per Avro data block.
DEFAULT_ARCHIVAL_BATCH = 10
#: ``HoodieRollingStatMetadata.ROLLING_STAT_METADATA_KEY``; 0.14 blanks it in archived commit metadata.
ROLLING_STAT_KEY = "ROLLING_STAT"

_ARCHIVE_NAME = re.compile(r"^\.commits_\.archive\.(\d+)(?:_(\d+-\d+-\d+))?$")

#: Payload fields of ``HoodieArchivedMetaEntry`` (anything else is bookkeeping).
PAYLOAD_FIELDS = (
    "hoodieCommitMetadata",
    "hoodieCleanMetadata",
    "hoodieCompactionMetadata",
    "hoodieRollbackMetadata",
    "hoodieSavePointMetadata",
    "hoodieCompactionPlan",
    "hoodieCleanerPlan",
    "hoodieReplaceCommitMetadata",
    "hoodieRequestedReplaceMetadata",
    "HoodieInflightReplaceMetadata",
    "hoodieIndexCommitMetadata",
)
#: Payloads that are plans rather than results.
PLAN_FIELDS = frozenset({"hoodieCompactionPlan", "hoodieCleanerPlan", "hoodieRequestedReplaceMetadata"})

#: Avro ``HoodieWriteStat`` fields of 0.14 (the JSON write stats carry more; they are dropped).
AVRO_WRITE_STAT_FIELDS = tuple(f["name"] for f in avro_models.HOODIE_WRITE_STAT["fields"])


# -- archived instants ---------------------------------------------------------------------------


@dataclass
class ArchivedInstant:
    """One archived instant (layout 1: one per archived state; layout 2: completed only)."""

    requested_time: str
    action: str
    state: State
    completion_time: str | None = None
    #: Decoded result payload (commit / clean / rollback / savepoint metadata ...).
    metadata: dict[str, Any] | None = None
    #: Decoded plan payload (cleaner / compaction plan, requested replace metadata ...).
    plan: dict[str, Any] | None = None
    #: Layout 1 ``stateTransitionTime`` (modification time of the archived state file).
    state_transition_time: str | None = None
    #: Which ``HoodieArchivedMetaEntry`` field held the payload (layout 1).
    payload_field: str | None = None
    source: str = ""
    #: Layout 1: the whole ``HoodieArchivedMetaEntry`` record; layout 2: the LSM row.
    entry: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    def to_instant(self) -> Instant:
        return Instant(self.requested_time, self.action, self.state, self.completion_time)

    def commit_metadata(self) -> CommitMetadata | None:
        """Commit metadata of a commit / deltacommit / replacecommit (``None`` otherwise)."""
        if self.action not in Action.WRITE_ACTIONS or self.metadata is None:
            return None
        return CommitMetadata.from_record(self.metadata)


def completed_instants(instants: Iterable[ArchivedInstant]) -> list[ArchivedInstant]:
    return [i for i in instants if i.is_completed]


def _payload_field(action: str, state: State) -> str | None:
    """The field ``MetadataConversionUtils.createMetaWrapper`` fills for an action/state."""
    if action in (Action.COMMIT, Action.DELTA_COMMIT):
        return "hoodieCommitMetadata"
    if action in (Action.REPLACE_COMMIT, Action.CLUSTERING):
        if state is State.COMPLETED:
            return "hoodieReplaceCommitMetadata"
        if state is State.INFLIGHT:
            return "HoodieInflightReplaceMetadata"
        return "hoodieRequestedReplaceMetadata"
    if action == Action.CLEAN:
        return "hoodieCleanMetadata" if state is State.COMPLETED else "hoodieCleanerPlan"
    if action == Action.ROLLBACK:
        return "hoodieRollbackMetadata"
    if action == Action.SAVEPOINT:
        return "hoodieSavePointMetadata"
    if action in (Action.COMPACTION, Action.LOG_COMPACTION):
        return "hoodieCompactionPlan"
    if action == Action.INDEXING:
        return "hoodieIndexCommitMetadata"
    return None


def instant_from_entry(entry: dict[str, Any], source: str = "") -> ArchivedInstant:
    """An :class:`ArchivedInstant` from a decoded ``HoodieArchivedMetaEntry``."""
    requested = entry.get("commitTime")
    action = entry.get("actionType")
    if not requested or not action:
        raise CorruptFileError(f"{source}: archived entry without commitTime/actionType")
    state_text = entry.get("actionState") or State.COMPLETED.value  # very old entries had no state
    try:
        state = State(state_text)
    except ValueError as exc:
        raise CorruptFileError(f"{source}: unknown archived action state {state_text!r}") from exc
    wanted = _payload_field(action, state)
    chosen = wanted if wanted and entry.get(wanted) is not None else None
    if chosen is None:
        chosen = next((f for f in PAYLOAD_FIELDS if entry.get(f) is not None), None)
    payload = entry.get(chosen) if chosen else None
    transition = entry.get("stateTransitionTime")
    return ArchivedInstant(
        requested_time=requested,
        action=action,
        state=state,
        completion_time=transition if state is State.COMPLETED else None,
        metadata=None if chosen in PLAN_FIELDS else payload,
        plan=payload if chosen in PLAN_FIELDS else None,
        state_transition_time=transition,
        payload_field=chosen,
        source=source,
        entry=entry,
    )


# -- layout 1: archive log files ------------------------------------------------------------------


def archive_file_name(version: int, write_token: str = UNKNOWN_WRITE_TOKEN) -> str:
    return f"{ARCHIVE_FILE_PREFIX}{version}_{write_token}"


def parse_archive_file_name(name: str) -> tuple[int, str | None] | None:
    match = _ARCHIVE_NAME.match(name)
    if not match:
        return None
    return int(match.group(1)), match.group(2)


class ArchivedTimelineV1:
    """Reader of layout-1 archive logs (``.hoodie/archived/.commits_.archive.*``)."""

    @staticmethod
    def archive_files(storage: Storage, config: TableConfig) -> list[tuple[int, FileInfo]]:
        """Archive log files by version (oldest first)."""
        out = []
        for info in storage.list(config.archive_path):
            if info.is_dir:
                continue
            parsed = parse_archive_file_name(info.name)
            if parsed is not None:
                out.append((parsed[0], info))
        out.sort(key=lambda item: (item[0], item[1].name))
        return out

    @staticmethod
    def read_entries(data: bytes, source: str = "") -> list[dict[str, Any]]:
        """Every ``HoodieArchivedMetaEntry`` record of one archive file's bytes."""
        entries: list[dict[str, Any]] = []
        for block in read_log_file(data, source):
            if block.block_type is not BlockType.AVRO_DATA_BLOCK:
                # Java's archiver only writes Avro data blocks; corrupt ranges are skipped.
                continue
            schema_text = block.schema
            if not schema_text:
                raise CorruptFileError(f"{source}@{block.offset}: archive block without SCHEMA header")
            entries.extend(avro_block_records(block.content, schema_text, f"{source}@{block.offset}"))
        return entries

    @classmethod
    def load(
        cls,
        storage: Storage,
        config: TableConfig,
        completed_only: bool = False,
    ) -> list[ArchivedInstant]:
        """All archived instants, ordered by requested time then state.

        An instant state archived twice (a retried archival) is kept once.
        """
        seen: set[tuple[str, str, State]] = set()
        out: list[ArchivedInstant] = []
        for _, info in cls.archive_files(storage, config):
            source = storage.uri(info.path)
            for entry in cls.read_entries(storage.read(info.path), source):
                instant = instant_from_entry(entry, source)
                key = (instant.requested_time, instant.action, instant.state)
                if key in seen:
                    continue
                seen.add(key)
                if completed_only and not instant.is_completed:
                    continue
                out.append(instant)
        out.sort(key=lambda i: (i.requested_time, i.state.rank))
        return out


# -- layout 1: writing (HoodieTimelineArchiver / MetadataConversionUtils, 0.14) ---------------------


def commit_metadata_to_avro(raw: dict[str, Any] | CommitMetadata, replace: bool = False) -> dict[str, Any]:
    """JSON commit metadata -> Avro ``HoodieCommitMetadata``/``HoodieReplaceCommitMetadata``.

    Mirrors 0.14's ``MetadataConversionUtils.convertCommitMetadata`` (Jackson
    ``convertValue`` into the Avro class): fields the 0.14 Avro model lacks are
    dropped (``compacted``, ``tempPath``, ``cdcStats``, delta-stat fields, ...),
    ``version`` stays null (the Avro no-arg constructor does not apply defaults),
    a compacted commit gets ``operationType=COMPACT`` and ``extraMetadata`` gets
    ``ROLLING_STAT=""``. ``replace`` follows ``ReplaceArchivalHelper`` (no COMPACT rule).
    """
    metadata = raw if isinstance(raw, CommitMetadata) else CommitMetadata.from_record(raw)
    avro_stats = {
        partition: [_avro_stat(stat) for stat in (items or [])]
        for partition, items in (metadata.partition_to_write_stats or {}).items()
        if partition is not None
    }
    extra = {k: ("" if v is None else str(v)) for k, v in metadata.extra_metadata_items().items()}
    extra[ROLLING_STAT_KEY] = ""
    out: dict[str, Any] = {
        "partitionToWriteStats": avro_stats,
        "extraMetadata": extra,
        "version": None,
        "operationType": metadata.operation_type or "UNKNOWN",
    }
    if replace:
        out["partitionToReplaceFileIds"] = {k: v for k, v in metadata.replaced_file_ids().items() if k is not None}
    elif metadata.compacted:
        out["operationType"] = "COMPACT"
    return out


def _avro_stat(stat: WriteStat) -> dict[str, Any]:
    """A write stat as 0.14's Avro ``HoodieWriteStat`` (17 fields; the others are dropped)."""
    record = stat.to_record()
    return {name: record.get(name) for name in AVRO_WRITE_STAT_FIELDS}


def _json_metadata(content: bytes, source: str) -> dict[str, Any]:
    """A v6 commit-type timeline file as a dict (empty file: Hudi's empty metadata)."""
    return codec.decode_record(content, source) or {}


def _avro_payload(content: bytes, model: str, source: str) -> dict[str, Any] | None:
    return codec.decode_record(content, source, resolve_to=model)


_ACTION_TYPES = {
    Action.CLEAN,
    Action.COMMIT,
    Action.DELTA_COMMIT,
    Action.REPLACE_COMMIT,
    Action.CLUSTERING,
    Action.ROLLBACK,
    Action.SAVEPOINT,
    Action.COMPACTION,
    Action.LOG_COMPACTION,
}


def create_meta_entry(
    action: str,
    state: State,
    requested_time: str,
    content: bytes,
    state_transition_time: str | None = None,
    source: str = "",
) -> dict[str, Any]:
    """``MetadataConversionUtils.createMetaWrapper`` of 0.14 for one timeline file.

    ``content`` is the bytes of the instant's state file. A completed instant whose
    file is empty (a crash on local FS/HDFS) gets an entry without payload
    (``createMetaWrapperForEmptyInstant``). Actions Java cannot archive raise.
    """
    if action not in _ACTION_TYPES:
        raise UnsupportedFeatureError(f"{source or requested_time}: archiving action {action!r} is not supported")
    entry: dict[str, Any] = {
        "commitTime": requested_time,
        "actionState": state.value,
        "stateTransitionTime": state_transition_time,
        "actionType": action,
    }
    if state is State.COMPLETED and not content:
        return entry
    if action == Action.CLEAN:
        if state is State.COMPLETED:
            entry["hoodieCleanMetadata"] = _avro_payload(content, "HoodieCleanMetadata", source)
        else:
            entry["hoodieCleanerPlan"] = _avro_payload(content, "HoodieCleanerPlan", source)
    elif action in (Action.COMMIT, Action.DELTA_COMMIT):
        entry["hoodieCommitMetadata"] = commit_metadata_to_avro(_json_metadata(content, source))
    elif action in (Action.REPLACE_COMMIT, Action.CLUSTERING):
        if state is State.COMPLETED:
            entry["hoodieReplaceCommitMetadata"] = commit_metadata_to_avro(_json_metadata(content, source), replace=True)
        elif state is State.INFLIGHT:
            if content:  # empty for clustering
                entry["HoodieInflightReplaceMetadata"] = commit_metadata_to_avro(_json_metadata(content, source))
        else:
            # empty for insert_overwrite[_table]
            entry["hoodieRequestedReplaceMetadata"] = _avro_payload(content, "HoodieRequestedReplaceMetadata", source)
    elif action == Action.ROLLBACK:
        if state is State.COMPLETED:
            entry["hoodieRollbackMetadata"] = _avro_payload(content, "HoodieRollbackMetadata", source)
    elif action == Action.SAVEPOINT:
        entry["hoodieSavePointMetadata"] = _avro_payload(content, "HoodieSavepointMetadata", source)
    elif action in (Action.COMPACTION, Action.LOG_COMPACTION):
        if state is State.REQUESTED:
            entry["hoodieCompactionPlan"] = _avro_payload(content, "HoodieCompactionPlan", source)
    return entry


def _format_mtime(mtime: float | None, utc: bool) -> str | None:
    if mtime is None:
        return None
    if utc:
        moment = _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc)
    else:
        moment = _dt.datetime.fromtimestamp(mtime)
    return format_instant_time(moment)


def meta_entries_for(
    storage: Storage,
    config: TableConfig,
    timeline: Any,
    requested_times: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Archive entries for instants of an active (layout-1) ``Timeline``.

    Every state file of each selected instant becomes an entry, in requested-time
    then state order, as ``HoodieTimelineArchiver.getInstantsToArchive`` streams
    them. ``stateTransitionTime`` is the file's modification time in the table's
    timeline timezone (how 0.14 derives it for layout 1). Choosing *which*
    instants to archive (retention, pending compactions, savepoints ...) is the
    caller's business.
    """
    wanted = set(requested_times) if requested_times is not None else None
    mtimes = {info.name: info.mtime for info in storage.list(timeline.timeline_dir) if not info.is_dir}
    utc = config.timeline_timezone_utc
    entries = []
    for group in timeline.instant_groups():
        if wanted is not None and group.requested_time not in wanted:
            continue
        for state in (State.REQUESTED, State.INFLIGHT, State.COMPLETED):
            instant = group.by_state.get(state)
            if instant is None:
                continue
            name = instant.file_name(timeline.layout_version)
            entries.append(
                create_meta_entry(
                    instant.action,
                    state,
                    instant.requested_time,
                    timeline.read_details(instant),
                    _format_mtime(mtimes.get(name), utc),
                    storage.uri(timeline.file_of(instant)),
                )
            )
    return entries


def encode_archive_blocks(entries: Sequence[dict[str, Any]], batch_size: int = DEFAULT_ARCHIVAL_BATCH) -> bytes:
    """Log blocks of ``HoodieArchivedMetaEntry`` records, ``batch_size`` per block."""
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    schema_text = avro_models.java_schema("HoodieArchivedMetaEntry")
    blocks = []
    for start in range(0, len(entries), batch_size):
        batch = entries[start : start + batch_size]
        content = io.BytesIO()
        content.write(struct.pack(">ii", 3, len(batch)))
        for entry in batch:
            record = avro_models.encode_record("HoodieArchivedMetaEntry", entry)
            content.write(struct.pack(">i", len(record)))
            content.write(record)
        blocks.append(encode_block(BlockType.AVRO_DATA_BLOCK, {HeaderKey.SCHEMA: schema_text}, content.getvalue()))
    return b"".join(blocks)


def write_archive_file(
    storage: Storage,
    config: TableConfig,
    entries: Sequence[dict[str, Any]],
    batch_size: int = DEFAULT_ARCHIVAL_BATCH,
    write_token: str = UNKNOWN_WRITE_TOKEN,
    append: bool = False,
) -> str | None:
    """Write archive entries the way 0.14's archiver does; returns the file's path.

    Java opens the latest ``.commits_.archive.<N>_<token>`` and appends when the
    file system supports append (HDFS); on local disk and object stores it rolls
    over to version N+1 with token ``1-0-1``. The default here is the roll-over
    (a new file); ``append=True`` rewrites the latest file with the new blocks at
    its end (only safe without concurrent readers). Nothing is written for no entries.
    """
    if not entries:
        return None
    if config.timeline_layout_version >= 2:
        raise UnsupportedFeatureError("layout-2 tables archive to the LSM timeline, not archive logs")
    files = ArchivedTimelineV1.archive_files(storage, config)
    data = encode_archive_blocks(entries, batch_size)
    if append and files:
        path = files[-1][1].path
        storage.write_atomic(path, storage.read(path) + data)
        return path
    version = files[-1][0] + 1 if files else 1
    path = f"{config.archive_path}/{archive_file_name(version, write_token)}"
    if storage.exists(path):
        raise CorruptFileError(f"archive file {storage.uri(path)} already exists")
    storage.write_atomic(path, data)
    return path


# -- layout 2: LSM timeline -------------------------------------------------------------------------


def _decode_payload(data: bytes | None, source: str) -> dict[str, Any] | None:
    """Metadata/plan bytes of an LSM row: an Avro container (1.x) or JSON (legacy)."""
    return codec.decode_record(data or b"", source)


class LSMTimeline:
    """Reader of the layout-2 (table version 8+) LSM archived timeline.

    Follows Java 1.x ``LSMTimeline``: read ``_version_`` (falling back to the highest
    ``manifest_<N>`` when it is missing or unreadable), read ``manifest_<N>``'s file list,
    then read the listed parquet files (skipping those outside an optional time range
    by their ``<min>_<max>_<level>`` names). Files not listed by the manifest (older
    snapshots, compaction leftovers) are ignored. Untested against real Hudi output.
    """

    VERSION_FILE = "_version_"
    MANIFEST_PREFIX = "manifest_"
    TEMP_SUFFIX = ".tmp"
    FILE_PATTERN = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")

    @classmethod
    def snapshot_versions(cls, storage: Storage, folder: str) -> list[int]:
        out = []
        for info in storage.list(folder):
            name = info.name
            if info.is_dir or not name.startswith(cls.MANIFEST_PREFIX) or name.endswith(cls.TEMP_SUFFIX):
                continue
            try:
                out.append(int(name.split("_")[1]))
            except (IndexError, ValueError):
                continue
        return sorted(out)

    @classmethod
    def latest_snapshot_version(cls, storage: Storage, folder: str) -> int:
        path = f"{folder}/{cls.VERSION_FILE}"
        try:
            if storage.exists(path):
                return int(storage.read(path).decode("utf-8"))
        except (ValueError, UnicodeDecodeError, OSError):
            pass  # Java falls back to the manifest listing
        versions = cls.snapshot_versions(storage, folder)
        return versions[-1] if versions else -1

    @classmethod
    def manifest_files(cls, storage: Storage, folder: str, version: int) -> list[dict[str, Any]]:
        """``[{"fileName": ..., "fileLen": ...}]`` of snapshot ``version``."""
        if version < 0:
            return []
        path = f"{folder}/{cls.MANIFEST_PREFIX}{version}"
        text = storage.read(path).decode("utf-8")
        if not text:
            return []
        try:
            manifest = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorruptFileError(f"{storage.uri(path)}: invalid LSM manifest ({exc})") from exc
        return list(manifest.get("files") or [])

    @classmethod
    def file_range(cls, file_name: str) -> tuple[str, str, int]:
        match = cls.FILE_PATTERN.match(file_name)
        if not match:
            raise CorruptFileError(f"unexpected LSM timeline file name {file_name!r}")
        return match.group(1), match.group(2), int(match.group(3))

    @classmethod
    def load(
        cls,
        storage: Storage,
        config: TableConfig,
        start: str | None = None,
        end: str | None = None,
    ) -> list[ArchivedInstant]:
        """Archived (completed) instants with ``start <= requested time <= end``."""
        import pyarrow.parquet as pq

        folder = config.archive_path
        version = cls.latest_snapshot_version(storage, folder)
        out: list[ArchivedInstant] = []
        seen: set[tuple[str, str]] = set()
        for entry in cls.manifest_files(storage, folder, version):
            name = entry["fileName"]
            low, high, _ = cls.file_range(name)
            if (start is not None and high < start) or (end is not None and low > end):
                continue
            path = f"{folder}/{name}"
            source = storage.uri(path)
            with storage.open(path) as handle:
                table = pq.ParquetFile(handle).read()
            for row in table.to_pylist():
                requested = row.get("instantTime")
                if requested is None:
                    continue
                if (start is not None and requested < start) or (end is not None and requested > end):
                    continue
                key = (requested, row.get("action"))
                if key in seen:
                    continue
                seen.add(key)
                out.append(
                    ArchivedInstant(
                        requested_time=requested,
                        action=row.get("action"),
                        state=State.COMPLETED,
                        completion_time=row.get("completionTime"),
                        metadata=_decode_payload(row.get("metadata"), source),
                        plan=_decode_payload(row.get("plan"), source),
                        source=source,
                        entry=row,
                    )
                )
        out.sort(key=lambda i: (i.requested_time, i.completion_time or ""))
        return out

    # -- writing (mirrors LSMTimelineWriter.write + updateManifest; for tests and tools) ----------
    @classmethod
    def write_layer0_file(cls, storage: Storage, config: TableConfig, rows: Sequence[dict[str, Any]]) -> str:
        """Write one L0 parquet file of ``HoodieLSMTimelineInstant`` rows and a new snapshot.

        ``rows`` need ``instantTime``, ``completionTime``, ``action`` and optional
        ``metadata``/``plan`` bytes (and ``version``, default 1). The file is named
        ``<first>_<last>_0.parquet`` after the first and last row; a new
        ``manifest_<N+1>`` lists the previous snapshot's files plus this one and
        ``_version_`` is rewritten, as ``LSMTimelineWriter`` does.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not rows:
            raise ValueError("no rows to write")
        folder = config.archive_path
        name = f"{rows[0]['instantTime']}_{rows[-1]['instantTime']}_0.parquet"
        schema = pa.schema(
            [
                pa.field("instantTime", pa.string()),
                pa.field("completionTime", pa.string()),
                pa.field("action", pa.string()),
                pa.field("metadata", pa.binary()),
                pa.field("plan", pa.binary()),
                pa.field("version", pa.int32(), nullable=False),
            ],
            metadata={
                "parquet.avro.schema": avro_models.java_schema("HoodieLSMTimelineInstant"),
                "writer.model.name": "avro",
            },
        )
        columns = {f.name: [row.get(f.name) for row in rows] for f in schema if f.name != "version"}
        columns["version"] = [int(row.get("version", 1)) for row in rows]
        table = pa.Table.from_pydict(columns, schema=schema)
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        data = buffer.getvalue()
        storage.write(f"{folder}/{name}", data)
        version = cls.latest_snapshot_version(storage, folder)
        files = [f for f in cls.manifest_files(storage, folder, version) if f["fileName"] != name]
        files.append({"fileName": name, "fileLen": len(data)})
        new_version = 1 if version < 0 else version + 1
        storage.write(f"{folder}/{cls.MANIFEST_PREFIX}{new_version}", jackson_pretty({"files": files}).encode("utf-8"))
        storage.write(f"{folder}/{cls.VERSION_FILE}", str(new_version).encode("utf-8"))
        return f"{folder}/{name}"


def load_archived_timeline(storage: Storage, config: TableConfig) -> list[ArchivedInstant]:
    """Archived instants of a table, whichever layout it uses."""
    if config.timeline_layout_version >= 2:
        return LSMTimeline.load(storage, config)
    return ArchivedTimelineV1.load(storage, config)


__all__ = [
    "ArchivedInstant",
    "ArchivedTimelineV1",
    "LSMTimeline",
    "archive_file_name",
    "parse_archive_file_name",
    "commit_metadata_to_avro",
    "create_meta_entry",
    "meta_entries_for",
    "encode_archive_blocks",
    "write_archive_file",
    "completed_instants",
    "instant_from_entry",
    "load_archived_timeline",
]
