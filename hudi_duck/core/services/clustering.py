"""Clustering: rewriting small file groups into fewer, larger (optionally sorted) ones.

Planning (size-based, as Hudi's default strategy) groups the latest slices
smaller than ``hoodie.clustering.plan.strategy.small.file.limit`` per
partition, up to ``max.bytes.per.group``; the plan is a
``HoodieRequestedReplaceMetadata`` with ``operationType=CLUSTER`` in
``<t>.replacecommit.requested`` (table version 6). Execution reads each
group's slices with the readers' merge code, sorts by
``hoodie.clustering.plan.strategy.sort.columns`` and writes new file groups
keeping every record's commit time; the ``replacecommit`` then replaces the
input file groups. Until it completes, readers keep reading the inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..avro import models as avro_models
from ..errors import HudiError
from ..file_group.file_slice import FileSlice
from ..file_group.reader import SliceReadContext, read_slice
from ..table.read_plan import committed_before
from ..table.table import HudiTable
from ..timeline.commit_metadata import CommitMetadata
from ..timeline.instant import Action, Instant, State
from ..write.handles import TaskInfo, WriteContext, create_files
from ..write.markers import delete_markers, list_markers
from .compaction import busy_file_groups, slice_metrics

SIZE_BASED_STRATEGY = "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy"
EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"


@dataclass
class ClusteringSettings:
    small_file_limit: int = 314572800
    target_file_max_bytes: int = 1073741824
    max_bytes_per_group: int = 2147483648
    max_num_groups: int = 30
    sort_columns: list[str] | None = None


def _slice_size(s: FileSlice) -> int:
    return (s.base_file.size if s.base_file else 0) + sum(max(log.size, 0) for log in s.log_files)


def _qualified(storage, rel: str) -> str:
    """A data file's path as Hudi puts it in a plan (the listed, qualified path: ``file:/...`` locally)."""
    uri = storage.uri(rel)
    return "file:" + uri if storage.is_local and uri.startswith("/") else uri


def _slice_info(storage, s: FileSlice) -> dict[str, Any]:
    """``ClusteringPlanStrategy.getFileSliceInfo``: full paths, '' for a missing base file."""
    return {
        "dataFilePath": _qualified(storage, s.base_file.path) if s.base_file else "",
        "deltaFilePaths": [_qualified(storage, log.path) for log in s.sorted_logs()],
        "fileId": s.file_id,
        "partitionPath": s.partition_path,
        "bootstrapFilePath": "",
        "version": 1,
    }


def plan_clustering(table: HudiTable, settings: ClusteringSettings) -> dict[str, Any] | None:
    busy = busy_file_groups(table)
    by_partition: dict[str, list[FileSlice]] = {}
    for s in table.file_system_view.latest_slices():
        if (s.partition_path, s.file_id) in busy or _slice_size(s) >= settings.small_file_limit:
            continue
        by_partition.setdefault(s.partition_path, []).append(s)
    groups = []
    for partition in sorted(by_partition):
        slices = sorted(by_partition[partition], key=_slice_size, reverse=True)
        current: list[FileSlice] = []
        size = 0
        for s in slices:
            if current and size + _slice_size(s) > settings.max_bytes_per_group:
                groups.append((current, size))
                current, size = [], 0
            current.append(s)
            size += _slice_size(s)
        if current:
            groups.append((current, size))
    groups = [(g, size) for g, size in groups if len(g) > 1 or settings.sort_columns]
    groups = groups[: settings.max_num_groups]
    if not groups:
        return None
    input_groups = []
    for members, size in groups:
        input_groups.append(
            {
                "slices": [_slice_info(table.storage, s) for s in members],
                "metrics": slice_metrics(members),
                "numOutputFileGroups": max(1, math.ceil(size / settings.target_file_max_bytes)),
                "extraMetadata": None,
                "version": 1,
            }
        )
    # as ClusteringPlanStrategy.getStrategyParams: only the sort columns travel in the plan
    params: dict[str, str] = {}
    if settings.sort_columns:
        params["hoodie.clustering.plan.strategy.sort.columns"] = ",".join(settings.sort_columns)
    return {
        "operationType": "CLUSTER",
        "clusteringPlan": {
            "inputGroups": input_groups,
            "strategy": {"strategyClassName": EXECUTION_STRATEGY, "strategyParams": params, "version": 1},
            "extraMetadata": {},
            "version": 1,
            "preserveHoodieMetadata": True,
        },
        "extraMetadata": {},
        "version": 1,
    }


def schedule_clustering(table: HudiTable, settings: ClusteringSettings, instant_time: str) -> Instant | None:
    plan = plan_clustering(table, settings)
    if plan is None:
        return None
    return table.timeline.create_requested(
        instant_time, Action.REPLACE_COMMIT, avro_models.write_container("HoodieRequestedReplaceMetadata", plan)
    )


def _slices_of_group(table: HudiTable, group: dict[str, Any]) -> list[FileSlice]:
    wanted = {(s["partitionPath"] or "", s["fileId"]) for s in group.get("slices") or []}
    partitions = sorted({p for p, _ in wanted})
    slices = table.file_system_view.latest_slices(partitions=partitions)
    return [s for s in slices if (s.partition_path, s.file_id) in wanted]


def cluster_group(
    table: HudiTable, ctx: WriteContext, group: dict[str, Any], task: TaskInfo, clustering_time: str, sort_columns: list[str] | None
) -> list[dict[str, Any]]:
    """Rewrite one input group into new file groups; returns write stats. Runs on executors."""
    read_ctx = SliceReadContext.for_table(table, committed_before(table, clustering_time))
    slices = _slices_of_group(table, group)
    if not slices:
        return []
    partition = slices[0].partition_path
    tables = [read_slice(read_ctx, s) for s in slices]
    data = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if sort_columns:
        data = data.sort_by([(c, "ascending") for c in sort_columns])
    stats = create_files(ctx, partition, data, task, preserve_meta=True)
    return stats


def start_clustering(table: HudiTable, instant_time: str) -> Instant:
    timeline = table.timeline
    group = timeline.group(instant_time)
    if group is None or group.latest.is_completed:
        raise HudiError(f"{table.base_uri}: no pending clustering at {instant_time}")
    if State.INFLIGHT in group.by_state:
        for marker in list_markers(table.storage, instant_time):
            table.storage.delete(marker.data_path)
        delete_markers(table.storage, instant_time)
        timeline.delete_instant(instant_time, [State.INFLIGHT])
    return timeline.transition_to_inflight(timeline.state_file(instant_time, State.REQUESTED), b"")


def commit_clustering(
    table: HudiTable, inflight: Instant, plan: dict[str, Any], stats: list[dict[str, Any]], schema: str
) -> Instant:
    replaced: dict[str, list[str]] = {}
    for group in plan["clusteringPlan"]["inputGroups"]:
        for piece in group.get("slices") or []:
            replaced.setdefault(piece.get("partitionPath") or "", []).append(piece["fileId"])
    partitions: dict[str, list[dict[str, Any]]] = {}
    for stat in stats:
        partitions.setdefault(stat.get("partitionPath") or "", []).append(stat)
    metadata = CommitMetadata(
        partition_to_write_stats=dict(sorted(partitions.items())),
        compacted=False,
        extra_metadata={"schema": schema},
        operation_type="CLUSTER",
        partition_to_replace_file_ids=dict(sorted(replaced.items())),
    )
    done = table.timeline.complete(inflight, metadata.to_json_bytes())
    delete_markers(table.storage, inflight.requested_time)
    return done


# -- reading plans (pending and completed) ------------------------------------------------

#: The strategy parameter carrying the sort columns of a clustering plan.
SORT_COLUMNS_PARAM = "hoodie.clustering.plan.strategy.sort.columns"


def _name(path: str | None) -> str | None:
    return path.rsplit("/", 1)[-1] if path else None


@dataclass(frozen=True)
class ClusteringSlice:
    """One input file slice of a clustering group (``HoodieSliceInfo``), files by name."""

    partition_path: str
    file_id: str
    base_file: str | None
    log_files: tuple[str, ...]


@dataclass(frozen=True)
class ClusteringGroup:
    slices: tuple[ClusteringSlice, ...]
    metrics: dict[str, float]
    num_output_file_groups: int


@dataclass(frozen=True)
class ClusteringPlan:
    """A clustering instant with its ``HoodieClusteringPlan`` and where it stands."""

    instant_time: str
    action: str  # the requested action: clustering (layout 2) or replacecommit (layout 1)
    state: State
    completion_time: str | None
    groups: tuple[ClusteringGroup, ...]
    strategy: str | None
    strategy_params: dict[str, str]
    preserve_hoodie_metadata: bool | None

    @property
    def sort_columns(self) -> list[str]:
        value = self.strategy_params.get(SORT_COLUMNS_PARAM) or ""
        return [c.strip() for c in value.split(",") if c.strip()]

    @classmethod
    def from_avro(cls, instant_time: str, action: str, latest: Instant, raw: dict[str, Any]) -> "ClusteringPlan":
        plan = raw.get("clusteringPlan") or {}
        strategy = plan.get("strategy") or {}
        groups = []
        for group in plan.get("inputGroups") or ():
            slices = tuple(
                ClusteringSlice(
                    partition_path=s.get("partitionPath") or "",
                    file_id=s.get("fileId") or "",
                    base_file=_name(s.get("dataFilePath")),
                    log_files=tuple(_name(p) for p in s.get("deltaFilePaths") or ()),
                )
                for s in group.get("slices") or ()
            )
            metrics = {k: float(v) for k, v in (group.get("metrics") or {}).items()}
            groups.append(ClusteringGroup(slices, metrics, int(group.get("numOutputFileGroups") or 1)))
        return cls(
            instant_time=instant_time,
            action=action,
            state=latest.state,
            completion_time=latest.completion_time if latest.is_completed else None,
            groups=tuple(groups),
            strategy=strategy.get("strategyClassName"),
            strategy_params=dict(strategy.get("strategyParams") or {}),
            preserve_hoodie_metadata=plan.get("preserveHoodieMetadata"),
        )


def clustering_plans(timeline) -> list[ClusteringPlan]:
    """Every clustering on the active timeline whose plan is still there, oldest first.

    Layout 2 names clustering ``clustering`` until it completes; layout 1 writes a
    pending ``replacecommit`` whose requested file holds ``operationType=CLUSTER``
    (insert overwrite writes other or no content there).
    """
    out = []
    for group in timeline.instant_groups():
        requested = group.by_state.get(State.REQUESTED)
        if requested is None or requested.action not in (Action.CLUSTERING, Action.REPLACE_COMMIT):
            continue
        raw = timeline.avro_details(group.requested_time, State.REQUESTED)
        if not raw or (requested.action == Action.REPLACE_COMMIT and raw.get("operationType") != "CLUSTER"):
            continue
        out.append(ClusteringPlan.from_avro(group.requested_time, requested.action, group.latest, raw))
    return out
