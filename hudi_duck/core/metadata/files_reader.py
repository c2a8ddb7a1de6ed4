"""The ``files`` partition of a metadata table read back as a file listing.

As ``HoodieBackedTableMetadata`` does: take the latest file slice of the
``files`` file group (its base HFile counts once the metadata table committed
it), apply the log blocks of delta commits that are *valid* — completed on the
metadata table and not pending on the data table (the metadata table is
written before the data table commits, so a block of a failed data commit must
not count), plus instants a completed rollback or restore undid — merge the log records first and then
with the base records (:func:`records.combine`), and read the listing off the
``__all_partitions__`` record and one record per partition.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Mapping

from ..config.table_config import TableConfig
from ..errors import HudiError
from ..file_group.log_blocks import decode_delete_block
from ..file_group.log_format import BlockType, LogBlock
from ..file_group.log_scanner import scan_slice_logs
from ..file_group.naming import BaseFile
from ..hfile.reader import open_hfile
from ..hfile.seek import SeekableHFile
from ..storage import kept
from ..storage.storage import Storage
from ..table.fs_view import FileSystemView
from ..timeline.active import Timeline
from ..timeline.instant import Action, State
from .layout import FILES, METADATA_FOLDER, SOLO_COMMIT_TIMESTAMP
from .records import (
    PARTITION_LIST_KEY,
    MetadataRecord,
    RecordType,
    combine,
    decode_values,
    partition_path_of,
)


log = logging.getLogger("hudi_duck")


class MetadataTableError(HudiError):
    """A metadata table that is missing or cannot answer."""


@dataclass(frozen=True)
class FilesListing:
    """Partition path ("" for a non-partitioned table) -> (file name, size), sorted by name."""

    partitions: dict[str, list[tuple[str, int]]]
    #: delta commits of the metadata table whose blocks were applied
    applied_instants: tuple[str, ...] = ()


def has_metadata_table(storage: Storage) -> bool:
    """Whether the table at ``storage`` has a metadata table with a ``files`` partition."""
    return storage.exists(f"{METADATA_FOLDER}/.hoodie/hoodie.properties") and storage.is_dir(
        f"{METADATA_FOLDER}/{FILES.name}"
    )


def _rolled_back_instants(timeline: Timeline, after: str) -> set[str]:
    """Instants undone by completed rollbacks and restores later than ``after``."""
    out: set[str] = set()
    for instant in timeline.completed([Action.ROLLBACK, Action.RESTORE]):
        if instant.requested_time <= after:
            continue
        details = timeline.avro_details(instant.requested_time, State.COMPLETED) or {}
        if instant.action == Action.ROLLBACK:
            out.update(details.get("commitsRollback") or [])
        else:
            for rollbacks in (details.get("hoodieRestoreMetadata") or {}).values():
                for rollback in rollbacks or []:
                    out.update((rollback or {}).get("commitsRollback") or [])
    return out


def valid_instant_times(data_timeline: Timeline, metadata_timeline: Timeline) -> set[str]:
    """``HoodieTableMetadataUtil.getValidInstantTimestamps``: instants whose log blocks count.

    The data table's completed instants; every completed delta commit of the metadata
    table whose instant is not pending on the data table (the metadata table commits
    first: a write that failed afterwards stays pending there), which covers the metadata
    table's own instants (initialization, indexing, log compaction, the suffixed instants
    of table version 6); instants completed rollbacks and restores undid; the metadata
    table's rollbacks and restores and its bootstrap delta commits (``00000000000000...``).
    """
    valid = {i.requested_time for i in data_timeline.completed()}
    pending = {i.requested_time for i in data_timeline.pending()}
    for instant in metadata_timeline.completed():
        time = instant.requested_time
        if instant.action == Action.DELTA_COMMIT and time not in pending:
            valid.add(time)
        if instant.action in (Action.ROLLBACK, Action.RESTORE):
            valid.add(time)
        if instant.action == Action.DELTA_COMMIT and time.startswith(SOLO_COMMIT_TIMESTAMP):
            valid.add(time)
    earliest = min(valid) if valid else SOLO_COMMIT_TIMESTAMP
    valid |= _rolled_back_instants(data_timeline, earliest)
    return valid


def _merge_into(state: dict[str, MetadataRecord | None], record: MetadataRecord, java_order: bool) -> None:
    older = state.get(record.key)
    state[record.key] = record if older is None else combine(older, record, java_order)


def _wanted(key: str, key_prefixes: tuple[str, ...] | None) -> bool:
    return key_prefixes is None or key.startswith(key_prefixes)


def _wanted_cells(
    hfile: SeekableHFile, key_prefixes: tuple[str, ...] | None, exact: frozenset[bytes] | None
) -> list[tuple[bytes, bytes]]:
    """The cells of ``hfile`` that are one of ``exact``, or start with one of ``key_prefixes``:
    Hudi's point lookup of record keys and its prefix lookup of column stats, reading only
    the blocks the block index says can hold them."""
    if exact is not None:
        return hfile.get(exact)
    assert key_prefixes is not None
    return hfile.with_prefixes(p.encode("utf-8") for p in key_prefixes)


#: Log blocks a keyed read leaves unread on framing: it seeks by key inside their HFile.
_SEEKED_BLOCKS = frozenset({BlockType.HFILE_DATA_BLOCK})


def _block_hfile(block: LogBlock, source: str) -> SeekableHFile:
    """The HFile of an ``HFILE_DATA_BLOCK``: over ranged reads of the log file when its content
    was left unread (only the trailer, index and wanted data blocks are read), else in memory."""
    if block.content_reader is not None:
        return SeekableHFile(block.content_reader, block.content_size, source)
    return SeekableHFile.of_bytes(block.content, source)


class MetadataTable:
    """A data table's metadata table opened for reading (``HoodieBackedTableMetadata``).

    Its own file system view lists only ``.hoodie/metadata/<partition>``
    folders; a log block counts when its instant completed on the metadata
    timeline and is valid for the data table (:func:`valid_instant_times`).
    """

    def __init__(self, storage: Storage, data_timeline: Timeline | None = None):
        if not has_metadata_table(storage):
            raise MetadataTableError(
                f"{storage.uri()}: no metadata table (expected {METADATA_FOLDER}/{FILES.name}); "
                "list the table's storage instead (hoodie.metadata.enable=false)"
            )
        if data_timeline is None:
            data_timeline = Timeline.load(storage, TableConfig.load(storage))
        self.storage = storage
        self.data_timeline = data_timeline
        self.mdt_storage = storage.child(METADATA_FOLDER)
        self.config = TableConfig.load(self.mdt_storage)

    # (read when first needed: a plan whose listing was kept needs none of them)
    @cached_property
    def timeline(self) -> Timeline:
        """The metadata table's own timeline."""
        return Timeline.load(self.mdt_storage, self.config)

    @cached_property
    def view(self) -> FileSystemView:
        return FileSystemView(self.mdt_storage, self.config, self.timeline)

    @cached_property
    def valid(self) -> set[str]:
        """Instants whose log blocks count (:func:`valid_instant_times`)."""
        return valid_instant_times(self.data_timeline, self.timeline)

    def _admit(self, instant: str) -> bool:
        return instant in self.valid and self.view.is_committed(instant)

    def records(
        self, partition: str, key_prefixes: Iterable[str] | None = None, *, required: bool = True
    ) -> tuple[dict[str, MetadataRecord], tuple[str, ...]]:
        """Key -> merged record of one metadata partition (latest slice of each file group);
        ``key_prefixes`` keeps the keys starting with one of them. A partition without
        file slices fails when ``required`` (Hudi checks the same) and is empty otherwise."""
        prefixes = tuple(key_prefixes) if key_prefixes is not None else None
        return self._records_of(self._partition_slices(partition, required), prefixes)

    def _partition_slices(self, partition: str, required: bool) -> list:
        slices = self.view.latest_slices(partitions=[partition])
        if not slices and required:
            raise MetadataTableError(
                f"{self.mdt_storage.uri(partition)}: metadata table partition {partition!r} has no file slices; "
                "the metadata table is incomplete: rebuild it, or read with hoodie.metadata.enable=false"
            )
        return slices

    def _records_of(
        self, slices: list, prefixes: tuple[str, ...] | None, contents: Mapping[str, bytes] | None = None
    ) -> tuple[dict[str, MetadataRecord], tuple[str, ...]]:
        result: dict[str, MetadataRecord] = {}
        applied: set[str] = set()
        for file_slice in slices:
            result.update(self._slice_records(file_slice, prefixes, applied, java_order=False, contents=contents))
        return result, tuple(sorted(applied))

    def slice_records(self, file_slice, exact_keys: Iterable[str]) -> dict[str, MetadataRecord]:
        """Merged records of one file slice whose keys are among ``exact_keys``."""
        wanted = frozenset(k.encode("utf-8") for k in exact_keys)
        return self._slice_records(file_slice, None, set(), wanted)

    def _slice_records(
        self,
        file_slice,
        prefixes: tuple[str, ...] | None,
        applied: set[str],
        exact: frozenset[bytes] | None = None,
        java_order: bool = True,
        contents: Mapping[str, bytes] | None = None,
    ) -> dict[str, MetadataRecord]:
        """Merged records of one slice; ``java_order`` false: their file maps in any order
        (a reader's; a writer that encodes them again keeps Java's order); ``contents``:
        the slice's files already read, by path."""
        base: dict[str, MetadataRecord] = {}
        storage = self.mdt_storage
        if file_slice.base_file is not None:
            cells, schema_json, source = self._base_cells(file_slice.base_file, prefixes, exact, contents)
            if not schema_json:
                raise MetadataTableError(f"{source}: metadata base file has no writer schema")
            base = {r.key: r for r in decode_values(cells, schema_json, source)}
        logs: dict[str, MetadataRecord | None] = {}
        keyed = prefixes is not None or exact is not None
        unread = _SEEKED_BLOCKS if keyed else frozenset()
        for block in scan_slice_logs(storage, file_slice.log_files, self._admit, contents, unread).blocks:
            source = f"{block.file_path}@{block.offset}"
            applied.add(block.instant_time or "")
            if block.block_type is BlockType.DELETE_BLOCK:
                for deleted in decode_delete_block(block):
                    if _wanted(deleted.record_key, prefixes) and (exact is None or deleted.record_key.encode("utf-8") in exact):
                        logs[deleted.record_key] = None
                continue
            if block.block_type is not BlockType.HFILE_DATA_BLOCK or not block.schema:
                raise MetadataTableError(f"{source}: metadata log block is {block.block_type.name}, expected an HFile data block")
            if prefixes is None and exact is None:
                cells = open_hfile(block.content, source).cells
            else:
                cells = _wanted_cells(_block_hfile(block, source), prefixes, exact)
            for record in decode_values(cells, block.schema, source):
                if logs.get(record.key) is None:
                    logs[record.key] = record
                else:
                    _merge_into(logs, record, java_order)  # type: ignore[arg-type]
        for key, record in logs.items():
            if record is None:
                base.pop(key, None)
            elif key in base:
                base[key] = combine(base[key], record, java_order)
            else:
                base[key] = record
        return base

    def _base_cells(
        self,
        base_file: BaseFile,
        prefixes: tuple[str, ...] | None,
        exact: frozenset[bytes] | None,
        contents: Mapping[str, bytes] | None = None,
    ) -> tuple[list[tuple[bytes, bytes]], str | None, str]:
        """(cells, writer schema, source) of a base HFile: all of it, or only the blocks that
        can hold the wanted keys (range reads)."""
        storage = self.mdt_storage
        path = base_file.path
        source = storage.uri(path)
        if prefixes is None and exact is None:
            data = contents.get(path) if contents is not None else None
            hfile = open_hfile(data if data is not None else storage.read(path), source)
            return hfile.cells, hfile.schema_json, source
        size = base_file.size if base_file.size > 0 else storage.size(path)
        seekable = SeekableHFile(lambda start, end: storage.read_range(path, start, end), size, source)
        return _wanted_cells(seekable, prefixes, exact), seekable.schema_json, source

    def files_listing(self) -> FilesListing:
        """The live files of every data partition, from the ``files`` partition.

        Kept for the process by what decides it: the bytes of the partition's latest
        slices and the instants whose blocks count (a query plans on a freshly opened
        table every time; an unchanged metadata table is decoded once). On local storage
        it is known without reading the metadata table's timeline (:meth:`_kept_key`) and
        kept for later processes too."""
        kept_key = self._kept_key()
        if kept_key is not None:
            return self._kept_files_listing(*kept_key)
        slices = self._partition_slices(FILES.name, True)
        storage = self.mdt_storage
        contents = {f.path: storage.read(f.path) for s in slices for f in _files_of(s)}
        size = sum(map(len, contents.values()))
        if not _LISTINGS.fits(size):
            return self._files_listing(slices, contents)
        cache_key = (storage.uri(), tuple(sorted(contents.items())), frozenset(self.valid), self.view.committed)
        found = _LISTINGS.get(cache_key)
        if found is None:
            found = _LISTINGS.put(cache_key, self._files_listing(slices, contents), size)
        return found

    def _kept_key(self) -> tuple[bytes, int] | None:
        """What decides the listing of a local metadata table, as a digest, and the bytes of the
        ``files`` partition's files (None: not local, or a file gone meanwhile), read without parsing the metadata table's timeline: the names
        of its timeline files (timeline files are written once: the names say which instants
        completed, are pending, were compacted or rolled back), each file of the ``files``
        partition by its ``stat`` signature (which slices are latest follows from these), and
        what the data table's timeline says of each instant, with the ``stat`` signatures of
        its rollbacks and restores (whose contents name instants that count)."""
        if not self.mdt_storage.is_local:
            return None
        names = self.mdt_storage.file_names(self.config.timeline_path)
        files = []
        try:
            for name in self.mdt_storage.file_names(FILES.name):
                files.append((name, *self.mdt_storage.signature(f"{FILES.name}/{name}")))
        except OSError:
            return None
        data = self.data_timeline
        instants = [(g.requested_time, g.latest.action, g.latest.state.value) for g in data.instant_groups()]
        undoing = data.commit_signatures(data.completed([Action.ROLLBACK, Action.RESTORE]))
        if undoing is None:
            return None
        key = kept_listing_key(self.mdt_storage.uri(), names, files, instants, undoing)
        return key, sum(f[3] for f in files)

    def _kept_files_listing(self, key: bytes, size: int) -> FilesListing:
        found = _LISTINGS.get(key)
        if found is not None:
            return found
        storage = self.mdt_storage
        folder = storage.uri(FILES.name)
        found = _load_kept_listing(folder, key)
        if found is None:
            slices = self._partition_slices(FILES.name, True)
            contents = {f.path: storage.read(f.path) for s in slices for f in _files_of(s)}
            found = self._files_listing(slices, contents)
            again = self._kept_key()
            if again is None or again[0] != key:
                return found  # (changed while it was read: kept by neither key)
            _keep_listing(folder, key, found)
        if _LISTINGS.fits(size):
            _LISTINGS.put(key, found, size)
        return found

    def _files_listing(self, slices: list, contents: Mapping[str, bytes]) -> FilesListing:
        records, applied = self._records_of(slices, None, contents)
        partition_list = records.get(PARTITION_LIST_KEY)
        names: Iterable[str] = partition_list.live_files() if partition_list is not None else ()
        out: dict[str, list[tuple[str, int]]] = {}
        for identifier in sorted(names):
            record = records.get(identifier)
            files = record.live_files() if record is not None and record.type is RecordType.FILE_LIST else {}
            out[partition_path_of(identifier)] = sorted(files.items())
        return FilesListing(out, applied)


def _files_of(file_slice) -> list:
    return ([file_slice.base_file] if file_slice.base_file is not None else []) + list(file_slice.log_files)


# -- the listing kept across processes ------------------------------------------------------------

#: The kind of bytes :mod:`~hudi_duck.core.storage.kept` keeps for a ``files`` partition folder.
KEPT_KIND = "metadata-files-listing"
#: Bumped whenever the shape of a kept listing or what its key covers changes.
KEPT_FORMAT = 2


def kept_listing_key(uri: str, *parts: object) -> bytes:
    """The digest a listing is kept by: the metadata table and what decides its listing
    (see ``MetadataTable._kept_key``)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (KEPT_FORMAT, uri, *parts):
        h.update(repr(part).encode())
        h.update(b"\n")
    return h.digest()


def _load_kept_listing(folder: str, key: bytes) -> FilesListing | None:
    """The listing an earlier process kept under ``key`` (None: none, another key, or damaged)."""
    import msgspec

    data = kept.load(KEPT_KIND, folder)
    if not data:
        return None
    try:
        fmt, found_key, partitions, applied = msgspec.msgpack.decode(
            data, type=tuple[int, bytes, list[tuple[str, list[tuple[str, int]]]], list[str]]
        )
    except (msgspec.MsgspecError, ValueError, TypeError) as exc:
        log.debug("ignoring a damaged kept files listing of %s: %s", folder, exc)
        return None
    if fmt != KEPT_FORMAT or found_key != key:
        return None
    return FilesListing(dict(partitions), tuple(applied))


def _keep_listing(folder: str, key: bytes, listing: FilesListing) -> None:
    import msgspec

    kept.save_later(
        KEPT_KIND,
        folder,
        lambda: msgspec.msgpack.encode((KEPT_FORMAT, key, list(listing.partitions.items()), list(listing.applied_instants))),
    )


class _ListingCache:
    """Files listings of this process by their key, the least recently used dropped past a
    byte budget (the bytes of the files the keys hold)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: "OrderedDict[tuple, tuple[FilesListing, int]]" = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> FilesListing | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def fits(self, size: int) -> bool:
        """Whether a listing of files of ``size`` bytes is kept (a quarter of the budget at most)."""
        return size <= self.max_bytes // 4

    def put(self, key: tuple, listing: FilesListing, size: int) -> FilesListing:
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (listing, size)
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._bytes -= dropped
        return listing

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


_LISTINGS = _ListingCache(64 << 20)


class MetadataListing:
    """Partitions and files of the data table as the metadata table's ``files`` partition
    lists them: planning a read lists no data folder."""

    source = "metadata"

    def __init__(self, metadata_table: MetadataTable):
        self.metadata_table = metadata_table

    @cached_property
    def listing(self) -> FilesListing:
        return self.metadata_table.files_listing()

    def partitions(self) -> list[str]:
        return list(self.listing.partitions)

    def files(self, partition: str) -> list[tuple[str, int]]:
        return list(self.listing.partitions.get(partition, ()))


def merged_records(storage: Storage, partition: str = FILES.name) -> tuple[dict[str, MetadataRecord], tuple[str, ...]]:
    """Key -> merged record of one metadata partition (latest slice of each file group)."""
    return MetadataTable(storage).records(partition)


def files_listing(storage: Storage) -> FilesListing:
    """The live files of every partition according to the metadata table's ``files`` partition."""
    return MetadataTable(storage).files_listing()


__all__ = ["FilesListing", "MetadataListing", "MetadataTable", "MetadataTableError", "files_listing", "has_metadata_table", "merged_records", "valid_instant_times"]
