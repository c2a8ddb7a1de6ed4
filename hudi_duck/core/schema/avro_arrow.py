"""Avro <-> Arrow schema mapping.

Hudi stores the table schema as Avro (commit metadata, log block headers,
parquet footers). Readers need Arrow; the writer derives Avro from Spark/Arrow
the way Hudi does (nullable fields become ``["null", T]`` with default null).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pyarrow as pa

from ..errors import SchemaError
from .meta_fields import META_FIELDS, avro_meta_fields, without_meta_fields

# -- Avro -> Arrow ---------------------------------------------------------------------


def parse_avro_schema(schema: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema, dict):
        return schema
    try:
        parsed = json.loads(schema)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"not an Avro schema (invalid JSON): {exc}") from exc
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise SchemaError("the table schema must be an Avro record")
    return parsed


def _non_null(branches: list[Any]) -> tuple[Any, bool]:
    """The single non-null branch of a union and whether null was allowed."""
    others = [b for b in branches if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")]
    nullable = len(others) != len(branches)
    if len(others) != 1:
        raise SchemaError(f"unions other than [null, T] are not supported: {branches}")
    return others[0], nullable


def _named_types(schema: Any, names: dict[str, Any], namespace: str = "") -> None:
    """Collect named types so later references by name resolve."""
    if isinstance(schema, list):
        for branch in schema:
            _named_types(branch, names, namespace)
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if kind in ("record", "enum", "fixed") and "name" in schema:
        ns = schema.get("namespace", namespace)
        full = schema["name"] if "." in schema["name"] or not ns else f"{ns}.{schema['name']}"
        names[full] = schema
        names.setdefault(schema["name"], schema)
        namespace = ns
    if kind == "record":
        for fld in schema.get("fields", []):
            _named_types(fld["type"], names, namespace)
    elif kind == "array":
        _named_types(schema.get("items"), names, namespace)
    elif kind == "map":
        _named_types(schema.get("values"), names, namespace)
    elif isinstance(kind, (dict, list)):
        _named_types(kind, names, namespace)


def _avro_type_to_arrow(schema: Any, names: dict[str, Any]) -> tuple[pa.DataType, bool]:
    """Arrow type and nullability of an Avro type."""
    if isinstance(schema, list):
        inner, nullable = _non_null(schema)
        arrow_type, inner_nullable = _avro_type_to_arrow(inner, names)
        return arrow_type, nullable or inner_nullable
    if isinstance(schema, str):
        if schema in names:
            return _avro_type_to_arrow(names[schema], names)
        primitive = {
            "null": pa.null(),
            "boolean": pa.bool_(),
            "int": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "bytes": pa.binary(),
            "string": pa.string(),
        }
        if schema not in primitive:
            raise SchemaError(f"unknown Avro type {schema!r}")
        return primitive[schema], schema == "null"
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if isinstance(kind, (dict, list)):
        return _avro_type_to_arrow(kind, names)
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision = int(schema["precision"])
        scale = int(schema.get("scale", 0))
        if precision <= 38:
            return pa.decimal128(precision, scale), False
        return pa.decimal256(precision, scale), False
    if logical == "date" and kind == "int":
        return pa.date32(), False
    if logical == "time-millis" and kind == "int":
        return pa.time32("ms"), False
    if logical == "time-micros" and kind == "long":
        return pa.time64("us"), False
    if logical == "timestamp-millis" and kind == "long":
        return pa.timestamp("ms", tz="UTC"), False
    if logical == "timestamp-micros" and kind == "long":
        return pa.timestamp("us", tz="UTC"), False
    if logical == "local-timestamp-millis" and kind == "long":
        return pa.timestamp("ms"), False
    if logical == "local-timestamp-micros" and kind == "long":
        return pa.timestamp("us"), False
    if kind == "record":
        return pa.struct(avro_fields_to_arrow(schema, names)), False
    if kind == "array":
        item_type, item_nullable = _avro_type_to_arrow(schema["items"], names)
        return pa.list_(pa.field("element", item_type, nullable=item_nullable)), False
    if kind == "map":
        value_type, value_nullable = _avro_type_to_arrow(schema["values"], names)
        return pa.map_(pa.string(), pa.field("value", value_type, nullable=value_nullable)), False
    if kind == "enum":
        return pa.string(), False
    if kind == "fixed":
        return pa.binary(int(schema["size"])), False
    return _avro_type_to_arrow(kind, names)


def avro_fields_to_arrow(record: dict[str, Any], names: dict[str, Any] | None = None) -> list[pa.Field]:
    if names is None:
        names = {}
        _named_types(record, names)
    fields = []
    for fld in record.get("fields", []):
        arrow_type, nullable = _avro_type_to_arrow(fld["type"], names)
        fields.append(pa.field(fld["name"], arrow_type, nullable=nullable))
    return fields


def avro_to_arrow(schema: str | dict[str, Any]) -> pa.Schema:
    """Arrow schema of an Avro record schema (as Spark/Hudi expose its types)."""
    record = parse_avro_schema(schema)
    return pa.schema(avro_fields_to_arrow(record))


# -- Arrow -> Avro (the writer schema Hudi derives from a Spark schema) ---------------------


def decimal_fixed_size(precision: int) -> int:
    """Bytes a two's-complement unscaled value of ``precision`` digits needs (Spark's rule)."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def _arrow_type_to_avro(dtype: pa.DataType, field_name: str, namespace: str) -> Any:
    """Avro type for an Arrow type; named types take the field's name and path."""
    if pa.types.is_boolean(dtype):
        return "boolean"
    if pa.types.is_int8(dtype) or pa.types.is_int16(dtype) or pa.types.is_int32(dtype):
        return "int"
    if pa.types.is_uint8(dtype) or pa.types.is_uint16(dtype):
        return "int"
    if pa.types.is_int64(dtype) or pa.types.is_uint32(dtype):
        return "long"
    if pa.types.is_float32(dtype) or pa.types.is_float16(dtype):
        return "float"
    if pa.types.is_float64(dtype):
        return "double"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return "bytes"
    if pa.types.is_fixed_size_binary(dtype):
        return {"type": "fixed", "name": field_name, "namespace": namespace, "size": dtype.byte_width}
    if pa.types.is_decimal(dtype):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{field_name}",
            "size": decimal_fixed_size(dtype.precision),
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    if pa.types.is_date(dtype):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(dtype):
        local = dtype.tz is None
        unit = "millis" if dtype.unit in ("s", "ms") else "micros"
        prefix = "local-timestamp" if local else "timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if pa.types.is_time32(dtype):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(dtype):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_struct(dtype):
        return {
            "type": "record",
            "name": field_name,
            "namespace": namespace,
            "fields": [_arrow_field_to_avro(dtype.field(i), f"{namespace}.{field_name}") for i in range(dtype.num_fields)],
        }
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        item = dtype.value_field
        items = _arrow_type_to_avro(item.type, field_name, namespace)
        return {"type": "array", "items": ["null", items] if item.nullable else items}
    if pa.types.is_map(dtype):
        if not (pa.types.is_string(dtype.key_type) or pa.types.is_large_string(dtype.key_type)):
            raise SchemaError(f"map column {field_name!r}: Avro maps need string keys, not {dtype.key_type}")
        item = dtype.item_field
        values = _arrow_type_to_avro(item.type, field_name, namespace)
        return {"type": "map", "values": ["null", values] if item.nullable else values}
    raise SchemaError(f"column {field_name!r}: Arrow type {dtype} has no Avro equivalent in Hudi")


def _arrow_field_to_avro(fld: pa.Field, namespace: str) -> dict[str, Any]:
    avro_type = _arrow_type_to_avro(fld.type, fld.name, namespace)
    if fld.nullable:
        return {"name": fld.name, "type": ["null", avro_type], "default": None}
    return {"name": fld.name, "type": avro_type}


def arrow_to_avro(schema: pa.Schema, table_name: str, include_meta: bool = False) -> dict[str, Any]:
    """Avro record Hudi derives from a Spark schema for table ``table_name``.

    Record ``<table>_record`` in namespace ``hoodie.<table>``; nullable fields
    become ``["null", T]`` with default null; decimals are ``fixed`` named
    ``fixed``; nested records are named after their field.
    """
    record_name = f"{table_name}_record"
    namespace = f"hoodie.{table_name}"
    fields = [_arrow_field_to_avro(f, f"{namespace}.{record_name}") for f in schema if f.name not in META_FIELDS]
    if include_meta:
        meta = avro_meta_fields()
        fields = meta + fields
    return {"type": "record", "name": record_name, "namespace": namespace, "fields": fields}


def avro_json(schema: dict[str, Any]) -> str:
    """Compact JSON as Java's ``Schema.toString()`` prints it."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def add_meta_fields_avro(schema: str | dict[str, Any]) -> dict[str, Any]:
    """The Avro schema with Hudi's five meta fields first (as in log headers and footers)."""
    record = dict(parse_avro_schema(schema))
    meta = avro_meta_fields()
    record["fields"] = meta + [f for f in record["fields"] if f["name"] not in META_FIELDS]
    ordered = {k: record[k] for k in ("type", "name", "namespace") if k in record}
    ordered["fields"] = record["fields"]
    return ordered


def avro_field_names(schema: str | dict[str, Any]) -> list[str]:
    if isinstance(schema, str):  # every log block carries its schema: parsed once per schema
        return list(_field_names_of(schema))
    return [f["name"] for f in parse_avro_schema(schema).get("fields", [])]


@functools.lru_cache(maxsize=64)
def _field_names_of(schema: str) -> tuple[str, ...]:
    return tuple(f["name"] for f in parse_avro_schema(schema).get("fields", []))


def normalize_to_avro_types(schema: pa.Schema, table_name: str = "t") -> pa.Schema:
    """The Arrow schema a Spark/Arrow schema has once written through Avro."""
    return avro_to_arrow(arrow_to_avro(without_meta_fields(schema), table_name))
