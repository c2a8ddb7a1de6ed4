"""A filter of the incoming records' keys, for the simple index.

The simple index reads every key of the latest base files of the touched partitions
and joins them with the incoming keys. Handing all of them from Python to Spark and
shuffling them costs far more than reading them: a 1% upsert moves the whole table's
keys. The input check already keys every incoming record, so it also sets one bit per
key hash; the key-reading tasks then hand Spark only the keys whose bit is set. The
join that follows stays exact (a false positive is a key that matches nothing), and a
key without its bit (the input gave other records when read again) is caught when the
tagged records are counted, before any file is written.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from hudi_duck.core.metadata.java import string_hashes

#: bits of the filter: 128 KB; 10,000 keys set about 1% of them, 1M keys 61%
BITS = 1 << 20
#: above this share of set bits the filter would keep most keys: the index reads without it
USEFUL_FILL = 0.5


def _positions(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each key's bit: its Java hash, mixed (murmur3's finaliser spreads similar keys)."""
    h = string_hashes(keys)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return (h & np.uint32(BITS - 1)).astype(np.int64)


@dataclass(frozen=True)
class KeyFilter:
    """One bit per key hash, packed (``bitorder="little"``)."""

    packed: bytes

    @classmethod
    def empty(cls) -> "KeyFilter":
        return cls(bytes(BITS // 8))

    @classmethod
    def of_keys(cls, keys: pa.Array | pa.ChunkedArray) -> "KeyFilter":
        builder = KeyFilterBuilder()
        builder.add(keys)
        return builder.build()

    def union(self, other: "KeyFilter") -> "KeyFilter":
        return KeyFilter((np.frombuffer(self.packed, np.uint8) | np.frombuffer(other.packed, np.uint8)).tobytes())

    def might_contain(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """A bool per key: False means the key is surely not among the filter's keys."""
        positions = _positions(keys)
        packed = np.frombuffer(self.packed, np.uint8)
        return ((packed[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1).astype(bool)

    @property
    def fill(self) -> float:
        """Share of the bits set."""
        return int(np.unpackbits(np.frombuffer(self.packed, np.uint8)).sum()) / BITS

    def to_text(self) -> str:
        """Compressed text (sparse filters are a few KB), to travel in a string column."""
        return base64.b64encode(zlib.compress(self.packed, 1)).decode("ascii")

    @classmethod
    def from_text(cls, text: str) -> "KeyFilter":
        packed = zlib.decompress(base64.b64decode(text))
        if len(packed) != BITS // 8:
            raise ValueError(f"a key filter has {len(packed)} bytes, not {BITS // 8}")
        return cls(packed)

    def __repr__(self) -> str:
        return f"KeyFilter({self.fill:.2%} of {BITS} bits set)"


class KeyFilterBuilder:
    """Collects the keys of a task's batches, one bit array for all of them."""

    def __init__(self) -> None:
        self._bits = np.zeros(BITS, dtype=bool)

    def add(self, keys: pa.Array | pa.ChunkedArray) -> None:
        self._bits[_positions(keys)] = True

    def build(self) -> KeyFilter:
        return KeyFilter(np.packbits(self._bits, bitorder="little").tobytes())
