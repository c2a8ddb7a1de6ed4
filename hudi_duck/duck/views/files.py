"""File views: ``hudi_file_slices`` (``show fsview latest``), ``hudi_partitions``
(``stats filesizes``) and ``hudi_log_blocks`` (``show logfile metadata``)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, Iterator

import pyarrow.parquet as pq

from ...core.errors import CorruptFileError, UnsupportedFeatureError
from ...core.file_group.file_slice import FileSlice
from ...core.file_group.log_blocks import block_record_count
from ...core.file_group.log_format import (
    BlockType,
    CommandType,
    FooterKey,
    HeaderKey,
    LogBlock,
    iter_blocks,
)
from ...core.file_group.log_scanner import rolled_back_positions, scan_slice_logs
from ...core.file_group.naming import LogFile, parse_log_file
from ...core.schema.compare import schema_fingerprint
from ...core.table.read_plan import plan_snapshot
from ...core.table.table import HudiTable
from ...core.timeline.commit_metadata import WriteStat
from . import BIGINT, BOOL, DOUBLE, FILES, INT, LOG_FILES, STRING, STRING_MAP, STRINGS, View, ViewArgs, schema

# -- hudi_file_slices -------------------------------------------------------------------------

FILE_SLICES_SCHEMA = schema(
    ("partition_path", STRING),
    ("file_id", STRING),
    ("base_instant_time", STRING),
    ("base_file", STRING),
    ("base_file_size", BIGINT),
    ("log_files", STRINGS),
    ("num_log_files", INT),
    ("total_size", BIGINT),
)


def file_slice_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    plan = plan_snapshot(table, args.time, check_files=False)
    for s in sorted(plan.slices, key=lambda s: (s.partition_path, s.file_id)):
        base = s.base_file
        yield {
            "partition_path": s.partition_path,
            "file_id": s.file_id,
            "base_instant_time": s.base_instant_time,
            "base_file": base.file_name if base else None,
            "base_file_size": base.size if base else None,
            "log_files": [log.file_name for log in s.sorted_logs()],
            "num_log_files": len(s.log_files),
            "total_size": s.total_size,
        }


# -- hudi_partitions --------------------------------------------------------------------------

PARTITIONS_SCHEMA = schema(
    ("partition_path", STRING),
    ("file_groups", BIGINT),
    ("base_files", BIGINT),
    ("log_files", BIGINT),
    ("base_file_bytes", BIGINT),
    ("log_file_bytes", BIGINT),
    ("total_bytes", BIGINT),
    ("base_records", BIGINT),
    ("log_records", BIGINT),
    ("log_deletes", BIGINT),
    ("min_base_file_size", BIGINT),
    ("max_base_file_size", BIGINT),
    ("avg_base_file_size", DOUBLE),
    ("latest_instant_time", STRING),
)


class _RecordCounts:
    """Records of the files of a snapshot, from the write stats of the commits that wrote
    them; files no active commit describes (archived) are counted from the files."""

    def __init__(self, table: HudiTable, as_of: str | None):
        self.table = table
        self.as_of = as_of
        self.stats: dict[str, list[WriteStat]] = defaultdict(list)
        #: relative path -> the newest commit that wrote to it
        self.written_by: dict[str, str] = {}
        for instant in table.timeline.completed_writes:
            if as_of is not None and instant.requested_time > as_of:
                continue
            for stat in table.timeline.commit_metadata(instant).write_stats():
                if stat.path:
                    self.stats[stat.path].append(stat)
                    self.written_by[stat.path] = instant.requested_time

    def latest_write(self, slices: list[FileSlice]) -> str | None:
        """The newest commit that wrote a visible file of ``slices``: file names carry the
        commit of base files (and of version-8 logs); version-6 logs are named after their
        base instant, so the commits appending to them come from the write stats."""
        times = set()
        for s in slices:
            files = ([s.base_file] if s.base_file is not None else []) + list(s.log_files)
            for f in files:
                times.add(f.instant_time)
                if f.path in self.written_by:
                    times.add(self.written_by[f.path])
        return max(times) if times else None

    def base_records(self, s: FileSlice) -> int:
        base = s.base_file
        found = self.stats.get(base.path)
        if found:
            return found[-1].num_writes or 0
        with self.table.storage.open(base.path) as handle:
            return pq.ParquetFile(handle).metadata.num_rows

    def log_records(self, s: FileSlice) -> tuple[int, int]:
        """(records, deletes) the committed blocks of a slice's logs carry."""
        if all(log.path in self.stats for log in s.log_files):
            stats = [stat for log in s.log_files for stat in self.stats[log.path]]
            return sum(x.num_writes or 0 for x in stats), sum(x.num_deletes or 0 for x in stats)
        instants = self.table.file_system_view.committed_instants(until=self.as_of)
        records = deletes = 0
        for block in scan_slice_logs(self.table.storage, s.log_files, instants.admits).blocks:
            count = block_record_count(block) or 0
            if block.block_type is BlockType.DELETE_BLOCK:
                deletes += count
            else:
                records += count
        return records, deletes


def partition_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    plan = plan_snapshot(table, args.time, check_files=False)
    counts = _RecordCounts(table, args.time)
    by_partition: dict[str, list[FileSlice]] = defaultdict(list)
    for s in plan.slices:
        by_partition[s.partition_path].append(s)
    for partition in sorted(by_partition):
        slices = by_partition[partition]
        bases = [s.base_file for s in slices if s.base_file is not None]
        logs = [log for s in slices for log in s.log_files]
        base_sizes = [b.size for b in bases]
        log_counts = [counts.log_records(s) for s in slices if s.log_files]
        yield {
            "partition_path": partition,
            "file_groups": len(slices),
            "base_files": len(bases),
            "log_files": len(logs),
            "base_file_bytes": sum(base_sizes),
            "log_file_bytes": sum(max(log.size, 0) for log in logs),
            "total_bytes": sum(s.total_size for s in slices),
            "base_records": sum(counts.base_records(s) for s in slices if s.base_file is not None),
            "log_records": sum(r for r, _ in log_counts),
            "log_deletes": sum(d for _, d in log_counts),
            "min_base_file_size": min(base_sizes) if base_sizes else None,
            "max_base_file_size": max(base_sizes) if base_sizes else None,
            "avg_base_file_size": sum(base_sizes) / len(base_sizes) if base_sizes else None,
            "latest_instant_time": counts.latest_write(slices),
        }


# -- hudi_log_blocks ----------------------------------------------------------------------------

LOG_BLOCKS_SCHEMA = schema(
    ("partition_path", STRING),
    ("file_id", STRING),
    ("base_instant_time", STRING),
    ("log_file", STRING),
    ("log_version", INT),
    ("block_number", INT),
    ("block_offset", BIGINT),
    ("block_size", BIGINT),
    ("block_type", STRING),
    ("instant_time", STRING),
    ("target_instant_time", STRING),
    ("command_type", STRING),
    ("record_count", BIGINT),
    ("content_size", BIGINT),
    ("header", STRING_MAP),
    ("header_keys", STRINGS),
    ("footer", STRING_MAP),
    ("schema_fingerprint", STRING),
    ("is_corrupt", BOOL),
    ("instant_state", STRING),
    ("rolled_back", BOOL),
    ("error", STRING),
)


def list_log_files(table: HudiTable) -> list[LogFile]:
    """Every log file of the table's partitions (change-data-capture logs included), in
    file group then Hudi's log order."""
    out = []
    view = table.file_system_view
    for partition in view.partitions:
        for name, size in view.listing.files(partition):
            if name.startswith("."):
                log = parse_log_file(partition, name, size)
                if log is not None:
                    out.append(log)
    out.sort(key=lambda log: (log.partition_path, log.file_id, log.is_cdc, log.sort_key()))
    return out


def log_files_signature(logs: list[LogFile]) -> list[tuple[str, int]]:
    return [(log.path, log.size) for log in logs]


def _key_name(enum: type, key: int) -> str:
    return enum(key).name if key in enum._value2member_map_ else str(key)


def _command_type(block: LogBlock) -> str | None:
    value = block.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
    if block.block_type is not BlockType.COMMAND_BLOCK or value is None:
        return None
    try:
        return CommandType(int(value)).name
    except ValueError:
        return value


def _block_row(log: LogFile, number: int, block: LogBlock) -> dict[str, Any]:
    count, error = None, None
    try:
        count = block_record_count(block)
    except (CorruptFileError, UnsupportedFeatureError) as exc:
        error = str(exc)
    schema_text = block.schema
    fingerprint = None
    if schema_text:
        try:
            fingerprint = schema_fingerprint(schema_text)
        except Exception as exc:  # a schema that does not parse is worth showing, not failing on
            error = error or f"{log.file_name}@{block.offset}: SCHEMA header is not an Avro schema ({exc})"
    corrupt = block.block_type is BlockType.CORRUPT_BLOCK
    return {
        "partition_path": log.partition_path,
        "file_id": log.file_id,
        "base_instant_time": log.instant_time,
        "log_file": log.file_name,
        "log_version": log.version,
        "block_number": number,
        "block_offset": block.offset,
        "block_size": block.length,
        "block_type": block.block_type.name,
        "instant_time": block.instant_time,
        "target_instant_time": block.target_instant_time,
        "command_type": _command_type(block),
        "record_count": count,
        "content_size": None if corrupt else len(block.content),
        "header": {_key_name(HeaderKey, k): v for k, v in block.header.items() if k != HeaderKey.SCHEMA},
        "header_keys": [_key_name(HeaderKey, k) for k in block.header],
        "footer": {_key_name(FooterKey, k): v for k, v in block.footer.items()},
        "schema_fingerprint": fingerprint,
        "is_corrupt": corrupt,
        "error": error,
    }


def log_block_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    states = {i.requested_time: i.state.value for i in table.timeline.instants}
    group: list[tuple[dict[str, Any], LogBlock]] = []
    for log in list_log_files(table):
        if group and (group[0][0]["partition_path"], group[0][0]["file_id"]) != (log.partition_path, log.file_id):
            yield from _finish_group(group, states)
            group = []
        data = table.storage.read(log.path)
        source = table.storage.uri(log.path)
        try:
            for number, block in enumerate(iter_blocks(data, source)):
                row = _block_row(log, number, block)
                group.append((row, dataclasses.replace(block, content=b"")))
        except CorruptFileError as exc:  # not a log file at all: one row saying so
            group.append((_unreadable_row(log, str(exc)), LogBlock(BlockType.CORRUPT_BLOCK)))
    if group:
        yield from _finish_group(group, states)


def _unreadable_row(log: LogFile, error: str) -> dict[str, Any]:
    return {
        "partition_path": log.partition_path,
        "file_id": log.file_id,
        "base_instant_time": log.instant_time,
        "log_file": log.file_name,
        "log_version": log.version,
        "block_type": BlockType.CORRUPT_BLOCK.name,
        "is_corrupt": True,
        "error": error,
    }


def _finish_group(group: list[tuple[dict[str, Any], LogBlock]], states: dict[str, str]) -> Iterator[dict[str, Any]]:
    """Add what needs the whole file group: the blocks later rollback blocks undo."""
    undone = rolled_back_positions([block for _, block in group])
    for position, (row, _) in enumerate(group):
        row["instant_state"] = states.get(row.get("instant_time"))
        row["rolled_back"] = position in undone
        yield row


VIEWS = (
    View("file_slices", FILE_SLICES_SCHEMA, file_slice_rows, depends_on=FILES, time_arg="as_of"),
    View("partitions", PARTITIONS_SCHEMA, partition_rows, depends_on=FILES, time_arg="as_of"),
    View("log_blocks", LOG_BLOCKS_SCHEMA, log_block_rows, depends_on=LOG_FILES),
)
