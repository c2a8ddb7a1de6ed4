"""Column statistics of a parquet file, read from its footer without decoding all of it.

A Hudi base file's footer ends with the record keys' bloom filter (hundreds of KB in
the key-value metadata). The column chunks' statistics come before it in the footer's
Thrift struct (``FileMetaData``: field 4 ``row_groups``, field 5 ``key_value_metadata``),
so this reads the Thrift compact encoding up to the end of ``row_groups`` and stops:
a few tenths of a millisecond a file where a full footer parse takes ten times that.

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


class _Reader:
    """The Thrift compact protocol, just what ``FileMetaData.row_groups`` needs."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        data, pos = self.data, self.pos
        b = data[pos]
        if b < 0x80:  # most values fit one byte
            self.pos = pos + 1
            return b
        shift = result = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                self.pos = pos
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        value = self.data[self.pos : self.pos + n]
        self.pos += n
        return value

    def field(self, last: int) -> tuple[int, int]:
        """(field id, type) of the next struct field; type 0 ends the struct."""
        head = self.data[self.pos]
        self.pos += 1
        kind = head & 0x0F
        if kind == 0:
            return 0, 0
        delta = head >> 4
        return (last + delta if delta else self.zigzag()), kind

    def list_header(self) -> tuple[int, int]:
        head = self.byte()
        size = head >> 4
        if size == 15:
            size = self.varint()
        return size, head & 0x0F

    def skip(self, kind: int) -> None:
        if kind in (1, 2):  # bool in a field header
            return
        if kind in (4, 5, 6):
            self.varint()
        elif kind == 8:
            n = self.varint()
            self.pos += n
        elif kind == 12:
            self.skip_struct()
        elif kind == 3:
            self.pos += 1
        elif kind == 7:
            self.pos += 8
        elif kind in (9, 10):
            size, elem = self.list_header()
            if elem in (1, 2, 3):
                self.pos += size
            elif elem in (4, 5, 6):
                for _ in range(size):
                    self.varint()
            else:
                for _ in range(size):
                    self.skip(elem)
        elif kind == 11:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4)
                    self.skip(types & 0x0F)
        else:
            raise ValueError(f"unknown thrift compact type {kind}")

    def skip_struct(self) -> None:
        data = self.data
        while True:
            head = data[self.pos]
            self.pos += 1
            kind = head & 0x0F
            if kind == 0:
                return
            if not head >> 4:
                self.varint()  # a long-form field id
            if kind in (4, 5, 6):
                self.varint()
            elif kind not in (1, 2):
                self.skip(kind)


def _statistics(r: _Reader) -> tuple[int | None, bytes | None, bytes | None]:
    """(null_count, min, max) of a ``Statistics`` struct; min_value/max_value over the deprecated min/max."""
    null_count = None
    values: dict[int, bytes] = {}
    last = 0
    while True:
        last, kind = r.field(last)
        if kind == 0:
            break
        if last in (1, 2, 5, 6) and kind == 8:
            values[last] = r.binary()
        elif last == 3 and kind == 6:
            null_count = r.zigzag()
        else:
            r.skip(kind)
    if 5 in values or 6 in values:
        return null_count, values.get(6), values.get(5)
    return null_count, values.get(2), values.get(1)


def _column_meta(r: _Reader) -> tuple[str, ChunkStats]:
    path: list[str] = []
    physical = num_values = -1
    null_count = lo = hi = None
    last = 0
    while True:
        last, kind = r.field(last)
        if kind == 0:
            break
        if last == 1 and kind == 5:
            physical = r.zigzag()
        elif last == 3 and kind == 9:
            size, _ = r.list_header()
            path = [r.binary().decode("utf-8", "replace") for _ in range(size)]
        elif last == 5 and kind == 6:
            num_values = r.zigzag()
        elif last == 12 and kind == 12:
            null_count, lo, hi = _statistics(r)
        else:
            r.skip(kind)
    return ".".join(path), ChunkStats(physical, num_values, null_count, lo, hi)


def _row_group(r: _Reader, wanted: frozenset[str]) -> dict[str, ChunkStats]:
    out: dict[str, ChunkStats] = {}
    last = 0
    while True:
        last, kind = r.field(last)
        if kind == 0:
            return out
        if last == 1 and kind == 9:
            size, _ = r.list_header()
            for _ in range(size):
                chunk_last = 0
                while True:
                    chunk_last, sub = r.field(chunk_last)
                    if sub == 0:
                        break
                    if chunk_last == 3 and sub == 12:
                        name, stats = _column_meta(r)
                        if name in wanted:
                            out[name] = stats
                    else:
                        r.skip(sub)
        else:
            r.skip(kind)


def column_stats(footer: bytes, columns: frozenset[str]) -> list[dict[str, ChunkStats]]:
    """Per row group, the statistics of ``columns`` (top-level names) in a ``FileMetaData`` encoding."""
    r = _Reader(footer)
    last = 0
    while True:
        last, kind = r.field(last)
        if kind == 0:
            return []
        if last == 4 and kind == 9:
            size, _ = r.list_header()
            return [_row_group(r, columns) for _ in range(size)]
        r.skip(kind)


def read_footer(storage: Storage, rel_path: str) -> bytes:
    """The ``FileMetaData`` bytes of a parquet file (two range reads)."""
    if storage.is_local:
        with open(storage.abs(rel_path), "rb") as handle:
            return _footer_of(handle)
    size = storage.size(rel_path)
    tail = storage.read_range(rel_path, size - _FOOTER_TAIL, size)
    if len(tail) != _FOOTER_TAIL or tail[4:] != b"PAR1":
        raise ValueError("not a parquet file (no PAR1 trailer)")
    length = struct.unpack("<i", tail[:4])[0]
    if not 0 < length <= size - 12:
        raise ValueError(f"bad parquet footer length {length}")
    return storage.read_range(rel_path, size - _FOOTER_TAIL - length, size - _FOOTER_TAIL)


def _footer_of(handle: BinaryIO) -> bytes:
    size = handle.seek(0, os.SEEK_END)
    if size < 12:
        raise ValueError("not a parquet file (too short)")
    handle.seek(size - _FOOTER_TAIL)
    tail = handle.read(_FOOTER_TAIL)
    if tail[4:] != b"PAR1":
        raise ValueError("not a parquet file (no PAR1 trailer)")
    length = struct.unpack("<i", tail[:4])[0]
    if not 0 < length <= size - 12:
        raise ValueError(f"bad parquet footer length {length}")
    handle.seek(size - _FOOTER_TAIL - length)
    return handle.read(length)


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
        answer = proves_only(column_stats(read_footer(storage, rel_path), frozenset(values)), values)
    except (OSError, ValueError, IndexError, struct.error):
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
