"""Key generators: how a record becomes a record key and a partition path.

This is a format rule shared by the reader and the writer. Hudi stores the result
in every row (``_hoodie_record_key``, ``_hoodie_partition_path``) and uses the
partition path as the folder of the file, so the writer must reproduce Apache
Hudi 0.14/0.15 byte for byte and the reader needs the inverse (partition values
from a folder name) for pruning.

Rules follow the Avro write path of Hudi 0.14/0.15 (Spark datasource upsert and
insert): every value is turned into a Java object first and then printed with
Java's ``toString``, which is why this package carries small copies of Java's
number, date and Joda-Time formatting (``java``, ``joda``).

Known, deliberate differences from the JVM:

* the JVM default time zone (used by ``Timestamp.toString`` and by timestamp-based
  partitioning when no zone is configured) is a parameter, ``jvm_timezone``,
  defaulting to UTC;
* unknown time-zone ids raise instead of silently becoming GMT;
* partition paths with ``..``, ``.`` or empty segments are refused (newer Hudi
  refuses ``..`` too), since they cannot be the folder of a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..config.table_config import Keys
from ..errors import KeyGeneratorError
from .java import java_zone
from .paths import (
    BAD_SEGMENT,
    DEFAULT_PARTITION_PATH,
    PARTITION_PATH_SEPARATOR,
    check_partition_path,
    escape_path_name,
    unescape_path_name,
)
from .timestamp import TimestampConfig, TimestampKeys
from .values import (
    INVALID,
    field_column,
    field_type,
    field_value_as_string,
    first_true,
    map_values,
    parse_string_value,
    row_value,
    string_array,
    type_kind,
)

__all__ = [
    "NULL_RECORDKEY_PLACEHOLDER",
    "EMPTY_RECORDKEY_PLACEHOLDER",
    "WriteOptions",
    "PartitionPart",
    "KeyGenerator",
    "SimpleKeyGenerator",
    "ComplexKeyGenerator",
    "NonpartitionedKeyGenerator",
    "TimestampBasedKeyGenerator",
    "CustomKeyGenerator",
    "GlobalDeleteKeyGenerator",
    "auto_record_keys",
    "is_field_prefixed_record_key",
]

NULL_RECORDKEY_PLACEHOLDER = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"
RECORD_KEY_PARTS_SEPARATOR = ","
RECORD_KEY_FIELD_SEPARATOR = ":"


class WriteOptions:
    """Hudi datasource write options that configure the key generator."""

    RECORDKEY_FIELD = "hoodie.datasource.write.recordkey.field"
    PARTITIONPATH_FIELD = "hoodie.datasource.write.partitionpath.field"
    KEYGENERATOR_CLASS = "hoodie.datasource.write.keygenerator.class"
    KEYGENERATOR_TYPE = "hoodie.datasource.write.keygenerator.type"
    HIVE_STYLE_PARTITIONING = "hoodie.datasource.write.hive_style_partitioning"
    URL_ENCODE_PARTITIONING = "hoodie.datasource.write.partitionpath.urlencode"
    CONSISTENT_LOGICAL_TIMESTAMP = (
        "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled"
    )


# -- key generator kinds and class names ------------------------------------------------

SIMPLE, COMPLEX, NON_PARTITION, TIMESTAMP, CUSTOM, GLOBAL_DELETE = (
    "SIMPLE",
    "COMPLEX",
    "NON_PARTITION",
    "TIMESTAMP",
    "CUSTOM",
    "GLOBAL_DELETE",
)

_PKG = "org.apache.hudi.keygen."
CLASS_NAMES = {
    SIMPLE: _PKG + "SimpleKeyGenerator",
    COMPLEX: _PKG + "ComplexKeyGenerator",
    NON_PARTITION: _PKG + "NonpartitionedKeyGenerator",
    TIMESTAMP: _PKG + "TimestampBasedKeyGenerator",
    CUSTOM: _PKG + "CustomKeyGenerator",
    GLOBAL_DELETE: _PKG + "GlobalDeleteKeyGenerator",
}
# Spark and Avro variants share the logic; v8+ tables store the enum name instead.
_KIND_BY_CLASS = {
    **{name: kind for kind, name in CLASS_NAMES.items()},
    _PKG + "SimpleAvroKeyGenerator": SIMPLE,
    _PKG + "ComplexAvroKeyGenerator": COMPLEX,
    _PKG + "NonpartitionedAvroKeyGenerator": NON_PARTITION,
    _PKG + "TimestampBasedAvroKeyGenerator": TIMESTAMP,
    _PKG + "CustomAvroKeyGenerator": CUSTOM,
    _PKG + "GlobalAvroDeleteKeyGenerator": GLOBAL_DELETE,
}
_KIND_BY_TYPE = {
    **{kind: kind for kind in CLASS_NAMES},
    **{kind + "_AVRO": kind for kind in CLASS_NAMES},
}


def kind_of_name(name: str, option: str) -> str:
    """The kind of a key generator class name (v6) or type name (v8+); ``option`` names the setting in errors."""
    name = name.strip()
    kind = _KIND_BY_CLASS.get(name) or _KIND_BY_TYPE.get(name.upper())
    if kind is None:
        raise KeyGeneratorError(
            f"{option}={name} is not a supported key generator (supported: "
            f"{', '.join(sorted(CLASS_NAMES))} and their org.apache.hudi.keygen classes)"
        )
    return kind


# -- key generators ------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionPart:
    """One partition field and how its segment is produced.

    ``kind`` is ``SIMPLE`` or ``TIMESTAMP``; ``""`` means unknown (a v6 Custom
    table whose hoodie.properties lost the ``:TYPE`` suffixes).
    """

    field: str
    kind: str = SIMPLE


def _as_fields(fields: Sequence[str] | str | None) -> list[str]:
    """Field names from a list or a comma-separated string, trimmed, blanks dropped."""
    if fields is None:
        return []
    items = fields.split(",") if isinstance(fields, str) else list(fields)
    return [name.strip() for name in items if name and name.strip()]


def parse_custom_spec(spec: str, allow_untyped: bool) -> PartitionPart:
    pieces = spec.split(":")
    if len(pieces) == 1 and allow_untyped:
        return PartitionPart(pieces[0].strip(), "")
    if len(pieces) != 2 or pieces[1].strip().upper() not in (SIMPLE, TIMESTAMP) or not pieces[0].strip():
        raise KeyGeneratorError(
            f"Unable to find field names for partition path in proper format: {spec!r} "
            f"({WriteOptions.PARTITIONPATH_FIELD} must look like 'field:SIMPLE,field2:TIMESTAMP' "
            "for CustomKeyGenerator)"
        )
    return PartitionPart(pieces[0].strip(), pieces[1].strip().upper())


class KeyGenerator:
    """Base class: record key and partition path of records, rows and Arrow batches.

    Subclasses only choose how the record key is combined and which partition
    parts exist; the rules themselves live here.
    """

    kind: ClassVar[str] = ""

    def __init__(
        self,
        record_key_fields: Sequence[str],
        parts: Sequence[PartitionPart],
        *,
        hive_style: bool = False,
        url_encode: bool = False,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
        prefix_single_key: bool = False,
        timestamp: TimestampConfig | None = None,
    ) -> None:
        self.record_key_fields: list[str] = _as_fields(record_key_fields)
        self.parts: list[PartitionPart] = list(parts)
        self.hive_style = hive_style
        self.url_encode = url_encode
        self.consistent_logical_timestamp = consistent_logical_timestamp
        self.jvm_timezone = jvm_timezone
        self.prefix_single_key = prefix_single_key
        self.timestamp = timestamp
        java_zone(jvm_timezone)

    # -- description --

    @property
    def partition_fields(self) -> list[str]:
        return [part.field for part in self.parts]

    @property
    def partition_fields_spec(self) -> list[str]:
        """Partition fields as CustomKeyGenerator spells them (``field:TYPE``)."""
        return [part.field for part in self.parts]

    @property
    def is_partitioned(self) -> bool:
        return bool(self.parts)

    @property
    def auto_record_keys(self) -> bool:
        """No record key configured: keys come from ``auto_record_keys`` (Hudi 0.14+)."""
        return not self.record_key_fields

    @property
    def class_name(self) -> str:
        """The Spark key generator class Hudi writes to hoodie.properties (v6)."""
        return CLASS_NAMES[self.kind]

    @property
    def type_name(self) -> str:
        """The ``KeyGeneratorType`` enum name (v8+ hoodie.properties)."""
        return self.kind

    def table_properties(self) -> dict[str, str]:
        """Key generator entries of a v6 hoodie.properties."""
        props = {
            Keys.KEY_GENERATOR_CLASS: self.class_name,
            Keys.HIVE_STYLE_PARTITIONING: "true" if self.hive_style else "false",
            Keys.URL_ENCODE_PARTITIONING: "true" if self.url_encode else "false",
        }
        if self.record_key_fields:
            props[Keys.RECORDKEY_FIELDS] = ",".join(self.record_key_fields)
        if self.parts:
            props[Keys.PARTITION_FIELDS] = ",".join(self.partition_fields)  # v6: no :TYPE suffixes
        if self.timestamp is not None:
            props.update(self.timestamp.table_properties())
        return props

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(record_key_fields={self.record_key_fields}, "
            f"partition_fields={self.partition_fields_spec}, hive_style={self.hive_style}, "
            f"url_encode={self.url_encode})"
        )

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    # -- validation against a schema (writer) --

    def validate_schema(self, schema: pa.Schema) -> None:
        """Raise when a configured field is missing or has a type keys cannot use."""
        for name in self.record_key_fields:
            self._check_field(schema, name, WriteOptions.RECORDKEY_FIELD, timestamp=False)
        for part in self.parts:
            self._check_field(schema, part.field, WriteOptions.PARTITIONPATH_FIELD, part.kind == TIMESTAMP)

    def _check_field(self, schema: pa.Schema, name: str, option: str, timestamp: bool) -> None:
        dtype = field_type(schema, name)
        if dtype is None:
            raise KeyGeneratorError(f"field {name!r} of {option} is not in the schema: {schema.names}")
        kind = type_kind(dtype)
        allowed = {"string", "int", "float", "double", "decimal", "date", "timestamp", "local_timestamp"}
        if not timestamp:
            allowed |= {"bool", "binary", "fixed"}
        if kind not in allowed:
            raise KeyGeneratorError(f"field {name!r} of {option} has type {dtype}, which cannot be used there")
        if timestamp and self.timestamp is not None:
            numeric = self.timestamp.time_unit_nanos is not None
            if kind == "string" and numeric:
                raise KeyGeneratorError(
                    f"field {name!r} is a string but {TimestampKeys.TIMESTAMP_TYPE}={self.timestamp.timestamp_type}"
                )
            consistent_ts = kind == "timestamp" and self.consistent_logical_timestamp
            if kind != "string" and not numeric and not consistent_ts:
                raise KeyGeneratorError(
                    f"field {name!r} has type {dtype} but {TimestampKeys.TIMESTAMP_TYPE}="
                    f"{self.timestamp.timestamp_type} only accepts strings"
                )

    # -- record keys --

    def _combines_fields(self) -> bool:
        return len(self.record_key_fields) > 1 or self.prefix_single_key

    def _require_record_key_fields(self) -> None:
        if not self.record_key_fields:
            raise KeyGeneratorError(
                f"no record key field is configured ({WriteOptions.RECORDKEY_FIELD}); record keys are "
                "auto-generated, use auto_record_keys(instant_time, partition_id, num_rows)"
            )

    def record_key(self, row: Mapping[str, Any], schema: pa.Schema | None = None) -> str:
        """Record key of one row (a mapping, nested records as mappings)."""
        self._require_record_key_fields()
        values = [self._value_string(row, name, schema) for name in self.record_key_fields]
        if not self._combines_fields():
            value, name = values[0], self.record_key_fields[0]
            if value is None or value == "":
                raise KeyGeneratorError(
                    f'recordKey value: "{value if value is not None else "null"}" for field: "{name}" '
                    "cannot be null or empty."
                )
            return value
        parts = []
        for name, value in zip(self.record_key_fields, values):
            if value is None:
                shown = NULL_RECORDKEY_PLACEHOLDER
            else:
                shown = EMPTY_RECORDKEY_PLACEHOLDER if value == "" else value
            parts.append(name + RECORD_KEY_FIELD_SEPARATOR + shown)
        if all(value is None or value == "" for value in values):
            raise KeyGeneratorError(
                f'recordKey values: "{RECORD_KEY_PARTS_SEPARATOR.join(parts)}" for fields: '
                f"{self.record_key_fields} cannot be entirely null or empty."
            )
        return RECORD_KEY_PARTS_SEPARATOR.join(parts)

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        """Record keys of a batch (vectorised; row-wise only for floats, decimals, binary...)."""
        self._require_record_key_fields()
        columns = [self._string_column(batch, name) for name in self.record_key_fields]
        if not self._combines_fields():
            column, name = columns[0], self.record_key_fields[0]
            bad = first_true(pc.or_kleene(pc.is_null(column), pc.equal(column, "")))
            if bad is not None:
                value = column[bad].as_py()
                raise KeyGeneratorError(
                    f'recordKey value: "{value if value is not None else "null"}" for field: "{name}" '
                    f"cannot be null or empty (row {bad})."
                )
            return column
        pieces = []
        all_missing = None
        for name, column in zip(self.record_key_fields, columns):
            missing = pc.fill_null(pc.equal(column, ""), True)
            shown = pc.if_else(
                pc.is_null(column),
                NULL_RECORDKEY_PLACEHOLDER,
                pc.if_else(missing, EMPTY_RECORDKEY_PLACEHOLDER, column),
            )
            pieces.append(pc.binary_join_element_wise(name + RECORD_KEY_FIELD_SEPARATOR, shown, ""))
            all_missing = missing if all_missing is None else pc.and_(all_missing, missing)
        keys = pc.binary_join_element_wise(*pieces, RECORD_KEY_PARTS_SEPARATOR)
        bad = first_true(all_missing)
        if bad is not None:
            raise KeyGeneratorError(
                f'recordKey values: "{keys[bad].as_py()}" for fields: {self.record_key_fields} '
                f"cannot be entirely null or empty (row {bad})."
            )
        return keys

    # -- partition paths --

    def partition_path(self, row: Mapping[str, Any], schema: pa.Schema | None = None) -> str:
        """Partition path of one row (``""`` when the table is not partitioned)."""
        if not self.parts:
            return ""
        segments = []
        for part in self.parts:
            if part.kind == SIMPLE:
                segments.append(self._simple_segment(part.field, self._value_string(row, part.field, schema)))
            else:
                value = row_value(row, part.field)
                segments.append(self._timestamp_segment(part, value, field_type(schema, part.field)))
        return check_partition_path(PARTITION_PATH_SEPARATOR.join(segments))

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        """Partition paths of a batch (vectorised for simple parts)."""
        if not self.parts:
            return pa.array([""] * batch.num_rows, pa.string())
        segments = []
        for part in self.parts:
            if part.kind == SIMPLE:
                column = self._string_column(batch, part.field)
                column = pc.if_else(pc.fill_null(pc.equal(column, ""), True), DEFAULT_PARTITION_PATH, column)
                if self.url_encode:
                    column = map_values(column, escape_path_name)
                if self.hive_style:
                    column = pc.binary_join_element_wise(part.field + "=", column, "")
            else:
                raw = field_column(batch, part.field)
                dtype = raw.type

                def one(value: Any, part: PartitionPart = part, dtype: pa.DataType = dtype) -> str:
                    return self._timestamp_segment(part, value, dtype)

                column = map_values(raw, one)
            segments.append(column)
        paths = segments[0] if len(segments) == 1 else pc.binary_join_element_wise(*segments, PARTITION_PATH_SEPARATOR)
        bad = first_true(pc.match_substring_regex(paths, BAD_SEGMENT.pattern))
        if bad is not None:
            check_partition_path(paths[bad].as_py())
        return paths

    def _value_string(self, row: Mapping[str, Any], name: str, schema: pa.Schema | None) -> str | None:
        return field_value_as_string(
            row_value(row, name),
            field_type(schema, name),
            consistent_logical_timestamp=self.consistent_logical_timestamp,
            jvm_timezone=self.jvm_timezone,
        )

    def _string_column(self, batch: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
        return string_array(field_column(batch, name), self.consistent_logical_timestamp, self.jvm_timezone)

    def _simple_segment(self, name: str, value: str | None) -> str:
        if value is None or value == "":
            value = DEFAULT_PARTITION_PATH
        elif self.url_encode:
            value = escape_path_name(value)
        return f"{name}={value}" if self.hive_style else value

    def _timestamp_segment(self, part: PartitionPart, value: Any, dtype: pa.DataType | None) -> str:
        if part.kind != TIMESTAMP:
            raise KeyGeneratorError(
                f"partition field {part.field!r} has no :SIMPLE/:TIMESTAMP type (v6 hoodie.properties does not "
                f"keep it); build the key generator from write options ({WriteOptions.PARTITIONPATH_FIELD})"
            )
        if self.timestamp is None:
            raise KeyGeneratorError(
                f"timestamp-based partition field {part.field!r} needs {TimestampKeys.TIMESTAMP_TYPE} and "
                f"{TimestampKeys.OUTPUT_DATEFORMAT}, which are not configured"
            )
        try:
            text = self.timestamp.format_value(
                value,
                dtype,
                consistent_logical_timestamp=self.consistent_logical_timestamp,
                jvm_timezone=self.jvm_timezone,
            )
        except KeyGeneratorError as exc:
            raise KeyGeneratorError(f"Unable to parse input partition field: {value!r} ({part.field}): {exc}") from exc
        if self.url_encode:
            text = escape_path_name(text)
        return f"{part.field}={text}" if self.hive_style else text

    # -- the inverse, for readers --

    def partition_values(self, partition_path: str, schema: pa.Schema) -> dict[str, Any] | None:
        """Typed partition field values encoded in ``partition_path``.

        None when the path does not determine them exactly: timestamp-based parts,
        the default partition of a string field (null or ""), fields missing from
        ``schema``, lossy types, or a path this generator would not write.
        """
        if not self.parts:
            return {} if partition_path == "" else None
        if any(part.kind != SIMPLE for part in self.parts):
            return None
        segments = partition_path.split(PARTITION_PATH_SEPARATOR)
        if len(segments) != len(self.parts):
            return None
        values: dict[str, Any] = {}
        types: dict[str, pa.DataType] = {}
        for part, segment in zip(self.parts, segments):
            if self.hive_style:
                prefix = part.field + "="
                if not segment.startswith(prefix):
                    return None
                segment = segment[len(prefix) :]
            dtype = field_type(schema, part.field)
            if dtype is None:
                return None
            types[part.field] = dtype
            if segment == DEFAULT_PARTITION_PATH:
                if type_kind(dtype) in ("string", "binary"):
                    return None  # null and "" (or b"") both land here
                values[part.field] = None
                continue
            text = unescape_path_name(segment) if self.url_encode else segment
            value = parse_string_value(text, dtype, self.consistent_logical_timestamp)
            if value is INVALID:
                return None
            values[part.field] = value
        try:
            rendered = PARTITION_PATH_SEPARATOR.join(
                self._simple_segment(name, self._typed_string(values[name], types[name])) for name in values
            )
        except (KeyGeneratorError, ValueError, OverflowError):
            return None
        return values if rendered == partition_path else None

    def _typed_string(self, value: Any, dtype: pa.DataType) -> str | None:
        if isinstance(value, Decimal) and pa.types.is_decimal(dtype):
            if value.as_tuple().exponent != -dtype.scale:
                raise ValueError("decimal scale differs from the column's")
        return field_value_as_string(
            value,
            dtype,
            consistent_logical_timestamp=self.consistent_logical_timestamp,
            jvm_timezone=self.jvm_timezone,
        )


class SimpleKeyGenerator(KeyGenerator):
    """One record key field (bare value) and one partition field."""

    kind = SIMPLE

    def __init__(
        self,
        record_key_fields: Sequence[str] | str,
        partition_fields: Sequence[str] | str,
        *,
        hive_style: bool = False,
        url_encode: bool = False,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
    ) -> None:
        _require_single(record_key_fields, WriteOptions.RECORDKEY_FIELD, "SimpleKeyGenerator", allow_none=True)
        _require_single(partition_fields, WriteOptions.PARTITIONPATH_FIELD, "SimpleKeyGenerator")
        super().__init__(
            record_key_fields,
            [PartitionPart(name) for name in _as_fields(partition_fields)],
            hive_style=hive_style,
            url_encode=url_encode,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
        )


class ComplexKeyGenerator(KeyGenerator):
    """``f1:v1,f2:v2`` record keys and ``/``-joined partition fields.

    ``single_field_prefixed`` decides the single record key field case: Hudi 0.14.0
    (and 1.1+) write ``id:1``, Hudi 0.14.1/0.15.0/1.0.x write ``1``.
    """

    kind = COMPLEX

    def __init__(
        self,
        record_key_fields: Sequence[str] | str,
        partition_fields: Sequence[str] | str,
        *,
        hive_style: bool = False,
        url_encode: bool = False,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
        single_field_prefixed: bool = True,
    ) -> None:
        super().__init__(
            record_key_fields,
            [PartitionPart(name) for name in _as_fields(partition_fields)],
            hive_style=hive_style,
            url_encode=url_encode,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
            prefix_single_key=single_field_prefixed,
        )

    @property
    def single_field_prefixed(self) -> bool:
        return self.prefix_single_key


class NonpartitionedKeyGenerator(KeyGenerator):
    """Empty partition path; one key field gives the bare value, more the complex form.

    Partition fields, if given, are ignored as Hudi does.
    """

    kind = NON_PARTITION

    def __init__(
        self,
        record_key_fields: Sequence[str] | str,
        partition_fields: Sequence[str] | str = (),
        *,
        hive_style: bool = False,
        url_encode: bool = False,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
    ) -> None:
        super().__init__(
            record_key_fields,
            [],
            hive_style=hive_style,
            url_encode=url_encode,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
        )


class GlobalDeleteKeyGenerator(KeyGenerator):
    """Deletes across partitions: empty partition path, always ``field:value`` keys."""

    kind = GLOBAL_DELETE

    def __init__(
        self,
        record_key_fields: Sequence[str] | str,
        partition_fields: Sequence[str] | str = (),
        *,
        hive_style: bool = False,
        url_encode: bool = False,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
    ) -> None:
        super().__init__(
            record_key_fields,
            [],
            hive_style=hive_style,
            url_encode=url_encode,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
            prefix_single_key=True,
        )


class TimestampBasedKeyGenerator(KeyGenerator):
    """Simple record key; the (first) partition field parsed as a time and reformatted.

    ``timestamp`` None keeps a reader working on tables whose hoodie.properties lacks
    the config; producing partition paths then raises.
    """

    kind = TIMESTAMP

    def __init__(
        self,
        record_key_fields: Sequence[str] | str,
        partition_fields: Sequence[str] | str,
        timestamp: TimestampConfig | None,
        *,
        hive_style: bool = False,
        url_encode: bool = False,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
    ) -> None:
        _require_single(record_key_fields, WriteOptions.RECORDKEY_FIELD, "TimestampBasedKeyGenerator", allow_none=True)
        _require_single(partition_fields, WriteOptions.PARTITIONPATH_FIELD, "TimestampBasedKeyGenerator")
        super().__init__(
            record_key_fields,
            [PartitionPart(name, TIMESTAMP) for name in _as_fields(partition_fields)],
            hive_style=hive_style,
            url_encode=url_encode,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
            timestamp=timestamp,
        )


class CustomKeyGenerator(KeyGenerator):
    """Per-field ``SIMPLE`` / ``TIMESTAMP`` partition parts (``country:SIMPLE,ts:TIMESTAMP``).

    All TIMESTAMP parts share one ``timestamp`` config. ``allow_untyped`` accepts
    bare names (v6 hoodie.properties drops the types); such parts cannot be produced.
    """

    kind = CUSTOM

    def __init__(
        self,
        record_key_fields: Sequence[str] | str,
        partition_fields: Sequence[str] | str,
        timestamp: TimestampConfig | None = None,
        *,
        hive_style: bool = False,
        url_encode: bool = False,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
        allow_untyped: bool = False,
    ) -> None:
        super().__init__(
            record_key_fields,
            [parse_custom_spec(spec, allow_untyped) for spec in _as_fields(partition_fields)],
            hive_style=hive_style,
            url_encode=url_encode,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
            timestamp=timestamp,
        )

    @property
    def partition_fields_spec(self) -> list[str]:
        return [f"{p.field}:{p.kind}" if p.kind else p.field for p in self.parts]


def _require_single(fields: Sequence[str] | str, option: str, what: str, allow_none: bool = False) -> None:
    names = _as_fields(fields)
    if len(names) > 1 or (not names and not allow_none):
        raise KeyGeneratorError(
            f"{what} needs exactly one field in {option}, got {names or 'none'}; use ComplexKeyGenerator"
            + (" or CustomKeyGenerator" if option == WriteOptions.PARTITIONPATH_FIELD else "")
        )


# -- helpers for writers ------------------------------------------------------------------


def auto_record_keys(instant_time: str, partition_id: int, num_rows: int, start: int = 0) -> pa.Array:
    """Hudi 0.14 auto-generated keys: ``<instant>_<spark partition id>_<row index>``."""
    if num_rows == 0:
        return pa.array([], pa.string())
    index = pa.array(range(start, start + num_rows), pa.int64()).cast(pa.string())
    return pc.binary_join_element_wise(f"{instant_time}_{partition_id}_", index, "")


def is_field_prefixed_record_key(record_key: str, record_key_fields: Sequence[str]) -> bool:
    """Whether an existing key of a single-field ComplexKeyGenerator table is ``field:value``.

    Lets a writer pick ``single_field_prefixed`` to match the table it appends to.
    """
    fields = [f for f in record_key_fields if f]
    return len(fields) == 1 and record_key.startswith(fields[0] + RECORD_KEY_FIELD_SEPARATOR)
