"""Schema evolution: reading old files with a newer schema, and the schema a write may commit.

Readers widen types by Avro's promotion rules plus Hudi's extras (numbers and
dates read as strings); older files read with NULL for columns added later.
Writes follow Hudi's check of incoming batches: a column's type may only change
by Avro's promotions, and narrower incoming values are written in the table's
type only when ``hoodie.datasource.write.reconcile.schema`` is on.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import SchemaError
from .meta_fields import without_meta_fields


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
    if is_write_promotion(old, new):
        return new  # widening: the table's type grows
    if reconcile and is_write_promotion(new, old):
        return old  # reconciled: narrower incoming values are written in the table's type
    hint = "Only Avro's promotions are allowed (int -> long -> float -> double, string <-> bytes)"
    if is_write_promotion(new, old):
        hint = (
            f"The incoming type is narrower; set hoodie.datasource.write.reconcile.schema=true to write it "
            f"as {_avro_name(old)}, or cast the column to {_avro_name(old)}"
        )
    raise SchemaError(
        f"column {where}: the table's type is {_avro_name(old)} ({old}) and the incoming data's is "
        f"{_avro_name(new)} ({new}); the table's existing values cannot be read as {_avro_name(new)}. {hint}"
    )


#: Promotions Avro schema resolution allows (``AvroSchemaCompatibility``): what a write may change
#: a column's type to, as Hudi checks incoming batches against the table's schema.
_WRITE_PROMOTIONS: dict[pa.DataType, tuple[pa.DataType, ...]] = {
    pa.int32(): (pa.int64(), pa.float32(), pa.float64()),
    pa.int64(): (pa.float32(), pa.float64()),
    pa.float32(): (pa.float64(),),
    pa.string(): (pa.binary(),),
    pa.binary(): (pa.string(),),
}

_AVRO_NAMES = {
    pa.int32(): "int", pa.int64(): "long", pa.float32(): "float", pa.float64(): "double",
    pa.string(): "string", pa.binary(): "bytes", pa.bool_(): "boolean", pa.date32(): "date",
}


def _avro_name(dtype: pa.DataType) -> str:
    """The Avro spelling of a column type, as Hudi's schema errors print it."""
    if pa.types.is_decimal(dtype):
        return f"decimal({dtype.precision},{dtype.scale})"
    if pa.types.is_timestamp(dtype):
        return "timestamp-micros" if dtype.unit == "us" else "timestamp-millis"
    return _AVRO_NAMES.get(dtype, str(dtype))


def is_write_promotion(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether a write may bring ``new`` values into a column of type ``old``: the table's
    existing values stay readable as ``new`` under Avro's rules (decimals: wider precision and scale)."""
    if old == new:
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return is_promotion(old, new)
    return new in _WRITE_PROMOTIONS.get(old, ())


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


def is_promotion(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether values of ``old`` may be read as ``new`` (type promotion)."""
    if old == new:
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return new.scale >= old.scale and (new.precision - new.scale) >= (old.precision - old.scale)
    if pa.types.is_integer(old) and pa.types.is_decimal(new):
        return True
    return new in _PROMOTIONS.get(old, ())
