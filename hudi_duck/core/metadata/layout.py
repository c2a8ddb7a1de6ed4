"""Layout of a table-version-6 metadata table, as Hudi 0.14/0.15 lays it out.

* location ``<table>/.hoodie/metadata``: a merge-on-read table named
  ``<table name>_metadata`` with HFile base files, key field ``key``, no meta
  columns populated, payload ``HoodieMetadataPayload``;
* partitions ``files``, ``column_stats``, ``bloom_filters``, ``record_index``;
  file group ids ``<prefix><index:04d>-0`` (``files-0000-0``, ``col-stats-0001-0``,
  ``bloom-filters-0003-0``, ``record-index-0009-0``); ``files`` has one file
  group, the others as many as their ``hoodie.metadata.*`` settings give;
* a record goes to file group ``|(|hash(key)| % count)|`` with Java's
  ``String.hashCode`` (``mapRecordKeyToFileGroupIndex``);
* instants: the data table's instant for every write it mirrors; partition
  initialization at ``<latest completed data instant or 00000000000000><010 + n>``;
  table services of the metadata table at ``<instant><suffix>`` (compaction ``001``,
  clean ``002``, restore ``003``, indexer ``004``, log compaction ``005``,
  rollback ``006``);
* every file group starts with a log file holding an empty delete block at the
  initialization instant (write token ``0-0-0``), so file groups without records
  still exist; delta commits append ``HFILE_DATA_BLOCK`` s (header: instant time
  and the writer schema) and delete blocks.

The ``files`` records a data-table action produces are built here too
(``convertMetadataToFilesPartitionRecords`` for commits, cleans, rollbacks and
restores).
"""

from __future__ import annotations

import math
import posixpath
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..config.table_config import Keys, table_checksum
from ..file_group.log_format import BlockType, HeaderKey, encode_block
from ..file_group.naming import log_file_name
from .java import string_hash
from .records import (
    MetadataRecord,
    MetadataRecordError,
    encode_cells,
    partition_files_record,
    partition_identifier,
    partition_list_record,
    writer_schema_json,
)

#: ``HoodieTableMetadata``: where the metadata table lives and how it is named.
METADATA_FOLDER = ".hoodie/metadata"
METADATA_TABLE_NAME_SUFFIX = "_metadata"
SOLO_COMMIT_TIMESTAMP = "00000000000000"
KEY_FIELD = "key"
PAYLOAD_CLASS = "org.apache.hudi.metadata.HoodieMetadataPayload"
KEY_GENERATOR_CLASS = "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator"
#: ``HoodieRecordMerger.DEFAULT_MERGER_STRATEGY_UUID``, the MOR default 0.14 stores.
DEFAULT_MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
#: ``HoodieLogFormat.DEFAULT_WRITE_TOKEN`` of the initial log files.
INITIAL_WRITE_TOKEN = "0-0-0"


@dataclass(frozen=True)
class MetadataPartition:
    """``MetadataPartitionType``: a partition of the metadata table and its file id prefix."""

    name: str
    file_id_prefix: str


FILES = MetadataPartition("files", "files-")
COLUMN_STATS = MetadataPartition("column_stats", "col-stats-")
BLOOM_FILTERS = MetadataPartition("bloom_filters", "bloom-filters-")
RECORD_INDEX = MetadataPartition("record_index", "record-index-")
PARTITIONS: dict[str, MetadataPartition] = {p.name: p for p in (FILES, COLUMN_STATS, BLOOM_FILTERS, RECORD_INDEX)}


class OperationSuffix:
    """Suffixes of metadata-table instants that mirror no data-table instant."""

    COMPACTION = "001"
    CLEAN = "002"
    RESTORE = "003"
    METADATA_INDEXER = "004"
    LOG_COMPACTION = "005"
    ROLLBACK = "006"


#: ``PARTITION_INITIALIZATION_TIME_SUFFIX``: 010, 011, ... one per partition initialized.
PARTITION_INITIALIZATION_SUFFIX = 10

# ``HoodieMetadataConfig`` defaults (0.14).
COLUMN_STATS_FILE_GROUP_COUNT = 2  # hoodie.metadata.index.column.stats.file.group.count
BLOOM_FILTER_FILE_GROUP_COUNT = 4  # hoodie.metadata.index.bloom.filter.file.group.count
RECORD_INDEX_MIN_FILE_GROUPS = 10  # hoodie.metadata.record.index.min.filegroup.count
RECORD_INDEX_MAX_FILE_GROUPS = 10000  # hoodie.metadata.record.index.max.filegroup.count
RECORD_INDEX_MAX_FILE_GROUP_BYTES = 1024 * 1024 * 1024  # hoodie.metadata.record.index.max.filegroup.size
RECORD_INDEX_GROWTH_FACTOR = 2.0  # hoodie.metadata.record.index.growth.factor
RECORD_INDEX_AVERAGE_RECORD_SIZE = 48


# -- table ------------------------------------------------------------------------------------


def metadata_table_path(table_base_path: str) -> str:
    """Base path of a table's metadata table."""
    return posixpath.join(table_base_path.rstrip("/"), METADATA_FOLDER) if table_base_path else METADATA_FOLDER


def metadata_table_properties(data_table_name: str) -> dict[str, str]:
    """The metadata table's ``hoodie.properties`` entries as 0.14 creates them
    (``HoodieBackedTableMetadataWriter.initializeMetaClient`` plus ``HoodieTableConfig.create``
    defaults); render with :func:`hudi_duck.core.config.table_config.format_properties`."""
    if not data_table_name:
        raise MetadataRecordError("the data table needs a name (hoodie.table.name) to name its metadata table")
    props = {
        Keys.NAME: data_table_name + METADATA_TABLE_NAME_SUFFIX,
        Keys.TYPE: "MERGE_ON_READ",
        Keys.VERSION: "6",
        Keys.TIMELINE_LAYOUT_VERSION: "1",
        Keys.ARCHIVELOG_FOLDER: "archived",
        Keys.PAYLOAD_CLASS: PAYLOAD_CLASS,
        Keys.RECORD_MERGER_STRATEGY: DEFAULT_MERGER_STRATEGY,
        Keys.BASE_FILE_FORMAT: "HFILE",
        Keys.RECORDKEY_FIELDS: KEY_FIELD,
        Keys.POPULATE_META_FIELDS: "false",
        Keys.KEY_GENERATOR_CLASS: KEY_GENERATOR_CLASS,
        Keys.DROP_PARTITION_COLUMNS: "false",
    }
    props[Keys.CHECKSUM] = str(table_checksum(props))
    return props


def metadata_partitions_value(partitions: Iterable[str]) -> str:
    """``hoodie.table.metadata.partitions`` of the data table: sorted, comma-separated."""
    return ",".join(sorted(set(partitions)))


# -- file groups ------------------------------------------------------------------------------


def file_group_id(partition: MetadataPartition, index: int) -> str:
    """``getFileIDForFileGroup``: ``files-0000-0`` and the like."""
    if not 0 <= index <= 9999:
        raise MetadataRecordError(f"metadata file group index {index} is outside 0..9999")
    return f"{partition.file_id_prefix}{index:04d}-0"


def file_group_index(record_key: str, file_group_count: int) -> int:
    """``mapRecordKeyToFileGroupIndex``: Java's ``String.hashCode`` of the key, modulo the count."""
    if file_group_count <= 0:
        raise MetadataRecordError(f"a metadata partition needs at least one file group (got {file_group_count})")
    h = string_hash(record_key)
    h = abs(h) if h != -(1 << 31) else h  # Math.abs(Integer.MIN_VALUE) stays negative
    remainder = h % file_group_count if h >= 0 else -(-h % file_group_count)  # Java's %
    return abs(remainder)


def estimate_file_group_count(
    record_count: int,
    average_record_size: int = RECORD_INDEX_AVERAGE_RECORD_SIZE,
    min_count: int = RECORD_INDEX_MIN_FILE_GROUPS,
    max_count: int = RECORD_INDEX_MAX_FILE_GROUPS,
    growth_factor: float = RECORD_INDEX_GROWTH_FACTOR,
    max_file_group_bytes: int = RECORD_INDEX_MAX_FILE_GROUP_BYTES,
) -> int:
    """``estimateFileGroupCount``: file groups for a partition expected to hold ``record_count`` records."""
    if min_count == max_count and min_count != 0:
        return min_count
    expected = math.ceil(float(record_count) * growth_factor)
    per_group = max_file_group_bytes // max(average_record_size, 1)
    estimated = expected // per_group
    if estimated >= max_count:
        return max_count
    if estimated <= min_count:
        return min_count
    return max(1, estimated)


def default_file_group_count(partition: MetadataPartition, record_count: int = 0) -> int:
    """File groups 0.14 creates for a partition with default settings."""
    if partition == FILES:
        return 1
    if partition == COLUMN_STATS:
        return COLUMN_STATS_FILE_GROUP_COUNT
    if partition == BLOOM_FILTERS:
        return BLOOM_FILTER_FILE_GROUP_COUNT
    return estimate_file_group_count(record_count)


# -- instants ---------------------------------------------------------------------------------


def initialization_instant(latest_completed_data_instant: str | None, offset: int = 0) -> str:
    """``createIndexInitTimestamp``: the instant that bootstraps the ``offset``-th partition."""
    base = latest_completed_data_instant or SOLO_COMMIT_TIMESTAMP
    return f"{base}{PARTITION_INITIALIZATION_SUFFIX + offset:03d}"


def compaction_instant(latest_delta_commit: str) -> str:
    """``createCompactionTimestamp``: compaction of the metadata table after this delta commit."""
    return latest_delta_commit + OperationSuffix.COMPACTION


def log_compaction_instant(latest_delta_commit: str) -> str:
    return latest_delta_commit + OperationSuffix.LOG_COMPACTION


def clean_instant(instant_time: str) -> str:
    """``createCleanTimestamp``: the metadata table's own clean."""
    return instant_time + OperationSuffix.CLEAN


def rollback_instant(instant_time: str) -> str:
    return instant_time + OperationSuffix.ROLLBACK


def restore_instant(instant_time: str) -> str:
    return instant_time + OperationSuffix.RESTORE


# -- log files and blocks ---------------------------------------------------------------------


def initial_log_file_name(partition: MetadataPartition, index: int, instant_time: str) -> str:
    """The log file every file group starts with: ``.files-0000-0_<instant>.log.1_0-0-0``."""
    return log_file_name(file_group_id(partition, index), instant_time, 1, INITIAL_WRITE_TOKEN)


def initial_log_file(instant_time: str) -> bytes:
    """Its content: one delete block without keys, headed by the initialization instant."""
    from ..file_group.log_blocks import encode_delete_records  # (writers only: reads never import it)

    return encode_block(BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: instant_time}, encode_delete_records([]))


def hfile_data_block(records: Iterable[MetadataRecord], instant_time: str, compression: str = "GZ") -> bytes:
    """A framed ``HFILE_DATA_BLOCK`` holding ``records`` for a delta commit of the metadata table."""
    from ..hfile.writer import write_hudi_block_hfile  # (writers only: reads never import it)

    schema = writer_schema_json()
    content = write_hudi_block_hfile(encode_cells(records), schema, compression=compression)
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema}
    return encode_block(BlockType.HFILE_DATA_BLOCK, header, content)


def records_by_file_group(
    records: Iterable[MetadataRecord], partition: MetadataPartition, file_group_count: int
) -> dict[str, list[MetadataRecord]]:
    """Records grouped by the file group id their key maps to."""
    out: dict[str, list[MetadataRecord]] = {}
    for record in records:
        index = 0 if partition == FILES else file_group_index(record.key, file_group_count)
        out.setdefault(file_group_id(partition, index), []).append(record)
    return out


# -- files records of data-table actions ------------------------------------------------------


def _file_name(path: str, partition_path: str) -> str:
    """``FSUtils.getFileName``: a write stat's path without its partition folder."""
    prefix = partition_path.rstrip("/") + "/" if partition_path else ""
    if prefix and path.startswith(prefix):
        return path[len(prefix) :]
    return posixpath.basename(path)


def commit_files_records(
    partition_to_write_stats: Mapping[str, Iterable[Mapping[str, Any]]],
    *,
    operation_type: str | None = None,
    partition_to_replace_file_ids: Mapping[str, Any] | None = None,
) -> list[MetadataRecord]:
    """``convertMetadataToFilesPartitionRecords(HoodieCommitMetadata)``: the partitions written
    (``__all_partitions__``), then per partition the files written with their sizes (the largest
    size when a file was written twice, CDC files too); a ``delete_partition`` replace commit
    also marks its partitions deleted."""
    records = [partition_list_record(list(partition_to_write_stats))]
    if operation_type and operation_type.upper() == "DELETE_PARTITION" and partition_to_replace_file_ids:
        records.append(partition_list_record(list(partition_to_replace_file_ids), deleted=True))
    for partition, stats in partition_to_write_stats.items():
        sizes: dict[str, int] = {}
        for stat in stats:
            if hasattr(stat, "to_json_record"):  # a typed write stat
                stat = stat.to_json_record()
            path = stat.get("path")
            if not path:
                continue
            name = _file_name(path, partition)
            sizes[name] = max(sizes.get(name, 0), int(stat.get("fileSizeInBytes") or 0))
            for cdc_path, cdc_size in (stat.get("cdcStats") or {}).items():
                sizes[_file_name(cdc_path, partition)] = int(cdc_size)
        records.append(partition_files_record(partition, sizes))
    return records


def clean_files_records(partition_metadata: Mapping[str, Mapping[str, Any]]) -> list[MetadataRecord]:
    """``convertMetadataToFilesPartitionRecords(HoodieCleanMetadata)``: tombstones for the files
    each partition's clean deleted (``deletePathPatterns``), and deleted partitions."""
    records = []
    deleted_partitions = []
    for partition, metadata in partition_metadata.items():
        records.append(partition_files_record(partition, {}, list(metadata.get("deletePathPatterns") or [])))
        if metadata.get("isPartitionDeleted"):
            deleted_partitions.append(partition)
    if deleted_partitions:
        records.append(partition_list_record(deleted_partitions, deleted=True))
    return records


def rollback_files_records(partition_metadata: Mapping[str, Mapping[str, Any]]) -> list[MetadataRecord]:
    """``convertMetadataToRollbackRecords``: the log files a rollback appended its command
    blocks to (``rollbackLogFiles``) and, with them, the log files of the rolled-back commit
    (``logFilesFromFailedCommit``: they stay, their blocks are undone by the command block),
    with their sizes. The rolled-back instant's other entries leave the metadata table by
    rolling back its delta commit there."""
    appended: dict[str, dict[str, int]] = {}
    for metadata in partition_metadata.values():
        log_files = metadata.get("rollbackLogFiles") or {}
        if not log_files:
            continue
        partition = partition_identifier(metadata.get("partitionPath") or "")
        sizes = appended.setdefault(partition, {})
        for path, size in [*log_files.items(), *(metadata.get("logFilesFromFailedCommit") or {}).items()]:
            name = posixpath.basename(path)
            sizes[name] = max(sizes.get(name, 0), int(size))
    return [partition_files_record(partition, files) for partition, files in appended.items()]


def restore_files_records(
    listed: Mapping[str, Mapping[str, int]], in_metadata: Mapping[str, Mapping[str, int]]
) -> list[MetadataRecord]:
    """The sync after a restore (``fetchOutofSyncFilesRecordsFromMetadataTable`` +
    ``convertMissingPartitionRecords``): files found in storage but not in the metadata table
    are added, files listed in the metadata table but gone from storage get tombstones,
    partitions gone from storage are marked deleted. Both inputs: partition path -> file -> size."""
    records = []
    deleted_partitions = [p for p in in_metadata if p not in listed]
    for partition, files in listed.items():
        known = in_metadata.get(partition, {})
        added = {name: size for name, size in files.items() if name not in known}
        removed = [name for name in known if name not in files]
        if added or removed:
            records.append(partition_files_record(partition, added, removed))
    if deleted_partitions:
        records.append(partition_list_record(deleted_partitions, deleted=True))
    return records


__all__ = [
    "BLOOM_FILTERS",
    "COLUMN_STATS",
    "FILES",
    "METADATA_FOLDER",
    "MetadataPartition",
    "OperationSuffix",
    "PARTITIONS",
    "RECORD_INDEX",
    "SOLO_COMMIT_TIMESTAMP",
    "clean_files_records",
    "clean_instant",
    "commit_files_records",
    "compaction_instant",
    "default_file_group_count",
    "estimate_file_group_count",
    "file_group_id",
    "file_group_index",
    "hfile_data_block",
    "initial_log_file",
    "initial_log_file_name",
    "initialization_instant",
    "log_compaction_instant",
    "metadata_partitions_value",
    "metadata_table_path",
    "metadata_table_properties",
    "records_by_file_group",
    "restore_files_records",
    "restore_instant",
    "rollback_files_records",
    "rollback_instant",
]
