"""Plans: what a requested instant will do (``<t>.<action>.requested``).

Typed ``HoodieCompactionPlan``, ``HoodieRequestedReplaceMetadata`` (clustering
plans), ``HoodieCleanerPlan``, ``HoodieRollbackPlan`` and ``HoodieRestorePlan``,
with the records nested in them. Paths are kept as Hudi wrote them (file names in
compaction plans, qualified paths in clustering, clean and rollback plans).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from .record import LIST, MAP_OF_LISTS, HudiRecord, TimelinePayload, hudi

#: ``operationType`` of a requested replace commit that is a clustering plan.
CLUSTER_OPERATION = "CLUSTER"
#: The strategy parameter carrying the sort columns of a clustering plan.
SORT_COLUMNS_PARAM = "hoodie.clustering.plan.strategy.sort.columns"


def _name(path: str | None) -> str | None:
    return posixpath.basename(path) if path else None


# -- shared ------------------------------------------------------------------------------------


class _SliceFiles:
    """The files of one file slice as plans name them (compaction operations, clustering slices)."""

    partition_path: str | None
    data_file_path: str | None
    delta_file_paths: list[str] | None

    @property
    def partition(self) -> str:
        """The partition path ('' for a non-partitioned table)."""
        return self.partition_path or ""

    @property
    def base_file_name(self) -> str | None:
        return _name(self.data_file_path)

    @property
    def log_file_names(self) -> tuple[str, ...]:
        return tuple(posixpath.basename(p) for p in self.delta_file_paths or ())


@dataclass
class InstantInfo(HudiRecord):
    """``HoodieInstantInfo``: an instant a rollback or restore undoes."""

    commit_time: str = hudi("")
    action: str = hudi("")


@dataclass
class ActionInstant(HudiRecord):
    """``HoodieActionInstant``: an instant with its state (the cleaner's earliest retained)."""

    timestamp: str = hudi("")
    action: str = hudi("")
    state: str = hudi("")


# -- compaction ----------------------------------------------------------------------------------


@dataclass
class CompactionOperation(_SliceFiles, HudiRecord):
    """One file slice of a compaction plan (``HoodieCompactionOperation``)."""

    base_instant_time: str | None = hudi(None)
    delta_file_paths: list[str] | None = hudi(None)
    data_file_path: str | None = hudi(None)
    file_id: str | None = hudi(None)
    partition_path: str | None = hudi(None)
    metrics: dict[str, float] | None = hudi(None)
    bootstrap_file_path: str | None = hudi(None)


@dataclass
class CompactionStrategy(HudiRecord):
    compactor_class_name: str | None = hudi(None)
    strategy_params: dict[str, str] | None = hudi(None)
    version: int | None = hudi(1)


@dataclass
class CompactionPlan(TimelinePayload):
    """``HoodieCompactionPlan`` of a compaction or log compaction."""

    MODEL = "HoodieCompactionPlan"

    operations: list[CompactionOperation] | None = hudi(record=CompactionOperation, shape=LIST, factory=list)
    extra_metadata: dict[str, str] | None = hudi(factory=dict)
    version: int | None = hudi(1)
    strategy: CompactionStrategy | None = hudi(None, record=CompactionStrategy)
    preserve_hoodie_metadata: bool | None = hudi(False)

    @property
    def file_groups(self) -> list[tuple[str, str]]:
        """(partition, file id) of every operation."""
        return [(op.partition, op.file_id or "") for op in self.operations or ()]


# -- clustering -------------------------------------------------------------------------------------


@dataclass
class SliceInfo(_SliceFiles, HudiRecord):
    """One input file slice of a clustering group (``HoodieSliceInfo``)."""

    data_file_path: str | None = hudi(None)
    delta_file_paths: list[str] | None = hudi(None)
    file_id: str | None = hudi(None)
    partition_path: str | None = hudi(None)
    bootstrap_file_path: str | None = hudi(None)
    version: int | None = hudi(1)


@dataclass
class ClusteringGroup(HudiRecord):
    """``HoodieClusteringGroup``: slices rewritten together into new file groups."""

    slices: list[SliceInfo] | None = hudi(record=SliceInfo, shape=LIST, factory=list)
    metrics: dict[str, float] | None = hudi(None)
    num_output_file_groups: int | None = hudi(1)
    extra_metadata: dict[str, str] | None = hudi(None)
    version: int | None = hudi(1)


@dataclass
class ClusteringStrategy(HudiRecord):
    strategy_class_name: str | None = hudi(None)
    strategy_params: dict[str, str] | None = hudi(None)
    version: int | None = hudi(1)


@dataclass
class ClusteringPlan(HudiRecord):
    """``HoodieClusteringPlan``: the input groups and how to rewrite them."""

    input_groups: list[ClusteringGroup] | None = hudi(record=ClusteringGroup, shape=LIST, factory=list)
    strategy: ClusteringStrategy | None = hudi(None, record=ClusteringStrategy)
    extra_metadata: dict[str, str] | None = hudi(factory=dict)
    version: int | None = hudi(1)
    preserve_hoodie_metadata: bool | None = hudi(None)

    @property
    def groups(self) -> list[ClusteringGroup]:
        return list(self.input_groups or ())

    @property
    def strategy_params(self) -> dict[str, str]:
        return dict((self.strategy.strategy_params if self.strategy else None) or {})

    @property
    def sort_columns(self) -> list[str]:
        value = self.strategy_params.get(SORT_COLUMNS_PARAM) or ""
        return [c.strip() for c in value.split(",") if c.strip()]

    @property
    def file_groups(self) -> list[tuple[str, str]]:
        """(partition, file id) of every input slice."""
        return [(s.partition, s.file_id or "") for g in self.groups for s in g.slices or ()]


@dataclass
class RequestedReplaceMetadata(TimelinePayload):
    """``HoodieRequestedReplaceMetadata``: a requested replace commit (a clustering plan
    when ``operation_type`` is ``CLUSTER``; insert overwrite writes one without a plan)."""

    MODEL = "HoodieRequestedReplaceMetadata"

    operation_type: str | None = hudi(None)
    clustering_plan: ClusteringPlan | None = hudi(None, record=ClusteringPlan)
    extra_metadata: dict[str, str] | None = hudi(factory=dict)
    version: int | None = hudi(1)

    @property
    def is_clustering(self) -> bool:
        return self.operation_type == CLUSTER_OPERATION and self.clustering_plan is not None


# -- clean -------------------------------------------------------------------------------------------


@dataclass
class CleanFileInfo(HudiRecord):
    file_path: str | None = hudi(None)
    is_bootstrap_base_file: bool | None = hudi(None)


@dataclass
class CleanerPlan(TimelinePayload):
    """``HoodieCleanerPlan``: the files a clean deletes, per partition."""

    MODEL = "HoodieCleanerPlan"

    earliest_instant_to_retain: ActionInstant | None = hudi(None, record=ActionInstant)
    last_completed_commit_timestamp: str | None = hudi("")
    policy: str | None = hudi(None)
    #: deprecated (plans before version 2): file names per partition
    files_to_be_deleted_per_partition: dict[str, list[str]] | None = hudi(None)
    version: int | None = hudi(1)
    file_paths_to_be_deleted_per_partition: dict[str, list[CleanFileInfo]] | None = hudi(
        None, record=CleanFileInfo, shape=MAP_OF_LISTS
    )
    partitions_to_be_deleted: list[str] | None = hudi(None)

    def planned_files(self) -> dict[str, list[str]]:
        """Partition -> paths to delete, from the current field or the deprecated one."""
        out: dict[str, list[str]] = {}
        for partition, infos in (self.file_paths_to_be_deleted_per_partition or {}).items():
            out[partition] = [i.file_path for i in infos or () if i is not None and i.file_path]
        for partition, paths in (self.files_to_be_deleted_per_partition or {}).items():
            if partition not in out:
                out[partition] = list(paths or ())
        for partition in self.partitions_to_be_deleted or ():
            out.setdefault(partition, [])
        return out


# -- rollback and restore -------------------------------------------------------------------------------


@dataclass
class RollbackRequest(HudiRecord):
    """``HoodieRollbackRequest``: what to undo in one file group (files as qualified paths)."""

    partition_path: str = hudi("")
    file_id: str | None = hudi(None)
    latest_base_instant: str | None = hudi(None)
    files_to_be_deleted: list[str] = hudi(factory=list)
    #: log file -> its size when planned (a rollback block is appended to its slice)
    log_blocks_to_be_deleted: dict[str, int] | None = hudi(None)


@dataclass
class RollbackPlan(TimelinePayload):
    """``HoodieRollbackPlan``: the instant to undo and the requests to do it."""

    MODEL = "HoodieRollbackPlan"

    instant_to_rollback: InstantInfo | None = hudi(None, record=InstantInfo)
    rollback_requests: list[RollbackRequest] | None = hudi(
        None, key="RollbackRequests", record=RollbackRequest, shape=LIST
    )
    version: int | None = hudi(1)

    @property
    def requests(self) -> list[RollbackRequest]:
        return list(self.rollback_requests or ())


@dataclass
class RestorePlan(TimelinePayload):
    """``HoodieRestorePlan``: the instants a restore rolls back, newest first."""

    MODEL = "HoodieRestorePlan"

    instants_to_rollback: list[InstantInfo] = hudi(record=InstantInfo, shape=LIST, factory=list)
    version: int | None = hudi(1)


def plan_class_of(action: str) -> type[TimelinePayload] | None:
    """The plan a ``<t>.<action>.requested`` file holds (``None``: empty or no plan)."""
    from .instant import Action

    return {
        Action.COMPACTION: CompactionPlan,
        Action.LOG_COMPACTION: CompactionPlan,
        Action.CLUSTERING: RequestedReplaceMetadata,
        Action.REPLACE_COMMIT: RequestedReplaceMetadata,
        Action.CLEAN: CleanerPlan,
        Action.ROLLBACK: RollbackPlan,
        Action.RESTORE: RestorePlan,
    }.get(action)


__all__: list[Any] = [
    "ActionInstant",
    "CleanFileInfo",
    "CleanerPlan",
    "ClusteringGroup",
    "ClusteringPlan",
    "ClusteringStrategy",
    "CompactionOperation",
    "CompactionPlan",
    "CompactionStrategy",
    "InstantInfo",
    "RequestedReplaceMetadata",
    "RestorePlan",
    "RollbackPlan",
    "RollbackRequest",
    "SliceInfo",
    "plan_class_of",
]
