"""Records of the metadata table (``HoodieMetadataRecord``) and Hudi's rules for combining them.

Every partition of the metadata table stores the same Avro record; its ``type``
says which payload field is set:

=====  =======================  ===========================================================
type   key                      payload
=====  =======================  ===========================================================
1      ``__all_partitions__``   ``filesystemMetadata``: partition path -> (0, isDeleted)
2      partition path (``.``)   ``filesystemMetadata``: file name -> (size, isDeleted)
3      column stats key         ``ColumnStatsMetadata``
4      bloom filter key         ``BloomFilterMetadata``
5      record key               ``recordIndexMetadata``
6      partition stats key      ``ColumnStatsMetadata`` of a whole partition (version 8+)
7      secondary index key      ``SecondaryIndexMetadata`` (version 8+)
=====  =======================  ===========================================================

Values are stored as Avro binary of the writer schema (``HoodieMetadataRecord``
with Hudi's five meta columns prepended) with the ``key`` field blanked: the
key is the HFile cell's row. Records written here follow table version 6
(Hudi 0.14/0.15); :func:`decode_values` reads any version's records with the
writer schema found in the file.

Combining (``HoodieMetadataPayload.preCombine``): file listings merge entry by
entry, newer entries win, a newer tombstone removes the file (and survives
only if the older listing did not have it), sizes of a file seen twice take the
maximum; record-index and column-stats records are replaced by the newer one
(column stats merge their ranges).
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import io
import json
import struct
import uuid
from dataclasses import dataclass, field, replace
from enum import IntEnum
from functools import lru_cache
from typing import Any, Iterable, Mapping

import fastavro

from ..avro import models as avro_models
from ..errors import CorruptFileError, HudiError
from .java import hashmap_capacity, hashmap_order, xxhash64

#: Key of the record listing all partitions (``HoodieTableMetadata.RECORDKEY_PARTITION_LIST``).
PARTITION_LIST_KEY = "__all_partitions__"
#: How the metadata table names the partition of a non-partitioned table.
NON_PARTITIONED_NAME = "."

#: ``HoodieRecord.HOODIE_META_COLUMNS``, prepended to the writer schema by ``addMetadataFields``.
META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

#: ``HashID``'s seed for the XXHash64 ids of column stats keys (the Java int 0xdabadaba).
HASH_SEED = 0xDABADABA - (1 << 32)
#: ``fileIdEncoding`` values of record-index entries.
FILE_ID_ENCODING_UUID = 0
FILE_ID_ENCODING_RAW = 1
MISSING_FILE_INDEX = -1


class MetadataRecordError(HudiError):
    """A metadata-table record that cannot be built or combined."""


class RecordType(IntEnum):
    """``HoodieMetadataPayload.METADATA_TYPE_*``."""

    PARTITION_LIST = 1
    FILE_LIST = 2
    COLUMN_STATS = 3
    BLOOM_FILTER = 4
    RECORD_INDEX = 5
    PARTITION_STATS = 6
    SECONDARY_INDEX = 7


@dataclass(frozen=True)
class FileInfo:
    """``HoodieMetadataFileInfo``: a file's size, or a tombstone."""

    size: int
    is_deleted: bool = False


TOMBSTONE = FileInfo(0, True)


@dataclass(frozen=True)
class MetadataRecord:
    """One ``HoodieMetadataRecord``; exactly one payload is set, as ``type`` says."""

    key: str
    type: RecordType
    files: Mapping[str, FileInfo] | None = None
    bloom_filter: Mapping[str, Any] | None = None
    column_stats: Mapping[str, Any] | None = None
    record_index: Mapping[str, Any] | None = None
    meta: Mapping[str, str | None] = field(default_factory=dict)

    def live_files(self) -> dict[str, int]:
        """File (or partition) name -> size of the entries that are not tombstones."""
        return {name: info.size for name, info in (self.files or {}).items() if not info.is_deleted}


# -- schema ---------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def record_schema_json() -> str:
    """``HoodieMetadataRecord.SCHEMA$`` of 0.14 as Java prints it."""
    return avro_models.java_schema_json(avro_models.HOODIE_METADATA_RECORD)


@lru_cache(maxsize=None)
def writer_schema_json() -> str:
    """The writer schema of the metadata table's files (``HoodieAvroUtils.addMetadataFields``):
    the record schema with the five meta columns (nullable strings, doc "", default null) first.
    This text is the ``schema`` file info of base files and the SCHEMA header of log blocks."""
    text = record_schema_json()
    marker = '"fields":['
    meta = ",".join(
        f'{{"name":"{name}","type":["null","string"],"doc":"","default":null}}' for name in META_COLUMNS
    )
    at = text.index(marker) + len(marker)
    return text[:at] + meta + "," + text[at:]


@lru_cache(maxsize=None)
def _parsed_writer_schema() -> Any:
    return fastavro.parse_schema(json.loads(writer_schema_json()))


# -- encoding -------------------------------------------------------------------------------


def _wrap_map(files: Mapping[str, FileInfo] | None) -> dict[str, dict[str, Any]] | None:
    if files is None:
        return None
    return {name: {"size": int(info.size), "isDeleted": bool(info.is_deleted)} for name, info in files.items()}


def to_avro(record: MetadataRecord, *, blank_key: bool = False) -> dict[str, Any]:
    """The record as a dict of the writer schema (meta columns null unless set in ``meta``)."""
    out: dict[str, Any] = {name: record.meta.get(name) for name in META_COLUMNS}
    out.update(
        key="" if blank_key else record.key,
        type=int(record.type),
        filesystemMetadata=_wrap_map(record.files),
        BloomFilterMetadata=dict(record.bloom_filter) if record.bloom_filter is not None else None,
        ColumnStatsMetadata=dict(record.column_stats) if record.column_stats is not None else None,
        recordIndexMetadata=dict(record.record_index) if record.record_index is not None else None,
    )
    return out


def from_avro(value: Mapping[str, Any]) -> MetadataRecord:
    """A record decoded with any version's writer schema (unknown fields are ignored)."""
    try:
        kind = RecordType(int(value["type"]))
        key = value["key"]
    except (KeyError, ValueError, TypeError) as exc:
        raise CorruptFileError(f"not a metadata-table record: {exc}") from exc
    raw_files = value.get("filesystemMetadata")
    files = None
    if raw_files is not None:
        items = raw_files.items() if isinstance(raw_files, Mapping) else raw_files
        files = {name: FileInfo(int(info["size"]), bool(info["isDeleted"])) for name, info in items}
    return MetadataRecord(
        key=key,
        type=kind,
        files=files,
        bloom_filter=value.get("BloomFilterMetadata"),
        column_stats=value.get("ColumnStatsMetadata"),
        record_index=value.get("recordIndexMetadata"),
        meta={name: value.get(name) for name in META_COLUMNS if value.get(name) is not None},
    )


def encode_value(record: MetadataRecord) -> bytes:
    """The HFile cell value Hudi stores: Avro binary of the writer schema with ``key`` blanked."""
    buffer = io.BytesIO()
    try:
        fastavro.schemaless_writer(buffer, _parsed_writer_schema(), to_avro(record, blank_key=True))
    except (ValueError, TypeError, KeyError) as exc:
        raise MetadataRecordError(f"metadata record {record.key!r} does not fit HoodieMetadataRecord: {exc}") from exc
    return buffer.getvalue()


def encode_cells(records: Iterable[MetadataRecord]) -> list[tuple[str, bytes]]:
    """(record key, cell value) pairs for the HFile writers."""
    return [(record.key, encode_value(record)) for record in records]


def decode_values(cells: Iterable[tuple[bytes, bytes]], schema_json: str, source: str = "") -> list[MetadataRecord]:
    """Records of HFile cells written with ``schema_json`` (from the file info or the block header)."""
    from ..hfile.reader import decode_hfile_records

    values = decode_hfile_records(list(cells), schema_json, source, union_record_names=True)
    return [from_avro(value) for value in values]


# -- files partition ------------------------------------------------------------------------


def partition_identifier(partition_path: str) -> str:
    """``getPartitionIdentifier``: the metadata table's name for a data partition."""
    return NON_PARTITIONED_NAME if partition_path == "" else partition_path


def partition_path_of(identifier: str) -> str:
    """The data table's partition path for a metadata partition name (``.`` is the table root)."""
    return "" if identifier == NON_PARTITIONED_NAME else identifier


def partition_list_record(partitions: Iterable[str], deleted: bool = False) -> MetadataRecord:
    """``createPartitionListRecord``: partitions added (or, with ``deleted``, dropped)."""
    entries = [(partition_identifier(p), FileInfo(0, deleted)) for p in partitions]
    return MetadataRecord(PARTITION_LIST_KEY, RecordType.PARTITION_LIST, hashmap_order(entries))


def partition_files_record(
    partition_path: str, added: Mapping[str, int] | None = None, deleted: Iterable[str] = ()
) -> MetadataRecord:
    """``createPartitionFilesRecord``: files added with their sizes and files deleted (tombstones)."""
    entries: list[tuple[str, FileInfo]] = []
    for name, size in (added or {}).items():
        if size <= 0:
            raise MetadataRecordError(f"file {name!r} in partition {partition_path!r} has size {size}; Hudi never lists empty files")
        entries.append((name, FileInfo(int(size), False)))
    entries.extend((name, TOMBSTONE) for name in deleted)
    return MetadataRecord(partition_identifier(partition_path), RecordType.FILE_LIST, hashmap_order(entries))


def combine_files(
    older: Mapping[str, FileInfo] | None, newer: Mapping[str, FileInfo] | None, java_order: bool = True
) -> dict[str, FileInfo]:
    """``combineFileSystemMetadata``: ``older`` then ``newer``, newer entries taking precedence.

    A newer tombstone drops the file when the older listing has it and is kept
    otherwise (a base file may still list it); a file present in both keeps the
    larger size. The result is ordered as Java's ``HashMap`` built by
    ``putAll(older)`` then merging ``newer`` iterates (the order of the bytes a
    writer encodes), unless ``java_order`` is false (a reader's listing).
    """
    older = older or {}
    combined: dict[str, FileInfo] = dict(older)
    for name, info in (newer or {}).items():
        if name in combined:
            if info.is_deleted:
                del combined[name]
            else:
                combined[name] = FileInfo(max(info.size, combined[name].size), False)
        else:
            combined[name] = info
    if not java_order:
        return combined
    capacity = hashmap_capacity(len(older) + len(newer or {}), _put_all_capacity(len(older)))
    return hashmap_order(combined.items(), capacity)


def _put_all_capacity(entries: int) -> int:
    """Initial table size of an empty ``HashMap`` after ``putAll`` of ``entries`` entries."""
    if entries == 0:
        return 16
    wanted = int(entries / 0.75 + 1.0)
    return max(16, 1 << (wanted - 1).bit_length())


def combine(older: MetadataRecord, newer: MetadataRecord, java_order: bool = True) -> MetadataRecord:
    """``HoodieMetadataPayload.preCombine(older)`` called on ``newer``; ``java_order`` false
    leaves file maps in any order (records only read, never encoded again)."""
    if older.type != newer.type:
        raise MetadataRecordError(
            f"cannot combine metadata records of type {older.type.name} and {newer.type.name} (key {newer.key!r})"
        )
    if newer.type in (RecordType.PARTITION_LIST, RecordType.FILE_LIST):
        return MetadataRecord(newer.key, newer.type, combine_files(older.files, newer.files, java_order))
    if newer.type in (RecordType.COLUMN_STATS, RecordType.PARTITION_STATS):
        return replace(newer, meta={}, column_stats=combine_column_stats(older.column_stats, newer.column_stats))
    if newer.type is RecordType.BLOOM_FILTER:
        return replace(newer, meta={})
    return replace(newer, meta={})  # record index: the latest mapping wins


def _unwrap(value: Any) -> Any:
    """The value inside a stats wrapper (``(name, {"value": v})`` or ``{"value": v}``)."""
    if value is None:
        return None
    if isinstance(value, tuple):
        value = value[1]
    return value.get("value") if isinstance(value, Mapping) else value


def _pick(first: Any, second: Any, larger: bool) -> Any:
    """The wrapped value whose inner value is the smaller (or larger); nulls lose."""
    candidates = [v for v in (first, second) if _unwrap(v) is not None]
    if not candidates:
        return None
    chooser = max if larger else min
    return chooser(candidates, key=_unwrap)


def _add(first: Any, second: Any) -> int | None:
    if first is None or second is None:
        return None if first is None and second is None else (first or 0) + (second or 0)
    return first + second


def combine_column_stats(older: Mapping[str, Any] | None, newer: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``mergeColumnStatsRecords``: a tombstone on either side yields the newer entry; otherwise
    the ranges widen (min of mins, max of maxes) and the counts and sizes add up."""
    if older is None or newer is None or newer.get("isDeleted") or older.get("isDeleted"):
        return newer
    if (older.get("fileName"), older.get("columnName")) != (newer.get("fileName"), newer.get("columnName")):
        raise MetadataRecordError(
            f"column stats of {older.get('fileName')}/{older.get('columnName')} and "
            f"{newer.get('fileName')}/{newer.get('columnName')} cannot be combined"
        )
    merged = dict(newer)
    merged["minValue"] = _pick(older.get("minValue"), newer.get("minValue"), larger=False)
    merged["maxValue"] = _pick(older.get("maxValue"), newer.get("maxValue"), larger=True)
    for name in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize"):
        merged[name] = _add(older.get(name), newer.get(name))
    return merged


# -- column stats ---------------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def column_index_id(column: str) -> str:
    """``ColumnIndexID``: base64 of the big-endian XXHash64 of the column name."""
    return _b64(struct.pack(">Q", xxhash64(column.encode("utf-8"), HASH_SEED)))


def partition_index_id(partition_path: str) -> str:
    """``PartitionIndexID``: base64 of the XXHash64 of the partition identifier."""
    return _b64(struct.pack(">Q", xxhash64(partition_identifier(partition_path).encode("utf-8"), HASH_SEED)))


def file_index_id(file_name: str) -> str:
    """``FileIndexID``: base64 of the MD5 of the file name."""
    return _b64(hashlib.md5(file_name.encode("utf-8")).digest())


def column_stats_key(partition_path: str, file_name: str, column: str) -> str:
    """``getColumnStatsIndexKey``: column id + partition id + file id."""
    return column_index_id(column) + partition_index_id(partition_path) + file_index_id(file_name)


def column_stats_record(
    partition_path: str,
    file_name: str,
    column: str,
    *,
    min_value: Any = None,
    max_value: Any = None,
    value_count: int | None = None,
    null_count: int | None = None,
    total_size: int | None = None,
    total_uncompressed_size: int | None = None,
    deleted: bool = False,
) -> MetadataRecord:
    """``createColumnStatsRecords``: one column of one file; ``min_value``/``max_value`` are
    wrapped values (``(name, {"value": v})`` as :func:`wrap_stat_value` makes them) or None."""
    stats = {
        "fileName": file_name,
        "columnName": column,
        "minValue": min_value,
        "maxValue": max_value,
        "valueCount": value_count,
        "nullCount": null_count,
        "totalSize": total_size,
        "totalUncompressedSize": total_uncompressed_size,
        "isDeleted": deleted,
    }
    return MetadataRecord(column_stats_key(partition_path, file_name, column), RecordType.COLUMN_STATS, column_stats=stats)


# -- record index ---------------------------------------------------------------------------


def instant_to_epoch_millis(instant_time: str, tz: _dt.tzinfo = _dt.timezone.utc) -> int:
    """``HoodieActiveTimeline.parseDateFromInstantTime(...).getTime()``: an instant read as
    wall-clock time in the timeline's time zone (``hoodie.table.timeline.timezone``: the
    JVM's zone for LOCAL, or UTC); second-granularity instants get 999 ms."""
    text = instant_time + "999" if len(instant_time) == 14 else instant_time
    try:
        if len(text) != 17 or not text.isdigit():
            raise ValueError(text)
        moment = _dt.datetime.strptime(text[:14], "%Y%m%d%H%M%S").replace(tzinfo=tz)
    except ValueError as exc:
        raise MetadataRecordError(f"instant time {instant_time!r} is not yyyyMMddHHmmss[SSS]") from exc
    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return (moment - epoch) // _dt.timedelta(milliseconds=1) + int(text[14:])


def _signed64(value: int) -> int:
    return value - (1 << 64) if value & (1 << 63) else value


def record_index_record(
    record_key: str,
    partition_path: str,
    file_id: str,
    instant_time: str,
    file_id_encoding: int = FILE_ID_ENCODING_UUID,
    tz: _dt.tzinfo = _dt.timezone.utc,
) -> MetadataRecord:
    """``createRecordIndexUpdate``: where a record key lives.

    With the UUID encoding (0, what Hudi's writers use for their own file ids) a file id
    ``<uuid>-<n>`` is stored as the UUID's two halves and ``n`` (``-1`` for a bare UUID);
    with the raw encoding (1) as the string itself.
    """
    millis = instant_to_epoch_millis(instant_time, tz)
    if file_id_encoding == FILE_ID_ENCODING_UUID:
        try:
            if len(file_id) == 36:
                parsed, index = uuid.UUID(file_id), MISSING_FILE_INDEX
            else:
                cut = file_id.rindex("-")
                parsed, index = uuid.UUID(file_id[:cut]), int(file_id[cut + 1 :])
        except ValueError as exc:
            raise MetadataRecordError(
                f"file id {file_id!r} (partition {partition_path!r}) is not <uuid>-<index>; "
                "use the raw file id encoding (1) for such file ids"
            ) from exc
        info = {
            "partitionName": partition_path,
            "fileIdHighBits": _signed64(parsed.int >> 64),
            "fileIdLowBits": _signed64(parsed.int & ((1 << 64) - 1)),
            "fileIndex": index,
            "fileId": "",
            "instantTime": millis,
            "fileIdEncoding": FILE_ID_ENCODING_UUID,
        }
    elif file_id_encoding == FILE_ID_ENCODING_RAW:
        info = {
            "partitionName": partition_path,
            "fileIdHighBits": -1,
            "fileIdLowBits": -1,
            "fileIndex": -1,
            "fileId": file_id,
            "instantTime": millis,
            "fileIdEncoding": FILE_ID_ENCODING_RAW,
        }
    else:
        raise MetadataRecordError(f"unknown record index file id encoding {file_id_encoding} (expected 0 or 1)")
    return MetadataRecord(record_key, RecordType.RECORD_INDEX, record_index=info)


@dataclass(frozen=True)
class RecordLocation:
    """Where the record index says a record key lives."""

    partition_path: str
    file_id: str
    instant_millis: int


def record_location(record: MetadataRecord) -> RecordLocation:
    """``getLocationFromRecordIndexInfo``: the file id rebuilt from either encoding."""
    info = record.record_index
    if record.type is not RecordType.RECORD_INDEX or info is None:
        raise MetadataRecordError(f"metadata record {record.key!r} is not a record-index entry")
    if int(info.get("fileIdEncoding") or 0) == FILE_ID_ENCODING_RAW:
        file_id = info["fileId"]
    else:
        bits = ((info["fileIdHighBits"] & ((1 << 64) - 1)) << 64) | (info["fileIdLowBits"] & ((1 << 64) - 1))
        file_id = str(uuid.UUID(int=bits))
        if info["fileIndex"] != MISSING_FILE_INDEX:
            file_id = f"{file_id}-{info['fileIndex']}"
    return RecordLocation(info.get("partitionName") or "", file_id, info.get("instantTime") or 0)


__all__ = [
    "FILE_ID_ENCODING_RAW",
    "FILE_ID_ENCODING_UUID",
    "FileInfo",
    "META_COLUMNS",
    "MetadataRecord",
    "MetadataRecordError",
    "NON_PARTITIONED_NAME",
    "PARTITION_LIST_KEY",
    "RecordLocation",
    "RecordType",
    "TOMBSTONE",
    "column_index_id",
    "column_stats_key",
    "column_stats_record",
    "combine",
    "combine_files",
    "decode_values",
    "encode_cells",
    "encode_value",
    "file_index_id",
    "from_avro",
    "instant_to_epoch_millis",
    "partition_files_record",
    "partition_identifier",
    "partition_index_id",
    "partition_list_record",
    "partition_path_of",
    "record_index_record",
    "record_location",
    "record_schema_json",
    "to_avro",
    "writer_schema_json",
]
