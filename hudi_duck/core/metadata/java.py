"""Java behaviours Hudi's bytes depend on: ``String.hashCode`` (the metadata table's file
groups and maps, the bucket index, parquet footers' key order), ``HashMap`` iteration order and
XXHash64 (``HashID``)."""

from __future__ import annotations

import struct
from functools import lru_cache
from operator import mul
from typing import Iterable, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

V = TypeVar("V")

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1


#: 31**k mod 2**32 for k = 0, 1, ... (grown on demand)
_POWERS_OF_31: list[int] = [1]


def _descending_powers(n: int) -> list[int]:
    """``[31**(n-1), ..., 31, 1]`` mod 2**32: the weights of a ``String.hashCode`` of n code units."""
    while len(_POWERS_OF_31) < n:
        _POWERS_OF_31.append((_POWERS_OF_31[-1] * 31) & _MASK32)
    return _POWERS_OF_31[n - 1 :: -1] if n else []


@lru_cache(maxsize=1 << 16)
def string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units) as a signed 32-bit int.

    ``s[0]*31^(n-1) + ... + s[n-1]`` mod 2**32, summed in C (``map``) rather than a Python loop:
    file names are hashed for every map a metadata record merge orders."""
    units = text.encode("utf-16-be")
    n = len(units) // 2
    h = sum(map(mul, struct.unpack(f">{n}H", units), _descending_powers(n))) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def string_hashes(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """:func:`string_hash` of every string of a batch, as uint32 (the same bits, unsigned).

    ASCII strings (their UTF-16 code units are their bytes) are hashed with numpy, right-aligned
    in rows of the longest one's width (leading zeros add nothing): one product per column in
    wrapping uint32 arithmetic. Other strings take :func:`string_hash` one by one."""
    strings = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    strings = strings.cast(pa.string())
    if strings.null_count:
        raise ValueError("a string to hash is null")
    hashes = _ascii_hashes(strings)
    other = pc.invert(pc.string_is_ascii(strings))
    if pc.any(other).as_py():
        values = strings.to_pylist()
        for i in np.flatnonzero(other.to_numpy(zero_copy_only=False)):
            hashes[i] = string_hash(values[i]) & _MASK32
    return hashes


def _ascii_hashes(strings: pa.StringArray) -> np.ndarray:
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)[strings.offset : strings.offset + n + 1].astype(np.int64)
    if n == 0 or offsets[-1] == offsets[0]:
        return np.zeros(n, dtype=np.uint32)
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    lengths = np.diff(offsets)
    width = int(lengths.max())
    if int(lengths.min()) == width:
        rows = data.reshape(n, width)
    else:
        rows = np.zeros((n, width), dtype=np.uint8)
        starts = np.arange(n, dtype=np.int64) * width + (width - lengths)
        rows.reshape(-1)[np.repeat(starts - (offsets[:-1] - offsets[0]), lengths) + np.arange(len(data))] = data
    powers = np.array(_descending_powers(width), dtype=np.uint32)
    hashes = np.zeros(n, dtype=np.uint32)
    for j in range(width):  # column by column: no n x width uint32 temporary
        hashes += rows[:, j].astype(np.uint32) * powers[j]
    return hashes


def _bucket_hash(key: str) -> int:
    h = string_hash(key) & _MASK32
    return h ^ (h >> 16)


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the least power of two at least ``capacity``."""
    size = 1
    while size < capacity:
        size <<= 1
    return size


def hashmap_capacity(entries: int, initial: int = 16, load_factor: float = 0.75) -> int:
    """Table size of a ``HashMap`` after ``entries`` puts (it doubles past ``capacity * load_factor``)."""
    capacity = table_size_for(max(initial, 1))
    while entries > capacity * load_factor:
        capacity <<= 1
    return capacity


def hashmap_order(items: Iterable[tuple[str, V]], capacity: int | None = None) -> dict[str, V]:
    """``items`` in the iteration order of a ``HashMap<String, V>`` they were put into, in order.

    Entries iterate bucket by bucket (``(h ^ h >>> 16) & (capacity - 1)``), and within a bucket in
    insertion order (a resize keeps that order). Avro writes a Java map in this order, so it
    decides the bytes of every map-valued field Hudi serializes. Without ``capacity`` the map
    is a default ``new HashMap<>()`` grown by its puts.
    """
    entries = dict(items)
    size = capacity if capacity is not None else hashmap_capacity(len(entries))
    ranked = sorted(enumerate(entries.items()), key=lambda pair: (_bucket_hash(pair[1][0]) & (size - 1), pair[0]))
    return {key: value for _, (key, value) in ranked}


# -- XXHash64 ------------------------------------------------------------------------------

_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK64
    return (_rotl(acc, 31) * _P1) & _MASK64


def _merge(acc: int, value: int) -> int:
    acc ^= _round(0, value)
    return (acc * _P1 + _P4) & _MASK64


def xxhash64(data: bytes, seed: int = 0) -> int:
    """XXH64 of ``data`` (unsigned); ``seed`` is taken modulo 2**64 like Java's ``long``."""
    seed &= _MASK64
    length = len(data)
    pos = 0
    if length >= 32:
        v1 = (seed + _P1 + _P2) & _MASK64
        v2 = (seed + _P2) & _MASK64
        v3 = seed
        v4 = (seed - _P1) & _MASK64
        while pos + 32 <= length:
            a, b, c, d = struct.unpack_from("<4Q", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 32
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK64
        for v in (v1, v2, v3, v4):
            acc = _merge(acc, v)
    else:
        acc = (seed + _P5) & _MASK64
    acc = (acc + length) & _MASK64
    while pos + 8 <= length:
        (lane,) = struct.unpack_from("<Q", data, pos)
        acc ^= _round(0, lane)
        acc = (_rotl(acc, 27) * _P1 + _P4) & _MASK64
        pos += 8
    if pos + 4 <= length:
        (lane,) = struct.unpack_from("<I", data, pos)
        acc ^= (lane * _P1) & _MASK64
        acc = (_rotl(acc, 23) * _P2 + _P3) & _MASK64
        pos += 4
    while pos < length:
        acc ^= (data[pos] * _P5) & _MASK64
        acc = (_rotl(acc, 11) * _P1) & _MASK64
        pos += 1
    acc ^= acc >> 33
    acc = (acc * _P2) & _MASK64
    acc ^= acc >> 29
    acc = (acc * _P3) & _MASK64
    acc ^= acc >> 32
    return acc
