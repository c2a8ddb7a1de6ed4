"""``TimestampBasedKeyGenerator`` configuration (``hoodie.keygen.timebased.*``): a time value as a partition path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Mapping

import pyarrow as pa

from ..errors import KeyGeneratorError
from .java import LONG_MAX, LONG_MIN, java_long_value, java_trunc_div, java_zone
from .joda import joda_format, joda_parse, joda_tokens
from .values import (
    avro_timestamp_long,
    epoch_day,
    is_millis_unit,
    python_kind,
    type_kind,
)

__all__ = ["TimestampKeys", "TimestampConfig"]

class TimestampKeys:
    """``hoodie.keygen.timebased.*`` keys (each also read with the legacy prefixes)."""

    PREFIX = "hoodie.keygen.timebased."
    LEGACY_PREFIXES = ("hoodie.deltastreamer.keygen.timebased.", "hoodie.streamer.keygen.timebased.")
    TIMESTAMP_TYPE = PREFIX + "timestamp.type"
    SCALAR_TIME_UNIT = PREFIX + "timestamp.scalar.time.unit"
    INPUT_DATEFORMAT = PREFIX + "input.dateformat"
    INPUT_DATEFORMAT_DELIMITER = PREFIX + "input.dateformat.list.delimiter.regex"
    INPUT_TIMEZONE = PREFIX + "input.timezone"
    OUTPUT_DATEFORMAT = PREFIX + "output.dateformat"
    OUTPUT_TIMEZONE = PREFIX + "output.timezone"
    TIMEZONE = PREFIX + "timezone"  # deprecated: sets both zones when present
    ALL = (
        TIMESTAMP_TYPE,
        SCALAR_TIME_UNIT,
        INPUT_DATEFORMAT,
        INPUT_DATEFORMAT_DELIMITER,
        INPUT_TIMEZONE,
        OUTPUT_DATEFORMAT,
        OUTPUT_TIMEZONE,
        TIMEZONE,
    )
    DATETIME_PARSER_CLASS = "hoodie.keygen.datetime.parser.class"
    DEFAULT_PARSER_CLASS = "org.apache.hudi.keygen.parser.HoodieDateTimeParser"


_TIMESTAMP_TYPES = ("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR")
_NANOS_PER_UNIT = {
    "NANOSECONDS": 1,
    "MICROSECONDS": 1_000,
    "MILLISECONDS": 1_000_000,
    "SECONDS": 1_000_000_000,
    "MINUTES": 60_000_000_000,
    "HOURS": 3_600_000_000_000,
    "DAYS": 86_400_000_000_000,
}


def _timebased_get(props: Mapping[str, str], key: str) -> str | None:
    """Value of a timebased key under its current or a legacy prefix."""
    if key in props:
        return props[key]
    suffix = key[len(TimestampKeys.PREFIX) :]
    for prefix in TimestampKeys.LEGACY_PREFIXES:
        if prefix + suffix in props:
            return props[prefix + suffix]
    return None


def _split_java_regex(value: str, delimiter: str) -> list[str]:
    """``String.split(regex)`` (trailing empty strings dropped), each part trimmed."""
    try:
        parts = re.split(delimiter, value)
    except re.error as exc:
        raise KeyGeneratorError(f"{TimestampKeys.INPUT_DATEFORMAT_DELIMITER}={delimiter!r} is not a regex") from exc
    while parts and parts[-1] == "":
        parts.pop()
    return [p.strip() for p in parts]


@dataclass(frozen=True)
class TimestampConfig:
    """``hoodie.keygen.timebased.*``: how a time value becomes a partition path.

    ``input_timezone``/``output_timezone`` None mean "not configured" (Hudi then keeps
    the parsed offset or falls back to the JVM default zone).
    """

    timestamp_type: str
    output_dateformat: str
    input_dateformat: str = ""
    input_dateformat_delimiter: str = ","
    input_timezone: str | None = None
    output_timezone: str | None = None
    scalar_time_unit: str = "SECONDS"
    properties: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.timestamp_type not in _TIMESTAMP_TYPES:
            raise KeyGeneratorError(
                f"{TimestampKeys.TIMESTAMP_TYPE}={self.timestamp_type!r} is not one of {', '.join(_TIMESTAMP_TYPES)}"
            )
        if not self.output_dateformat:
            raise KeyGeneratorError(f"{TimestampKeys.OUTPUT_DATEFORMAT} is required for timestamp-based partitioning")
        joda_tokens(self.output_dateformat)
        if self.timestamp_type in ("DATE_STRING", "MIXED"):
            if not self.input_dateformat.strip():
                raise KeyGeneratorError(
                    f"{TimestampKeys.INPUT_DATEFORMAT} is required when {TimestampKeys.TIMESTAMP_TYPE}="
                    f"{self.timestamp_type}"
                )
            for pattern in self.input_formats:
                joda_tokens(pattern)
        if self.timestamp_type == "SCALAR" and self.scalar_time_unit.upper() not in _NANOS_PER_UNIT:
            raise KeyGeneratorError(
                f"{TimestampKeys.SCALAR_TIME_UNIT}={self.scalar_time_unit!r} is not a java.util.concurrent.TimeUnit"
            )
        for zone in (self.input_timezone, self.output_timezone):
            if zone is not None:
                java_zone(zone)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, infer_type: bool = False) -> "TimestampConfig":
        """Build from write options or hoodie.properties.

        ``infer_type``: v6 tables written by Hudi 0.14 do not persist the timestamp
        type; DATE_STRING is implied when an input format is present.
        """
        parser_class = props.get(TimestampKeys.DATETIME_PARSER_CLASS)
        if parser_class and parser_class != TimestampKeys.DEFAULT_PARSER_CLASS:
            raise KeyGeneratorError(f"{TimestampKeys.DATETIME_PARSER_CLASS}={parser_class} is not supported")
        given = {key: value for key in TimestampKeys.ALL if (value := _timebased_get(props, key)) is not None}
        ts_type = (given.get(TimestampKeys.TIMESTAMP_TYPE) or "").strip().upper()
        input_format = given.get(TimestampKeys.INPUT_DATEFORMAT, "")
        if not ts_type:
            if infer_type and input_format.strip():
                ts_type = "DATE_STRING"
            else:
                raise KeyGeneratorError(f"{TimestampKeys.TIMESTAMP_TYPE} is required for timestamp-based partitioning")
        if TimestampKeys.TIMEZONE in given:  # deprecated key wins when present, even if blank
            input_zone = output_zone = given[TimestampKeys.TIMEZONE]
        else:
            input_zone = given.get(TimestampKeys.INPUT_TIMEZONE, "")
            output_zone = given.get(TimestampKeys.OUTPUT_TIMEZONE, "")
        return cls(
            timestamp_type=ts_type,
            output_dateformat=given.get(TimestampKeys.OUTPUT_DATEFORMAT, ""),
            input_dateformat=input_format,
            input_dateformat_delimiter=given.get(TimestampKeys.INPUT_DATEFORMAT_DELIMITER, "").strip() or ",",
            input_timezone=input_zone.strip() or None,
            output_timezone=output_zone.strip() or None,
            scalar_time_unit=(given.get(TimestampKeys.SCALAR_TIME_UNIT) or "SECONDS").strip(),
            properties={**given, TimestampKeys.TIMESTAMP_TYPE: ts_type},
        )

    @property
    def input_formats(self) -> list[str]:
        return _split_java_regex(self.input_dateformat, self.input_dateformat_delimiter)

    @property
    def time_unit_nanos(self) -> int | None:
        """Nanoseconds per unit of numeric input; None when numbers are not accepted."""
        return {
            "UNIX_TIMESTAMP": _NANOS_PER_UNIT["SECONDS"],
            "EPOCHMILLISECONDS": _NANOS_PER_UNIT["MILLISECONDS"],
            "EPOCHMICROSECONDS": _NANOS_PER_UNIT["MICROSECONDS"],
            "SCALAR": _NANOS_PER_UNIT.get(self.scalar_time_unit.upper()),
        }.get(self.timestamp_type)

    def table_properties(self) -> dict[str, str]:
        """The timebased keys to persist (as configured, type always included)."""
        if self.properties:
            return dict(self.properties)
        delimiter = self.input_dateformat_delimiter
        optional = {
            TimestampKeys.INPUT_DATEFORMAT: self.input_dateformat,
            TimestampKeys.INPUT_DATEFORMAT_DELIMITER: delimiter if delimiter != "," else None,
            TimestampKeys.INPUT_TIMEZONE: self.input_timezone,
            TimestampKeys.OUTPUT_TIMEZONE: self.output_timezone,
            TimestampKeys.SCALAR_TIME_UNIT: self.scalar_time_unit if self.timestamp_type == "SCALAR" else "",
        }
        return {
            TimestampKeys.TIMESTAMP_TYPE: self.timestamp_type,
            TimestampKeys.OUTPUT_DATEFORMAT: self.output_dateformat,
            **{key: value for key, value in optional.items() if value},
        }

    # -- the TimestampBasedAvroKeyGenerator algorithm --

    def _to_millis(self, number: int) -> int:
        """``TimeUnit.MILLISECONDS.convert``: truncates finer units, saturates coarser ones."""
        unit = self.time_unit_nanos
        if unit is None:
            raise KeyGeneratorError(
                f"numeric partition value {number} needs {TimestampKeys.TIMESTAMP_TYPE}=UNIX_TIMESTAMP, "
                f"EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR (it is {self.timestamp_type})"
            )
        millis_unit = _NANOS_PER_UNIT["MILLISECONDS"]
        if unit >= millis_unit:
            return max(LONG_MIN, min(LONG_MAX, number * (unit // millis_unit)))
        return java_trunc_div(number, millis_unit // unit)

    def _default_value(self) -> Any:
        """What Hudi substitutes for a null value: 1 unit after the epoch."""
        if self.timestamp_type not in ("DATE_STRING", "MIXED"):
            return 1
        zone = self.input_timezone or self.output_timezone or "GMT"
        first = _split_java_regex(self.input_dateformat, self.input_dateformat_delimiter)[0]
        return joda_format(1, first, zone)

    def format_value(
        self,
        value: Any,
        dtype: pa.DataType | None = None,
        *,
        consistent_logical_timestamp: bool = False,
        jvm_timezone: str = "UTC",
    ) -> str:
        """The formatted partition value (before URL encoding and the hive prefix)."""
        if value is None:
            value, dtype = self._default_value(), None
        kind = type_kind(dtype) if dtype is not None else python_kind(value)
        output_zone = java_zone(self.output_timezone) if self.output_timezone else None
        if kind == "string":
            if self.timestamp_type not in ("DATE_STRING", "MIXED"):
                raise KeyGeneratorError(
                    f"string partition value {value!r} needs {TimestampKeys.TIMESTAMP_TYPE}=DATE_STRING or "
                    f"MIXED and {TimestampKeys.INPUT_DATEFORMAT} (it is {self.timestamp_type})"
                )
            millis, parsed_zone = joda_parse(str(value), self.input_formats, self.input_timezone, jvm_timezone)
            zone = output_zone or parsed_zone  # keep the parsed offset when no output zone is set
        else:
            zone = output_zone or java_zone(jvm_timezone)
            if kind == "int":
                millis = self._to_millis(int(value))
            elif kind in ("double", "float"):
                millis = self._to_millis(java_long_value(float(value)))
            elif kind == "decimal":
                millis = self._to_millis(int(Decimal(value)))
            elif kind == "date":
                millis = self._to_millis(epoch_day(value))
            elif kind == "timestamp" and consistent_logical_timestamp:
                raw = avro_timestamp_long(value, dtype)
                millis = raw if is_millis_unit(dtype) else java_trunc_div(raw, 1000)
            elif kind in ("timestamp", "local_timestamp"):
                millis = self._to_millis(avro_timestamp_long(value, dtype))
            else:
                shown = dtype if dtype is not None else type(value).__name__
                raise KeyGeneratorError(f"Unexpected type for partition field: {shown} (value {value!r})")
        return joda_format(millis, self.output_dateformat, zone)
