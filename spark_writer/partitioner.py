"""Workload profile and file sizing: which records go to which file group.

From per-(partition, file group) counts (the only numbers the driver sees):

* records of an existing file group form an *update bucket* (copy-on-write:
  merge into a new base file; merge-on-read: append to its log);
* inserts first fill *small files* (base files under
  ``hoodie.parquet.small.file.limit``) up to ``hoodie.parquet.max.file.size``,
  then new file groups of ``max file size / average record size`` records;
* the average record size comes from past commits' write stats
  (``hoodie.copyonwrite.record.size.estimate`` until there are any).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hudi_duck.core.services.compaction import busy_file_groups, compaction_file_groups
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.instant import Action

from .config import WriteConfig

CREATE = "create"
MERGE = "merge"
APPEND = "append"


@dataclass
class Bucket:
    bucket_id: int
    kind: str  # create / merge / append
    partition_path: str
    file_id: str | None = None  # None: a new file group (id made by the task)
    base_path: str | None = None
    base_instant: str | None = None
    base_file_name: str | None = None
    num_updates: int = 0
    num_inserts: int = 0
    num_deletes: int = 0


@dataclass
class InsertRange:
    partition_path: str
    low: float
    high: float
    bucket_id: int


@dataclass
class WorkloadPlan:
    buckets: list[Bucket] = field(default_factory=list)
    insert_ranges: list[InsertRange] = field(default_factory=list)

    def add(self, bucket: Bucket) -> Bucket:
        self.buckets.append(bucket)
        return bucket

    @property
    def by_id(self) -> dict[int, Bucket]:
        return {b.bucket_id: b for b in self.buckets}

    def task_of_buckets(self, tasks: int) -> dict[int, int]:
        """Bucket id -> the write task (``0 .. tasks-1``) that writes it: consecutive buckets per
        task, split where the records the plan expects reach each task's share.

        Known on the driver from the counts, so the shuffle to the write tasks needs no
        sampling job (a range partitioning samples its input first: one more Spark job on
        every write)."""
        ordered = sorted(self.buckets, key=lambda b: b.bucket_id)
        weights = [max(1, b.num_updates + b.num_inserts + b.num_deletes) for b in ordered]
        total = sum(weights)
        out: dict[int, int] = {}
        before = 0
        for bucket, weight in zip(ordered, weights):
            # the task whose share holds the middle of the bucket's records
            out[bucket.bucket_id] = min(tasks - 1, (2 * before + weight) * tasks // (2 * total))
            before += weight
        return out


def average_record_size(table: HudiTable | None, cfg: WriteConfig) -> int:
    """Bytes per record of the latest commit that wrote enough data to tell."""
    default = int(cfg["hoodie.copyonwrite.record.size.estimate"])
    if table is None:
        return default
    threshold = int(cfg["hoodie.parquet.small.file.limit"])
    timeline = table.timeline
    for instant in reversed(timeline.completed([Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT])):
        base_stats = [s for s in timeline.commit_metadata(instant).write_stats() if (s.path or "").endswith(".parquet")]
        total_bytes = sum(s.total_write_bytes or 0 for s in base_stats)
        total_records = sum(s.num_writes or 0 for s in base_stats)
        if total_bytes > threshold and total_records > 0:
            return max(1, math.ceil(total_bytes / total_records))
    return default


def small_files(
    table: HudiTable | None, cfg: WriteConfig, partition: str, busy: set[tuple[str, str]] | None = None
) -> list[tuple[str, str, str, int, str]]:
    """(file id, base instant, base path, size, file name) of small base files of a partition.

    Slices with log files are not small files (their size is unknown until
    compaction), nor are file groups under pending compaction or clustering
    (``busy``: pass it when asking for many partitions, it reads the pending plans).
    """
    limit = int(cfg["hoodie.parquet.small.file.limit"])
    if table is None or limit <= 0:
        return []
    view = table.file_system_view
    if partition not in set(view.partitions):
        return []
    if busy is None:
        busy = busy_file_groups(table)
    out = []
    for s in view.latest_slices(partitions=[partition]):
        if s.base_file is None or s.log_files or (s.partition_path, s.file_id) in busy:
            continue
        if s.base_file.size < limit:
            out.append((s.file_id, s.base_instant_time, s.base_file.path, s.base_file.size, s.base_file.file_name))
    return sorted(out, key=lambda t: t[3])


def pending_compaction_slices(table: HudiTable) -> dict[tuple[str, str], str]:
    """(partition, file id) -> time of the pending compaction that owns the file group."""
    return compaction_file_groups(table, log_compaction=False)


def plan_workload(
    table: HudiTable | None,
    cfg: WriteConfig,
    counts: list[tuple[str, str | None, str | None, int, int]],
    is_mor: bool,
    small_file_handling: bool = True,
) -> WorkloadPlan:
    """Buckets from counts of (partition, file id, prev commit, records, deletes)."""
    plan = WorkloadPlan()
    view = table.file_system_view if table is not None else None
    slices = {}
    if view is not None:
        touched = sorted({c[0] for c in counts if c[1] is not None and c[2] is not None})
        for s in view.latest_slices(partitions=[p for p in touched if p in set(view.partitions)]):
            slices[(s.partition_path, s.file_id)] = s
    compacting = pending_compaction_slices(table) if (table is not None and is_mor) else {}
    next_id = 0
    existing: dict[tuple[str, str], Bucket] = {}
    inserts_per_partition: dict[str, int] = {}
    for partition, file_id, prev_commit, records, deletes in counts:
        if file_id is None:
            inserts_per_partition[partition] = inserts_per_partition.get(partition, 0) + records - deletes
            continue
        if prev_commit is None:
            bucket = plan.add(Bucket(next_id, CREATE, partition, file_id, num_inserts=records - deletes))
            next_id += 1
            continue
        s = slices.get((partition, file_id))
        base = s.base_file if s is not None else None
        kind = APPEND if is_mor else MERGE
        if base is None and not is_mor:
            raise RuntimeError(f"file group {partition}/{file_id} has no base file to merge into")
        bucket = plan.add(
            Bucket(
                next_id,
                kind,
                partition,
                file_id,
                base_path=base.path if base else None,
                # a pending compaction opened a new slice: logs written now belong to it
                base_instant=compacting.get((partition, file_id))
                or (s.base_instant_time if s is not None else prev_commit),
                base_file_name=base.file_name if base else None,
                num_updates=records - deletes,
                num_deletes=deletes,
            )
        )
        existing[(partition, file_id)] = bucket
        next_id += 1
    record_size = average_record_size(table, cfg)
    max_size = cfg.file_settings.parquet.max_file_size
    if cfg["hoodie.copyonwrite.insert.auto.split"]:
        per_bucket = max(1, max_size // record_size)
    else:
        per_bucket = max(1, int(cfg["hoodie.copyonwrite.insert.split.size"]))
    busy = busy_file_groups(table) if (table is not None and small_file_handling and inserts_per_partition) else set()
    for partition, total in sorted(inserts_per_partition.items()):
        if total <= 0:
            continue
        remaining = total
        assigned: list[tuple[int, int]] = []
        if small_file_handling:
            for file_id, instant, path, size, name in small_files(table, cfg, partition, busy):
                if remaining <= 0:
                    break
                capacity = max(0, (max_size - size) // record_size)
                if capacity <= 0:
                    continue
                take = min(capacity, remaining)
                bucket = existing.get((partition, file_id))
                if bucket is None:
                    bucket = plan.add(
                        Bucket(next_id, MERGE, partition, file_id, base_path=path, base_instant=instant, base_file_name=name)
                    )
                    next_id += 1
                    existing[(partition, file_id)] = bucket
                elif bucket.kind == APPEND:
                    # small file groups take inserts through a merge, updates included (as Hudi does)
                    bucket.kind = MERGE
                bucket.num_inserts += take
                assigned.append((bucket.bucket_id, take))
                remaining -= take
        while remaining > 0:
            take = min(per_bucket, remaining)
            bucket = plan.add(Bucket(next_id, CREATE, partition, None, num_inserts=take))
            next_id += 1
            assigned.append((bucket.bucket_id, take))
            remaining -= take
        low = 0.0
        for index, (bucket_id, take) in enumerate(assigned):
            high = 1.0 + 1e-9 if index == len(assigned) - 1 else low + take / total
            plan.insert_ranges.append(InsertRange(partition, low, high, bucket_id))
            low = high
    return plan
