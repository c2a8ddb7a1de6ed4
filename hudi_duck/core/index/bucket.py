"""Simple bucket index: a record's file group follows from its key's hash.

``bucket = (List<String>.hashCode() of the hash-field values & Integer.MAX_VALUE) % numBuckets``
with Java's string and list hash codes, and file group ids start with the
zero-padded bucket number, so any writer (Java or ours) finds the same group.
"""

from __future__ import annotations

import re
import uuid

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
