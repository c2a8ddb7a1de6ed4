"""The ``files`` partition of a metadata table read back as a file listing.

As ``HoodieBackedTableMetadata`` does: take the latest file slice of the
``files`` file group (its base HFile counts once the metadata table committed
it), apply the log blocks of delta commits that are *valid* — completed on the
metadata table and on the data table (the metadata table is written before
the data table commits, so a block of a failed data commit must not count),
plus the metadata table's own initialization/indexing commits and instants a
completed rollback or restore undid — merge the log records first and then
with the base records (:func:`records.combine`), and read the listing off the
``__all_partitions__`` record and one record per partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..config.table_config import TableConfig
from ..errors import HudiError
from ..file_group.log_blocks import decode_delete_block
from ..file_group.log_format import BlockType
from ..file_group.log_scanner import scan_slice_logs
from ..hfile.reader import open_hfile
from ..storage.storage import Storage
from ..table.fs_view import FileSystemView
from ..timeline.active import Timeline
from ..timeline.instant import Action, State
from .layout import FILES, METADATA_FOLDER, OperationSuffix, SOLO_COMMIT_TIMESTAMP
from .records import (
    PARTITION_LIST_KEY,
    MetadataRecord,
    RecordType,
    combine,
    decode_values,
    partition_path_of,
)


class MetadataTableError(HudiError):
    """A metadata table that is missing or cannot answer."""


@dataclass(frozen=True)
class FilesListing:
    """Partition path ("" for a non-partitioned table) -> (file name, size), sorted by name."""

    partitions: dict[str, list[tuple[str, int]]]
    #: delta commits of the metadata table whose blocks were applied
    applied_instants: tuple[str, ...] = ()


def has_metadata_table(storage: Storage) -> bool:
    """Whether the table at ``storage`` has a metadata table with a ``files`` partition."""
    return storage.exists(f"{METADATA_FOLDER}/.hoodie/hoodie.properties") and storage.is_dir(
        f"{METADATA_FOLDER}/{FILES.name}"
    )


def _rolled_back_instants(timeline: Timeline, after: str) -> set[str]:
    """Instants undone by completed rollbacks and restores later than ``after``."""
    out: set[str] = set()
    for instant in timeline.completed([Action.ROLLBACK, Action.RESTORE]):
        if instant.requested_time <= after:
            continue
        details = timeline.avro_details(instant.requested_time, State.COMPLETED) or {}
        if instant.action == Action.ROLLBACK:
            out.update(details.get("commitsRollback") or [])
        else:
            for rollbacks in (details.get("hoodieRestoreMetadata") or {}).values():
                for rollback in rollbacks or []:
                    out.update((rollback or {}).get("commitsRollback") or [])
    return out


def valid_instant_times(data_timeline: Timeline, metadata_timeline: Timeline) -> set[str]:
    """``HoodieTableMetadataUtil.getValidInstantTimestamps``: instants whose log blocks count."""
    valid = {i.requested_time for i in data_timeline.completed()}
    for instant in metadata_timeline.completed():
        time = instant.requested_time
        indexing = time.endswith(OperationSuffix.METADATA_INDEXER) and len(time) == 20
        if indexing or (instant.action == Action.DELTA_COMMIT and time.startswith(SOLO_COMMIT_TIMESTAMP)):
            valid.add(time)
        if instant.action in (Action.ROLLBACK, Action.RESTORE):
            valid.add(time)
    earliest = min(valid) if valid else SOLO_COMMIT_TIMESTAMP
    valid |= _rolled_back_instants(data_timeline, earliest)
    return valid


def _merge_into(state: dict[str, MetadataRecord | None], record: MetadataRecord) -> None:
    older = state.get(record.key)
    state[record.key] = record if older is None else combine(older, record)


def merged_records(storage: Storage, partition: str = FILES.name) -> tuple[dict[str, MetadataRecord], tuple[str, ...]]:
    """Key -> merged record of one metadata partition (latest slice of each file group)."""
    if not has_metadata_table(storage):
        raise MetadataTableError(
            f"{storage.uri()}: no metadata table (expected {METADATA_FOLDER}/{FILES.name}); "
            "list the table's storage instead or enable hoodie.metadata.enable"
        )
    data_config = TableConfig.load(storage)
    data_timeline = Timeline.load(storage, data_config)
    mdt_storage = storage.child(METADATA_FOLDER)
    mdt_config = TableConfig.load(mdt_storage)
    mdt_timeline = Timeline.load(mdt_storage, mdt_config)
    view = FileSystemView(mdt_storage, mdt_config, mdt_timeline)
    valid = valid_instant_times(data_timeline, mdt_timeline)

    def admit(instant: str) -> bool:
        return instant in valid and view.is_committed(instant)

    result: dict[str, MetadataRecord] = {}
    applied: set[str] = set()
    for file_slice in view.latest_slices(partitions=[partition]):
        base: dict[str, MetadataRecord] = {}
        if file_slice.base_file is not None:
            data = mdt_storage.read(file_slice.base_file.path)
            source = mdt_storage.uri(file_slice.base_file.path)
            hfile = open_hfile(data, source)
            if not hfile.schema_json:
                raise MetadataTableError(f"{source}: metadata base file has no writer schema")
            base = {r.key: r for r in decode_values(hfile.cells, hfile.schema_json, source)}
        logs: dict[str, MetadataRecord | None] = {}
        scan = scan_slice_logs(mdt_storage, file_slice.log_files, admit)
        for block in scan.blocks:
            source = f"{block.file_path}@{block.offset}"
            applied.add(block.instant_time or "")
            if block.block_type is BlockType.DELETE_BLOCK:
                for deleted in decode_delete_block(block):
                    logs[deleted.record_key] = None
                continue
            if block.block_type is not BlockType.HFILE_DATA_BLOCK or not block.schema:
                raise MetadataTableError(f"{source}: metadata log block is {block.block_type.name}, expected an HFile data block")
            hfile = open_hfile(block.content, source)
            for record in decode_values(hfile.cells, block.schema, source):
                if logs.get(record.key) is None:
                    logs[record.key] = record
                else:
                    _merge_into(logs, record)  # type: ignore[arg-type]
        for key, record in logs.items():
            if record is None:
                base.pop(key, None)
            elif key in base:
                base[key] = combine(base[key], record)
            else:
                base[key] = record
        result.update(base)
    return result, tuple(sorted(applied))


def files_listing(storage: Storage) -> FilesListing:
    """The live files of every partition according to the metadata table's ``files`` partition."""
    records, applied = merged_records(storage, FILES.name)
    partition_list = records.get(PARTITION_LIST_KEY)
    names: Iterable[str] = partition_list.live_files() if partition_list is not None else ()
    out: dict[str, list[tuple[str, int]]] = {}
    for identifier in sorted(names):
        record = records.get(identifier)
        files = record.live_files() if record is not None and record.type is RecordType.FILE_LIST else {}
        out[partition_path_of(identifier)] = sorted(files.items())
    return FilesListing(out, applied)


__all__ = ["FilesListing", "MetadataTableError", "files_listing", "has_metadata_table", "merged_records", "valid_instant_times"]
