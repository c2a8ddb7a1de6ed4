"""Functions that run on executors (``mapInArrow``): write files, return write stats.

Rows arrive grouped by bucket (one file group each); every bucket is handed to
a core write handle. Only metadata goes back to the driver: write stats (JSON
strings) and, with the metadata table's ``column_stats``, each file's records.
With its ``record_index``, the keys a file moved in or dropped come out as rows
of the same frame that stay on the executors (:class:`WriteOutput`).
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

from hudi_duck.core.metadata.indexes import WrittenFileIndex
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


#: What write tasks return: a row per file written (its stat, its ``column_stats`` records
#: pickled), and a row per record-index change (key, where it now is, or deleted).
#: A record-index change: the key, where it now is (partition, file id), or that it was deleted.
CHANGE_SCHEMA = T.StructType(
    [
        T.StructField("key", T.StringType(), True),
        T.StructField("partition", T.StringType(), True),
        T.StructField("file_id", T.StringType(), True),
        T.StructField("deleted", T.BooleanType(), True),
    ]
)
WRITE_SCHEMA = T.StructType(
    [T.StructField("stat", T.StringType(), True), T.StructField("index", T.BinaryType(), True)] + CHANGE_SCHEMA.fields
)
_ARROW_WRITE = pa.schema(
    [
        ("stat", pa.string()),
        ("index", pa.binary()),
        ("key", pa.string()),
        ("partition", pa.string()),
        ("file_id", pa.string()),
        ("deleted", pa.bool_()),
    ]
)


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


def _written_batches(stats: list[WriteStat], indexed: list[WrittenFileIndex]) -> Iterator[pa.RecordBatch]:
    """A task's output: its files' stats (with their column stats) and its record-index changes."""
    by_name = {(w.partition_path, w.file_name): w for w in indexed}
    entries = []
    for stat in stats:
        name = stat.path.rsplit("/", 1)[-1] if stat.path else ""
        files = by_name.get((stat.partition_path or "", name))
        records = files.column_stats if files is not None else None
        entries.append((json.dumps(stat.to_json_record()), pickle.dumps(records) if records is not None else None))
    n = len(entries)
    if n:
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([e[0] for e in entries], pa.string()),
                pa.array([e[1] for e in entries], pa.binary()),
                pa.nulls(n, pa.string()),
                pa.nulls(n, pa.string()),
                pa.nulls(n, pa.string()),
                pa.nulls(n, pa.bool_()),
            ],
            schema=_ARROW_WRITE,
        )
    for written in indexed:
        for keys, deleted in ((written.inserted_keys, False), (written.deleted_keys, True)):
            if keys is None or not len(keys):
                continue
            k = len(keys)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.nulls(k, pa.string()),
                    pa.nulls(k, pa.binary()),
                    keys.cast(pa.string()),
                    pa.array([written.partition_path] * k, pa.string()),
                    pa.array([written.file_id] * k, pa.string()),
                    pa.array([deleted] * k, pa.bool_()),
                ],
                schema=_ARROW_WRITE,
            )


@dataclass
class WriteOutput:
    """The driver's view of a write's tasks: the stats and column-stats records collected,
    and the record-index changes as a frame kept on the executors. That frame reads the
    tasks' output as checkpointed once (no lineage back to the write): reading it again
    never runs the write again, it fails if the blocks are gone."""

    stats: list[WriteStat]
    files: list[WrittenFileIndex]
    #: rows of :data:`CHANGE_SCHEMA`; None without a record index
    record_index_changes: Any = None
    #: the columns the tasks kept ``column_stats`` records of (None: no column stats)
    column_stats_columns: tuple[str, ...] | None = None

    def release(self) -> None:
        """Drop the frame: Spark frees its blocks once nothing refers to it."""
        self.record_index_changes = None


def collect_written(
    frame, keep_record_index_changes: bool, column_stats_columns: tuple[str, ...] | None = None
) -> WriteOutput:
    """Run the write of a ``mapInArrow`` frame of :data:`WRITE_SCHEMA`: stats and column
    stats come to the driver, record-index changes stay on the executors."""
    from pyspark.sql import functions as F

    if keep_record_index_changes:
        frame = frame.localCheckpoint(eager=True)
    rows = frame.filter(F.col("stat").isNotNull()).select("stat", "index").collect()
    stats, files = [], []
    for text, payload in rows:
        stat = WriteStat.from_record(json.loads(text))
        stats.append(stat)
        if payload is not None:
            name = stat.path.rsplit("/", 1)[-1]
            files.append(WrittenFileIndex(stat.partition_path or "", stat.file_id or "", name, pickle.loads(payload)))
    changes = None
    if keep_record_index_changes:
        changes = frame.filter(F.col("key").isNotNull()).select(*CHANGE_SCHEMA.fieldNames())
    return WriteOutput(stats, files, changes, column_stats_columns)


def _drop_internal(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in INTERNAL_COLUMNS if c in table.column_names])


def run_bucket(
    ctx: WriteContext, bucket: Bucket, rows: pa.Table, task: TaskInfo, indexed: list[WrittenFileIndex] | None = None
) -> list[WriteStat]:
    records = _drop_internal(rows)
    if bucket.kind == CREATE:
        import pyarrow.compute as pc

        from hudi_duck.core.write.handles import DELETE_FLAG

        if DELETE_FLAG in records.column_names:
            records = records.filter(pc.invert(pc.fill_null(records.column(DELETE_FLAG), False)))
        return create_files(ctx, bucket.partition_path, records, task, file_id=bucket.file_id, indexed=indexed)
    if bucket.kind == MERGE:
        return merge_file(
            ctx, bucket.partition_path, bucket.file_id, bucket.base_path, bucket.base_instant, records, task, indexed=indexed
        )
    if bucket.kind == APPEND:
        return append_log(
            ctx, bucket.partition_path, bucket.file_id, bucket.base_instant, bucket.base_file_name, records, task,
            indexed=indexed,
        )
    raise ValueError(f"unknown bucket kind {bucket.kind}")


def write_buckets_fn(ctx: WriteContext, buckets: dict[int, Bucket]):
    """mapInArrow function: rows sorted by bucket in, rows of :data:`WRITE_SCHEMA` out."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task = task_info()
        current: int | None = None
        pending: list[pa.RecordBatch] = []

        def flush():
            table = pa.Table.from_batches(pending)
            indexed: list[WrittenFileIndex] = []
            stats = run_bucket(ctx, buckets[current], table, task, indexed)
            return list(_written_batches(stats, indexed))

        for batch in batches:
            if batch.num_rows == 0:
                continue
            ids = batch.column(batch.schema.get_field_index(BUCKET)).to_numpy(zero_copy_only=False)
            bounds = [0] + (np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist() + [len(ids)]
            for start, end in zip(bounds, bounds[1:]):
                bucket_id = int(ids[start])
                if current is not None and bucket_id != current:
                    yield from flush()
                    pending = []
                current = bucket_id
                pending.append(batch.slice(start, end - start))
        if current is not None and pending:
            yield from flush()

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
            indexed: list[WrittenFileIndex] = []
            stats = create_files(ctx, partition, _drop_internal(rows), task, indexed=indexed)
            yield from _written_batches(stats, indexed)

    return write
