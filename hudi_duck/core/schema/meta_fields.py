"""Hudi's meta columns (``_hoodie_commit_time`` ...): their names, and schemas with or without them."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
OPERATION = "_hoodie_operation"
IS_DELETED = "_hoodie_is_deleted"

META_FIELDS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)


def avro_meta_fields() -> list[dict[str, Any]]:
    """The five meta fields as Avro fields (nullable strings), as Hudi writes them first in a record."""
    return [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS]


def with_meta_fields(schema: pa.Schema) -> pa.Schema:
    """The five ``_hoodie_*`` meta columns (strings) first, then the data columns."""
    rest = [f for f in schema if f.name not in META_FIELDS]
    return pa.schema([pa.field(name, pa.string()) for name in META_FIELDS] + rest)


def without_meta_fields(schema: pa.Schema) -> pa.Schema:
    """The data columns of ``schema``: the five meta columns left out."""
    return pa.schema([f for f in schema if f.name not in META_FIELDS])
