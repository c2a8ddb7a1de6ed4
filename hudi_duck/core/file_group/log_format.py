"""Hudi's log file format: framing of log blocks, reading and writing.

A log file is a sequence of blocks::

    #HUDI#                      magic (6 bytes)
    int64  block size           bytes after this field up to and incl. the reverse pointer
    int32  format version       1
    int32  block type           see :class:`BlockType`
    header map                  int32 count, then (int32 key, int32 len, utf-8 value)*
    int64  content length
    bytes  content
    footer map                  same encoding as the header
    int64  reverse pointer      total block length from the magic to the footer's end

All integers are big-endian. A block whose size runs past the end of the file,
whose reverse pointer disagrees with its size, or that is not followed by the
next magic (or EOF) is *corrupt*; readers skip to the next magic, as Hudi does.
A corrupt block keeps its header when it is still readable (a block cut short
by a crash usually is), so a reader can say which instant lost data.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Callable, Iterator

from ..errors import CorruptFileError

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
_SCAN_BUFFER = 1 << 20
#: Bytes first read at a block's magic by the ranged reader: its framing and header (a
#: metadata-table block's header holds the ~7 KiB writer schema) and, for a small block, all
#: of it; a longer header is read with a larger window.
HEAD_READ_SIZE = 16 * 1024

#: Content of an ``unread`` type smaller than this is read with the framing all the same: a
#: lookup inside it would read its tail (64 KiB), index and data blocks, about as much.
UNREAD_MIN_CONTENT = 256 * 1024

#: Reads bytes ``[start, end)`` of a file (a ranged GET on object stores).
RangeRead = Callable[[int, int], bytes]


class BlockType(IntEnum):
    COMMAND_BLOCK = 0
    DELETE_BLOCK = 1
    CORRUPT_BLOCK = 2
    AVRO_DATA_BLOCK = 3
    HFILE_DATA_BLOCK = 4
    PARQUET_DATA_BLOCK = 5
    CDC_DATA_BLOCK = 6

    @property
    def is_data(self) -> bool:
        return self in (BlockType.AVRO_DATA_BLOCK, BlockType.HFILE_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK)


class HeaderKey(IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class FooterKey(IntEnum):
    RECORD_COUNT = 0


class CommandType(IntEnum):
    ROLLBACK_BLOCK = 0


@dataclass
class LogBlock:
    """One block of a log file; ``content`` holds the raw content bytes (for data blocks a
    read-only view of the file's bytes, which may be memory-mapped)."""

    block_type: BlockType
    header: dict[int, str] = field(default_factory=dict)
    footer: dict[int, str] = field(default_factory=dict)
    content: bytes | memoryview = b""
    file_path: str = ""
    offset: int = 0  # offset of the block's magic in the file
    length: int = 0  # bytes from the magic to the end of the reverse pointer
    content_offset: int = 0  # offset of the content in the file
    content_size: int = 0  # bytes of the content, also when it was left unread
    #: set when the block was framed by ranged reads and its content left unread: reads
    #: bytes ``[start, end)`` of the content (see :func:`iter_blocks_ranged`)
    content_reader: RangeRead | None = None

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_rollback(self) -> bool:
        return (
            self.block_type is BlockType.COMMAND_BLOCK
            and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == str(int(CommandType.ROLLBACK_BLOCK))
        )

    @property
    def compacted_block_times(self) -> list[str]:
        value = self.header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        return [t for t in value.split(",") if t] if value else []

    def __repr__(self) -> str:
        keys = {HeaderKey(k).name if k in HeaderKey._value2member_map_ else k: (v if len(v) < 40 else v[:37] + "...") for k, v in self.header.items()}
        return f"LogBlock({self.block_type.name}, {self.file_path}@{self.offset}, header={keys}, content={len(self.content)}B)"


# -- reading -------------------------------------------------------------------------


def _read_map(buf: memoryview, pos: int) -> tuple[dict[int, str], int]:
    (count,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    if count < 0 or count > 1024:
        raise CorruptFileError(f"implausible metadata map size {count}")
    out: dict[int, str] = {}
    for _ in range(count):
        key, length = struct.unpack_from(">ii", buf, pos)
        pos += 8
        if length < 0 or pos + length > len(buf):
            raise CorruptFileError("metadata value runs past the block")
        out[key] = bytes(buf[pos : pos + length]).decode("utf-8")
        pos += length
    return out, pos


def _block_is_corrupt(read: "RangeRead", file_size: int, size_pos: int, block_size: int) -> bool:
    """Hudi's check: the reverse pointer matches and the next magic (or EOF) follows.

    ``read(start, end)`` gives bytes of the file (the ranged reader reads only the 14
    bytes around the block's end)."""
    start = size_pos + 8  # position right after the size field
    end = start + block_size
    if block_size < 8 or end > file_size:
        return True
    around = read(end - 8, min(end + len(MAGIC), file_size))
    (reverse,) = struct.unpack_from(">q", around, 0)
    if reverse - len(MAGIC) != block_size:
        return True
    if end == file_size:
        return False
    tail = bytes(around[8 : 8 + len(MAGIC)])
    if len(tail) < len(MAGIC):
        return False  # a partial magic at EOF reads as EOF
    return tail != MAGIC


def _next_magic(data: bytes, start: int) -> int:
    found = data.find(MAGIC, start)
    return found if found >= 0 else len(data)


def iter_blocks(data: bytes, file_path: str = "", start: int = 0) -> Iterator[LogBlock]:
    """Yield every block of a log file's bytes (from the block at ``start``), corrupt ranges
    as CORRUPT_BLOCK."""
    view = memoryview(data)
    pos = start
    while pos < len(data):
        if len(data) - pos < len(MAGIC):
            return  # trailing partial magic: EOF
        if data[pos : pos + len(MAGIC)] != MAGIC:
            raise CorruptFileError(
                f"{file_path}: no log block magic at offset {pos}; not a Hudi log file"
            )
        magic_pos = pos
        size_pos = pos + len(MAGIC)
        if size_pos + 8 > len(data):
            block_size = -1
        else:
            (block_size,) = struct.unpack_from(">q", data, size_pos)
        if block_size < 0 or _block_is_corrupt(lambda s, e: view[s:e], len(data), size_pos, block_size):
            nxt = _next_magic(data, size_pos)
            yield LogBlock(
                BlockType.CORRUPT_BLOCK,
                header=_salvage_header(view, size_pos, nxt),
                content=bytes(view[size_pos:nxt]),
                file_path=file_path,
                offset=magic_pos,
                length=nxt - magic_pos,
            )
            pos = nxt
            continue
        try:
            block = _parse_block(view, size_pos + 8, size_pos + 8 + block_size, file_path, magic_pos)
        except (CorruptFileError, struct.error, UnicodeDecodeError, ValueError):
            end = size_pos + 8 + block_size
            block = LogBlock(
                BlockType.CORRUPT_BLOCK,
                header=_salvage_header(view, size_pos, end),
                content=bytes(view[size_pos:end]),
                file_path=file_path,
                offset=magic_pos,
                length=end - magic_pos,
            )
        yield block
        pos = size_pos + 8 + block_size


def _salvage_header(view: memoryview, size_pos: int, end: int) -> dict[int, str]:
    """The header of a corrupt block if it lies intact before ``end``, else ``{}``."""
    start = size_pos + 8  # version, block type, then the header map
    try:
        bounded = view[:end]
        version, _type_id = struct.unpack_from(">ii", bounded, start)
        if version != LOG_FORMAT_VERSION:
            return {}
        header, _pos = _read_map(bounded, start + 8)
    except (CorruptFileError, struct.error, UnicodeDecodeError):
        return {}
    return header


@dataclass(frozen=True)
class _Head:
    """A block's framing up to its content: what a reader needs to decide whether to read it."""

    block_type: BlockType
    header: dict[int, str]
    content_at: int  # position of the content in the buffer parsed
    content_length: int


def _parse_head(buf: memoryview, pos: int, end: int, file_path: str, magic_pos: int) -> _Head:
    """Version, block type, header map and content length of the block whose body starts at
    ``pos`` and ends at ``end``."""
    version, type_id = struct.unpack_from(">ii", buf, pos)
    pos += 8
    if version != LOG_FORMAT_VERSION:
        raise CorruptFileError(f"{file_path}: unsupported log format version {version} at {magic_pos}")
    block_type = BlockType(type_id)
    header, pos = _read_map(buf, pos)
    (content_length,) = struct.unpack_from(">q", buf, pos)
    pos += 8
    if content_length < 0 or pos + content_length > end:
        raise CorruptFileError(f"{file_path}: block content runs past the block at {magic_pos}")
    return _Head(block_type, header, pos, content_length)


def _parse_footer(buf: memoryview, pos: int, end: int, file_path: str, magic_pos: int) -> dict[int, str]:
    """The footer map at ``pos`` (right after the content), which must end at the reverse pointer."""
    footer, pos = _read_map(buf, pos)
    if pos + 8 != end:
        raise CorruptFileError(f"{file_path}: block at {magic_pos} has trailing bytes")
    return footer


def _parse_block(buf: memoryview, pos: int, end: int, file_path: str, magic_pos: int, base: int = 0) -> LogBlock:
    """The block whose body is ``buf[pos:end]``; ``buf`` holds the file's bytes from ``base`` on."""
    head = _parse_head(buf, pos, end, file_path, magic_pos)
    content_at, content_end = head.content_at, head.content_at + head.content_length
    if head.block_type in _VIEWED_CONTENT:  # decoded by ranges: no copy of a large block's bytes
        content: bytes | memoryview = buf[content_at:content_end]
    else:
        content = bytes(buf[content_at:content_end])
    footer = _parse_footer(buf, content_end, end, file_path, magic_pos)
    return LogBlock(
        head.block_type, head.header, footer, content, file_path, magic_pos, base + end - magic_pos,
        base + content_at, content_size=head.content_length,
    )


#: Blocks whose ``content`` is a view of the log file's bytes (or of its memory map) rather than a copy.
_VIEWED_CONTENT = frozenset({BlockType.AVRO_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK})


def iter_blocks_ranged(
    read: RangeRead,
    size: int,
    file_path: str,
    unread: frozenset[BlockType],
    read_all: Callable[[], bytes],
) -> Iterator[LogBlock]:
    """The blocks :func:`iter_blocks` yields for a file of ``size`` bytes, framed by ranged
    reads: the head of each block (framing and header) and its tail (footer, reverse pointer,
    next magic) are read, the content of blocks of an ``unread`` type is not when it is large
    (``UNREAD_MIN_CONTENT``; the block gets a ``content_reader`` instead). From the first block that is not intact on, the rest of the
    file is read whole (``read_all``) and parsed by :func:`iter_blocks`, so damaged logs read
    exactly as they do whole."""
    pos = 0
    while pos < size:
        if size - pos < len(MAGIC):
            return  # trailing partial magic: EOF
        block = _ranged_block(read, size, pos, file_path, unread)
        if block is None:
            yield from iter_blocks(read_all(), file_path, pos)
            return
        yield block
        pos = block.offset + block.length


def _ranged_block(
    read: RangeRead, size: int, magic_pos: int, file_path: str, unread: frozenset[BlockType]
) -> LogBlock | None:
    """The intact block at ``magic_pos`` read by ranges, or None when it is not intact (or
    not a block): the whole-file parser then decides what it is."""
    window = HEAD_READ_SIZE
    while True:
        head = memoryview(read(magic_pos, min(size, magic_pos + window)))
        if bytes(head[: len(MAGIC)]) != MAGIC or len(head) < len(MAGIC) + 8:
            return None
        size_pos = magic_pos + len(MAGIC)
        (block_size,) = struct.unpack_from(">q", head, len(MAGIC))
        end = size_pos + 8 + block_size
        if block_size < 0:
            return None
        try:
            if end + len(MAGIC) <= magic_pos + len(head) or magic_pos + len(head) == size:
                return _block_in_buffer(head, magic_pos, size, block_size, file_path)
            parsed = _parse_head(head, len(MAGIC) + 8, end - magic_pos, file_path, magic_pos)
            break
        except (CorruptFileError, struct.error, UnicodeDecodeError, ValueError):
            if magic_pos + len(head) >= min(size, end + len(MAGIC)):
                return None
            window *= 4  # a header longer than the bytes read: read more of the block
    if end > size:
        return None
    content_at = magic_pos + parsed.content_at
    content_end = content_at + parsed.content_length
    tail_at = max(0, min(content_end, end - 8))
    try:
        tail = memoryview(read(tail_at, min(size, end + len(MAGIC))))
        if _block_is_corrupt(lambda s, e: tail[s - tail_at : e - tail_at], size, size_pos, block_size):
            return None
        footer = _parse_footer(tail, content_end - tail_at, end - tail_at, file_path, magic_pos)
    except (CorruptFileError, struct.error, UnicodeDecodeError, ValueError):
        return None
    block = LogBlock(
        parsed.block_type, parsed.header, footer, b"", file_path, magic_pos, end - magic_pos, content_at,
        content_size=parsed.content_length,
    )
    if parsed.block_type in unread and parsed.content_length >= UNREAD_MIN_CONTENT:
        block.content_reader = lambda start, stop: read(content_at + start, content_at + stop)
    elif content_end <= magic_pos + len(head):
        block.content = bytes(head[parsed.content_at : parsed.content_at + parsed.content_length])
    else:
        block.content = read(content_at, content_end)
    return block


def _block_in_buffer(buf: memoryview, magic_pos: int, size: int, block_size: int, file_path: str) -> LogBlock | None:
    """The block at the start of ``buf`` (bytes of the file from ``magic_pos``, through the next
    magic or EOF), or None when it is not intact."""
    size_pos = magic_pos + len(MAGIC)
    end = size_pos + 8 + block_size

    def read(start: int, stop: int) -> memoryview:
        if stop - magic_pos > len(buf):
            raise CorruptFileError(f"{file_path}: block at {magic_pos} runs past the bytes read")
        return buf[start - magic_pos : stop - magic_pos]

    if _block_is_corrupt(read, size, size_pos, block_size):
        return None
    block = _parse_block(buf[: end - magic_pos], len(MAGIC) + 8, end - magic_pos, file_path, magic_pos, magic_pos)
    block.content = bytes(block.content)
    return block


def read_log_file(data: bytes, file_path: str = "") -> list[LogBlock]:
    return list(iter_blocks(data, file_path))


# -- writing -------------------------------------------------------------------------


def _encode_map(values: dict[int, str]) -> bytes:
    out = io.BytesIO()
    out.write(struct.pack(">i", len(values)))
    for key, value in values.items():
        encoded = value.encode("utf-8")
        out.write(struct.pack(">ii", int(key), len(encoded)))
        out.write(encoded)
    return out.getvalue()


def encode_block(
    block_type: BlockType,
    header: dict[int, str],
    content: bytes,
    footer: dict[int, str] | None = None,
) -> bytes:
    """Bytes of one framed block, ready to append to a log file."""
    body = b"".join(
        [
            struct.pack(">ii", LOG_FORMAT_VERSION, int(block_type)),
            _encode_map(header),
            struct.pack(">q", len(content)),
            content,
            _encode_map(footer or {}),
        ]
    )
    block_size = len(body) + 8  # body plus the reverse pointer
    total = len(MAGIC) + 8 + len(body)
    return MAGIC + struct.pack(">q", block_size) + body + struct.pack(">q", total)
