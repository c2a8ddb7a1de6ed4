"""Scanning a file slice's log files: which blocks a reader applies, in order.

Mirrors Hudi's log record reader:

* files in log-file order, blocks in file order;
* data and delete blocks are admitted only if their instant completed and
  falls in the query's range (``admit``);
* a rollback command block removes the *earlier* queued blocks of its target
  instant and every earlier corrupt block;
* corrupt blocks are otherwise ignored;
* blocks written by log compaction (``COMPACTED_BLOCK_TIMES``) replace the
  blocks of the instants they compacted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from .file_naming import LogFile
from .log_format import BlockType, LogBlock, read_log_file
from .storage import Storage


@dataclass
class ScanResult:
    blocks: list[LogBlock] = field(default_factory=list)  # admitted data/delete blocks, oldest first
    corrupt_blocks: int = 0
    rollback_blocks: int = 0
    total_blocks: int = 0


def read_blocks(storage: Storage, log_files: Iterable[LogFile]) -> Iterable[LogBlock]:
    for log in sorted(log_files, key=LogFile.sort_key):
        data = storage.read(log.path)
        yield from read_log_file(data, storage.uri(log.path))


def scan_blocks(blocks: Iterable[LogBlock], admit: Callable[[str], bool]) -> ScanResult:
    """Apply Hudi's block selection rules to blocks in read order."""
    result = ScanResult()
    queue: list[LogBlock] = []
    compacted = False
    for block in blocks:
        result.total_blocks += 1
        kind = block.block_type
        if kind is BlockType.CORRUPT_BLOCK:
            result.corrupt_blocks += 1
            queue.append(block)
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
            continue
        if kind is BlockType.CDC_DATA_BLOCK:
            continue  # change-data-capture blocks do not hold table rows
        instant = block.instant_time
        if instant is None or not admit(instant):
            continue
        if block.compacted_block_times:
            compacted = True
        queue.append(block)
    queue = [b for b in queue if b.block_type is not BlockType.CORRUPT_BLOCK]
    result.blocks = _resolve_log_compaction(queue) if compacted else queue
    return result


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


def scan_slice_logs(storage: Storage, log_files: Iterable[LogFile], admit: Callable[[str], bool]) -> ScanResult:
    return scan_blocks(read_blocks(storage, log_files), admit)


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
