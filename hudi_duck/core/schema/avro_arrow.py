"""Avro <-> Arrow schema mapping, Hudi's meta fields and schema evolution on read.

Hudi stores the table schema as Avro (commit metadata, log block headers,
parquet footers). Readers need Arrow; the writer derives Avro from Spark/Arrow
the way Hudi does (nullable fields become ``["null", T]`` with default null).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyarrow as pa

from ..errors import SchemaError

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
OPERATION = "_hoodie_operation"
IS_DELETED = "_hoodie_is_deleted"

META_FIELDS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)


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
        meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS]
        fields = meta + fields
    return {"type": "record", "name": record_name, "namespace": namespace, "fields": fields}


def avro_json(schema: dict[str, Any]) -> str:
    """Compact JSON as Java's ``Schema.toString()`` prints it."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def add_meta_fields_avro(schema: str | dict[str, Any]) -> dict[str, Any]:
    """The Avro schema with Hudi's five meta fields first (as in log headers and footers)."""
    record = dict(parse_avro_schema(schema))
    meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS]
    record["fields"] = meta + [f for f in record["fields"] if f["name"] not in META_FIELDS]
    ordered = {k: record[k] for k in ("type", "name", "namespace") if k in record}
    ordered["fields"] = record["fields"]
    return ordered


def with_meta_fields(schema: pa.Schema) -> pa.Schema:
    """The five ``_hoodie_*`` meta columns (strings) first, then the data columns."""
    rest = [f for f in schema if f.name not in META_FIELDS]
    return pa.schema([pa.field(name, pa.string()) for name in META_FIELDS] + rest)


def without_meta_fields(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in META_FIELDS])


def avro_field_names(schema: str | dict[str, Any]) -> list[str]:
    return [f["name"] for f in parse_avro_schema(schema).get("fields", [])]


# -- schema evolution on read -----------------------------------------------------------


def _list_parts(array: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Zero-based int32 offsets and the child values a (possibly sliced) list array spans."""
    import pyarrow.compute as pc

    offsets = array.offsets
    first = offsets[0].as_py() if len(offsets) else 0
    last = offsets[-1].as_py() if len(offsets) else 0
    if first:
        offsets = pc.subtract(offsets, first)
    return offsets.cast(pa.int32()), array.values.slice(first, last - first)


def _align_array(array: pa.Array | pa.ChunkedArray, target: pa.DataType, where: str) -> pa.Array:
    """Reshape ``array`` to ``target``: fill added struct fields, promote types."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    source = array.type
    if source == target:
        return array
    if pa.types.is_struct(target) and pa.types.is_struct(source):
        children = []
        for index in range(target.num_fields):
            fld = target.field(index)
            pos = source.get_field_index(fld.name)
            if pos < 0:
                children.append(pa.nulls(len(array), fld.type))
            else:
                children.append(_align_array(array.field(pos), fld.type, f"{where}.{fld.name}"))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=array.is_null())
    if pa.types.is_map(target) and pa.types.is_map(source):
        offsets, entries = _list_parts(array)
        keys = _align_array(entries.field(0), target.key_type, f"{where}.key")
        items = _align_array(entries.field(1), target.item_type, f"{where}.value")
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=array.is_null())
    if pa.types.is_list(target) and (pa.types.is_list(source) or pa.types.is_large_list(source)):
        offsets, values = _list_parts(array)
        values = _align_array(values, target.value_type, f"{where}[]")
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=array.is_null())
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"cannot read column {where} of type {source} as {target}: {exc}") from exc


def align_to_schema(table: pa.Table, target: pa.Schema, source: str = "") -> pa.Table:
    """``table`` with exactly ``target``'s columns: missing ones null, others promoted.

    Old files lack columns added later; those read as NULL, as in Hudi.
    """
    columns = []
    names = table.column_names
    for fld in target:
        if fld.name in names:
            columns.append(_align_array(table.column(fld.name), fld.type, f"{source}:{fld.name}"))
        else:
            columns.append(pa.nulls(table.num_rows, fld.type))
    return pa.Table.from_arrays(columns, schema=target)

#: Widening Hudi/Spark allow on read (Avro promotion rules plus Hudi's extras).
_PROMOTIONS: dict[pa.DataType, tuple[pa.DataType, ...]] = {
    pa.int32(): (pa.int64(), pa.float32(), pa.float64(), pa.string()),
    pa.int64(): (pa.float32(), pa.float64(), pa.string()),
    pa.float32(): (pa.float64(), pa.string()),
    pa.binary(): (pa.string(),),
    pa.date32(): (pa.string(),),
}


def _evolve_type(old: pa.DataType, new: pa.DataType, where: str, reconcile: bool) -> pa.DataType:
    """The type a column gets when a write brings ``new`` values into an ``old`` column."""
    if old == new:
        return old
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        return pa.struct(_evolve_fields(list(old), list(new), where, reconcile))
    if pa.types.is_list(old) and pa.types.is_list(new):
        item = _evolve_type(old.value_type, new.value_type, f"{where}[]", reconcile)
        return pa.list_(pa.field("element", item, nullable=old.value_field.nullable or new.value_field.nullable))
    if pa.types.is_map(old) and pa.types.is_map(new):
        item = _evolve_type(old.item_type, new.item_type, f"{where}.value", reconcile)
        return pa.map_(old.key_type, pa.field("value", item, nullable=old.item_field.nullable or new.item_field.nullable))
    if is_promotion(old, new):
        return new  # widening: the table's type grows
    if is_promotion(new, old):
        return old  # narrower incoming values are written in the table's type
    raise SchemaError(f"column {where}: cannot change type {old} to {new} (only widening is allowed)")


def _evolve_fields(old: list[pa.Field], new: list[pa.Field], where: str, reconcile: bool) -> list[pa.Field]:
    incoming = {f.name: f for f in new}
    out = []
    for fld in old:
        path = f"{where}.{fld.name}" if where else fld.name
        if fld.name in incoming:
            other = incoming[fld.name]
            out.append(pa.field(fld.name, _evolve_type(fld.type, other.type, path, reconcile), nullable=fld.nullable or other.nullable))
        elif fld.nullable and reconcile:
            out.append(fld)
        else:
            raise SchemaError(
                f"column {path} of the table is missing from the incoming data; add it, or set "
                "hoodie.datasource.write.reconcile.schema=true to write nulls into it"
            )
    known = {f.name for f in old}
    for fld in new:
        if fld.name in known:
            continue
        path = f"{where}.{fld.name}" if where else fld.name
        if not fld.nullable:
            raise SchemaError(f"new column {path} must be nullable (existing rows have no value for it)")
        out.append(fld)
    return out


def evolve_write_schema(table: pa.Schema, incoming: pa.Schema, reconcile: bool = False) -> pa.Schema:
    """Schema a write commits: the table's columns (widened where the data is wider)
    plus new nullable columns. Anything else is a :class:`SchemaError`.

    Both schemas are compared as Hudi sees them (through Avro), so Spark's byte
    and short columns match the table's ``int``.
    """
    table = without_meta_fields(table)
    incoming = without_meta_fields(incoming)
    return pa.schema(_evolve_fields(list(table), list(incoming), "", reconcile))


def normalize_to_avro_types(schema: pa.Schema, table_name: str = "t") -> pa.Schema:
    """The Arrow schema a Spark/Arrow schema has once written through Avro."""
    return avro_to_arrow(arrow_to_avro(without_meta_fields(schema), table_name))


def is_promotion(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether values of ``old`` may be read as ``new`` (type promotion)."""
    if old == new:
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return new.scale >= old.scale and (new.precision - new.scale) >= (old.precision - old.scale)
    if pa.types.is_integer(old) and pa.types.is_decimal(new):
        return True
    return new in _PROMOTIONS.get(old, ())


# -- comparing schemas (schema history) --------------------------------------------------


@lru_cache(maxsize=256)
def schema_fingerprint(schema: str) -> str:
    """Avro's CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form, in hex.

    Identical for schemas that differ only in docs, defaults or properties."""
    import fastavro.schema

    canonical = fastavro.schema.to_parsing_canonical_form(json.loads(schema))
    return fastavro.schema.fingerprint(canonical, "CRC-64-AVRO")


def flatten_fields(schema: pa.Schema) -> dict[str, pa.Field]:
    """Every column and nested struct field by dotted path (``address.city``), in schema order."""
    out: dict[str, pa.Field] = {}

    def visit(fld: pa.Field, prefix: str) -> None:
        path = f"{prefix}{fld.name}"
        out[path] = fld
        if pa.types.is_struct(fld.type):
            for index in range(fld.type.num_fields):
                visit(fld.type.field(index), f"{path}.")

    for fld in schema:
        visit(fld, "")
    return out


@dataclass(frozen=True)
class ColumnChange:
    """A column (or nested field) present in both schemas with another type or nullability."""

    path: str
    old: pa.Field
    new: pa.Field

    @property
    def type_changed(self) -> bool:
        return _leaf_type(self.old) != _leaf_type(self.new)

    @property
    def nullability_changed(self) -> bool:
        return self.old.nullable != self.new.nullable


@dataclass(frozen=True)
class SchemaChange:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[ColumnChange, ...]

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def _leaf_type(fld: pa.Field) -> pa.DataType:
    """A struct's own identity is its fields (compared one by one), not its whole type."""
    return pa.struct([]) if pa.types.is_struct(fld.type) else fld.type


def schema_changes(old: pa.Schema | None, new: pa.Schema) -> SchemaChange:
    """Columns added, removed and changed (type or nullability) from ``old`` to ``new``."""
    before = flatten_fields(old) if old is not None else {}
    after = flatten_fields(new)
    candidates = (ColumnChange(path, before[path], fld) for path, fld in after.items() if path in before)
    changed = tuple(c for c in candidates if c.type_changed or c.nullability_changed)
    return SchemaChange(
        added=tuple(p for p in after if p not in before),
        removed=tuple(p for p in before if p not in after),
        changed=changed,
    )
