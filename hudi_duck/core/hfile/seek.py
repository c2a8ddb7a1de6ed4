"""Key and key-prefix lookups in an HFile that read only the blocks able to hold the keys.

A lookup of a few record keys in a metadata-table partition must not cost a read of the
whole file group: like HBase's and Hudi's HFile readers, :class:`SeekableHFile` reads the
trailer and the load-on-open section (root data index, meta index, file info) from the
end of the file, descends the block index (the root, then the intermediate and leaf
index blocks of a multi-level index) to the data blocks whose key range can hold a
wanted row, and reads only those byte ranges (adjacent ones in one request). Every
block read is checked as :func:`reader.read_block` checks it (magic, sizes, checksums).

Block ``i`` of an index level holds the rows from its entry's row up to, not including,
the next entry's row: HBase's writer never splits equal keys across data blocks and puts
an index key above the previous block's last key (Hudi's readers rely on the same).
Like Hudi's reader only rows are compared, so an index key may be a full cell key or
just the row (Hudi's own writer). The format rules live in :mod:`.reader`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import CorruptFileError, UnsupportedFeatureError
from .reader import (
    DATA_MAGIC,
    ENCODED_DATA_MAGIC,
    SCHEMA_KEY,
    TRAILER_SIZE,
    CellLayout,
    HFileBlock,
    HFileTrailer,
    IndexEntry,
    cell_layout,
    check_load_on_open,
    corrupt_file_errors,
    key_row,
    parse_cells,
    parse_non_root_index,
    parse_root_index,
    parse_trailer,
    read_block,
    read_file_info,
)

#: Reads bytes ``[start, end)`` of the file (a ranged GET on object stores).
RangeRead = Callable[[int, int], bytes]

#: Bytes read from the end of the file on open: the trailer and, in the same request, the
#: load-on-open section of a metadata-table HFile (its file info holds the ~9 KiB writer schema).
TAIL_READ_SIZE = 64 * 1024

ROOT_INDEX_MAGIC = b"IDXROOT2"
INTERMEDIATE_INDEX_MAGIC = b"IDXINTE2"
LEAF_INDEX_MAGIC = b"IDXLEAF2"
LAST_KEY = b"hfile.LASTKEY"
#: HBase's writer stops at 16 data index levels: a trailer giving more is damaged.
MAX_INDEX_LEVELS = 16


@dataclass(frozen=True)
class KeyRange:
    """Rows ``low <= row < high`` (``high`` None: no upper bound)."""

    low: bytes
    high: bytes | None

    @staticmethod
    def exact(row: bytes) -> KeyRange:
        return KeyRange(row, row + b"\x00")

    @staticmethod
    def prefix(prefix: bytes) -> KeyRange:
        """Every row starting with ``prefix``."""
        stripped = prefix.rstrip(b"\xff")
        if not stripped:
            return KeyRange(prefix, None)
        return KeyRange(prefix, stripped[:-1] + bytes([stripped[-1] + 1]))


class SeekableHFile:
    """An HFile opened for lookups: trailer, file info and root index in memory, data
    blocks read on demand through ``read``."""

    def __init__(self, read: RangeRead, size: int, source: str = ""):
        self.source = source
        self.name = source or "HFile"
        self.size = size
        self._read = read
        self._memstore_ts: bool | None = None
        with corrupt_file_errors(source):
            self._open()

    @classmethod
    def of_bytes(cls, data: bytes, source: str = "") -> SeekableHFile:
        """An HFile already in memory (the content of an ``HFILE_DATA_BLOCK``)."""
        view = memoryview(data)
        return cls(lambda start, end: view[start:end], len(data), source)

    # -- open --------------------------------------------------------------------------

    def _open(self) -> None:
        tail_start = max(0, self.size - TAIL_READ_SIZE)
        tail = self._read_exact(tail_start, self.size)
        trailer = parse_trailer(tail, self.source)
        check_load_on_open(trailer, self.size, self.name)
        if trailer.load_on_open_offset < tail_start:
            tail = self._read_exact(trailer.load_on_open_offset, tail_start) + tail
            tail_start = trailer.load_on_open_offset
        self.trailer: HFileTrailer = trailer
        self.file_info: dict[bytes, bytes] = read_file_info(tail, trailer, self.source, tail_start)
        self._root: list[IndexEntry] = []
        self._last_row: bytes | None = None
        if trailer.entry_count == 0:
            return
        self._layout: CellLayout = cell_layout(self.file_info, self.name)
        levels = trailer.num_data_index_levels
        if not 1 <= levels <= MAX_INDEX_LEVELS:
            raise CorruptFileError(f"{self.name}: HFile trailer gives {levels} data index levels")
        root = read_block(
            tail, trailer.load_on_open_offset - tail_start, len(tail) - TRAILER_SIZE,
            trailer.compression_codec, self.source, tail_start,
        )
        if root.magic != ROOT_INDEX_MAGIC:
            raise CorruptFileError(
                f"{self.name}: HFile load-on-open section starts with {root.magic!r}, not the root data index"
            )
        self._root = self._checked(parse_root_index(root.payload, trailer.data_index_count, self.name), "root")
        if not self._root:
            raise CorruptFileError(
                f"{self.name}: HFile trailer counts {trailer.entry_count} cells but its data index is empty"
            )
        if LAST_KEY in self.file_info:
            self._last_row = key_row(self.file_info[LAST_KEY], self.name)

    def _read_exact(self, start: int, end: int) -> bytes:
        data = bytes(self._read(start, end))
        if len(data) != end - start:
            raise CorruptFileError(
                f"{self.name}: read {len(data)} bytes at {start}, expected {end - start} (file shorter than listed?)"
            )
        return data

    def _checked(self, entries: list[IndexEntry], level: str) -> list[IndexEntry]:
        """Entries must point before the load-on-open section and come in row order."""
        limit = self.trailer.load_on_open_offset
        for entry in entries:
            if entry.offset < 0 or entry.size <= 0 or entry.offset + entry.size > limit:
                raise CorruptFileError(
                    f"{self.name}: HFile {level} index entry points at bytes {entry.offset}..{entry.offset + entry.size}, "
                    f"outside the data section (0..{limit})"
                )
        for before, after in zip(entries, entries[1:]):
            if before.row > after.row:
                raise CorruptFileError(f"{self.name}: HFile {level} index keys are out of order")
        return entries

    @property
    def schema_json(self) -> str | None:
        """The Avro writer schema Hudi stores in the file info of HFile base files."""
        raw = self.file_info.get(SCHEMA_KEY)
        return raw.decode("utf-8") if raw is not None else None

    # -- lookups -----------------------------------------------------------------------

    def get(self, rows: Iterable[bytes]) -> list[tuple[bytes, bytes]]:
        """The cells whose row is one of ``rows``, in file order."""
        wanted = frozenset(bytes(r) for r in rows)
        return self.cells_in([KeyRange.exact(r) for r in sorted(wanted)], wanted)

    def with_prefixes(self, prefixes: Iterable[bytes]) -> list[tuple[bytes, bytes]]:
        """The cells whose row starts with one of ``prefixes``, in file order."""
        wanted = tuple(bytes(p) for p in prefixes)
        if not wanted:
            return []
        cells = self.cells_in([KeyRange.prefix(p) for p in wanted])
        return [cell for cell in cells if cell[0].startswith(wanted)]

    def cells_in(self, ranges: Sequence[KeyRange], rows: frozenset[bytes] | None = None) -> list[tuple[bytes, bytes]]:
        """The cells of the data blocks that can hold a row of ``ranges`` (those whose row is
        in ``rows`` when given; else callers filter)."""
        with corrupt_file_errors(self.source):
            blocks = self.data_blocks(ranges)
            cells: list[tuple[bytes, bytes]] = []
            for block in self._read_blocks(blocks, DATA_MAGIC):
                cells.extend(self._cells(block, rows))
            return cells

    def data_blocks(self, ranges: Sequence[KeyRange]) -> list[IndexEntry]:
        """Index entries of the data blocks that can hold a row of ``ranges``, in file order."""
        with corrupt_file_errors(self.source):
            if self._last_row is not None:
                ranges = [r for r in ranges if r.low <= self._last_row]
            if not self._root or not ranges:
                return []
            found = self._descend(self._root, None, self.trailer.num_data_index_levels - 1, ranges)
            return sorted({e.offset: e for e in found}.values(), key=lambda e: e.offset)

    # -- internals ---------------------------------------------------------------------

    def _descend(
        self, entries: list[IndexEntry], high: bytes | None, levels_below: int, ranges: Sequence[KeyRange]
    ) -> list[IndexEntry]:
        """Entries under ``entries`` (one index block, covering rows below ``high``) that can
        hold a row of ``ranges``."""
        picked = _covering(entries, high, ranges)
        if levels_below == 0:
            return [entries[i] for i in picked]
        magic = INTERMEDIATE_INDEX_MAGIC if levels_below > 1 else LEAF_INDEX_MAGIC
        children = self._read_blocks([entries[i] for i in picked], magic)
        out: list[IndexEntry] = []
        for i, block in zip(picked, children):
            child_high = entries[i + 1].row if i + 1 < len(entries) else high
            level = "intermediate" if levels_below > 1 else "leaf"
            child = self._checked(parse_non_root_index(block.payload, self.name), level)
            if not child:
                raise CorruptFileError(f"{self.name}: HFile {level} index block at {block.offset} is empty")
            out.extend(self._descend(child, child_high, levels_below - 1, ranges))
        return out

    def _read_blocks(self, entries: list[IndexEntry], magic: bytes) -> list[HFileBlock]:
        """The blocks of ``entries`` (in their order), adjacent ones read in one request."""
        by_offset: dict[int, HFileBlock] = {}
        ordered = sorted({e.offset: e for e in entries}.values(), key=lambda e: e.offset)
        runs: list[list[IndexEntry]] = []
        for entry in ordered:
            if runs and entry.offset == runs[-1][-1].offset + runs[-1][-1].size:
                runs[-1].append(entry)
            else:
                runs.append([entry])
        for run in runs:
            start, end = run[0].offset, run[-1].offset + run[-1].size
            data = self._read_exact(start, end)
            for member in run:
                by_offset[member.offset] = self._block(data, member, start, magic)
        return [by_offset[e.offset] for e in entries]

    def _block(self, data: bytes, entry: IndexEntry, base: int, magic: bytes) -> HFileBlock:
        at = entry.offset - base
        block = read_block(data, at, at + entry.size, self.trailer.compression_codec, self.source, base)
        if block.magic == ENCODED_DATA_MAGIC:
            raise UnsupportedFeatureError(f"{self.name}: encoded HFile data blocks are not supported")
        if block.magic != magic:
            raise CorruptFileError(
                f"{self.name}: HFile index points at a {block.magic!r} block at {entry.offset}, expected {magic!r}"
            )
        if block.next_offset != entry.offset + entry.size:
            raise CorruptFileError(
                f"{self.name}: HFile block at {entry.offset} spans {block.next_offset - entry.offset} bytes, "
                f"its index entry says {entry.size}"
            )
        return block

    def _cells(self, block: HFileBlock, rows: frozenset[bytes] | None) -> list[tuple[bytes, bytes]]:
        """Cells of one data block; a file that does not say whether cells carry a memstore
        timestamp is read with the first layout its blocks parse with."""
        layouts = (self._memstore_ts,) if self._memstore_ts is not None else self._layout.memstore_ts_layouts
        error: CorruptFileError | None = None
        for with_memstore_ts in layouts:
            try:
                cells = parse_cells(block.payload, self._layout.includes_tags, with_memstore_ts, rows)
            except CorruptFileError as exc:
                error = error or exc
                continue
            self._memstore_ts = with_memstore_ts
            return cells
        assert error is not None
        raise CorruptFileError(f"{self.name}: data block at {block.offset}: {error}") from error


def _covering(entries: list[IndexEntry], high: bytes | None, ranges: Sequence[KeyRange]) -> list[int]:
    """Positions of the entries whose span (from their row to the next entry's row, the last
    one up to ``high``) meets one of ``ranges``."""
    rows = [e.row for e in entries]
    picked: set[int] = set()
    for wanted in ranges:
        if high is not None and wanted.low >= high:
            continue
        start = max(0, bisect_right(rows, wanted.low) - 1)
        end = len(rows) if wanted.high is None else bisect_left(rows, wanted.high)
        picked.update(range(start, end))
    return sorted(picked)


__all__ = ["KeyRange", "RangeRead", "SeekableHFile", "TAIL_READ_SIZE"]
