"""Scanning a file slice's log files: which blocks a reader applies, in order.

Mirrors Hudi's log record reader:

* files in log-file order, blocks in file order;
* data and delete blocks are admitted only if their instant completed and
  falls in the query's range (``admit``);
* a rollback command block removes the *earlier* queued blocks of its target
  instant and every earlier corrupt block;
* corrupt blocks are otherwise skipped; those that survive the scan and may
  hold records of an instant the query reads are reported (``SkippedBlock``,
  ``report_skipped_blocks``): Hudi logs "a corrupt block which was not rolled
  back" for the same blocks;
* blocks written by log compaction (``COMPACTED_BLOCK_TIMES``) replace the
  blocks of the instants they compacted.
"""

from __future__ import annotations

import logging
import mmap
import os
import posixpath
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import CorruptFileError
from ..storage.storage import Storage
from .log_format import BlockType, LogBlock, iter_blocks_ranged, read_log_file
from .naming import LogFile, parse_log_file

log = logging.getLogger("hudi_duck")


@dataclass(frozen=True)
class SkippedBlock:
    """A corrupt log block a scan skipped although a completed instant's records may be in it.

    Hudi's reader skips such a block too (and a rollback block removes the
    corrupt blocks before it, which then are not reported). A skipped block is
    reported when its instant is unknown (its header is unreadable) or is one
    the query reads; a corrupt block of a failed, uncommitted write loses
    nothing and is not reported.
    """

    file_path: str
    offset: int  # of the block's magic
    length: int  # bytes up to the next block (or the end of the file)
    instant: str | None  # from the block's own header, when readable
    file_instant: str | None  # the instant in the log file's name
    previous_instant: str | None  # instant of the nearest readable block before it in the file

    def describe(self) -> str:
        where = f"Hudi log file {self.file_path}: corrupt log block at offset {self.offset} ({self.length} bytes)"
        if self.instant:
            return f"{where} of instant {self.instant}"
        hints = []
        if self.file_instant:
            hints.append(f"the log file is named for instant {self.file_instant}")
        if self.previous_instant:
            hints.append(f"the block before it is of instant {self.previous_instant}")
        known = f"; {', '.join(hints)}" if hints else ""
        return f"{where} of an unknown instant (its header is unreadable{known})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "SkippedBlock":
        return cls(**{k: values.get(k) for k in cls.__dataclass_fields__})


@dataclass
class ScanResult:
    blocks: list[LogBlock] = field(default_factory=list)  # admitted data/delete blocks, oldest first
    corrupt_blocks: int = 0
    rollback_blocks: int = 0
    total_blocks: int = 0
    skipped: list[SkippedBlock] = field(default_factory=list)  # corrupt blocks to report


def read_blocks(
    storage: Storage,
    log_files: Iterable[LogFile],
    contents: Mapping[str, bytes] | None = None,
    unread: frozenset[BlockType] = frozenset(),
) -> Iterable[LogBlock]:
    """The blocks of ``log_files`` in Hudi's order; ``contents``: bytes already read, by path.

    With ``unread`` block types, files not in ``contents`` are read by ranges and the content
    of those blocks is left unread (a keyed lookup seeks inside it, ``LogBlock.content_reader``)."""
    for log in sorted(log_files, key=LogFile.sort_key):
        data = contents.get(log.path) if contents is not None else None
        if data is None and unread:
            yield from _ranged_blocks(storage, log, unread)
            continue
        yield from read_log_file(data if data is not None else _log_bytes(storage, log.path), storage.uri(log.path))


def _ranged_blocks(storage: Storage, log: LogFile, unread: frozenset[BlockType]) -> Iterable[LogBlock]:
    """The blocks of one log file framed by ranged reads through ``storage.read_range``."""
    path = log.path
    size = log.size if log.size >= 0 else storage.size(path)
    return iter_blocks_ranged(
        lambda start, end: storage.read_range(path, start, end),
        size,
        storage.uri(path),
        unread,
        lambda: storage.read(path),
    )


#: Local log files larger than this are memory-mapped (their data blocks are read by ranges).
MAP_MIN_BYTES = 1024 * 1024


def _log_bytes(storage: Storage, rel: str) -> "bytes | mmap.mmap":
    """A log file's bytes; a local file is memory-mapped, so data blocks are read by ranges
    (and their pages released, ``log_blocks.iter_data_block``) instead of held whole."""
    if storage.is_local:
        try:
            with open(storage.abs(rel), "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > MAP_MIN_BYTES:
                    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                if size:  # a small file is cheaper read than mapped (and is held whole anyway)
                    return handle.read()
        except (OSError, ValueError):  # not mappable: storage reads it (and names a missing file)
            return storage.read(rel)
    return storage.read(rel)


def scan_blocks(blocks: Iterable[LogBlock], admit: Callable[[str], bool]) -> ScanResult:
    """Apply Hudi's block selection rules to blocks in read order.

    ``skipped`` lists the corrupt blocks no later rollback block removed, unless
    their (salvaged) header names an instant ``admit`` refuses.
    """
    result = ScanResult()
    queue: list[LogBlock] = []
    compacted = False
    previous: dict[str, str | None] = {}  # per file: instant of the last readable block
    for block in blocks:
        result.total_blocks += 1
        kind = block.block_type
        if kind is BlockType.CORRUPT_BLOCK:
            result.corrupt_blocks += 1
            queue.append(block)
            if block.instant_time is None or admit(block.instant_time):
                result.skipped.append(_skipped(block, previous.get(block.file_path)))
            continue
        if kind is BlockType.COMMAND_BLOCK:
            if block.is_rollback:
                result.rollback_blocks += 1
                target = block.target_instant_time
                queue = [
                    b
                    for b in queue
                    if b.block_type is not BlockType.CORRUPT_BLOCK and b.instant_time != target
                ]
                result.skipped = []  # every earlier corrupt block is rolled back
            continue
        if kind is BlockType.CDC_DATA_BLOCK:
            continue  # change-data-capture blocks do not hold table rows
        instant = block.instant_time
        previous[block.file_path] = instant or previous.get(block.file_path)
        if instant is None or not admit(instant):
            continue
        if block.compacted_block_times:
            compacted = True
        queue.append(block)
    queue = [b for b in queue if b.block_type is not BlockType.CORRUPT_BLOCK]
    result.blocks = _resolve_log_compaction(queue) if compacted else queue
    return result


def _skipped(block: LogBlock, previous_instant: str | None) -> SkippedBlock:
    parsed = parse_log_file("", posixpath.basename(block.file_path))
    return SkippedBlock(
        block.file_path,
        block.offset,
        block.length,
        block.instant_time,
        parsed.instant_time if parsed else None,
        previous_instant,
    )


_reported_files: set[str] = set()
_reported_lock = threading.Lock()


def report_skipped_blocks(skipped: Iterable[SkippedBlock], strict: bool = False) -> None:
    """Warn about skipped corrupt blocks, once per log file per process, or fail when ``strict``.

    The warning goes to the ``hudi_duck`` logger at WARNING level, which
    Python prints on stderr even when logging is not configured.
    """
    by_file: dict[str, list[SkippedBlock]] = {}
    for block in skipped:
        by_file.setdefault(block.file_path, []).append(block)
    for file_path, blocks in by_file.items():
        if strict:
            raise CorruptFileError(
                f"{_describe(blocks)}: the records it holds would be missing from the result. "
                "Read with strict := false (Python: strict=False) to skip it as Apache Hudi does, "
                "or roll back that instant (or restore a savepoint) to repair the table"
            )
        with _reported_lock:
            if file_path in _reported_files:
                continue
            _reported_files.add(file_path)
        log.warning(
            "%s was skipped, as Apache Hudi's reader does: the records it holds are missing from the result. "
            "Read with strict := true (Python: strict=True) to fail instead; roll back that instant "
            "(or restore a savepoint) to repair the table",
            _describe(blocks),
        )


def _describe(blocks: list[SkippedBlock]) -> str:
    """The first skipped block of a file, and how many more the file has."""
    text = blocks[0].describe()
    if len(blocks) > 1:
        offsets = ", ".join(str(b.offset) for b in blocks[1:])
        text += f" (and {len(blocks) - 1} more corrupt blocks in this file, at offsets {offsets})"
    return text


def _resolve_log_compaction(blocks: list[LogBlock]) -> list[LogBlock]:
    """Replace blocks of compacted instants by the log-compacted blocks.

    Each compacted group stands at the position of the newest instant it
    replaces; compactions of compactions resolve transitively.
    """
    by_instant: dict[str, list[LogBlock]] = {}
    order: list[str] = []
    for block in blocks:
        instant = block.instant_time or ""
        if instant not in by_instant:
            by_instant[instant] = []
            order.append(instant)
        by_instant[instant].append(block)
    replaced_by: dict[str, str] = {}
    for instant in order:
        for source in by_instant[instant][0].compacted_block_times:
            replaced_by[source] = instant

    def final(instant: str) -> str:
        seen = set()
        while instant in replaced_by and instant not in seen:
            seen.add(instant)
            instant = replaced_by[instant]
        return instant

    # each surviving group sits at the position of the newest instant it stands for
    finals = {instant: final(instant) for instant in order}
    has_sources = {t for i, t in finals.items() if i != t}
    position: dict[str, int] = {}
    for index, instant in enumerate(order):
        target = finals[instant]
        if instant == target and target in has_sources:
            continue  # a compacted group takes the place of its newest source
        position[target] = max(position.get(target, -1), index)
    survivors = sorted(position, key=position.__getitem__)
    return [block for instant in survivors for block in by_instant[instant]]


def scan_slice_logs(
    storage: Storage,
    log_files: Iterable[LogFile],
    admit: Callable[[str], bool],
    contents: Mapping[str, bytes] | None = None,
    unread: frozenset[BlockType] = frozenset(),
) -> ScanResult:
    """``unread``: block types whose content the caller reads by ranges itself (:func:`read_blocks`)."""
    return scan_blocks(read_blocks(storage, log_files, contents, unread), admit)


def rolled_back_positions(blocks: Sequence[LogBlock]) -> set[int]:
    """Positions (in read order) of the data and delete blocks a *later* rollback command
    block of the same file group undoes: the blocks readers drop for that reason."""
    targets: set[str] = set()
    out: set[int] = set()
    for position in range(len(blocks) - 1, -1, -1):
        block = blocks[position]
        if block.is_rollback:
            if block.target_instant_time:
                targets.add(block.target_instant_time)
        elif block.block_type not in (BlockType.COMMAND_BLOCK, BlockType.CORRUPT_BLOCK) and block.instant_time in targets:
            out.add(position)
    return out
