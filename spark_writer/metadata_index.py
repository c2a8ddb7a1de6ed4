"""The metadata table's ``record_index`` log files of a write or a clustering, written by Spark tasks.

The write (or clustering) tasks keep their record-index changes (key, partition, file id, deleted) as
rows on the executors (``executor.WriteOutput``). Inside the metadata table's delta
commit of the same instant one Spark job tags every change with the record-index file
group its key maps to, brings each file group's changes to one task, and that task
writes the file group's new log file (``write_record_index_log_file``: the same bytes
as the driver would write) and returns its write stat. Only the stats reach the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from hudi_duck.core.metadata.layout import file_group_index
from hudi_duck.core.metadata.writer import LogFileTarget, WrittenIndexes, write_record_index_log_file
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.timeline.commit_metadata import WriteStat

from .executor import CHANGE_SCHEMA, STATS_SCHEMA, WriteOutput, _stats_batch, collect_stats

FILE_GROUP = "_hd_file_group"
_TAGGED = T.StructType(CHANGE_SCHEMA.fields + [T.StructField(FILE_GROUP, T.IntegerType(), False)])


def _tag_fn(count: int):
    """mapInArrow function: each change with the index of the file group its key maps to."""

    def tag(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = batch.column(0).to_pylist()
            groups = pa.array([file_group_index(k, count) for k in keys], pa.int32())
            yield pa.RecordBatch.from_arrays(list(batch.columns) + [groups], names=list(batch.schema.names) + [FILE_GROUP])

    return tag


def _write_fn(mdt_uri: str, storage_options: dict, targets: dict[int, LogFileTarget], instant_time: str):
    """mapInArrow function: changes sorted by file group in, one log file per file group out."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mdt = Storage(mdt_uri, storage_options)
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        changes = pa.concat_tables(tables)
        groups = changes.column(FILE_GROUP).to_pylist()
        bounds = [0] + [i for i in range(1, len(groups)) if groups[i] != groups[i - 1]] + [len(groups)]
        stats: list[WriteStat] = []
        for start, end in zip(bounds, bounds[1:]):
            part = changes.slice(start, end - start)
            stat = write_record_index_log_file(
                mdt,
                targets[groups[start]],
                instant_time,
                part.column("key").to_pylist(),
                part.column("partition").to_pylist(),
                part.column("file_id").to_pylist(),
                part.column("deleted").to_pylist(),
            )
            if stat is not None:
                stats.append(stat)
        if stats:
            yield _stats_batch(stats)

    return write


@dataclass
class SparkRecordIndexWriter:
    """``IndexLogWriter`` of the record index over the changes a write's tasks kept."""

    changes: DataFrame

    def write_log_files(
        self, mdt: Storage, targets: dict[int, LogFileTarget], instant_time: str, deleted_keys: list[str]
    ) -> list[WriteStat]:
        spark = self.changes.sparkSession
        frame = self.changes
        if deleted_keys:
            extra = spark.createDataFrame([(k, None, None, True) for k in deleted_keys], CHANGE_SCHEMA)
            frame = frame.unionByName(extra)
        tagged = frame.mapInArrow(_tag_fn(len(targets)), _TAGGED)
        tasks = max(1, min(len(targets), 2 * spark.sparkContext.defaultParallelism))
        ordered = tagged.repartition(tasks, FILE_GROUP).sortWithinPartitions(FILE_GROUP, "key")
        out = ordered.mapInArrow(_write_fn(mdt.base_uri, dict(mdt.storage_options), targets, instant_time), STATS_SCHEMA)
        return collect_stats(out)


def written_indexes(output: WriteOutput) -> WrittenIndexes:
    """What a write's or a table service's tasks made for the metadata table, as its delta
    commit takes it: the column-stats records collected, the record-index changes left on
    the executors for the record-index job."""
    record_index = SparkRecordIndexWriter(output.record_index_changes) if output.record_index_changes is not None else None
    return WrittenIndexes(output.column_stats_columns, tuple(output.files), record_index)
