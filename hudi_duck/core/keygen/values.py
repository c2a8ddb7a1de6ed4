"""Field values as Hudi sees them: Arrow types through Avro, values printed for keys, partition values parsed back.

Writers print a field value the way Hudi's ``getNestedFieldValAsString`` does
(one value, or vectorised over an Arrow array); readers parse a partition folder
name back into a typed value for pruning.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import KeyGeneratorError
from .java import (
    EPOCH_DATE,
    EPOCH_UTC,
    java_bigdecimal_to_string,
    java_double_to_string,
    java_float_to_string,
    java_local_date_to_string,
    java_timestamp_to_string,
    java_trunc_div,
    to_float32,
)

__all__ = ["field_value_as_string"]

# -- Arrow types as Hudi sees them (through Avro) ---------------------------------------


def _is_view(dtype: pa.DataType, name: str) -> bool:
    check = getattr(pa.types, f"is_{name}_view", None)  # pyarrow >= 16
    return bool(check and check(dtype))


def type_kind(dtype: pa.DataType) -> str:
    """Which Java object an Arrow type turns into on Hudi's Avro path."""
    if pa.types.is_dictionary(dtype):
        return type_kind(dtype.value_type)
    if pa.types.is_null(dtype):
        return "null"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or _is_view(dtype, "string"):
        return "string"
    if pa.types.is_boolean(dtype):
        return "bool"
    if pa.types.is_integer(dtype):
        return "int"
    if pa.types.is_float16(dtype) or pa.types.is_float32(dtype):
        return "float"
    if pa.types.is_float64(dtype):
        return "double"
    if pa.types.is_decimal(dtype):
        return "decimal"
    if pa.types.is_date(dtype):
        return "date"
    if pa.types.is_timestamp(dtype):
        # Avro timestamp-* (Spark TIMESTAMP) vs local-timestamp-* (TIMESTAMP_NTZ).
        return "timestamp" if dtype.tz is not None else "local_timestamp"
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or _is_view(dtype, "binary"):
        return "binary"
    if pa.types.is_fixed_size_binary(dtype):
        return "fixed"
    return "unsupported"


def python_kind(value: Any) -> str:
    """Kind of a Python value when no Arrow type is known (Spark's defaults)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, _dt.datetime):
        return "timestamp"
    if isinstance(value, _dt.date):
        return "date"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "binary"
    return "unsupported"


def is_millis_unit(dtype: pa.DataType | None) -> bool:
    """Avro has millis and micros only: s/ms become timestamp-millis, us/ns micros."""
    return dtype is not None and pa.types.is_timestamp(dtype) and dtype.unit in ("s", "ms")


def _epoch_micros(value: _dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    delta = value - EPOCH_UTC
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def avro_timestamp_long(value: Any, dtype: pa.DataType | None) -> int:
    """The raw Avro long of a timestamp: epoch millis or micros, as its logical type says."""
    if isinstance(value, int):
        unit = dtype.unit if dtype is not None and pa.types.is_timestamp(dtype) else "us"
        return {"s": value * 1000, "ms": value, "us": value, "ns": value // 1000}[unit]
    micros = _epoch_micros(value)
    return micros // 1000 if is_millis_unit(dtype) else micros


def epoch_day(value: Any) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        value = value.date()
    return (value - EPOCH_DATE).days


def field_value_as_string(
    value: Any,
    dtype: pa.DataType | None = None,
    *,
    consistent_logical_timestamp: bool = False,
    jvm_timezone: str = "UTC",
) -> str | None:
    """A field value as Hudi prints it in keys (``getNestedFieldValAsString``).

    ``dtype`` is the Arrow type of the column; without it the Python type decides
    (datetime -> Spark TIMESTAMP, float -> double).
    """
    if value is None:
        return None
    kind = type_kind(dtype) if dtype is not None else python_kind(value)
    if kind == "string":
        return str(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int":
        return str(int(value))
    if kind == "double":
        return java_double_to_string(float(value))
    if kind == "float":
        return java_float_to_string(float(value))
    if kind == "decimal":
        return java_bigdecimal_to_string(value if isinstance(value, Decimal) else Decimal(value))
    if kind == "date":
        return java_local_date_to_string(epoch_day(value))
    if kind in ("timestamp", "local_timestamp"):
        raw = avro_timestamp_long(value, dtype)
        if kind == "timestamp" and consistent_logical_timestamp:
            millis = raw if is_millis_unit(dtype) else java_trunc_div(raw, 1000)
            return java_timestamp_to_string(millis, jvm_timezone)
        return str(raw)
    if kind == "binary":
        return bytes(value).hex()  # StringUtils.objToString prints ByteBuffers as hex
    if kind == "fixed":  # GenericData.Fixed.toString is Arrays.toString of signed bytes
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in bytes(value)) + "]"
    shown = dtype if dtype is not None else type(value).__name__
    raise KeyGeneratorError(f"values of type {shown} cannot be used in a record key or partition path")


# -- field access ------------------------------------------------------------------------


def row_value(row: Mapping[str, Any], path: str) -> Any:
    """Walk a dotted field name; null or missing gives None (returnNullIfNotFound)."""
    value: Any = row
    for part in path.split("."):
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise KeyGeneratorError(f"Cannot find a record at part value: {part} (field {path})")
        if part not in value:
            return None
        value = value[part]
    return value


def field_type(schema: pa.Schema | None, path: str) -> pa.DataType | None:
    if schema is None:
        return None
    parts = path.split(".")
    index = schema.get_field_index(parts[0])
    if index < 0:
        return None
    dtype = schema.field(index).type
    for part in parts[1:]:
        if not pa.types.is_struct(dtype):
            return None
        index = dtype.get_field_index(part)
        if index < 0:
            return None
        dtype = dtype.field(index).type
    return dtype


def field_column(batch: pa.Table | pa.RecordBatch, path: str) -> pa.Array:
    """The (nested) column for a dotted field name; all nulls when it is missing."""
    parts = path.split(".")
    index = batch.schema.get_field_index(parts[0])
    if index < 0:
        return pa.nulls(batch.num_rows)
    column = batch.column(index)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    for previous, part in zip(parts, parts[1:]):
        if not pa.types.is_struct(column.type):
            raise KeyGeneratorError(f"Cannot find a record at part value: {previous} (field {path})")
        child = column.type.get_field_index(part)
        if child < 0:
            return pa.nulls(batch.num_rows)
        column = pc.struct_field(column, [child])
    return column


def map_values(array: pa.Array, fn: Callable[[Any], str]) -> pa.Array:
    """Row-wise fallback, once per distinct value where the type allows hashing."""
    if len(array) == 0:
        return pa.array([], pa.string())
    if not pa.types.is_floating(array.type):  # NaN does not hash reliably
        try:
            distinct = pc.unique(array)
            positions = pc.index_in(array, value_set=distinct)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        else:
            return pa.array([fn(v) for v in distinct.to_pylist()], pa.string()).take(positions)
    return pa.array([fn(v) for v in array.to_pylist()], pa.string())


_PLAIN_DATE_RANGE = ((_dt.date(1000, 1, 1) - EPOCH_DATE).days, (_dt.date(9999, 12, 31) - EPOCH_DATE).days)


def string_array(array: pa.Array, consistent_logical_timestamp: bool, jvm_timezone: str) -> pa.Array:
    """Vectorised ``field_value_as_string`` (pyarrow.compute where Arrow prints like Java)."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    dtype = array.type
    kind = type_kind(dtype)
    if kind == "null":
        return pa.nulls(len(array), pa.string())
    if kind in ("string", "bool", "int"):
        return array.cast(pa.string())
    if kind == "date":
        days = array.cast(pa.date32())
        bounds = pc.min_max(days.cast(pa.int32()))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or (_PLAIN_DATE_RANGE[0] <= low and high <= _PLAIN_DATE_RANGE[1]):
            return days.cast(pa.string())
    raw_long = kind == "local_timestamp" or (kind == "timestamp" and not consistent_logical_timestamp)
    if raw_long and dtype.unit in ("s", "ms", "us"):
        raw = array.cast(pa.int64())
        if dtype.unit == "s":
            raw = pc.multiply_checked(raw, 1000)
        return raw.cast(pa.string())

    def one(value: Any) -> str | None:
        return field_value_as_string(
            value, dtype, consistent_logical_timestamp=consistent_logical_timestamp, jvm_timezone=jvm_timezone
        )

    if kind in ("timestamp", "local_timestamp") and dtype.unit == "ns":
        array = array.cast(pa.int64())  # Python datetimes would drop the nanoseconds
    return map_values(array, one)


def first_true(mask: pa.Array) -> int | None:
    """Index of the first true value of a boolean array, None when there is none."""
    index = pc.index(mask, True).as_py()
    return None if index is None or index < 0 else index


# -- parsing partition values back (readers) ---------------------------------------------

INVALID = object()
_INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
    pa.uint8(): (0, 2**8 - 1),
    pa.uint16(): (0, 2**16 - 1),
    pa.uint32(): (0, 2**32 - 1),
    pa.uint64(): (0, 2**64 - 1),
}
_JAVA_INT = re.compile(r"-?[0-9]+")


def parse_string_value(text: str, dtype: pa.DataType, consistent_logical_timestamp: bool) -> Any:
    """Candidate typed value whose Java string is ``text``; ``INVALID`` if there is none.

    Callers re-print the candidate and compare, so a lenient parse here is safe.
    """
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    kind = type_kind(dtype)
    try:
        if kind == "string":
            return text
        if kind == "bool":
            return {"true": True, "false": False}.get(text, INVALID)
        if kind == "int":
            if not _JAVA_INT.fullmatch(text):
                return INVALID
            value = int(text)
            low, high = _INT_RANGES[dtype]
            return value if low <= value <= high else INVALID
        if kind in ("double", "float"):
            special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
            value = special[text] if text in special else float(text)
            return to_float32(value) if kind == "float" else value
        if kind == "decimal":
            value = Decimal(text)
            if not value.is_finite() or len(value.as_tuple().digits) > dtype.precision:
                return INVALID
            return value
        if kind == "date":
            value = _dt.date.fromisoformat(text)
            return value if pa.types.is_date32(dtype) or pa.types.is_date64(dtype) else INVALID
        if kind in ("timestamp", "local_timestamp"):
            if (kind == "timestamp" and consistent_logical_timestamp) or dtype.unit == "ns":
                return INVALID  # Timestamp.toString / micros drop precision
            if not _JAVA_INT.fullmatch(text):
                return INVALID
            raw = int(text)
            if dtype.unit == "s":
                if raw % 1000:
                    return INVALID
                raw //= 1000
            return pa.scalar(raw, pa.int64()).cast(dtype).as_py()
        if kind == "binary":
            return bytes.fromhex(text) if re.fullmatch(r"(?:[0-9a-f]{2})*", text) else INVALID
    except (ValueError, InvalidOperation, OverflowError, pa.ArrowInvalid, KeyError):
        return INVALID
    return INVALID
