"""Table services on Spark: compaction, clustering, cleaning, archival, savepoints,
restore and rollback — inline after a write or as standalone jobs.

Everything but the distribution of work is the core's: plans, triggers, the
instant's lifecycle, rollback preconditions. Spark runs the heavy part of a
compaction (merging file slices) and of a clustering (rewriting file groups) on
executors; their tasks make the metadata table's index records as a write's do
(column stats from the footers they wrote; a clustering's record-index changes
stay on the executors for the delta commit's record-index job).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Iterator, Mapping

import pyarrow as pa

from hudi_duck.core.concurrency.control import WriteConcurrency
from hudi_duck.core.metadata.indexes import WrittenFileIndex
from hudi_duck.core.services import archival, clean, clustering, compaction, inline
from hudi_duck.core.services import rollback as rollbacks
from hudi_duck.core.services import savepoint as savepoints
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.plans import ClusteringGroup, CompactionOperation
from hudi_duck.core.write.handles import WriteContext

from . import preflight
from .config import WriteConfig, parse_options
from .executor import WRITE_SCHEMA, WriteOutput, _written_batches, collect_written, task_info
from .metadata_index import written_indexes

log = logging.getLogger("spark_writer")


def _config(table: HudiTable, options: Mapping[str, Any] | None) -> WriteConfig:
    merged = {"hoodie.table.name": table.config.name}
    merged.update({k: v for k, v in (options or {}).items()})
    return parse_options(merged, for_write=False)


class SparkServiceEngine:
    """Runs compactions and clusterings of one table with Spark (the core decides the rest)."""

    def __init__(self, spark, path: str, cfg: WriteConfig, storage_options: dict | None = None):
        self.spark = spark
        self.path = path
        self.cfg = cfg
        self.storage_options = storage_options

    def _table(self) -> HudiTable:
        return HudiTable(self.path, self.storage_options)

    def _concurrency(self, table: HudiTable) -> WriteConcurrency:
        """The service instant's heartbeat, lock and conflict check, with the writes' options."""
        return WriteConcurrency(table.storage, self.cfg.concurrency_settings)

    def _one_per_task(self, rows: list[tuple], schema: str):
        """One row per Spark task, sliced where the frame is made (a ``repartition`` would add a shuffle stage)."""
        return self.spark.createDataFrame(self.spark.sparkContext.parallelize(rows, max(1, len(rows))), schema)

    @staticmethod
    def _collect(frame, ctx: WriteContext, kept: list[WriteOutput]) -> compaction.TasksOutput:
        """Run the service's tasks: stats and column stats come back, record-index changes stay
        on the executors for the metadata delta commit's record-index job (as a write's)."""
        output = collect_written(frame, ctx.record_index, ctx.column_stats_columns)
        kept.append(output)
        return compaction.TasksOutput(output.stats, written_indexes(output))

    def compact(self, instant_time: str) -> None:
        table = self._table()
        ops = compaction.read_plan(table, instant_time).operations or []
        preflight.check_executors(self.spark, self.path)
        log.info("compaction %s: compacting %d file groups of %s ...", instant_time, len(ops), self.path)
        started = time.perf_counter()
        kept: list[WriteOutput] = []

        def run(operations: list[CompactionOperation], ctx: WriteContext) -> compaction.TasksOutput:
            rows = [(json.dumps(op.to_record()),) for op in operations]
            frame = self._one_per_task(rows, "op string")
            return self._collect(frame.mapInArrow(_compaction_fn(self.path, self.storage_options, ctx, instant_time), WRITE_SCHEMA), ctx, kept)

        try:
            compaction.run_compaction(table, instant_time, self.cfg.file_settings, run, concurrency=self._concurrency(table))
        finally:
            for output in kept:
                output.release()
        log.info("compaction %s: committed %d file groups in %.1fs", instant_time, len(ops), time.perf_counter() - started)

    def cluster(self, instant_time: str) -> None:
        table = self._table()
        groups = clustering.read_plan(table, instant_time).groups
        preflight.check_executors(self.spark, self.path)
        log.info("clustering %s: rewriting %d file groups of %s ...", instant_time, len(groups), self.path)
        started = time.perf_counter()
        kept: list[WriteOutput] = []

        def run(groups: list[ClusteringGroup], ctx: WriteContext, sort_columns: list[str] | None) -> compaction.TasksOutput:
            rows = [(json.dumps(g.to_record()),) for g in groups]
            frame = self._one_per_task(rows, "g string")
            fn = _clustering_fn(self.path, self.storage_options, ctx, instant_time, sort_columns)
            return self._collect(frame.mapInArrow(fn, WRITE_SCHEMA), ctx, kept)

        try:
            clustering.run_clustering(
                table, instant_time, self.cfg.service_settings.clustering, self.cfg.file_settings, run,
                concurrency=self._concurrency(table),
            )
        finally:
            for output in kept:
                output.release()
        log.info("clustering %s: committed in %.1fs", instant_time, time.perf_counter() - started)


def _compaction_fn(path: str, storage_options: dict | None, ctx: WriteContext, compaction_time: str):
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = HudiTable(path, storage_options)
        task = task_info()
        for batch in batches:
            for op_json in batch.column(0).to_pylist():
                op = CompactionOperation.from_record(json.loads(op_json))
                indexed: list[WrittenFileIndex] = []
                stat = compaction.compact_operation(table, ctx, op, task, compaction_time, indexed)
                yield from _written_batches([stat], indexed)

    return run


def _clustering_fn(path, storage_options, ctx, instant_time, sort_columns):
    def run(batches):
        table = HudiTable(path, storage_options)
        task = task_info()
        for batch in batches:
            for group_json in batch.column(0).to_pylist():
                group = ClusteringGroup.from_record(json.loads(group_json))
                indexed: list[WrittenFileIndex] = []
                stats = clustering.cluster_group(table, ctx, group, task, instant_time, sort_columns, indexed)
                yield from _written_batches(stats, indexed)

    return run


# -- standalone jobs --------------------------------------------------------------------------


def schedule_compaction(path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> str | None:
    """Write a compaction plan for the table's slices with logs; returns its instant time."""
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    instant = compaction.schedule_compaction(table, cfg.service_settings.compaction, table.timeline.next_instant_time())
    return instant.requested_time if instant else None


def compact(
    spark,
    path: str,
    options: Mapping[str, Any] | None = None,
    instant_time: str | None = None,
    storage_options: dict | None = None,
) -> list[str]:
    """Run pending compactions (scheduling one first if none is pending); returns their times."""
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    times = compaction.compactions_to_run(table, cfg.service_settings.compaction, instant_time)
    engine = SparkServiceEngine(spark, path, cfg, storage_options)
    for time_ in times:
        engine.compact(time_)
    return times


def cluster(spark, path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> list[str]:
    """Schedule (if needed) and run clustering; returns the replacecommit times."""
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    times = clustering.clusterings_to_run(table, cfg.service_settings.clustering)
    engine = SparkServiceEngine(spark, path, cfg, storage_options)
    for time_ in times:
        engine.cluster(time_)
    return times


def clean_table(spark, path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> str | None:
    """Plan and run a clean (finishing any pending one first); returns its time."""
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    return clean.run_clean(table, cfg.service_settings.clean, cfg.concurrency_settings)


def archive(path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> list[str]:
    table = HudiTable(path, storage_options)
    return archival.archive(table, _config(table, options).service_settings.archival)


def savepoint(path: str, instant_time: str | None = None, comment: str = "", storage_options: dict | None = None) -> str:
    """Savepoint a completed commit (default: the latest)."""
    return savepoints.create_savepoint(HudiTable(path, storage_options), instant_time, comment=comment).requested_time


def restore(path: str, savepoint_time: str, storage_options: dict | None = None) -> dict:
    """Restore the table to a savepoint (every later instant is rolled back); returns
    the ``HoodieRestoreMetadata`` record."""
    return savepoints.restore_to_savepoint(HudiTable(path, storage_options), savepoint_time).to_record()


def rollback(path: str, instant_time: str | None = None, storage_options: dict | None = None) -> dict:
    """Roll back a pending write or the latest completed commit / delta commit / compaction;
    returns the ``HoodieRollbackMetadata`` record."""
    return rollbacks.rollback_instant(HudiTable(path, storage_options), instant_time).to_record()


# -- inline, after a write -------------------------------------------------------------------------------


def inline_services(
    spark, path: str, cfg: WriteConfig, storage_options: dict | None = None, committed: str | None = None
) -> inline.InlineServices:
    """Run the services the write options ask for after the commit ``committed``."""
    engine = SparkServiceEngine(spark, path, cfg, storage_options)
    return inline.run_inline_services(
        lambda: HudiTable(path, storage_options), cfg.service_settings, engine, committed, cfg.concurrency_settings
    )


def run_inline_services(spark, path: str, cfg: WriteConfig, storage_options: dict | None = None) -> list[str]:
    """Run the services the write options ask for; returns what ran."""
    return inline_services(spark, path, cfg, storage_options).ran
