"""Functions that run on executors (``mapInArrow``): write files, return write stats.

Rows arrive grouped by bucket (one file group each); every bucket is handed to
a core write handle. Only write stats (JSON strings) go back to the driver.
"""

from __future__ import annotations

import json
from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

from hudi_duck.core.schema.meta_fields import PARTITION_PATH
from hudi_duck.core.timeline.commit_metadata import WriteStat
from hudi_duck.core.write.handles import (
    TaskInfo,
    WriteContext,
    append_log,
    create_files,
    merge_file,
)

from .partitioner import APPEND, CREATE, MERGE, Bucket

BUCKET = "_hd_bucket"
STATS_SCHEMA = T.StructType([T.StructField("stat", T.StringType(), False)])
_ARROW_STATS = pa.schema([("stat", pa.string(), False)])
#: Columns the pipeline adds that never reach a data file.
INTERNAL_COLUMNS = (BUCKET, "_hd_file_id", "_hd_prev_commit", "_hd_r")


def task_info() -> TaskInfo:
    from pyspark import TaskContext

    task = TaskContext.get()
    if task is None:
        return TaskInfo()
    return TaskInfo(task.partitionId(), task.stageId(), task.taskAttemptId())


def _stats_batch(stats: list[WriteStat]) -> pa.RecordBatch:
    """Write stats as the rows executors send to the driver (one JSON record each)."""
    rows = [json.dumps(s.to_json_record()) for s in stats]
    return pa.RecordBatch.from_arrays([pa.array(rows, pa.string())], schema=_ARROW_STATS)


def collect_stats(frame) -> list[WriteStat]:
    """The write stats of a ``mapInArrow`` frame of :data:`STATS_SCHEMA`, on the driver."""
    return [WriteStat.from_record(json.loads(r[0])) for r in frame.collect()]


def _drop_internal(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in INTERNAL_COLUMNS if c in table.column_names])


def run_bucket(ctx: WriteContext, bucket: Bucket, rows: pa.Table, task: TaskInfo) -> list[WriteStat]:
    records = _drop_internal(rows)
    if bucket.kind == CREATE:
        import pyarrow.compute as pc

        from hudi_duck.core.write.handles import DELETE_FLAG

        if DELETE_FLAG in records.column_names:
            records = records.filter(pc.invert(pc.fill_null(records.column(DELETE_FLAG), False)))
        return create_files(ctx, bucket.partition_path, records, task, file_id=bucket.file_id)
    if bucket.kind == MERGE:
        return merge_file(ctx, bucket.partition_path, bucket.file_id, bucket.base_path, bucket.base_instant, records, task)
    if bucket.kind == APPEND:
        return append_log(ctx, bucket.partition_path, bucket.file_id, bucket.base_instant, bucket.base_file_name, records, task)
    raise ValueError(f"unknown bucket kind {bucket.kind}")


def write_buckets_fn(ctx: WriteContext, buckets: dict[int, Bucket]):
    """mapInArrow function: rows sorted by bucket in, write stats out."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task = task_info()
        current: int | None = None
        pending: list[pa.RecordBatch] = []

        def flush():
            table = pa.Table.from_batches(pending)
            stats = run_bucket(ctx, buckets[current], table, task)
            return _stats_batch(stats)

        for batch in batches:
            if batch.num_rows == 0:
                continue
            ids = batch.column(batch.schema.get_field_index(BUCKET)).to_numpy(zero_copy_only=False)
            bounds = [0] + (np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist() + [len(ids)]
            for start, end in zip(bounds, bounds[1:]):
                bucket_id = int(ids[start])
                if current is not None and bucket_id != current:
                    yield flush()
                    pending = []
                current = bucket_id
                pending.append(batch.slice(start, end - start))
        if current is not None and pending:
            yield flush()

    return write


def bulk_insert_fn(ctx: WriteContext, make_keys=None):
    """mapInArrow function for bulk_insert: each task writes its rows per partition path.

    With ``make_keys`` (a ``prepare.key_assigner_factory``) the task also derives
    the record keys itself, so the rows cross from the JVM to Python only once.
    """

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        task = task_info()
        assign = make_keys() if make_keys is not None else None
        kept = []
        for b in batches:
            if b.num_rows:
                kept.append(assign(b) if assign is not None else b)
        if not kept:
            return
        table = pa.Table.from_batches(kept)
        partitions = table.column(PARTITION_PATH)
        for partition in pc.unique(partitions).to_pylist():
            rows = table.filter(pc.equal(partitions, partition))
            stats = create_files(ctx, partition, _drop_internal(rows), task)
            yield _stats_batch(stats)

    return write
