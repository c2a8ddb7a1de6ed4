"""Column statistics of a parquet file, read from its footer without decoding all of it.

A Hudi base file's footer ends with the record keys' bloom filter (hundreds of KB in
the key-value metadata). The column chunks' statistics come before it in the footer's
Thrift struct (``FileMetaData``: field 4 ``row_groups``, field 5 ``key_value_metadata``),
so this reads the first 16 KB of the footer (all of it only when the row groups go on past
that) and decodes the Thrift compact encoding up to the end of ``row_groups``, skipping
the column chunks of other columns as soon as their paths are known.

The one question answered here: does the file prove that every row holds one given
value in a column (``holds_only``)? Readers use it to take partition values from the
partition folder (cheap for DuckDB) without checking every row against the stored value.
"""

from __future__ import annotations

import datetime as _dt
import os
import struct
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..storage.storage import Storage

_FOOTER_TAIL = 8  # 4-byte footer length + b"PAR1"
_EPOCH = _dt.date(1970, 1, 1)

# parquet physical types
_INT32, _INT64, _BYTE_ARRAY = 1, 2, 6


@dataclass(frozen=True)
class ChunkStats:
    """One column chunk's statistics (None: not written)."""

    physical_type: int
    num_values: int
    null_count: int | None
    min: bytes | None
    max: bytes | None


class Truncated(Exception):
    """The bytes end inside ``FileMetaData.row_groups``: read more of the footer."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:  # most values fit one byte
        return b, pos + 1
    shift = result = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _skip_varint(data: bytes, pos: int) -> int:
    while data[pos] & 0x80:
        pos += 1
    return pos + 1


def _list_header(data: bytes, pos: int) -> tuple[int, int, int]:
    """(size, element type, position after the header) of a Thrift compact list."""
    head = data[pos]
    size = head >> 4
    if size == 15:
        size, pos = _varint(data, pos + 1)
        return size, head & 0x0F, pos
    return size, head & 0x0F, pos + 1


def _skip(data: bytes, pos: int, kind: int) -> int:
    """The position after a value of compact type ``kind`` (bools in field headers take no bytes)."""
    if kind in (4, 5, 6):
        return _skip_varint(data, pos)
    if kind == 8:
        n, pos = _varint(data, pos)
        return pos + n
    if kind == 12:
        return _skip_struct(data, pos)
    if kind in (1, 2):
        return pos
    if kind == 3:
        return pos + 1
    if kind == 7:
        return pos + 8
    if kind in (9, 10):
        size, elem, pos = _list_header(data, pos)
        if elem in (1, 2, 3):
            return pos + size
        for _ in range(size):
            pos = _skip(data, pos, elem)
        return pos
    if kind == 11:
        size, pos = _varint(data, pos)
        if size:
            types = data[pos]
            pos += 1
            for _ in range(size):
                pos = _skip(data, _skip(data, pos, types >> 4), types & 0x0F)
        return pos
    raise ValueError(f"unknown thrift compact type {kind}")


def _skip_struct(data: bytes, pos: int) -> int:
    """The position after the rest of a struct (its remaining fields and the stop byte)."""
    while True:
        head = data[pos]
        pos += 1
        kind = head & 0x0F
        if kind == 0:
            return pos
        if not head & 0xF0:
            pos = _skip_varint(data, pos)  # a long-form field id
        if kind in (4, 5, 6):
            while data[pos] & 0x80:
                pos += 1
            pos += 1
        elif kind == 8:
            n, pos = _varint(data, pos)
            pos += n
        elif kind > 2:
            pos = _skip(data, pos, kind)


def _field(data: bytes, pos: int, last: int) -> tuple[int, int, int]:
    """(field id, type, position after the header) of the next struct field; type 0 ends the struct."""
    head = data[pos]
    kind = head & 0x0F
    if kind == 0:
        return 0, 0, pos + 1
    delta = head >> 4
    if delta:
        return last + delta, kind, pos + 1
    n, pos = _varint(data, pos + 1)
    return (n >> 1) ^ -(n & 1), kind, pos


def _zigzag(data: bytes, pos: int) -> tuple[int, int]:
    n, pos = _varint(data, pos)
    return (n >> 1) ^ -(n & 1), pos


def _binary(data: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _varint(data, pos)
    return data[pos : pos + n], pos + n


def _statistics(data: bytes, pos: int) -> tuple[int | None, bytes | None, bytes | None, int]:
    """(null_count, min, max, end) of a ``Statistics`` struct; min_value/max_value over the deprecated min/max."""
    null_count = None
    values: dict[int, bytes] = {}
    last = 0
    while True:
        last, kind, pos = _field(data, pos, last)
        if kind == 0:
            break
        if last in (1, 2, 5, 6) and kind == 8:
            values[last], pos = _binary(data, pos)
        elif last == 3 and kind == 6:
            null_count, pos = _zigzag(data, pos)
        else:
            pos = _skip(data, pos, kind)
    if 5 in values or 6 in values:
        return null_count, values.get(6), values.get(5), pos
    return null_count, values.get(2), values.get(1), pos


def _column_meta(data: bytes, pos: int, wanted: frozenset[str]) -> tuple[str | None, ChunkStats | None, int]:
    """A ``ColumnMetaData``'s column and statistics; (None, None, end) for a column not ``wanted``
    (the rest of its struct is skipped as soon as its path is known)."""
    name = None
    physical = num_values = -1
    null_count = lo = hi = None
    last = 0
    while True:
        last, kind, pos = _field(data, pos, last)
        if kind == 0:
            break
        if last == 1 and kind == 5:
            physical, pos = _zigzag(data, pos)
        elif last == 3 and kind == 9:
            size, _, pos = _list_header(data, pos)
            parts = []
            for _ in range(size):
                part, pos = _binary(data, pos)
                parts.append(part.decode("utf-8", "replace"))
            name = ".".join(parts)
            if name not in wanted:
                return None, None, _skip_struct(data, pos)
        elif last == 5 and kind == 6:
            num_values, pos = _zigzag(data, pos)
        elif last == 12 and kind == 12:
            null_count, lo, hi, pos = _statistics(data, pos)
        else:
            pos = _skip(data, pos, kind)
    if name is None:
        return None, None, pos
    return name, ChunkStats(physical, num_values, null_count, lo, hi), pos


def _column_chunk(data: bytes, pos: int, wanted: frozenset[str], out: dict[str, ChunkStats]) -> int:
    last = 0
    while True:
        last, kind, pos = _field(data, pos, last)
        if kind == 0:
            return pos
        if last == 3 and kind == 12:
            name, stats, pos = _column_meta(data, pos, wanted)
            if name is not None:
                out[name] = stats
        else:
            pos = _skip(data, pos, kind)


def _row_group(data: bytes, pos: int, wanted: frozenset[str]) -> tuple[dict[str, ChunkStats], int]:
    out: dict[str, ChunkStats] = {}
    last = 0
    while True:
        last, kind, pos = _field(data, pos, last)
        if kind == 0:
            return out, pos
        if last == 1 and kind == 9:
            size, _, pos = _list_header(data, pos)
            for _ in range(size):
                pos = _column_chunk(data, pos, wanted, out)
        else:
            pos = _skip(data, pos, kind)


def column_stats(footer: bytes, columns: frozenset[str]) -> list[dict[str, ChunkStats]]:
    """Per row group, the statistics of ``columns`` (top-level names) in a ``FileMetaData`` encoding.

    ``footer`` may be only the start of the encoding: :class:`Truncated` when it ends before
    ``row_groups`` does (everything read before the end is whole: each value read was followed
    by a read further on).
    """
    try:
        pos = last = 0
        while True:
            last, kind, pos = _field(footer, pos, last)
            if kind == 0:
                return []
            if last == 4 and kind == 9:
                size, _, pos = _list_header(footer, pos)
                groups = []
                for _ in range(size):
                    group, pos = _row_group(footer, pos, columns)
                    groups.append(group)
                return groups
            pos = _skip(footer, pos, kind)
    except IndexError:
        raise Truncated() from None


def read_footer(storage: Storage, rel_path: str, limit: int | None = None) -> bytes:
    """The ``FileMetaData`` bytes of a parquet file (two range reads); with ``limit``, at most
    its first ``limit`` bytes (the row groups come before a Hudi footer's bloom filter)."""
    if storage.is_local:
        with open(storage.abs(rel_path), "rb") as handle:
            return _footer_of(handle, limit)
    size = storage.size(rel_path)
    tail = storage.read_range(rel_path, size - _FOOTER_TAIL, size)
    if len(tail) != _FOOTER_TAIL or tail[4:] != b"PAR1":
        raise ValueError("not a parquet file (no PAR1 trailer)")
    length = _footer_length(tail, size)
    start = size - _FOOTER_TAIL - length
    return storage.read_range(rel_path, start, start + min(length, limit or length))


def _footer_length(tail: bytes, size: int) -> int:
    length = struct.unpack("<i", tail[:4])[0]
    if not 0 < length <= size - 12:
        raise ValueError(f"bad parquet footer length {length}")
    return length


def _footer_of(handle: BinaryIO, limit: int | None = None) -> bytes:
    size = handle.seek(0, os.SEEK_END)
    if size < 12:
        raise ValueError("not a parquet file (too short)")
    handle.seek(size - _FOOTER_TAIL)
    tail = handle.read(_FOOTER_TAIL)
    if tail[4:] != b"PAR1":
        raise ValueError("not a parquet file (no PAR1 trailer)")
    length = _footer_length(tail, size)
    handle.seek(size - _FOOTER_TAIL - length)
    return handle.read(min(length, limit or length))


def encoded(value: Any, physical_type: int) -> bytes | None:
    """``value`` as parquet statistics store it for the physical type; None: not comparable here."""
    if isinstance(value, bool):
        return None
    if physical_type == _BYTE_ARRAY and isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, _dt.datetime):
        return None
    if isinstance(value, _dt.date):
        value = (value - _EPOCH).days
        return struct.pack("<i", value) if physical_type == _INT32 else None
    if isinstance(value, int):
        if physical_type == _INT32 and -(2**31) <= value < 2**31:
            return struct.pack("<i", value)
        if physical_type == _INT64 and -(2**63) <= value < 2**63:
            return struct.pack("<q", value)
    return None


def proves_only(row_groups: list[dict[str, ChunkStats]], values: dict[str, Any]) -> bool:
    """Whether the statistics prove that every row holds exactly ``values`` (no nulls)."""
    for group in row_groups:
        for column, value in values.items():
            stats = group.get(column)
            if stats is None:
                return False
            if stats.num_values == 0:
                continue
            want = encoded(value, stats.physical_type)
            if want is None or stats.null_count != 0 or stats.min != want or stats.max != want:
                return False
    return True


_HEAD = 16 * 1024  # the schema and row groups of a footer of tens of columns


def _row_group_stats(storage: Storage, rel_path: str, columns: frozenset[str]) -> list[dict[str, ChunkStats]]:
    """``column_stats`` of a file, reading the start of its footer first (a Hudi footer ends with
    hundreds of KB of bloom filter that this never needs), all of it when the row groups go on."""
    head = read_footer(storage, rel_path, _HEAD)
    try:
        return column_stats(head, columns)
    except Truncated:
        if len(head) < _HEAD:
            raise
    return column_stats(read_footer(storage, rel_path), columns)


_KNOWN: dict[tuple[str, str, tuple], bool] = {}
_KNOWN_LOCK = threading.Lock()
_MAX_KNOWN = 100_000


def holds_only(storage: Storage, rel_path: str, values: dict[str, Any]) -> bool:
    """Whether the parquet file's statistics prove every row holds ``values`` (column -> value).

    False when they do not (or the footer cannot be read: the scan then reports it).
    Answers are kept per file for the process: a base file never changes once written.
    """
    key = (storage.base_uri, rel_path, tuple(sorted(values.items(), key=lambda kv: kv[0])))
    with _KNOWN_LOCK:
        known = _KNOWN.get(key)
    if known is not None:
        return known
    try:
        answer = proves_only(_row_group_stats(storage, rel_path, frozenset(values)), values)
    except (OSError, ValueError, Truncated, struct.error):
        answer = False
    with _KNOWN_LOCK:
        if len(_KNOWN) >= _MAX_KNOWN:
            _KNOWN.clear()
        _KNOWN[key] = answer
    return answer


def forget() -> None:
    """Drop the answers kept for this process (what a new process starts without)."""
    with _KNOWN_LOCK:
        _KNOWN.clear()
