"""Timeline views: ``hudi_timeline``, ``hudi_commits`` (``commits show``) and
``hudi_commit_files`` (``commit showfiles``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ...core.errors import HudiError
from ...core.table.table import HudiTable
from ...core.timeline.commit_metadata import CommitMetadata
from ...core.timeline.instant import COMPLETED_ACTION, Action, Instant
from . import BIGINT, BOOL, STRING, STRING_MAP, STRINGS, View, ViewArgs, schema

# -- hudi_timeline --------------------------------------------------------------------------

TIMELINE_SCHEMA = schema(
    ("requested_time", STRING),
    ("action", STRING),
    ("state", STRING),
    ("completion_time", STRING),
    ("operation_type", STRING),
    ("file_name", STRING),
)


def timeline_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    timeline = table.timeline
    for instant in timeline.instants:
        operation = None
        if instant.is_completed and instant.action in Action.WRITE_ACTIONS:
            operation = timeline.commit_metadata(instant).operation_type
        yield {
            "requested_time": instant.requested_time,
            "action": instant.action,
            "state": instant.state.value,
            "completion_time": instant.completion_time,
            "operation_type": operation,
            "file_name": instant.file_name(timeline.layout_version),
        }


# -- the write instants, active and archived ----------------------------------------------------


@dataclass(frozen=True)
class WriteInstant:
    instant: Instant
    metadata: CommitMetadata | None  # None while pending
    archived: bool = False


#: Pending actions whose completion is a write (commit / deltacommit / replacecommit).
_PENDING_WRITES = tuple(Action.WRITE_ACTIONS) + tuple(COMPLETED_ACTION)


def write_instants(table: HudiTable, include_archived: bool, completed_only: bool = False) -> list[WriteInstant]:
    """Write instants in requested-time order; archived ones (completed only) on request."""
    timeline = table.timeline
    out = []
    for instant in timeline.instants:
        if instant.is_completed and instant.action in Action.WRITE_ACTIONS:
            out.append(WriteInstant(instant, timeline.commit_metadata(instant)))
        elif not instant.is_completed and not completed_only and instant.action in _PENDING_WRITES:
            out.append(WriteInstant(instant, None))
    if include_archived:
        active = {w.instant.requested_time for w in out} | {i.requested_time for i in timeline.instants}
        layout2 = table.config.timeline_layout_version >= 2
        for instant, metadata in timeline.archived_completed_writes():
            if instant.requested_time in active:
                continue
            # layout 1 keeps no completion times (the archive's stateTransitionTime is a file mtime)
            shown = instant if layout2 else Instant(instant.requested_time, instant.action, instant.state)
            out.append(WriteInstant(shown, metadata, archived=True))
        out.sort(key=lambda w: w.instant.requested_time)
    return out


# -- hudi_commits -----------------------------------------------------------------------------

COMMITS_SCHEMA = schema(
    ("instant_time", STRING),
    ("action", STRING),
    ("state", STRING),
    ("completion_time", STRING),
    ("operation_type", STRING),
    ("archived", BOOL),
    ("partitions_written", BIGINT),
    ("partitions", STRINGS),
    ("files_added", BIGINT),
    ("files_updated", BIGINT),
    ("files_replaced", BIGINT),
    ("log_files_written", BIGINT),
    ("records_written", BIGINT),
    ("records_inserted", BIGINT),
    ("records_updated", BIGINT),
    ("records_deleted", BIGINT),
    ("bytes_written", BIGINT),
    ("write_errors", BIGINT),
    ("log_blocks", BIGINT),
    ("log_records", BIGINT),
    ("corrupt_log_blocks", BIGINT),
    ("rollback_blocks", BIGINT),
    ("log_files_compacted", BIGINT),
    ("updated_records_compacted", BIGINT),
    ("extra_metadata", STRING_MAP),
)

#: Extra metadata keys shown elsewhere (the writer schema has hudi_schema_history).
_HIDDEN_EXTRA = frozenset({"schema"})


def commit_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for write in write_instants(table, args.include_archived):
        instant, meta = write.instant, write.metadata
        row: dict[str, Any] = {
            "instant_time": instant.requested_time,
            "action": instant.action,
            "state": instant.state.value,
            "completion_time": instant.completion_time,
            "archived": write.archived,
        }
        if meta is not None:
            totals = meta.totals()
            row.update(
                operation_type=meta.operation_type,
                partitions_written=totals.partitions_written,
                partitions=sorted(meta.partitions),
                files_added=totals.files_inserted,
                files_updated=totals.files_updated,
                files_replaced=sum(len(ids) for ids in meta.replaced_file_ids().values()),
                log_files_written=totals.log_files_written,
                records_written=totals.records_written,
                records_inserted=totals.records_inserted,
                records_updated=totals.records_updated,
                records_deleted=totals.records_deleted,
                bytes_written=totals.bytes_written,
                write_errors=totals.write_errors,
                log_blocks=totals.log_blocks,
                log_records=totals.log_records,
                corrupt_log_blocks=totals.corrupt_log_blocks,
                rollback_blocks=totals.rollback_blocks,
                log_files_compacted=totals.log_files_compacted,
                updated_records_compacted=totals.updated_records_compacted,
                extra_metadata={k: v for k, v in meta.extra_metadata_items().items() if k not in _HIDDEN_EXTRA},
            )
        yield row


# -- hudi_commit_files ----------------------------------------------------------------------------

COMMIT_FILES_SCHEMA = schema(
    ("instant_time", STRING),
    ("action", STRING),
    ("completion_time", STRING),
    ("operation_type", STRING),
    ("archived", BOOL),
    ("partition_path", STRING),
    ("file_id", STRING),
    ("file_name", STRING),
    ("path", STRING),
    ("file_type", STRING),
    ("prev_commit", STRING),
    ("base_file", STRING),
    ("records_written", BIGINT),
    ("records_inserted", BIGINT),
    ("records_updated", BIGINT),
    ("records_deleted", BIGINT),
    ("bytes_written", BIGINT),
    ("file_size", BIGINT),
    ("write_errors", BIGINT),
    ("log_records", BIGINT),
    ("log_blocks", BIGINT),
    ("corrupt_log_blocks", BIGINT),
    ("rollback_blocks", BIGINT),
    ("log_files_compacted", BIGINT),
    ("log_size_compacted", BIGINT),
    ("updated_records_compacted", BIGINT),
)


def commit_file_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    writes = write_instants(table, args.include_archived, completed_only=True)
    if args.time is not None:
        writes = [w for w in writes if w.instant.requested_time == args.time]
        if not writes:
            where = "timeline" if args.include_archived else "active timeline (include_archived := true also searches the archive)"
            raise HudiError(f"hudi_commit_files: {table.base_uri} has no completed commit at instant {args.time} on the {where}")
    for write in writes:
        instant, meta = write.instant, write.metadata
        for partition, stat in meta.iter_stats():
            yield {
                "instant_time": instant.requested_time,
                "action": instant.action,
                "completion_time": instant.completion_time,
                "operation_type": meta.operation_type,
                "archived": write.archived,
                "partition_path": partition,
                "file_id": stat.file_id,
                "file_name": stat.file_name,
                "path": stat.path,
                "file_type": "log" if stat.is_log_file else "base",
                "prev_commit": stat.previous_commit,
                "base_file": stat.base_file or None,
                "records_written": _n(stat.num_writes),
                "records_inserted": _n(stat.num_inserts),
                "records_updated": _n(stat.num_update_writes),
                "records_deleted": _n(stat.num_deletes),
                "bytes_written": _n(stat.total_write_bytes),
                "file_size": _n(stat.file_size_in_bytes),
                "write_errors": _n(stat.total_write_errors),
                "log_records": _n(stat.total_log_records),
                "log_blocks": _n(stat.total_log_blocks),
                "corrupt_log_blocks": _n(stat.total_corrupt_log_blocks),
                "rollback_blocks": _n(stat.total_rollback_blocks),
                "log_files_compacted": _n(stat.total_log_files_compacted),
                "log_size_compacted": _n(stat.total_log_size_compacted),
                "updated_records_compacted": _n(stat.total_updated_records_compacted),
            }


def _n(value: int | None) -> int:
    """A count Hudi 1.x may leave null (0 as ``fetchTotal*`` counts it)."""
    return int(value) if value is not None else 0


VIEWS = (
    View("timeline", TIMELINE_SCHEMA, timeline_rows),
    View("commits", COMMITS_SCHEMA, commit_rows, archive_arg=True),
    View("commit_files", COMMIT_FILES_SCHEMA, commit_file_rows, time_arg="instant", archive_arg=True),
)
