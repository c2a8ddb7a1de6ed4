"""Schema views: ``hudi_schema`` (the columns as of an instant) and
``hudi_schema_history`` (the commits that changed them)."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pyarrow as pa

from ...core.errors import SchemaError
from ...core.schema.avro_arrow import avro_to_arrow, parse_avro_schema
from ...core.schema.compare import schema_changes, schema_fingerprint
from ...core.schema.empty import empty_table
from ...core.schema.meta_fields import META_FIELDS, without_meta_fields
from ...core.table.table import HudiTable
from . import BIGINT, BOOL, INT, STRING, STRINGS, View, ViewArgs, schema
from .timeline import write_instants

#: Avro type of Hudi's meta columns.
_META_AVRO_TYPE = ["null", "string"]


def duckdb_types(types: list[pa.DataType]) -> list[str]:
    """DuckDB's names of Arrow types, as ``DESCRIBE`` of a snapshot shows them."""
    if not types:
        return []
    import duckdb

    empty = empty_table(pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(types)]))
    con = duckdb.connect()
    try:
        return [str(t) for t in con.from_arrow(empty).types]
    finally:
        con.close()


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- hudi_schema --------------------------------------------------------------------------------

SCHEMA_SCHEMA = schema(
    ("ordinal_position", INT),
    ("column_name", STRING),
    ("avro_type", STRING),
    ("arrow_type", STRING),
    ("duckdb_type", STRING),
    ("nullable", BOOL),
    ("default_value", STRING),
    ("doc", STRING),
    ("is_meta_field", BOOL),
    ("instant_time", STRING),
)


def _schema_as_of(table: HudiTable, as_of: str | None) -> tuple[str | None, str | None]:
    """(Avro schema text, the commit it comes from) a query as of ``as_of`` reads with."""
    found = table.timeline.latest_schema_instant(as_of)
    if found is not None:
        return found[1], found[0].requested_time
    return table.config.create_schema, None


def schema_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    avro_text, instant = _schema_as_of(table, args.time)
    if avro_text:
        record = parse_avro_schema(avro_text)
        avro_fields = [f for f in record.get("fields", []) if f["name"] not in META_FIELDS]
        arrow = without_meta_fields(avro_to_arrow(avro_text))
    else:  # no commit schema, no create schema: what a data file holds
        avro_fields = []
        arrow = table.data_schema
    avro_by_name = {f["name"]: f for f in avro_fields}
    columns = [(pa.field(name, pa.string()), {"type": _META_AVRO_TYPE, "default": None}, True) for name in META_FIELDS] if table.has_meta_fields else []
    columns += [(fld, avro_by_name.get(fld.name), False) for fld in arrow]
    names = duckdb_types([fld.type for fld, _, _ in columns])
    for position, ((fld, avro, meta), duck) in enumerate(zip(columns, names), start=1):
        yield {
            "ordinal_position": position,
            "column_name": fld.name,
            "avro_type": _compact(avro["type"]) if avro else None,
            "arrow_type": str(fld.type),
            "duckdb_type": duck,
            "nullable": fld.nullable,
            "default_value": _compact(avro["default"]) if avro and "default" in avro else None,
            "doc": (avro or {}).get("doc") or None,
            "is_meta_field": meta,
            "instant_time": instant,
        }


# -- hudi_schema_history ------------------------------------------------------------------------

SCHEMA_HISTORY_SCHEMA = schema(
    ("instant_time", STRING),
    ("action", STRING),
    ("completion_time", STRING),
    ("archived", BOOL),
    ("num_columns", BIGINT),
    ("added_columns", STRINGS),
    ("removed_columns", STRINGS),
    ("changed_columns", STRINGS),
    ("schema", STRING),
    ("schema_fingerprint", STRING),
)


def _nullability(fld: pa.Field) -> str:
    return "NULL" if fld.nullable else "NOT NULL"


def _describe_changes(changes) -> list[str]:
    """``column: OLD TYPE -> NEW TYPE`` (and/or ``NOT NULL -> NULL``) per changed column."""
    types = duckdb_types([t for c in changes for t in (c.old.type, c.new.type)])
    out = []
    for index, change in enumerate(changes):
        old, new = types[2 * index], types[2 * index + 1]
        parts = []
        if change.type_changed:
            parts.append(f"{old} -> {new}")
        if change.nullability_changed:
            parts.append(f"{_nullability(change.old)} -> {_nullability(change.new)}")
        out.append(f"{change.path}: {', '.join(parts)}")
    return out


def schema_history_rows(table: HudiTable, args: ViewArgs) -> Iterator[dict[str, Any]]:
    previous: pa.Schema | None = None
    for write in write_instants(table, args.include_archived, completed_only=True):
        text = write.metadata.schema
        if not text:
            continue
        instant = write.instant
        try:
            current = without_meta_fields(avro_to_arrow(text))
        except SchemaError as exc:
            raise SchemaError(f"{table.base_uri}: schema of commit {instant.requested_time}: {exc}") from exc
        change = schema_changes(previous, current)
        if previous is not None and change.is_empty:
            continue
        yield {
            "instant_time": instant.requested_time,
            "action": instant.action,
            "completion_time": instant.completion_time,
            "archived": write.archived,
            "num_columns": len(current),
            "added_columns": list(change.added),
            "removed_columns": list(change.removed),
            "changed_columns": _describe_changes(change.changed),
            "schema": text,
            "schema_fingerprint": schema_fingerprint(text),
        }
        previous = current


VIEWS = (
    View("schema", SCHEMA_SCHEMA, schema_rows, time_arg="as_of"),
    View("schema_history", SCHEMA_HISTORY_SCHEMA, schema_history_rows, archive_arg=True),
)
