"""Table service views: compaction and clustering plans (``compactions show all`` /
``compaction show``), cleans (``cleans show`` / ``clean showpartitions``), rollbacks
(``show rollbacks`` / ``show rollback``) and savepoints (``savepoints show``)."""

from __future__ import annotations

import datetime as _dt
import posixpath
from typing import Any, Iterator

from ...core.services.clean import clean_infos
from ...core.services.rollback import rollback_infos
from ...core.services.savepoint import savepoint_infos
from ...core.table.table import HudiTable
from . import (
    BIGINT,
    BOOL,
    DOUBLE_MAP,
    INT,
    STRING,
    STRING_MAP,
    STRINGS,
    TIMESTAMP_TZ,
    View,
    ViewArgs,
    schema,
)

# -- hudi_compactions --------------------------------------------------------------------------

COMPACTIONS_SCHEMA = schema(
    ("instant_time", STRING),
    ("action", STRING),
    ("state", STRING),
    ("completion_time", STRING),
    ("partition_path", STRING),
    ("file_id", STRING),
    ("base_instant_time", STRING),
    ("base_file", STRING),
    ("log_files", STRINGS),
    ("num_log_files", BIGINT),
    ("metrics", DOUBLE_MAP),
)


def compaction_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for entry in table.timeline.compaction_plans(pending_only=False):
        for op in entry.plan.operations or ():
            yield {
                "instant_time": entry.requested_time,
                "action": entry.action,
                "state": entry.state.value,
                "completion_time": entry.completion_time,
                "partition_path": op.partition,
                "file_id": op.file_id or "",
                "base_instant_time": op.base_instant_time or "",
                "base_file": op.base_file_name,
                "log_files": list(op.log_file_names),
                "num_log_files": len(op.log_file_names),
                "metrics": {k: float(v) for k, v in (op.metrics or {}).items()},
            }


# -- hudi_clustering ----------------------------------------------------------------------------

CLUSTERING_SCHEMA = schema(
    ("instant_time", STRING),
    ("action", STRING),
    ("state", STRING),
    ("completion_time", STRING),
    ("input_group", INT),
    ("partition_path", STRING),
    ("file_id", STRING),
    ("base_file", STRING),
    ("log_files", STRINGS),
    ("num_output_file_groups", INT),
    ("group_metrics", DOUBLE_MAP),
    ("strategy", STRING),
    ("strategy_params", STRING_MAP),
    ("sort_columns", STRINGS),
    ("preserve_hoodie_metadata", BOOL),
)


def clustering_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for entry in table.timeline.clustering_plans(pending_only=False):
        plan = entry.plan
        strategy = plan.strategy.strategy_class_name if plan.strategy else None
        for index, group in enumerate(plan.groups):
            for piece in group.slices or ():
                yield {
                    "instant_time": entry.requested_time,
                    "action": entry.action,
                    "state": entry.state.value,
                    "completion_time": entry.completion_time,
                    "input_group": index,
                    "partition_path": piece.partition,
                    "file_id": piece.file_id or "",
                    "base_file": piece.base_file_name,
                    "log_files": list(piece.log_file_names),
                    "num_output_file_groups": int(group.num_output_file_groups or 1),
                    "group_metrics": {k: float(v) for k, v in (group.metrics or {}).items()},
                    "strategy": strategy,
                    "strategy_params": plan.strategy_params,
                    "sort_columns": plan.sort_columns,
                    "preserve_hoodie_metadata": plan.preserve_hoodie_metadata,
                }


# -- hudi_cleans / hudi_clean_partitions -------------------------------------------------------------

CLEANS_SCHEMA = schema(
    ("instant_time", STRING),
    ("state", STRING),
    ("completion_time", STRING),
    ("policy", STRING),
    ("earliest_commit_to_retain", STRING),
    ("last_completed_commit", STRING),
    ("partitions", BIGINT),
    ("files_to_delete", BIGINT),
    ("files_deleted", BIGINT),
    ("failed_deletes", BIGINT),
    ("time_taken_ms", BIGINT),
)


def clean_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for clean in clean_infos(table.timeline):
        done = clean.total_files_deleted is not None
        yield {
            "instant_time": clean.instant_time,
            "state": clean.state.value,
            "completion_time": clean.completion_time,
            "policy": clean.policy,
            "earliest_commit_to_retain": clean.earliest_commit_to_retain,
            "last_completed_commit": clean.last_completed_commit,
            "partitions": len(clean.partitions),
            "files_to_delete": sum(len(p.files_to_delete) for p in clean.partitions),
            "files_deleted": clean.total_files_deleted,
            "failed_deletes": sum(len(p.failed_files or ()) for p in clean.partitions) if done else None,
            "time_taken_ms": clean.time_taken_ms,
        }


CLEAN_PARTITIONS_SCHEMA = schema(
    ("instant_time", STRING),
    ("state", STRING),
    ("partition_path", STRING),
    ("policy", STRING),
    ("files_to_delete", STRINGS),
    ("deleted_files", STRINGS),
    ("failed_files", STRINGS),
    ("num_deleted", BIGINT),
    ("num_failed", BIGINT),
    ("partition_deleted", BOOL),
)


def clean_partition_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for clean in clean_infos(table.timeline):
        for p in clean.partitions:
            yield {
                "instant_time": clean.instant_time,
                "state": clean.state.value,
                "partition_path": p.partition_path,
                "policy": p.policy,
                "files_to_delete": list(p.files_to_delete),
                "deleted_files": None if p.deleted_files is None else list(p.deleted_files),
                "failed_files": None if p.failed_files is None else list(p.failed_files),
                "num_deleted": None if p.deleted_files is None else len(p.deleted_files),
                "num_failed": None if p.failed_files is None else len(p.failed_files),
                "partition_deleted": p.partition_deleted,
            }


# -- hudi_rollbacks / hudi_rollback_files ---------------------------------------------------------------

ROLLBACKS_SCHEMA = schema(
    ("instant_time", STRING),
    ("state", STRING),
    ("completion_time", STRING),
    ("rolled_back_instant", STRING),
    ("rolled_back_action", STRING),
    ("rolled_back_instants", STRINGS),
    ("partitions", BIGINT),
    ("files_deleted", BIGINT),
    ("failed_deletes", BIGINT),
    ("rollback_log_files", BIGINT),
    ("time_taken_ms", BIGINT),
)


def rollback_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for rollback in rollback_infos(table.timeline):
        done = rollback.total_files_deleted is not None
        kinds = [f.kind for f in rollback.files]
        yield {
            "instant_time": rollback.instant_time,
            "state": rollback.state.value,
            "completion_time": rollback.completion_time,
            "rolled_back_instant": rollback.rolled_back_instants[0] if rollback.rolled_back_instants else None,
            "rolled_back_action": rollback.rolled_back_action,
            "rolled_back_instants": list(rollback.rolled_back_instants),
            "partitions": len(rollback.partitions),
            "files_deleted": rollback.total_files_deleted,
            "failed_deletes": kinds.count("delete_failed") if done else None,
            "rollback_log_files": kinds.count("rollback_log") if done else None,
            "time_taken_ms": rollback.time_taken_ms,
        }


ROLLBACK_FILES_SCHEMA = schema(
    ("instant_time", STRING),
    ("state", STRING),
    ("rolled_back_instant", STRING),
    ("partition_path", STRING),
    ("file_name", STRING),
    ("path", STRING),
    ("kind", STRING),
    ("size", BIGINT),
    ("succeeded", BOOL),
)

_SUCCEEDED = {"deleted": True, "delete_failed": False, "rollback_log": True, "failed_commit_log": True}


def rollback_file_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for rollback in rollback_infos(table.timeline):
        target = rollback.rolled_back_instants[0] if rollback.rolled_back_instants else None
        for f in rollback.files:
            yield {
                "instant_time": rollback.instant_time,
                "state": rollback.state.value,
                "rolled_back_instant": target,
                "partition_path": f.partition_path,
                "file_name": f.file_name,
                "path": f.path,
                "kind": f.kind,
                "size": f.size,
                "succeeded": _SUCCEEDED.get(f.kind),
            }


# -- hudi_savepoints -----------------------------------------------------------------------------

SAVEPOINTS_SCHEMA = schema(
    ("instant_time", STRING),
    ("state", STRING),
    ("completion_time", STRING),
    ("savepointed_by", STRING),
    ("savepointed_at", TIMESTAMP_TZ),
    ("comments", STRING),
    ("partitions", BIGINT),
    ("files", BIGINT),
    ("partition_paths", STRINGS),
    ("data_files", STRINGS),
)


def savepoint_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    for sp in savepoint_infos(table.timeline):
        at = None
        if sp.savepointed_at is not None:
            at = _dt.datetime.fromtimestamp(sp.savepointed_at, _dt.timezone.utc)
        files = [posixpath.join(p, name) if p else name for p, names in sp.files.items() for name in names]
        yield {
            "instant_time": sp.instant_time,
            "state": sp.state.value,
            "completion_time": sp.completion_time,
            "savepointed_by": sp.savepointed_by,
            "savepointed_at": at,
            "comments": sp.comments,
            "partitions": len(sp.files),
            "files": len(files),
            "partition_paths": list(sp.files),
            "data_files": files,
        }


VIEWS = (
    View("compactions", COMPACTIONS_SCHEMA, compaction_rows),
    View("clustering", CLUSTERING_SCHEMA, clustering_rows),
    View("cleans", CLEANS_SCHEMA, clean_rows),
    View("clean_partitions", CLEAN_PARTITIONS_SCHEMA, clean_partition_rows),
    View("rollbacks", ROLLBACKS_SCHEMA, rollback_rows),
    View("rollback_files", ROLLBACK_FILES_SCHEMA, rollback_file_rows),
    View("savepoints", SAVEPOINTS_SCHEMA, savepoint_rows),
)
