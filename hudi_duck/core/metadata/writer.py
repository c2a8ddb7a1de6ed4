"""Keeping a table-version-6 metadata table in step with its data table, as Hudi 0.14 does.

* every instant that changes the data table's files (writes, compaction, clustering,
  clean, rollback, restore) first completes a *delta commit* of the metadata table at
  the same instant time, then the data instant completes (:class:`MetadataParticipant`,
  a commit participant of :class:`~hudi_duck.core.timeline.transaction.Transaction`);
  a delta commit appends one ``HFILE_DATA_BLOCK`` as a new log file version of the
  ``files`` file group (storage without appends: every delta commit a new log file);
* the index partitions' records of a write, compaction or clustering come from its tasks
  (:class:`WrittenIndexes`, what to report: :func:`task_indexes`):
  ``column_stats`` records travel with the write stats, record-index changes stay with
  the engine, whose tasks write the ``record_index`` log files of the delta commit
  (:class:`IndexLogWriter`, :func:`write_record_index_log_file`); the committer writes
  the ``files`` log file and commits every stat in the one delta commit. Without them
  the committer builds the records from the files the commit wrote;
* a table without a metadata table gets one bootstrapped from a listing of its files
  (:meth:`MetadataTable.bootstrap`) at ``<latest completed instant>010``: the initial
  log file, then a bulk-insert delta commit writing the HFile base file;
* before a write, the metadata table's own services run (:meth:`MetadataTable.run_services`):
  clean at ``<latest delta commit>002`` (KEEP_LATEST_COMMITS), compaction into a new HFile
  base file at ``<latest delta commit>001`` once ``hoodie.metadata.compact.max.delta.commits``
  delta commits piled up, archival;
* rolling back a data instant rolls back its delta commit on the metadata table
  (at ``<rollback>006``); a restore rolls back the delta commits of what it undid and
  re-syncs the listing with the storage;
* ``hoodie.metadata.enable=false`` on a write into a table with a metadata table deletes
  it (:meth:`MetadataTable.delete`): ``hoodie.properties`` first, then the folder.
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..config.table_config import Keys, TableConfig
from ..errors import HudiError
from ..file_group.naming import (
    PARTITION_METAFILE,
    base_file_name,
    log_file_name,
    parse_base_file,
    parse_log_file,
    partition_depth,
    partition_metafile_text,
)
from ..hfile.writer import write_hudi_base_hfile
from ..index import bloom
from ..storage.storage import Storage
from ..timeline.active import Timeline
from ..timeline.commit_metadata import CommitMetadata, WriteStat
from ..timeline.instant import Action, Instant
from ..timeline.plans import CompactionOperation, CompactionPlan
from ..timeline.service_metadata import CleanMetadata, RestoreMetadata, RollbackMetadata
from ..timeline.transaction import Transaction, register_participant_factory
from ..write.markers import IOType, create_marker
from . import indexes
from .indexes import IndexSettings
from .layout import (
    COLUMN_STATS,
    FILES,
    RECORD_INDEX,
    MetadataPartition,
    METADATA_FOLDER,
    clean_instant,
    commit_files_records,
    compaction_instant,
    clean_files_records,
    PARTITIONS as PARTITIONS_BY_NAME,
    file_group_id,
    file_group_index,
    hfile_data_block,
    initial_log_file,
    initial_log_file_name,
    initialization_instant,
    metadata_partitions_value,
    metadata_table_properties,
    records_by_file_group,
    restore_files_records,
    rollback_files_records,
    rollback_instant,
)
from .records import MetadataRecord, encode_cells, partition_files_record, partition_identifier, partition_list_record, writer_schema_json

if TYPE_CHECKING:
    from ..timeline.transaction import CommitParticipant

log = logging.getLogger("hudi_duck")

#: Write token of the files the metadata table's writes make (one task per file group).
WRITE_TOKEN = "0-1-0"
#: Actions whose commit metadata lists the files they wrote.
_COMMIT_ACTIONS = frozenset(
    {Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING}
)


class MetadataWriteError(HudiError):
    """The metadata table could not be brought in step with the data table."""


@dataclass(frozen=True)
class MetadataSettings:
    """``hoodie.metadata.*`` for writers, and the metadata table's own service settings
    (``HoodieMetadataWriteUtils.createMetadataWriteConfig``)."""

    enabled: bool = True
    #: hoodie.metadata.compact.max.delta.commits
    compact_max_delta_commits: int = 10
    #: min(hoodie.cleaner.commits.retained, 20)
    cleaner_commits_retained: int = 10
    #: hoodie.keep.min.commits / hoodie.keep.max.commits of the data table
    archive_min_commits: int = 20
    archive_max_commits: int = 30
    #: the index partitions kept besides ``files`` (column_stats, record_index)
    indexes: IndexSettings = IndexSettings()


#: Index settings of the writer working on a table (by table URI): its commits and inline
#: table services use them; transactions of other processes use what the table lists.
_WRITER_INDEX_SETTINGS: dict[str, IndexSettings] = {}


# -- listing the data table -------------------------------------------------------------------


def list_data_files(storage: Storage, max_instant: str | None) -> dict[str, dict[str, int]]:
    """Partition path -> data file name -> size, from a listing (``listAllPartitionsFromFilesystem``):
    folders with a partition metadata file are partitions; base and log files count when
    their instant is at or before ``max_instant`` (none count without one)."""
    out: dict[str, dict[str, int]] = {}
    stack = [""]
    while stack:
        folder = stack.pop()
        entries = storage.list(folder)
        names = {e.name for e in entries}
        if PARTITION_METAFILE in names:
            files: dict[str, int] = {}
            for entry in entries:
                if entry.is_dir:
                    continue
                parsed = parse_base_file(folder, entry.name) or parse_log_file(folder, entry.name)
                if parsed is None or max_instant is None or parsed.instant_time > max_instant:
                    continue
                files[entry.name] = entry.size
            out[folder] = files
        for entry in entries:
            if entry.is_dir and not entry.name.startswith("."):
                stack.append(entry.path)
    return out


def _file_name(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))


# -- the metadata table -----------------------------------------------------------------------


class MetadataTable:
    """The metadata table of the data table at ``storage``, as its writer sees it."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self.mdt = storage.child(METADATA_FOLDER)

    # -- state ---------------------------------------------------------------------------------
    def data_config(self) -> TableConfig:
        return TableConfig.load(self.storage)

    def is_enabled_in(self, config: TableConfig) -> bool:
        """Whether the data table's ``hoodie.properties`` lists the ``files`` partition."""
        return FILES.name in config.metadata_partitions

    def config(self) -> TableConfig:
        return TableConfig.load(self.mdt)

    def timeline(self) -> Timeline:
        return Timeline.load(self.mdt, self.config())

    # -- enabling and disabling ----------------------------------------------------------------
    def prepare_write(self, settings: MetadataSettings, current: str | None = None) -> None:
        """What a writer does before its instant (``initTable``): with the metadata table
        enabled, bootstrap it if missing, then run its services; disabled, delete it."""
        config = self.data_config()
        if not settings.enabled:
            if self.is_enabled_in(config) or config.get(Keys.METADATA_PARTITIONS_INFLIGHT) or self.mdt.exists(""):
                self.delete()
            return
        data_timeline = Timeline.load(self.storage, config)
        _WRITER_INDEX_SETTINGS[self.storage.uri()] = settings.indexes
        if not self.is_enabled_in(config):
            if not self.bootstrap(config, data_timeline, current):
                return
        self.sync_index_partitions(settings.indexes, current)
        self.run_services(Timeline.load(self.storage, self.data_config()), settings, current)

    def sync_index_partitions(self, wanted: IndexSettings, current: str | None = None) -> None:
        """Index partitions follow the writer's options (``initializeIfNeeded`` /
        ``deleteMetadataIndexIfNecessary``): enabled ones missing are bootstrapped from the
        table, disabled ones listed are dropped."""
        listed = set(self.data_config().metadata_partitions)
        enabled = {p.name for p in wanted.partitions()}
        for partition in (COLUMN_STATS, RECORD_INDEX):
            if partition.name in listed and partition.name not in enabled:
                self.drop_partition(partition)
        for partition in wanted.partitions():
            if partition.name not in listed:
                self.bootstrap_index(partition, wanted, current)

    def drop_partition(self, partition: MetadataPartition) -> None:
        """The data table stops listing the partition, then its folder goes."""
        self._set_partition_state(False, partition)
        if self.mdt.exists(partition.name):
            self.mdt.delete(partition.name, recursive=True)
        log.info("%s: metadata table partition %s dropped (its index is disabled)", self.storage.uri(), partition.name)

    def delete(self) -> None:
        """``deleteMetadataTable``: the data table stops naming it, then the folder goes."""
        config = self.data_config()
        changed = False
        for key in (Keys.METADATA_PARTITIONS, Keys.METADATA_PARTITIONS_INFLIGHT):
            if key in config.props:
                del config.props[key]
                changed = True
        if changed:
            config.save(self.storage)
        if self.mdt.exists(""):
            self.mdt.delete("", recursive=True)
        log.info("%s: metadata table deleted (hoodie.metadata.enable=false)", self.storage.uri())

    def _set_partition_state(self, enabled: bool, partition: MetadataPartition = FILES) -> None:
        config = self.data_config()
        partitions = set(config.metadata_partitions)
        inflight = set(_list(config.get(Keys.METADATA_PARTITIONS_INFLIGHT)))
        if enabled:
            partitions.add(partition.name)
        else:
            partitions.discard(partition.name)
        inflight.discard(partition.name)
        for key, values in ((Keys.METADATA_PARTITIONS, partitions), (Keys.METADATA_PARTITIONS_INFLIGHT, inflight)):
            if values:
                config.props[key] = metadata_partitions_value(values)
            else:
                config.props.pop(key, None)
        config.save(self.storage)

    # -- bootstrap -----------------------------------------------------------------------------
    def bootstrap(self, config: TableConfig, data_timeline: Timeline, current: str | None = None) -> str | None:
        """``initializeFromFilesystem``: a new metadata table with the ``files`` partition
        listed from storage. Not while another data instant is pending (Hudi skips then,
        and the write goes on without the metadata table); returns the bootstrap instant."""
        pending = [i.requested_time for i in data_timeline.pending() if i.requested_time != current and i.action != Action.INDEXING]
        if pending:
            log.warning(
                "%s: metadata table not bootstrapped while instants are pending: %s", self.storage.uri(), ", ".join(pending)
            )
            return None
        completed = data_timeline.completed()
        latest = completed[-1].requested_time if completed else None
        instant_time = initialization_instant(latest)
        if self.mdt.exists(""):
            self.mdt.delete("", recursive=True)  # left by an attempt that did not finish
        TableConfig(dict(metadata_table_properties(config.name))).initialize_table(self.mdt)
        listing = list_data_files(self.storage, latest)
        records = [partition_list_record([partition_identifier(p) for p in listing])]
        records += [partition_files_record(p, files) for p, files in sorted(listing.items())]
        timeline = self.timeline()
        txn = Transaction.start(timeline, Action.DELTA_COMMIT, instant_time=instant_time)
        with txn:
            txn.begin()
            partition = FILES.name
            self.mdt.makedirs(partition)
            self.mdt.write(
                posixpath.join(partition, initial_log_file_name(FILES, 0, instant_time)), initial_log_file(instant_time)
            )
            self.mdt.write(
                posixpath.join(partition, PARTITION_METAFILE),
                partition_metafile_text(instant_time, partition_depth(partition)).encode("utf-8"),
            )
            stat = self._write_base_file(FILES, file_group_id(FILES, 0), instant_time, records, None)
            txn.commit(CommitMetadata.of(
                [stat], compacted=False, extra_metadata={"schema": writer_schema_json()},
                operation_type="BULK_INSERT_PREPPED",
            ))
        self._set_partition_state(True)
        log.info("%s: metadata table bootstrapped at %s (%d partitions)", self.storage.uri(), instant_time, len(listing))
        return instant_time

    def bootstrap_index(self, partition: MetadataPartition, settings: IndexSettings, current: str | None = None) -> str | None:
        """``initializeFromFilesystem`` of one index partition: a bulk-insert delta commit at the
        next free ``<latest completed instant>01x``, one HFile base file per file group."""
        from ..table.table import HudiTable

        config = self.data_config()
        data_timeline = Timeline.load(self.storage, config)
        pending = [i.requested_time for i in data_timeline.pending() if i.requested_time != current and i.action != Action.INDEXING]
        if pending:
            log.warning("%s: %s not bootstrapped while instants are pending: %s", self.storage.uri(), partition.name, ", ".join(pending))
            return None
        completed = data_timeline.completed()
        latest = completed[-1].requested_time if completed else None
        timeline = self.timeline()
        offset = 0
        while timeline.group(initialization_instant(latest, offset)) is not None:
            offset += 1
        instant_time = initialization_instant(latest, offset)
        if self.mdt.exists(partition.name):
            self.mdt.delete(partition.name, recursive=True)  # left by an attempt that did not finish
        if partition == COLUMN_STATS:
            listing = {p: dict(files) for p, files in self._files_listing().items()}
            columns = index_columns(self.storage, config, settings)
            records = indexes.listing_column_stats_records(self.storage, listing, columns)
            count = settings.column_stats_file_groups
        else:
            records = indexes.table_record_index_records(self.storage, HudiTable(self.storage.base_uri, self.storage.storage_options), instant_time)
            count = indexes.record_index_file_group_count(len(records), settings)
        grouped = records_by_file_group(records, partition, count)
        txn = Transaction.start(timeline, Action.DELTA_COMMIT, instant_time=instant_time)
        with txn:
            txn.begin()
            self.mdt.makedirs(partition.name)
            self.mdt.write(
                posixpath.join(partition.name, PARTITION_METAFILE),
                partition_metafile_text(instant_time, partition_depth(partition.name)).encode("utf-8"),
            )
            stats = []
            for index in range(count):
                file_id = file_group_id(partition, index)
                self.mdt.write(
                    posixpath.join(partition.name, initial_log_file_name(partition, index, instant_time)), initial_log_file(instant_time)
                )
                ordered = sorted(grouped.get(file_id, []), key=lambda r: r.key)
                stats.append(self._write_base_file(partition, file_id, instant_time, ordered, None))
            txn.commit(CommitMetadata.of(
                stats, compacted=False, extra_metadata={"schema": writer_schema_json()}, operation_type="BULK_INSERT_PREPPED",
            ))
        self._set_partition_state(True, partition)
        log.info("%s: metadata table partition %s bootstrapped at %s (%d records)", self.storage.uri(), partition.name, instant_time, len(records))
        return instant_time

    def _files_listing(self) -> dict[str, dict[str, int]]:
        from .files_reader import files_listing

        return {p: dict(files) for p, files in files_listing(self.storage).partitions.items()}

    def _write_base_file(
        self, metadata_partition: MetadataPartition, file_id: str, instant_time: str, records: list[MetadataRecord], previous: str | None
    ) -> WriteStat:
        partition = metadata_partition.name
        name = base_file_name(file_id, WRITE_TOKEN, instant_time, ".hfile")
        path = posixpath.join(partition, name)
        create_marker(self.mdt, instant_time, partition, name, IOType.CREATE)
        data = write_hudi_base_hfile(encode_cells(records), writer_schema_json(), bloom_filter=bloom.create())
        self.mdt.write(path, data)
        return WriteStat(
            file_id=file_id,
            path=path,
            prev_commit=previous or "null",
            num_writes=len(records),
            num_inserts=len(records) if previous is None else 0,
            num_update_writes=0 if previous is None else len(records),
            total_write_bytes=len(data),
            partition_path=partition,
            file_size_in_bytes=len(data),
        )

    # -- delta commits -------------------------------------------------------------------------
    def _latest_files_slice(self, timeline: Timeline):
        from ..table.fs_view import FileSystemView

        view = FileSystemView(self.mdt, timeline.config, timeline)
        slices = [s for s in view.latest_slices(partitions=[FILES.name]) if s.file_id == file_group_id(FILES, 0)]
        if not slices:
            raise MetadataWriteError(f"{self.mdt.uri(FILES.name)}: no file group {file_group_id(FILES, 0)}")
        return slices[0]

    def delta_commit(
        self,
        instant_time: str,
        records: list[MetadataRecord],
        index_records: dict[str, list[MetadataRecord]] | None = None,
        index_deletes: dict[str, list[str]] | None = None,
        index_writers: "dict[str, EngineIndexWrite] | None" = None,
    ) -> None:
        """One delta commit at ``instant_time``: an HFile data block as a new log file of the
        ``files`` file group and, for the index partitions, of each file group their records
        map to (deleted keys in a delete block after it). ``index_writers``: partitions whose
        log files someone else writes (an engine's tasks, where the records are), given every
        file group's target; their write stats join the commit. A delta commit left at that
        time by an earlier attempt is rolled back first (``commitInternal``)."""
        from ..table.fs_view import FileSystemView

        timeline = self.timeline()
        earlier = timeline.group(instant_time)
        if earlier is not None:
            self.rollback(timeline, earlier.latest, rollback_instant(instant_time))
            timeline = self.timeline()
        view = FileSystemView(self.mdt, timeline.config, timeline)
        writes: list[_Append | _EngineAppend] = [_Append(self._latest_files_slice(timeline), records, [])]
        engine = index_writers or {}
        for name in sorted(set(index_records or {}) | set(index_deletes or {}) | set(engine)):
            slices = {s.file_id: s for s in view.latest_slices(partitions=[name])}
            if not slices:
                raise MetadataWriteError(f"{self.mdt.uri(name)}: metadata partition {name} has no file groups")
            partition = PARTITIONS_BY_NAME[name]
            if name in engine:
                writes.append(_EngineAppend(engine[name], log_file_targets(self.mdt, partition, list(slices.values()))))
                continue
            grouped = records_by_file_group((index_records or {}).get(name, []), partition, len(slices))
            deleted: dict[str, list[str]] = {}
            for key in (index_deletes or {}).get(name, []):
                deleted.setdefault(file_group_id(partition, file_group_index(key, len(slices))), []).append(key)
            for file_id in sorted(set(grouped) | set(deleted)):
                if file_id not in slices:
                    raise MetadataWriteError(f"{self.mdt.uri(name)}: no file group {file_id}")
                writes.append(_Append(slices[file_id], grouped.get(file_id, []), deleted.get(file_id, [])))
        txn = Transaction.start(timeline, Action.DELTA_COMMIT, instant_time=instant_time)
        with txn:
            txn.begin()
            stats = []
            for write in writes:
                if isinstance(write, _EngineAppend):  # written where the records are
                    written = write.write.writer.write_log_files(self.mdt, write.targets, instant_time, list(write.write.deleted_keys))
                    stats += sorted(written, key=lambda s: s.file_id)
                else:
                    stats.append(self._append(write.file_slice, instant_time, write.records, write.deletes))
            txn.commit(CommitMetadata.of(
                stats, compacted=False, extra_metadata={"schema": writer_schema_json()}, operation_type="UPSERT_PREPPED"
            ))

    def _append(self, file_slice: Any, instant_time: str, records: list[MetadataRecord], deletes: list[str]) -> WriteStat:
        """A new log file version of ``file_slice``'s file group: a data block, then a delete block."""
        return write_log_file(self.mdt, log_file_target(self.mdt, file_slice), instant_time, records, deletes)

    def rollback(self, timeline: Timeline, instant: Instant, rollback_time: str) -> None:
        """Roll back one instant of the metadata table at ``rollback_time`` (or a fresh time if taken)."""
        from ..services.rollback import execute_rollback, schedule_rollback

        config = timeline.config
        if timeline.group(rollback_time) is not None:
            rollback_time = timeline.next_instant_time()
        requested, plan = schedule_rollback(self.mdt, config, timeline, instant, rollback_time)
        execute_rollback(self.mdt, config, timeline, requested, plan)

    def rollback_delta_commit(self, instant_time: str, rollback_time: str) -> bool:
        """Roll back the metadata table's delta commit of a data instant being rolled back
        (refused when a compaction of the metadata table already covers it: that is a restore)."""
        timeline = self.timeline()
        group = timeline.group(instant_time)
        if group is None or group.pending_action != Action.DELTA_COMMIT:
            return False
        compactions = [i.requested_time for i in timeline.completed([Action.COMMIT])]
        if compactions and instant_time <= compactions[-1]:
            raise MetadataWriteError(
                f"{self.storage.uri()}: instant {instant_time} is older than the metadata table's latest compaction "
                f"{compactions[-1]}; restore to a savepoint instead, or delete the metadata table "
                f"({METADATA_FOLDER}) and retry"
            )
        self.rollback(timeline, group.latest, rollback_time)
        return True

    # -- services ------------------------------------------------------------------------------
    def run_services(self, data_timeline: Timeline, settings: MetadataSettings, current: str | None = None) -> list[str]:
        """``performTableServices``: clean, compaction, archival of the metadata table."""
        timeline = self.timeline()
        ran: list[str] = []
        for pending in timeline.pending([Action.COMPACTION]):
            self._resume_compaction(timeline, pending.requested_time)
            ran.append(pending.requested_time)
            timeline = self.timeline()
        deltas = timeline.completed([Action.DELTA_COMMIT])
        if not deltas:
            return ran
        latest = deltas[-1].requested_time
        cleaned = self._clean_if_necessary(timeline, latest, settings)
        if cleaned:
            ran.append(cleaned)
            timeline = self.timeline()
        if self._may_compact(data_timeline, timeline, latest, current):
            compacted = self._compact_if_necessary(timeline, latest, settings)
            if compacted:
                ran.append(compacted)
        ran.extend(self._archive(settings))
        return ran

    def _clean_if_necessary(self, timeline: Timeline, latest: str, settings: MetadataSettings) -> str | None:
        from ..services import clean
        from ..table.table import HudiTable

        compactions = timeline.completed([Action.COMMIT])
        if compactions:
            after = [i for i in timeline.completed() if i.requested_time > compactions[-1].requested_time]
            if len(after) < 3:
                return None  # readers of the log files the compaction replaced get time
        instant_time = clean_instant(latest)
        if timeline.group(instant_time) is not None:
            return None
        table = HudiTable(self.mdt.base_uri, self.mdt.storage_options)
        policy = clean.CleanSettings(commits_retained=settings.cleaner_commits_retained)
        requested = clean.schedule_clean(table, policy, instant_time)
        if requested is None:
            return None
        clean.execute_clean(HudiTable(self.mdt.base_uri, self.mdt.storage_options), requested)
        return instant_time

    def _may_compact(self, data_timeline: Timeline, timeline: Timeline, latest: str, current: str | None) -> bool:
        """``validateTimelineBeforeSchedulingCompaction``: no data instant pending at or before
        the latest delta commit, no compaction pending on the metadata table."""
        blocking = [
            i for i in data_timeline.pending() if i.requested_time <= latest and i.requested_time != current
        ]
        return not blocking and not timeline.pending([Action.COMPACTION, Action.LOG_COMPACTION])

    def _compact_if_necessary(self, timeline: Timeline, latest: str, settings: MetadataSettings) -> str | None:
        compactions = timeline.completed([Action.COMMIT])
        since = compactions[-1].requested_time if compactions else ""
        deltas = [i for i in timeline.completed([Action.DELTA_COMMIT]) if i.requested_time > since]
        if len(deltas) < settings.compact_max_delta_commits:
            return None
        instant_time = compaction_instant(latest)
        if timeline.group(instant_time) is not None:
            return None
        operations = [
            CompactionOperation(
                base_instant_time=file_slice.base_instant_time,
                delta_file_paths=[posixpath.basename(lf.path) for lf in file_slice.sorted_logs()],
                data_file_path=posixpath.basename(file_slice.base_file.path) if file_slice.base_file is not None else None,
                file_id=file_slice.file_id,
                partition_path=file_slice.partition_path,
                metrics={},
            )
            for file_slice in self._latest_slices(timeline)
        ]
        Transaction.schedule(timeline, Action.COMPACTION, CompactionPlan(operations=operations, version=2), instant_time)
        self._resume_compaction(self.timeline(), instant_time)
        return instant_time

    def _latest_slices(self, timeline: Timeline) -> list[Any]:
        """The latest slice of every file group of every partition the data table lists."""
        from ..table.fs_view import FileSystemView

        view = FileSystemView(self.mdt, timeline.config, timeline)
        listed = [p for p in PARTITIONS_BY_NAME if p in set(self.data_config().metadata_partitions)]
        return [s for name in listed for s in view.latest_slices(partitions=[name])]

    def _resume_compaction(self, timeline: Timeline, instant_time: str) -> None:
        """Compact every file group into a new HFile base file at ``instant_time``."""
        from .files_reader import MetadataTable as MetadataReader

        reader = MetadataReader(self.storage)
        slices = self._latest_slices(timeline)
        merged = [(s, reader._slice_records(s, None, set())) for s in slices]
        txn = Transaction.resume(timeline, instant_time)
        with txn:
            txn.begin()
            stats = []
            for file_slice, records in merged:
                ordered = [records[k] for k in sorted(records)]
                partition = PARTITIONS_BY_NAME[file_slice.partition_path]
                stats.append(self._write_base_file(partition, file_slice.file_id, instant_time, ordered, file_slice.base_instant_time))
            txn.commit(CommitMetadata.of(
                stats, compacted=True, extra_metadata={"schema": writer_schema_json()}, operation_type="COMPACT"
            ))

    def _archive(self, settings: MetadataSettings) -> list[str]:
        """Archival of the metadata table: nothing from the data table's earliest active
        commit or earliest pending instant on (their delta commits must stay readable)."""
        from ..services import archival
        from ..table.table import HudiTable

        data_timeline = Timeline.load(self.storage, self.data_config())
        candidates = [i.requested_time for i in data_timeline.completed(Action.WRITE_ACTIONS)]
        candidates += [i.requested_time for i in data_timeline.pending()]
        if not candidates:
            return []
        table = HudiTable(self.mdt.base_uri, self.mdt.storage_options)
        return archival.archive(
            table, archival.ArchivalSettings(settings.archive_min_commits, settings.archive_max_commits), min(candidates)
        )


# -- log files of the metadata table's file groups ----------------------------------------------


@dataclass(frozen=True)
class LogFileTarget:
    """The new log file a delta commit writes into one metadata file group (picklable:
    an engine's task may write it)."""

    partition: str
    file_id: str
    base_instant: str
    version: int
    #: the slice's base file name ("" without one)
    base_file: str = ""

    @property
    def file_name(self) -> str:
        return log_file_name(self.file_id, self.base_instant, self.version, WRITE_TOKEN)


def log_file_target(mdt: Storage, file_slice: Any, listed_version: int | None = None) -> LogFileTarget:
    """The next log file of ``file_slice``: one past its own logs and any log file of the
    slice the listing shows (storage without appends: a new file every time)."""
    from ..write.handles import next_log_version

    partition = file_slice.partition_path
    base_instant = file_slice.base_instant_time
    version = max((lf.version for lf in file_slice.log_files), default=0) + 1
    if listed_version is None:
        listed_version = next_log_version(mdt, partition, file_slice.file_id, base_instant)
    version = max(version, listed_version)
    base_file = posixpath.basename(file_slice.base_file.path) if file_slice.base_file is not None else ""
    return LogFileTarget(partition, file_slice.file_id, base_instant, version, base_file)


def log_file_targets(mdt: Storage, partition: MetadataPartition, slices: list[Any]) -> dict[int, LogFileTarget]:
    """Every file group's next log file, by file group index (one listing of the partition)."""
    highest: dict[tuple[str, str], int] = {}
    for info in mdt.list(partition.name):
        parsed = parse_log_file(partition.name, info.name)
        if parsed is not None:
            slot = (parsed.file_id, parsed.instant_time)
            highest[slot] = max(highest.get(slot, 0), parsed.version)
    by_id = {s.file_id: s for s in slices}
    out: dict[int, LogFileTarget] = {}
    for index in range(len(slices)):
        file_id = file_group_id(partition, index)
        file_slice = by_id.get(file_id)
        if file_slice is None:
            raise MetadataWriteError(f"{mdt.uri(partition.name)}: no file group {file_id}")
        listed = highest.get((file_id, file_slice.base_instant_time), 0) + 1
        out[index] = log_file_target(mdt, file_slice, listed)
    return out


def write_log_file(
    mdt: Storage, target: LogFileTarget, instant_time: str, records: list[MetadataRecord], deletes: list[str]
) -> WriteStat:
    """Write a delta commit's log file into a metadata file group: its marker, then an HFile
    data block (even empty, unless there are only deletes) and a delete block of ``deletes``
    (one header for both). The same bytes wherever it runs (driver or engine task)."""
    from ..file_group.log_blocks import DeleteRecord, encode_delete_records
    from ..file_group.log_format import BlockType, HeaderKey, encode_block

    partition = target.partition
    name = target.file_name
    path = posixpath.join(partition, name)
    create_marker(mdt, instant_time, partition, name, IOType.APPEND)
    blocks = []
    if records or not deletes:
        blocks.append(hfile_data_block(records, instant_time))
    if deletes:
        entries = tuple(DeleteRecord(key, partition) for key in sorted(deletes))
        header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: writer_schema_json()}  # one header for both blocks
        blocks.append(encode_block(BlockType.DELETE_BLOCK, header, encode_delete_records(entries)))
    data = b"".join(blocks)
    mdt.write(path, data)
    count = len(records) + len(deletes)
    return WriteStat.for_log(
        file_id=target.file_id,
        path=path,
        prev_commit=target.base_instant,
        num_writes=len(records),
        num_update_writes=len(records),
        num_deletes=len(deletes),
        total_write_bytes=len(data),
        partition_path=partition,
        total_log_records=count,
        total_log_blocks=len(blocks),
        file_size_in_bytes=len(data),
        log_version=target.version,
        log_offset=0,
        base_file=target.base_file,
        log_files=[name],
    )


def write_record_index_log_file(
    mdt: Storage,
    target: LogFileTarget,
    instant_time: str,
    keys: Any,
    partitions: Any,
    file_ids: Any,
    deleted: Any,
) -> WriteStat | None:
    """An engine task's part of a record-index delta commit: the changes (key, partition,
    file id, deleted) of one file group, reduced by key, as its new log file (none without changes)."""
    upserts, deletes = indexes.record_index_changes(keys, partitions, file_ids, deleted, instant_time)
    if not upserts and not deletes:
        return None
    return write_log_file(mdt, target, instant_time, upserts, deletes)


class IndexLogWriter(Protocol):
    """Writes an index partition's log files of a delta commit where its records are (an
    engine's tasks, each calling :func:`write_record_index_log_file` for its file groups):
    ``targets`` by file group index; ``deleted_keys``: deletes the committer adds to the
    tasks' changes. Returns the stats of the files written."""

    def write_log_files(
        self, mdt: Storage, targets: dict[int, LogFileTarget], instant_time: str, deleted_keys: list[str]
    ) -> list[WriteStat]: ...


@dataclass(frozen=True)
class EngineIndexWrite:
    """An index partition of a delta commit written by an :class:`IndexLogWriter`."""

    writer: IndexLogWriter
    deleted_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Append:
    """A delta commit's log file the committer writes: records and deleted keys of one file group."""

    file_slice: Any
    records: list[MetadataRecord]
    deletes: list[str]


@dataclass(frozen=True)
class _EngineAppend:
    """A delta commit's index partition an :class:`IndexLogWriter` writes, every file group's target given."""

    write: EngineIndexWrite
    targets: dict[int, LogFileTarget]


def archival_bound(storage: Storage, config: TableConfig) -> str | None:
    """How far the data table's archival may go with a metadata table (``getCommitInstantsToArchive``):
    instants earlier than the metadata table's latest compaction; with none yet, nothing
    (``""``). ``None`` without a metadata table."""
    if FILES.name not in config.metadata_partitions:
        return None
    table = MetadataTable(storage)
    try:
        compactions = table.timeline().completed([Action.COMMIT])
    except HudiError:
        return ""
    return compactions[-1].requested_time if compactions else ""


def _list(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


# -- the commit participant -------------------------------------------------------------------


@dataclass(frozen=True)
class WrittenIndexes:
    """The index records of a data instant that its write tasks produced where they wrote
    the files (an engine's executors), handed to the instant's metadata delta commit so the
    driver reads none of the files back for them.

    ``columns``: the columns the tasks' ``column_stats`` records cover (``None``: none made);
    ``files``: per data file written, its records; ``record_index``: writes the
    ``record_index`` log files from the record-index changes the tasks kept (the keys never
    come to the driver)."""

    columns: tuple[str, ...] | None = None
    files: tuple[indexes.WrittenFileIndex, ...] = ()
    record_index: "IndexLogWriter | None" = None


def task_indexes(transaction: Transaction, schema_json: str, moves_keys: bool) -> tuple[tuple[str, ...] | None, bool]:
    """What the tasks of ``transaction``'s instant report for its metadata delta commit, as
    its metadata participant will use it: the columns of their files' ``column_stats``
    records (``None``: none kept) and whether they report record-index changes (only an
    instant that puts keys into new file groups: ``moves_keys``; a compaction moves none)."""
    for participant in transaction.participants:
        if isinstance(participant, MetadataParticipant):
            settings = participant.indexes
            columns = None
            if settings.column_stats:
                config = participant.table.data_config()
                columns = tuple(index_columns(participant.table.storage, config, settings, schema_json=schema_json))
            return columns, settings.record_index and moves_keys
    return None, False


def attach_written_indexes(transaction: Transaction, written: WrittenIndexes) -> bool:
    """Hand ``written`` to the metadata participant of ``transaction`` (if the table has a
    metadata table); it uses what matches the commit and reads the files for the rest."""
    attached = False
    for participant in transaction.participants:
        if isinstance(participant, MetadataParticipant):
            participant.written = written
            attached = True
    return attached


@dataclass
class MetadataParticipant:
    """Brings the metadata table in step with a data instant before the instant completes."""

    table: MetadataTable
    indexes: IndexSettings = IndexSettings()
    #: what the write tasks produced for the index partitions (see :func:`attach_written_indexes`)
    written: WrittenIndexes | None = None

    def prepare_commit(self, transaction: Transaction, metadata: Any) -> None:
        action = transaction.action
        instant_time = transaction.requested_time
        if action in _COMMIT_ACTIONS and isinstance(metadata, CommitMetadata):
            upserts, deletes = self._commit_index_records(instant_time, metadata)
            engine = self._engine_record_index(metadata)
            if engine is not None:
                upserts.pop(RECORD_INDEX.name, None)
                deletes.pop(RECORD_INDEX.name, None)
            self.table.delta_commit(
                instant_time, commit_records(metadata), upserts, deletes,
                index_writers={RECORD_INDEX.name: engine} if engine is not None else None,
            )
        elif action == Action.CLEAN and isinstance(metadata, CleanMetadata):
            upserts: dict[str, list[MetadataRecord]] = {}
            if self.indexes.column_stats:
                deleted = {
                    p: list(m.get("deletePathPatterns") or [])
                    for p, m in (metadata.to_record().get("partitionMetadata") or {}).items()
                }
                columns = index_columns(self.table.storage, self.table.data_config(), self.indexes)
                upserts[COLUMN_STATS.name] = indexes.deleted_files_column_stats_records(deleted, columns)
            self.table.delta_commit(instant_time, clean_records(metadata), upserts)
        elif action == Action.ROLLBACK and isinstance(metadata, RollbackMetadata):
            self.table.delta_commit(instant_time, rollback_records(metadata))
            for target in metadata.commits_rollback[:1]:
                self.table.rollback_delta_commit(target, rollback_instant(instant_time))
        elif action == Action.RESTORE and isinstance(metadata, RestoreMetadata):
            self._restore(instant_time, metadata)
        # savepoints change no files

    def _commit_index_records(
        self, instant_time: str, metadata: CommitMetadata
    ) -> tuple[dict[str, list[MetadataRecord]], dict[str, list[str]]]:
        """Records of the index partitions for a commit: column ranges of the files written,
        record-index entries of keys that moved or were deleted."""
        from ..table.table import HudiTable
        from .files_reader import MetadataTable as MetadataReader

        storage = self.table.storage
        upserts: dict[str, list[MetadataRecord]] = {}
        deletes: dict[str, list[str]] = {}
        if self.indexes.column_stats:
            columns = index_columns(storage, self.table.data_config(), self.indexes, metadata)
            records = self._written_column_stats(columns, metadata)
            if records is None:
                records = indexes.commit_column_stats_records(storage, metadata, instant_time, columns)
            upserts[COLUMN_STATS.name] = records
        if self.indexes.record_index and _moves_keys(metadata) and not self._record_index_by_engine(metadata):
            reader = MetadataReader(storage)
            table = HudiTable(storage.base_uri, storage.storage_options)
            update = indexes.commit_record_index_update(
                storage, table, metadata, instant_time, lambda keys: indexes.lookup_record_index(reader, keys)
            )
            upserts[RECORD_INDEX.name] = list(update.upserts)
            deletes[RECORD_INDEX.name] = list(update.deletes)
        return upserts, deletes

    def _record_index_by_engine(self, metadata: CommitMetadata) -> bool:
        """Whether the tasks' record-index changes make this commit's record-index update (a
        write's or a clustering's; a compaction changes no location: Hudi commits it with no
        write statuses)."""
        return (
            self.indexes.record_index
            and self.written is not None
            and self.written.record_index is not None
            and _moves_keys(metadata)
        )

    def _engine_record_index(self, metadata: CommitMetadata) -> "EngineIndexWrite | None":
        """The engine's write of the record index; an insert overwrite adds the keys of the file
        groups it replaced (read from those, not from the files written) as deletes. A clustering
        adds none: it rewrites every live key of its file groups (``getRecordIndexAdditionalUpdates``)."""
        if not self._record_index_by_engine(metadata):
            return None
        from ..table.table import HudiTable

        replaced: set[str] = set()
        if metadata.partition_to_replace_file_ids and (metadata.operation_type or "").upper() != "CLUSTER":
            storage = self.table.storage
            replaced = indexes.replaced_keys(storage, HudiTable(storage.base_uri, storage.storage_options), metadata)
        return EngineIndexWrite(self.written.record_index, tuple(sorted(replaced)))

    def _written_column_stats(self, columns: list[str], metadata: CommitMetadata) -> list[MetadataRecord] | None:
        """The write tasks' ``column_stats`` records, when they cover these columns and every file."""
        written = self.written
        if written is None or written.columns is None or list(written.columns) != columns:
            return None
        return indexes.written_column_stats(written.files, metadata)

    def _restore(self, instant_time: str, metadata: RestoreMetadata) -> None:
        """Undo the delta commits of the instants the restore rolled back (latest first), then
        one delta commit at the restore's time makes the listing match the storage."""
        from .files_reader import files_listing

        undone = sorted({t for rbs in metadata.hoodie_restore_metadata.values() for rb in rbs for t in rb.commits_rollback})
        timeline = self.table.timeline()
        for target in reversed(undone):
            group = timeline.group(target)
            if group is not None and group.pending_action == Action.DELTA_COMMIT:
                self.table.rollback(timeline, group.latest, timeline.next_instant_time())
                timeline = self.table.timeline()
        listed = list_data_files(self.table.storage, "99999999999999999999")
        known = {p: dict(files) for p, files in files_listing(self.table.storage).partitions.items()}
        records = restore_files_records(listed, known)
        self.table.delta_commit(instant_time, records or [partition_list_record(list(listed))])
        # the index partitions may hold entries of undone instants that a compaction folded in:
        # they go, and the next write bootstraps them again from the restored table
        for partition in (COLUMN_STATS, RECORD_INDEX):
            if partition.name in self.table.data_config().metadata_partitions:
                self.table.drop_partition(partition)


def _moves_keys(metadata: CommitMetadata) -> bool:
    """Whether a commit can change where keys live: not a (log) compaction, which Hudi commits
    to the metadata table with no write statuses (no record-index change)."""
    return (metadata.operation_type or "").upper() not in ("COMPACT", "LOG_COMPACT")


def index_columns(
    storage: Storage,
    config: TableConfig,
    settings: IndexSettings,
    metadata: CommitMetadata | None = None,
    schema_json: str | None = None,
) -> list[str]:
    """Columns the ``column_stats`` partition indexes: the configured list, else the meta
    columns and every top-level field of the writer schema (``schema_json``, else the
    commit's, else the table's)."""
    import json

    if settings.column_stats_columns:
        return list(settings.column_stats_columns)
    if not schema_json:
        schema_json = (metadata.extra_metadata or {}).get("schema") if metadata is not None else None
    if not schema_json:
        from ..table.table import HudiTable

        schema_json = HudiTable(storage.base_uri, storage.storage_options).avro_schema
    from ..schema.meta_fields import META_FIELDS

    fields = json.loads(schema_json).get("fields", []) if schema_json else []
    names = [f["name"] for f in fields if _primitive(f.get("type"))]
    meta = list(META_FIELDS) if config.populate_meta_fields else []
    return meta + [n for n in names if n not in meta]


def _primitive(avro_type: Any) -> bool:
    """Whether a field's Avro type (maybe a nullable union) is a primitive or logical type."""
    if isinstance(avro_type, list):
        kinds = [t for t in avro_type if t != "null"]
        return len(kinds) == 1 and _primitive(kinds[0])
    if isinstance(avro_type, dict):
        return avro_type.get("type") not in ("record", "array", "map", "enum") or "logicalType" in avro_type
    return avro_type in ("boolean", "int", "long", "float", "double", "bytes", "string")


def commit_records(metadata: CommitMetadata) -> list[MetadataRecord]:
    return commit_files_records(
        {p: list(stats or ()) for p, stats in metadata.partition_to_write_stats.items()}, operation_type=metadata.operation_type, partition_to_replace_file_ids=metadata.partition_to_replace_file_ids
    )


def clean_records(metadata: CleanMetadata) -> list[MetadataRecord]:
    record = metadata.to_record()
    return clean_files_records(record.get("partitionMetadata") or {})


def rollback_records(metadata: RollbackMetadata) -> list[MetadataRecord]:
    record = metadata.to_record()
    return rollback_files_records(record.get("partitionMetadata") or {})


def participant_for(timeline: Timeline) -> "CommitParticipant | None":
    """The participant of a data table whose ``hoodie.properties`` lists the ``files`` partition."""
    listed = set(timeline.config.metadata_partitions)
    if FILES.name not in listed:
        return None
    settings = _WRITER_INDEX_SETTINGS.get(timeline.storage.uri(), IndexSettings())
    settings = replace(settings, column_stats=COLUMN_STATS.name in listed, record_index=RECORD_INDEX.name in listed)
    return MetadataParticipant(MetadataTable(timeline.storage), settings)


def register() -> None:
    """Keep metadata tables in step on every transaction from now on."""
    register_participant_factory(participant_for)


__all__ = [
    "MetadataParticipant",
    "MetadataSettings",
    "MetadataTable",
    "MetadataWriteError",
    "EngineIndexWrite",
    "IndexLogWriter",
    "LogFileTarget",
    "WrittenIndexes",
    "write_record_index_log_file",
    "attach_written_indexes",
    "task_indexes",
    "list_data_files",
    "participant_for",
    "register",
]
