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

from ..metadata.java import string_hash, string_hashes

_INT_MASK = 0xFFFFFFFF


def _to_int32(value: int) -> int:
    value &= _INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


def java_list_hash(values: list[str | None]) -> int:
    """``List.hashCode()`` of strings (null elements hash to 0)."""
    h = 1
    for value in values:
        h = (31 * h + (string_hash(value) if value is not None else 0)) & _INT_MASK
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
    """:func:`bucket_id` of every key, as int32: plain keys hashed a batch at a time, complex
    keys (``f1:v1,...``) one by one, so both give the same bucket."""
    keys = record_keys.combine_chunks() if isinstance(record_keys, pa.ChunkedArray) else record_keys
    if keys.null_count:
        raise ValueError("a record key is null; the bucket index needs every record's key")
    keys = keys.cast(pa.string())
    list_hashes = (np.uint32(31) + string_hashes(keys)).astype(np.uint32)  # List.hashCode() of the one key
    buckets = (list_hashes & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)
    complex_keys = pc.match_substring(keys, ":")
    if pc.any(complex_keys).as_py():
        buckets = buckets.astype(np.int64)
        texts = keys.to_pylist()
        for i in np.flatnonzero(complex_keys.to_numpy(zero_copy_only=False)):
            buckets[i] = bucket_id(texts[i], hash_fields, num_buckets)
    return pa.array(buckets.astype(np.int32), pa.int32())


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
