"""Ordering (precombine) values: which of two records of a key is the later one.

Hudi compares ordering values with Java's ``Comparable.compareTo`` on the value
its Avro reader hands out. This module is that comparison, and nothing else
decides it:

=====================  ======================  ==============================================
column type            Java class              order
=====================  ======================  ==============================================
boolean                ``Boolean``             false < true
int, short, byte       ``Integer``             numeric
date                   ``Integer``             epoch day (Avro ``int``)
long                   ``Long``                numeric
timestamp, time        ``Long``                the stored micros/millis (Avro ``long``)
float / double         ``Float`` / ``Double``  numeric, ``-0.0 < 0.0``, NaN above everything
decimal                ``BigDecimal``          numeric, scale ignored (``1.0 == 1.00``)
string                 ``Utf8``                unsigned UTF-8 bytes (not Java ``String``'s UTF-16
                                               order: they differ above U+FFFF vs U+E000-U+FFFF)
binary                 ``ByteBuffer``          signed bytes
=====================  ======================  ==============================================

Nulls: Hudi refuses a record whose ordering value is null when it builds its
payload (``BaseAvroPayload``: "Ordering value is null for record"), and a
stored null loses to any incoming value
(``DefaultHoodieRecordPayload.needUpdatingPersistedRecord``). Null therefore
orders below every value.

Delete blocks carry their ordering value in a wrapper record; Java unwraps it
to the class in the table below. ``IntWrapper(0)`` (what Hudi writes for a
delete without ordering value) and a missing value mean *natural order*. A
delete whose value is of another class than the records' (an ``IntWrapper``
in a ``long`` column after the column was widened, a ``StringWrapper`` in a
version 6 table, ``DateWrapper``/``DecimalWrapper``/``TimestampMicrosWrapper``
against the log scanner's Avro ``int``/fixed/``long``) is never compared:
``HoodieMergedLogRecordScanner.processNextDeletedRecord`` requires
``ReflectionUtils.isSameClass`` and otherwise lets the delete win. Hudi 1.x
(table version 8) first turns a ``String`` into ``Utf8``, so there string
deletes compare.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedFeatureError


class JavaClass(str, Enum):
    """The Java class of an ordering value, as Hudi holds it."""

    BOOLEAN = "Boolean"
    INTEGER = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    DECIMAL = "BigDecimal"  # a record's decimal (compared by value)
    AVRO_FIXED = "GenericFixed"  # a decimal as the log scanner holds a log record's (class only)
    UTF8 = "Utf8"
    STRING = "String"  # java.lang.String (a version 6 StringWrapper)
    LOCAL_DATE = "LocalDate"
    TIMESTAMP = "Timestamp"
    BYTES = "ByteBuffer"


class Kind(str, Enum):
    VALUE = "value"
    NULL = "null"  # the field is null: below every value
    NATURAL = "natural"  # no ordering value: processing (commit) order decides


@dataclass(frozen=True, slots=True)
class Ordering:
    """One record's ordering value: its kind, Java class and a Python key ordered like compareTo."""

    kind: Kind
    java_class: JavaClass | None = None
    key: Any = None

    @property
    def is_natural(self) -> bool:
        return self.kind is Kind.NATURAL


NATURAL = Ordering(Kind.NATURAL)
NULL = Ordering(Kind.NULL)


def _double_key(value: float) -> tuple:
    """``Double.compareTo``: NaN above +inf, all NaNs equal, ``-0.0 < 0.0``."""
    if value != value:
        return (2, 0.0, 0.0)
    if value == 0.0:
        return (1, 0.0, math.copysign(1.0, value))
    return (1, value, 0.0)


def _signed_bytes_key(value: bytes) -> bytes:
    """``ByteBuffer.compareTo`` compares bytes as signed (Byte.compare)."""
    return bytes(b ^ 0x80 for b in value)


def column_class(dtype: pa.DataType) -> JavaClass | None:
    """The class of a log record's ordering value for a column of this (reader schema) type."""
    t = pa.types
    if t.is_boolean(dtype):
        return JavaClass.BOOLEAN
    if t.is_int8(dtype) or t.is_int16(dtype) or t.is_int32(dtype) or t.is_uint8(dtype) or t.is_uint16(dtype):
        return JavaClass.INTEGER
    if t.is_date32(dtype) or t.is_time32(dtype):
        return JavaClass.INTEGER
    if t.is_integer(dtype) or t.is_timestamp(dtype) or t.is_time64(dtype) or t.is_date64(dtype):
        return JavaClass.LONG
    if t.is_float16(dtype) or t.is_float32(dtype):
        return JavaClass.FLOAT
    if t.is_float64(dtype):
        return JavaClass.DOUBLE
    if t.is_decimal(dtype):
        return JavaClass.AVRO_FIXED
    if t.is_string(dtype) or t.is_large_string(dtype) or getattr(t, "is_string_view", lambda _d: False)(dtype):
        return JavaClass.UTF8
    if t.is_binary(dtype) or t.is_large_binary(dtype) or t.is_fixed_size_binary(dtype):
        return JavaClass.BYTES
    return None


def require_orderable(field_name: str, dtype: pa.DataType) -> JavaClass:
    """The column's class, or a clear error for types Java cannot compare (records, arrays, maps)."""
    cls = column_class(dtype)
    if cls is None:
        raise UnsupportedFeatureError(
            f"ordering field {field_name!r} has type {dtype}, which Hudi cannot order records by "
            "(Comparable values only: numbers, strings, dates, timestamps, booleans, decimals)"
        )
    return cls


def _raw_integers(column: pa.Array | pa.ChunkedArray) -> list:
    """Dates, times and timestamps as the Avro int/long Hudi compares."""
    dtype = column.type
    if pa.types.is_date32(dtype) or pa.types.is_time32(dtype):
        return pc.cast(column, pa.int32()).to_pylist()
    if pa.types.is_timestamp(dtype) or pa.types.is_time64(dtype) or pa.types.is_date64(dtype):
        return pc.cast(column, pa.int64()).to_pylist()
    return column.to_pylist()


def ordering_values(column: pa.Array | pa.ChunkedArray | None, length: int, field_name: str = "") -> list[Ordering]:
    """Ordering values of records from their ordering column (already in the reader schema's type).

    ``None`` (no ordering field, or a block written before the column existed)
    means natural order for every record."""
    if column is None:
        return [NATURAL] * length
    cls = require_orderable(field_name, column.type)
    if cls in (JavaClass.INTEGER, JavaClass.LONG):
        keys: Sequence = _raw_integers(column)
    elif cls is JavaClass.BOOLEAN:
        keys = column.to_pylist()
    elif cls in (JavaClass.FLOAT, JavaClass.DOUBLE):
        keys = [None if v is None else _double_key(v) for v in column.to_pylist()]
    elif cls is JavaClass.AVRO_FIXED:
        keys = column.to_pylist()
    elif cls is JavaClass.UTF8:
        keys = [None if v is None else v.encode("utf-8") for v in column.to_pylist()]
    else:
        keys = [None if v is None else _signed_bytes_key(v) for v in column.to_pylist()]
    return [NULL if k is None else Ordering(Kind.VALUE, cls, k) for k in keys]


# -- delete blocks --------------------------------------------------------------------------

_WRAPPER_CLASSES = {
    "BooleanWrapper": JavaClass.BOOLEAN,
    "IntWrapper": JavaClass.INTEGER,
    "LongWrapper": JavaClass.LONG,
    "FloatWrapper": JavaClass.FLOAT,
    "DoubleWrapper": JavaClass.DOUBLE,
    "DecimalWrapper": JavaClass.DECIMAL,
    "StringWrapper": JavaClass.STRING,
    "DateWrapper": JavaClass.LOCAL_DATE,
    "TimestampMicrosWrapper": JavaClass.TIMESTAMP,
    "BytesWrapper": JavaClass.BYTES,
}
_EPOCH_DAY = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _python_class(value: Any) -> JavaClass:
    """Class of a delete's value that came without its wrapper's name."""
    if isinstance(value, bool):
        return JavaClass.BOOLEAN
    if isinstance(value, int):
        return JavaClass.INTEGER if -(2**31) <= value < 2**31 else JavaClass.LONG
    if isinstance(value, float):
        return JavaClass.DOUBLE
    if isinstance(value, decimal.Decimal):
        return JavaClass.DECIMAL
    if isinstance(value, str):
        return JavaClass.STRING
    if isinstance(value, _dt.datetime):
        return JavaClass.TIMESTAMP
    if isinstance(value, _dt.date):
        return JavaClass.LOCAL_DATE
    return JavaClass.BYTES


def delete_ordering(value: Any, wrapper: str | None, table_version: int = 6) -> Ordering:
    """Ordering value of a delete-block entry (the wrapper's value, unwrapped)."""
    if value is None:
        return NATURAL
    cls = _WRAPPER_CLASSES.get(wrapper or "") or _python_class(value)
    if cls is JavaClass.INTEGER and value == 0:
        return NATURAL  # Integer 0: HoodieRecord's "natural order"
    if cls is JavaClass.STRING and table_version >= 8:
        cls = JavaClass.UTF8  # Hudi 1.x reads it as Utf8 (convertValueToEngineType)
    if cls in (JavaClass.FLOAT, JavaClass.DOUBLE):
        key: Any = _double_key(float(value))
    elif cls is JavaClass.UTF8:
        key = str(value).encode("utf-8")
    elif cls is JavaClass.STRING:
        key = str(value).encode("utf-16-be")  # String.compareTo: UTF-16 code units
    elif cls is JavaClass.LOCAL_DATE:
        key = (value - _EPOCH_DAY).days if isinstance(value, _dt.date) else int(value)
    elif cls is JavaClass.TIMESTAMP:
        if isinstance(value, _dt.datetime):
            moment = value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
            key = (moment - _EPOCH) // _dt.timedelta(microseconds=1)
        else:
            key = int(value)
    elif cls is JavaClass.BYTES:
        key = _signed_bytes_key(bytes(value))
    else:
        key = value
    return Ordering(Kind.VALUE, cls, key)


# -- comparing --------------------------------------------------------------------------------


def comparable(a: Ordering, b: Ordering) -> bool:
    """Would Java compare these two (same class), rather than fall back to processing order?"""
    if a.kind is Kind.NATURAL or b.kind is Kind.NATURAL:
        return False
    if a.kind is Kind.NULL or b.kind is Kind.NULL:
        return True
    return a.java_class is b.java_class


def compare(a: Ordering, b: Ordering) -> int:
    """``a.compareTo(b)`` for two comparable ordering values (null lowest)."""
    if a.kind is Kind.NULL or b.kind is Kind.NULL:
        return (a.kind is not Kind.NULL) - (b.kind is not Kind.NULL)
    return (a.key > b.key) - (a.key < b.key)


# -- the rule as data, for engines that sort -------------------------------------------------


@dataclass(frozen=True)
class EngineOrdering:
    """How an engine sorts a column's values in Java's order (nulls lowest).

    Engines compare integers, decimals, dates, timestamps, booleans and UTF-8
    strings (byte-wise) as Java does; NaN sorts above every number in Spark and
    DuckDB too. Floats need one more key: engines treat ``-0.0`` and ``0.0`` as
    equal, ``Double.compareTo`` puts ``-0.0`` first."""

    java_class: JavaClass
    zero_sign: bool = False


def engine_ordering(field_name: str, dtype: pa.DataType) -> EngineOrdering:
    """The sort rule engines render for an ordering column of this type."""
    cls = require_orderable(field_name, dtype)
    if cls is JavaClass.BYTES:
        raise UnsupportedFeatureError(
            f"ordering field {field_name!r} is binary: Hudi orders it by signed bytes, which Spark and "
            "DuckDB do not; use a number, string, date or timestamp column"
        )
    return EngineOrdering(cls, zero_sign=cls in (JavaClass.FLOAT, JavaClass.DOUBLE))


def engine_column(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """An ordering column in the form engines compare as Java does: dates, times and timestamps
    as the Avro ``int``/``long`` Hudi compares, floats as doubles (exact), strings as UTF-8."""
    dtype = column.type
    t = pa.types
    if t.is_date32(dtype) or t.is_time32(dtype):
        return pc.cast(column, pa.int32())
    if t.is_timestamp(dtype) or t.is_time64(dtype) or t.is_date64(dtype):
        return pc.cast(column, pa.int64())
    if t.is_float16(dtype) or t.is_float32(dtype):
        return pc.cast(column, pa.float64())
    if t.is_large_string(dtype) or getattr(t, "is_string_view", lambda _d: False)(dtype):
        return pc.cast(column, pa.string())
    return column


def engine_ordering_type(schema: pa.Schema, field_name: str | None) -> pa.DataType:
    """The type of :func:`engine_column` for a schema's ordering field (int64 when there is none)."""
    if not field_name or field_name not in schema.names:
        return pa.int64()
    return engine_column(pa.nulls(0, schema.field(field_name).type)).type


def delete_values_column(values: Sequence[Any], dtype: pa.DataType) -> pa.Array:
    """Delete-block ordering values Java compares with the records' (same class), in the
    engine form ``dtype``; None for the others."""
    return pa.array(list(values), dtype)
