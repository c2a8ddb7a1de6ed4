"""Simple bucket index: a record's file group follows from its key's hash.

``bucket = (List<String>.hashCode() of the hash-field values & Integer.MAX_VALUE) % numBuckets``
with Java's string and list hash codes, and file group ids start with the
zero-padded bucket number, so any writer (Java or ours) finds the same group.
"""

from __future__ import annotations

import re
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_INT_MASK = 0xFFFFFFFF


def _to_int32(value: int) -> int:
    value &= _INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` over UTF-16 code units."""
    h = 0
    encoded = text.encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        h = (31 * h + ((encoded[i] << 8) | encoded[i + 1])) & _INT_MASK
    return _to_int32(h)


def java_list_hash(values: list[str | None]) -> int:
    """``List.hashCode()`` of strings (null elements hash to 0)."""
    h = 1
    for value in values:
        h = (31 * h + (java_string_hash(value) if value is not None else 0)) & _INT_MASK
    return _to_int32(h)


def hash_keys(record_key: str, hash_fields: list[str]) -> list[str | None]:
    """The values a bucket is hashed from: the key itself, or the named parts
    of a complex key ``f1:v1,f2:v2``."""
    if ":" not in record_key:
        return [record_key]
    pairs = {}
    for part in record_key.split(","):
        name, _, value = part.partition(":")
        pairs[name] = value
    return [pairs.get(f) for f in hash_fields]


def bucket_id(record_key: str, hash_fields: list[str], num_buckets: int) -> int:
    return (java_list_hash(hash_keys(record_key, hash_fields)) & 0x7FFFFFFF) % num_buckets


def bucket_ids(record_keys: pa.Array | pa.ChunkedArray, hash_fields: list[str], num_buckets: int) -> pa.Array:
    """:func:`bucket_id` of every key, as int32.

    Plain ASCII keys (the usual case) are hashed with numpy: their UTF-16 code units
    are their bytes. Complex keys (``f1:v1,...``) and keys with other characters
    take :func:`bucket_id` one by one, so both paths give the same bucket."""
    keys = record_keys.combine_chunks() if isinstance(record_keys, pa.ChunkedArray) else record_keys
    keys = keys.cast(pa.string())
    if keys.null_count:
        raise ValueError("a record key is null; the bucket index needs every record's key")
    hashes = _ascii_string_hashes(keys)
    list_hashes = (np.uint32(31) + hashes).astype(np.uint32)  # List.hashCode() of the one key
    buckets = (list_hashes & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)
    slow = pc.or_(pc.invert(pc.string_is_ascii(keys)), pc.match_substring(keys, ":"))
    if pc.any(slow).as_py():
        buckets = buckets.astype(np.int64)
        texts = keys.to_pylist()
        for i in np.flatnonzero(slow.to_numpy(zero_copy_only=False)):
            buckets[i] = bucket_id(texts[i], hash_fields, num_buckets)
    return pa.array(buckets.astype(np.int32), pa.int32())


def _ascii_string_hashes(keys: pa.StringArray) -> np.ndarray:
    """``String.hashCode()`` of each string as uint32, reading its bytes as code units
    (right for ASCII strings): the sum of ``byte * 31^(bytes after it)`` modulo 2^32.

    The strings are right-aligned in rows of the longest one's width (leading zeros add
    nothing), so the hash is one matrix-vector product in wrapping uint32 arithmetic."""
    n = len(keys)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset : keys.offset + n + 1].astype(np.int64)
    if n == 0 or offsets[-1] == offsets[0]:
        return np.zeros(n, dtype=np.uint32)
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    lengths = np.diff(offsets)
    width = int(lengths.max())
    if int(lengths.min()) == width:
        rows = data.reshape(n, width)
    else:
        rows = np.zeros((n, width), dtype=np.uint8)
        starts = np.arange(n, dtype=np.int64) * width + (width - lengths)
        rows.reshape(-1)[np.repeat(starts - (offsets[:-1] - offsets[0]), lengths) + np.arange(len(data))] = data
    powers = np.ones(width, dtype=np.uint32)
    if width > 1:
        powers[:-1] = np.cumprod(np.full(width - 1, 31, dtype=np.uint32), dtype=np.uint32)[::-1]
    hashes = np.zeros(n, dtype=np.uint32)
    for j in range(width):  # column by column: no n x width uint32 temporary
        hashes += rows[:, j].astype(np.uint32) * powers[j]
    return hashes


def bucket_id_str(bucket: int) -> str:
    return f"{bucket:08d}"


def new_bucket_file_id(bucket: int) -> str:
    """A new file group id for a bucket: a UUID whose first 8 characters are the bucket."""
    text = str(uuid.uuid4())
    return f"{bucket_id_str(bucket)}{text[8:]}-0"


_BUCKET_PREFIX = re.compile(r"^(\d{8})-")


def bucket_of_file_id(file_id: str) -> int | None:
    match = _BUCKET_PREFIX.match(file_id)
    return int(match.group(1)) if match else None
