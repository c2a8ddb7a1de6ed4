"""Table services on Spark: compaction, clustering, cleaning, archival, savepoints,
restore and rollback — inline after a write or as standalone jobs.

The decisions (plans) come from the core; heavy work (merging file slices,
rewriting file groups, deleting many files) runs on executors.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Iterator, Mapping

import pyarrow as pa

from hudi_duck.core.services import archival, clean, clustering, compaction, rollback as rollbacks, savepoint as savepoints
from hudi_duck.core.errors import HudiError
from hudi_duck.core.timeline.instant import Action, State, new_instant_time
from hudi_duck.core.merge.rules import MergeMode
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.plans import ClusteringGroup, CompactionOperation
from hudi_duck.core.write.handles import WriteContext

from . import preflight
from .config import WriteConfig, parse_options
from .executor import STATS_SCHEMA, _stats_batch, collect_stats, task_info

log = logging.getLogger("spark_writer")


def _config(table: HudiTable, options: Mapping[str, Any] | None) -> WriteConfig:
    merged = {"hoodie.table.name": table.config.name}
    merged.update({k: v for k, v in (options or {}).items()})
    return parse_options(merged, for_write=False)


def _context(table: HudiTable, cfg: WriteConfig, instant_time: str, storage_options: dict | None) -> WriteContext:
    mode = table.merge_config.mode
    schema = table.avro_schema
    if not schema:
        raise HudiError(f"{table.base_uri}: the table has no schema yet (no commits)")
    return WriteContext(
        base_uri=table.base_uri,
        instant_time=instant_time,
        avro_schema=schema,
        merge_mode=mode if isinstance(mode, MergeMode) else MergeMode(mode),
        ordering_field=table.merge_config.ordering_field,
        is_mor=table.config.is_mor,
        storage_options=dict(storage_options or {}),
        populate_meta_fields=table.config.populate_meta_fields,
        compression=cfg["hoodie.parquet.compression.codec"],
        max_file_size=int(cfg["hoodie.parquet.max.file.size"]),
        bloom_type=cfg["hoodie.bloom.index.filter.type"],
        bloom_num_entries=int(cfg["hoodie.index.bloom.num_entries"]),
        bloom_fpp=float(cfg["hoodie.index.bloom.fpp"]),
        bloom_max_entries=int(cfg["hoodie.bloom.index.filter.dynamic.max.entries"]),
        virtual_key_table={} if table.config.populate_meta_fields else dict(table.config.props),
    )


def _compaction_settings(cfg: WriteConfig) -> compaction.CompactionSettings:
    return compaction.CompactionSettings(
        strategy=cfg["hoodie.compaction.strategy"],
        target_io_mb=int(cfg["hoodie.compaction.target.io"]),
        log_file_size_threshold=int(cfg["hoodie.compaction.logfile.size.threshold"]),
        log_file_num_threshold=int(cfg["hoodie.compaction.logfile.num.threshold"]),
        max_delta_commits=int(cfg["hoodie.compact.inline.max.delta.commits"]),
        max_delta_seconds=int(cfg["hoodie.compact.inline.max.delta.seconds"]),
        trigger_strategy=cfg["hoodie.compact.inline.trigger.strategy"],
    )


def _clean_settings(cfg: WriteConfig) -> clean.CleanSettings:
    return clean.CleanSettings(
        policy=cfg["hoodie.cleaner.policy"],
        commits_retained=int(cfg["hoodie.cleaner.commits.retained"]),
        file_versions_retained=int(cfg["hoodie.cleaner.fileversions.retained"]),
        hours_retained=int(cfg["hoodie.cleaner.hours.retained"]),
        max_commits=int(cfg["hoodie.clean.max.commits"]),
    )


def _new_time(table: HudiTable) -> str:
    return new_instant_time(table.config.timeline_timezone_utc, after=table.timeline.last_instant_time)


# -- compaction ---------------------------------------------------------------------------


def schedule_compaction(path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> str | None:
    """Write a compaction plan for the table's slices with logs; returns its instant time."""
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    instant = compaction.schedule_compaction(table, _compaction_settings(cfg), _new_time(table))
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
    if not table.config.is_mor:
        raise HudiError(f"{path}: compaction applies to MERGE_ON_READ tables only")
    pending = table.timeline.pending_compaction_times()
    if instant_time is not None:
        pending = [t for t in pending if t == instant_time]
        if not pending:
            raise HudiError(f"{path}: no pending compaction at {instant_time}")
    if not pending:
        scheduled = schedule_compaction(path, options, storage_options)
        if scheduled is None:
            return []
        pending = [scheduled]
    done = []
    for time_ in pending:
        _execute_compaction(spark, path, options, time_, storage_options)
        done.append(time_)
    return done


def _compaction_fn(path: str, storage_options: dict | None, ctx: WriteContext, compaction_time: str):
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = HudiTable(path, storage_options)
        task = task_info()
        for batch in batches:
            for op_json in batch.column(0).to_pylist():
                op = CompactionOperation.from_record(json.loads(op_json))
                stat = compaction.compact_operation(table, ctx, op, task, compaction_time)
                yield _stats_batch([stat])

    return run


def _execute_compaction(spark, path, options, instant_time, storage_options) -> None:
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    plan = compaction.read_plan(table, instant_time)
    ops = plan.operations or []
    preflight.check_executors(spark, path)
    log.info("compaction %s: compacting %d file groups of %s ...", instant_time, len(ops), path)
    started = time.perf_counter()
    inflight = compaction.start_compaction(table, instant_time)
    ctx = _context(table, cfg, instant_time, storage_options)
    frame = spark.createDataFrame([(json.dumps(op.to_record()),) for op in ops], "op string").repartition(max(1, len(ops)))
    stats = collect_stats(frame.mapInArrow(_compaction_fn(path, storage_options, ctx, instant_time), STATS_SCHEMA))
    compaction.commit_compaction(table, inflight, stats, table.avro_schema)
    log.info("compaction %s: committed %d files in %.1fs", instant_time, len(stats), time.perf_counter() - started)


# -- clustering -----------------------------------------------------------------------------


def _clustering_settings(cfg: WriteConfig) -> clustering.ClusteringSettings:
    sort = cfg.get("hoodie.clustering.plan.strategy.sort.columns")
    return clustering.ClusteringSettings(
        small_file_limit=int(cfg["hoodie.clustering.plan.strategy.small.file.limit"]),
        target_file_max_bytes=int(cfg["hoodie.clustering.plan.strategy.target.file.max.bytes"]),
        max_bytes_per_group=int(cfg["hoodie.clustering.plan.strategy.max.bytes.per.group"]),
        max_num_groups=int(cfg["hoodie.clustering.plan.strategy.max.num.groups"]),
        sort_columns=[c.strip() for c in sort.split(",") if c.strip()] if sort else None,
    )


def cluster(spark, path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> list[str]:
    """Schedule (if needed) and run clustering; returns the replacecommit times."""
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    settings = _clustering_settings(cfg)
    pending = [i.requested_time for i in table.timeline.pending_clustering()]
    if not pending:
        scheduled = clustering.schedule_clustering(table, settings, _new_time(table))
        if scheduled is None:
            return []
        pending = [scheduled.requested_time]
    for time_ in pending:
        _execute_clustering(spark, path, cfg, time_, storage_options, settings)
    return pending


def _clustering_fn(path, storage_options, ctx, instant_time, sort_columns):
    def run(batches):
        table = HudiTable(path, storage_options)
        task = task_info()
        for batch in batches:
            for group_json in batch.column(0).to_pylist():
                group = ClusteringGroup.from_record(json.loads(group_json))
                stats = clustering.cluster_group(table, ctx, group, task, instant_time, sort_columns)
                yield _stats_batch(stats)

    return run


def _execute_clustering(spark, path, cfg, instant_time, storage_options, settings) -> None:
    table = HudiTable(path, storage_options)
    plan = clustering.read_plan(table, instant_time)
    groups = plan.groups
    params = plan.strategy_params
    sort_columns = plan.sort_columns or None
    preflight.check_executors(spark, path)
    log.info("clustering %s: rewriting %d file groups of %s ...", instant_time, len(groups), path)
    started = time.perf_counter()
    inflight = clustering.start_clustering(table, instant_time)
    ctx = _context(table, cfg, instant_time, storage_options)
    ctx.max_file_size = int(params.get("hoodie.clustering.plan.strategy.target.file.max.bytes", settings.target_file_max_bytes))
    frame = spark.createDataFrame([(json.dumps(g.to_record()),) for g in groups], "g string").repartition(max(1, len(groups)))
    stats = collect_stats(frame.mapInArrow(_clustering_fn(path, storage_options, ctx, instant_time, sort_columns), STATS_SCHEMA))
    clustering.commit_clustering(table, inflight, plan, stats, table.avro_schema)
    log.info("clustering %s: committed %d files in %.1fs", instant_time, len(stats), time.perf_counter() - started)


# -- cleaning, archival ---------------------------------------------------------------------------


def clean_table(spark, path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> str | None:
    """Plan and run a clean (finishing any pending one first); returns its time."""
    table = HudiTable(path, storage_options)
    for pending in clean.pending_cleans(table):
        clean.execute_clean(table, table.timeline.state_file(pending.requested_time, State.REQUESTED))
        table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    requested = clean.schedule_clean(table, _clean_settings(cfg), _new_time(table))
    if requested is None:
        return None
    log.info("clean %s: deleting old file versions ...", requested.requested_time)
    clean.execute_clean(table, requested)
    return requested.requested_time


def archive(path: str, options: Mapping[str, Any] | None = None, storage_options: dict | None = None) -> list[str]:
    table = HudiTable(path, storage_options)
    cfg = _config(table, options)
    settings = archival.ArchivalSettings(int(cfg["hoodie.keep.min.commits"]), int(cfg["hoodie.keep.max.commits"]))
    return archival.archive(table, settings)


# -- savepoints, restore, rollback ---------------------------------------------------------------


def savepoint(path: str, instant_time: str | None = None, comment: str = "", storage_options: dict | None = None) -> str:
    """Savepoint a completed commit (default: the latest)."""
    table = HudiTable(path, storage_options)
    if instant_time is None:
        latest = table.timeline.latest_completed_write
        if latest is None:
            raise HudiError(f"{path}: nothing to savepoint (no completed commit)")
        instant_time = latest.requested_time
    savepoints.create_savepoint(table, instant_time, comment=comment)
    return instant_time


def restore(path: str, savepoint_time: str, storage_options: dict | None = None) -> dict:
    """Restore the table to a savepoint (every later instant is rolled back); returns
    the ``HoodieRestoreMetadata`` record."""
    table = HudiTable(path, storage_options)
    return savepoints.restore_to_savepoint(table, savepoint_time).to_record()


def rollback(path: str, instant_time: str | None = None, storage_options: dict | None = None) -> dict:
    """Roll back a pending write or the latest completed commit / delta commit / compaction;
    returns the ``HoodieRollbackMetadata`` record."""
    table = HudiTable(path, storage_options)
    timeline = table.timeline
    group = timeline.group(instant_time) if instant_time else None
    if instant_time is None:
        latest = timeline.latest_completed_write
        if latest is None:
            raise HudiError(f"{path}: nothing to roll back")
        group = timeline.group(latest.requested_time)
    if group is None:
        raise HudiError(f"{path}: no instant {instant_time} on the timeline")
    instant = group.latest
    if not instant.is_completed and rollbacks.keeps_plan(timeline, instant.requested_time) and instant.is_requested:
        raise HudiError(
            f"{path}: {group.pending_action} {instant.requested_time} has not started; there is nothing to roll back"
        )
    if instant.is_completed:
        later = [i for i in timeline.completed_writes if i.requested_time > instant.requested_time]
        if later:
            raise HudiError(
                f"{path}: {instant.requested_time} is not the latest commit ({len(later)} later); "
                "restore to a savepoint instead"
            )
        if instant.requested_time in timeline.savepoints():
            raise HudiError(f"{path}: {instant.requested_time} is savepointed; delete the savepoint first")
        missing = _cleaned_predecessor(table, instant)
        if missing:
            raise HudiError(
                f"{path}: cannot roll back {instant.requested_time}: cleaning already removed {missing}, "
                "which the table would need again afterwards"
            )
    return rollbacks.rollback(table.storage, table.config, timeline, instant).to_record()


def _cleaned_predecessor(table: HudiTable, instant) -> str | None:
    """A file a completed instant superseded that cleaning has deleted since (rolling the
    instant back would then lose data), or None. Hudi does not check this; e.g. with
    KEEP_LATEST_FILE_VERSIONS=1 the previous base file of a copy-on-write commit is gone."""
    import posixpath

    from hudi_duck.core.file_group.naming import parse_base_file

    timeline, storage = table.timeline, table.storage
    if timeline.was_action(instant.requested_time, Action.COMPACTION):
        plan = timeline.plan(instant.requested_time)
        operations = (plan.operations or []) if plan is not None else []
        for op in operations:
            partition = op.partition
            names = ([op.base_file_name] if op.data_file_path else []) + list(op.log_file_names)
            for name in names:
                rel = posixpath.join(partition, name) if partition else name
                if not storage.exists(rel):
                    return rel
        return None
    metadata = timeline.commit_metadata(instant)
    ext = "." + table.config.base_file_extension.lstrip(".")
    listed: dict[str, list] = {}

    def bases(partition: str) -> list:
        if partition not in listed:
            listed[partition] = [b for b in (parse_base_file(partition, f.name) for f in storage.list(partition)) if b]
        return listed[partition]

    for partition, stat in metadata.iter_stats():
        prev = stat.previous_commit
        if prev is None or not (stat.path or "").endswith(ext):
            continue
        if not any(b.file_id == stat.file_id and b.instant_time == prev for b in bases(partition)):
            return f"the base file of {partition}/{stat.file_id} at {prev}"
    for partition, ids in metadata.replaced_file_ids().items():
        for file_id in ids:
            if not any(b.file_id == file_id for b in bases(partition)):
                return f"the replaced file group {partition}/{file_id}"
    return None


# -- inline, after a write -------------------------------------------------------------------------------


def run_inline_services(spark, path: str, cfg: WriteConfig, storage_options: dict | None = None) -> list[str]:
    """Run the services the write options ask for after a commit; returns what ran."""
    ran: list[str] = []
    table = HudiTable(path, storage_options)
    if table.config.is_mor and cfg["hoodie.compact.inline"] and table.timeline.pending_compaction_times():
        # runAnyPendingCompactions: a plan scheduled earlier (or a failed attempt) runs first;
        # left pending, its file groups would never be compacted again
        for time_ in table.timeline.pending_compaction_times():
            _execute_compaction(spark, path, cfg.raw, time_, storage_options)
            ran.append(f"compaction {time_}")
        table = HudiTable(path, storage_options)
    if table.config.is_mor and (cfg["hoodie.compact.inline"] or cfg["hoodie.compact.schedule.inline"]):
        if compaction.needs_compaction(table, _compaction_settings(cfg)):
            scheduled = compaction.schedule_compaction(table, _compaction_settings(cfg), _new_time(table))
            if scheduled is not None:
                ran.append(f"schedule compaction {scheduled.requested_time}")
                if cfg["hoodie.compact.inline"]:
                    _execute_compaction(spark, path, cfg.raw, scheduled.requested_time, storage_options)
                    ran.append(f"compaction {scheduled.requested_time}")
            table = HudiTable(path, storage_options)
    if cfg["hoodie.clustering.inline"]:
        commits = table.timeline.completed(Action.WRITE_ACTIONS)
        last = [i for i in table.timeline.completed([Action.REPLACE_COMMIT]) if i.requested_time]
        since = [c for c in commits if not last or c.requested_time > last[-1].requested_time]
        if len(since) >= int(cfg["hoodie.clustering.inline.max.commits"]):
            for time_ in cluster(spark, path, cfg.raw, storage_options):
                ran.append(f"clustering {time_}")
            table = HudiTable(path, storage_options)
    if cfg["hoodie.clean.automatic"]:
        settings = _clean_settings(cfg)
        if clean.needs_clean(table, settings):
            done = clean_table(spark, path, cfg.raw, storage_options)
            if done:
                ran.append(f"clean {done}")
            table = HudiTable(path, storage_options)
    if cfg["hoodie.archive.automatic"]:
        archived = archive(path, cfg.raw, storage_options)
        if archived:
            log.info("archived %d instants of %s", len(archived), path)
            ran.append(f"archive {len(archived)} instants")
    return ran
