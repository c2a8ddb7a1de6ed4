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
from typing import Callable, Iterable

import pyarrow as pa

from ..config.write_settings import FileSettings
from ..errors import HudiError
from ..file_group.file_slice import FileSlice
from ..file_group.reader import SliceReadContext, read_slice
from ..table.read_plan import committed_before
from ..table.table import HudiTable
from ..timeline.commit_metadata import CommitMetadata, WriteStat
from ..timeline.instant import Action, Instant
from ..timeline.plans import (
    CLUSTER_OPERATION,
    SORT_COLUMNS_PARAM,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
)
from ..timeline.transaction import CommitParticipant, Transaction
from ..concurrency.control import WriteConcurrency
from ..metadata.indexes import WrittenFileIndex
from ..write.handles import TaskInfo, WriteContext, create_files
from .compaction import TasksOutput, busy_file_groups, hand_over, service_context, slice_metrics

SIZE_BASED_STRATEGY = "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy"
EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
#: A strategy parameter that sets the size of the files clustering writes.
TARGET_FILE_MAX_BYTES_PARAM = "hoodie.clustering.plan.strategy.target.file.max.bytes"


@dataclass(frozen=True)
class ClusteringSettings:
    """``hoodie.clustering.plan.strategy.*``: which file groups a plan takes and how it rewrites them."""

    small_file_limit: int = 314572800
    target_file_max_bytes: int = 1073741824
    max_bytes_per_group: int = 2147483648
    max_num_groups: int = 30
    sort_columns: tuple[str, ...] | None = None


def _slice_size(s: FileSlice) -> int:
    return (s.base_file.size if s.base_file else 0) + sum(max(log.size, 0) for log in s.log_files)


def _qualified(storage, rel: str) -> str:
    """A data file's path as Hudi puts it in a plan (the listed, qualified path: ``file:/...`` locally)."""
    uri = storage.uri(rel)
    return "file:" + uri if storage.is_local and uri.startswith("/") else uri


def _slice_info(storage, s: FileSlice) -> SliceInfo:
    """``ClusteringPlanStrategy.getFileSliceInfo``: full paths, '' for a missing base file."""
    return SliceInfo(
        data_file_path=_qualified(storage, s.base_file.path) if s.base_file else "",
        delta_file_paths=[_qualified(storage, log.path) for log in s.sorted_logs()],
        file_id=s.file_id,
        partition_path=s.partition_path,
        bootstrap_file_path="",
        version=1,
    )


def plan_clustering(table: HudiTable, settings: ClusteringSettings) -> RequestedReplaceMetadata | None:
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
    input_groups = [
        ClusteringGroup(
            slices=[_slice_info(table.storage, s) for s in members],
            metrics=slice_metrics(members),
            num_output_file_groups=max(1, math.ceil(size / settings.target_file_max_bytes)),
            extra_metadata=None,
            version=1,
        )
        for members, size in groups
    ]
    # as ClusteringPlanStrategy.getStrategyParams: only the sort columns travel in the plan
    params: dict[str, str] = {}
    if settings.sort_columns:
        params[SORT_COLUMNS_PARAM] = ",".join(settings.sort_columns)
    return RequestedReplaceMetadata(
        operation_type=CLUSTER_OPERATION,
        clustering_plan=ClusteringPlan(
            input_groups=input_groups,
            strategy=ClusteringStrategy(strategy_class_name=EXECUTION_STRATEGY, strategy_params=params, version=1),
            extra_metadata={},
            version=1,
            preserve_hoodie_metadata=True,
        ),
        extra_metadata={},
        version=1,
    )


def schedule_clustering(table: HudiTable, settings: ClusteringSettings, instant_time: str) -> Instant | None:
    plan = plan_clustering(table, settings)
    if plan is None:
        return None
    return Transaction.schedule(table.timeline, Action.REPLACE_COMMIT, plan, instant_time)


def clusterings_to_run(table: HudiTable, settings: ClusteringSettings) -> list[str]:
    """The clusterings a clustering job runs: every pending one, else one scheduled now
    (none if no file groups qualify)."""
    pending = [i.requested_time for i in table.timeline.pending_clustering()]
    if pending:
        return pending
    scheduled = schedule_clustering(table, settings, table.timeline.next_instant_time())
    return [scheduled.requested_time] if scheduled is not None else []


def commits_since_last_clustering(table: HudiTable) -> int:
    """Completed commits after the latest completed replace commit (the inline trigger counts them)."""
    timeline = table.timeline
    replaces = timeline.completed([Action.REPLACE_COMMIT])
    last = replaces[-1].requested_time if replaces else None
    return sum(1 for c in timeline.completed(Action.WRITE_ACTIONS) if last is None or c.requested_time > last)


def read_plan(table: HudiTable, instant_time: str) -> ClusteringPlan:
    """The clustering plan of a requested replace commit (an error if it holds none)."""
    content = table.timeline.plan(instant_time)
    if not isinstance(content, RequestedReplaceMetadata) or not content.is_clustering:
        raise HudiError(f"{table.base_uri}: {instant_time} is not a clustering plan")
    return content.clustering_plan


def _slices_of_group(table: HudiTable, group: ClusteringGroup) -> list[FileSlice]:
    wanted = {(s.partition, s.file_id) for s in group.slices or ()}
    partitions = sorted({p for p, _ in wanted})
    slices = table.file_system_view.latest_slices(partitions=partitions)
    return [s for s in slices if (s.partition_path, s.file_id) in wanted]


def cluster_group(
    table: HudiTable,
    ctx: WriteContext,
    group: ClusteringGroup,
    task: TaskInfo,
    clustering_time: str,
    sort_columns: list[str] | None,
    indexed: list[WrittenFileIndex] | None = None,
) -> list[WriteStat]:
    """Rewrite one input group into new file groups; returns write stats. Runs on executors.
    ``indexed``: gets each new file's index records (every key it holds moved in)."""
    read_ctx = SliceReadContext.for_table(table, committed_before(table, clustering_time))
    slices = _slices_of_group(table, group)
    if not slices:
        return []
    partition = slices[0].partition_path
    tables = [read_slice(read_ctx, s) for s in slices]
    data = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if sort_columns:
        data = data.sort_by([(c, "ascending") for c in sort_columns])
    return create_files(ctx, partition, data, task, preserve_meta=True, indexed=indexed)


#: Rewrites clustering groups (on an engine's workers) and returns their write stats
#: (with the index records they made, if the engine collects them).
GroupRunner = Callable[[list[ClusteringGroup], WriteContext, "list[str] | None"], "list[WriteStat] | TasksOutput"]


def run_clustering(
    table: HudiTable,
    instant_time: str,
    settings: ClusteringSettings,
    files: FileSettings,
    run_groups: GroupRunner,
    participants: Iterable[CommitParticipant] = (),
    concurrency: WriteConcurrency | None = None,
) -> Instant:
    """Execute a scheduled clustering: inflight, rewrite every group, commit a replace commit
    replacing the input file groups. A failure rolls the attempt back (the plan stays).
    Another process's live run of it is refused; with ``concurrency`` this run keeps a
    heartbeat and, under optimistic concurrency control, commits under the table lock
    after the conflict check (a write it did not read in its file groups wins).

    New base files are written with ``files`` (the writes' parquet settings), sized by the
    plan's target file size, else ``settings``'."""
    plan = read_plan(table, instant_time)
    with Transaction.resume(table.timeline, instant_time, participants, concurrency) as txn:
        txn.begin()
        target = int(plan.strategy_params.get(TARGET_FILE_MAX_BYTES_PARAM, settings.target_file_max_bytes))
        context = service_context(txn, table, files, moves_keys=True).with_max_file_size(target)
        stats = hand_over(txn, run_groups(plan.groups, context, plan.sort_columns or None))
        replaced: dict[str, list[str]] = {}
        for partition, file_id in plan.file_groups:
            replaced.setdefault(partition, []).append(file_id)
        metadata = CommitMetadata.of(
            stats,
            compacted=False,
            extra_metadata={"schema": table.avro_schema},
            operation_type="CLUSTER",
            partition_to_replace_file_ids=dict(sorted(replaced.items())),
        )
        return txn.commit(metadata)
