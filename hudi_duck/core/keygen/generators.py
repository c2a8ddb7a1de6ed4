"""Key generators: how a record becomes a record key and a partition path.

This is a format rule shared by the reader and the writer. Hudi stores the result
in every row (``_hoodie_record_key``, ``_hoodie_partition_path``) and uses the
partition path as the folder of the file, so the writer must reproduce Apache
Hudi 0.14/0.15 byte for byte and the reader needs the inverse (partition values
from a folder name) for pruning.

Rules follow the Avro write path of Hudi 0.14/0.15 (Spark datasource upsert and
insert): every value is turned into a Java object first and then printed with
Java's ``toString``, which is why this module carries small copies of Java's
number, date and Joda-Time formatting. See ``/work/notes/key_generators.md`` for
the research behind each rule.

Known, deliberate differences from the JVM:

* the JVM default time zone (used by ``Timestamp.toString`` and by timestamp-based
  partitioning when no zone is configured) is a parameter, ``jvm_timezone``,
  defaulting to UTC;
* unknown time-zone ids raise instead of silently becoming GMT;
* partition paths with ``..``, ``.`` or empty segments are refused (newer Hudi
  refuses ``..`` too), since they cannot be the folder of a file.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Callable, ClassVar, Mapping, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa
import pyarrow.compute as pc

from ..config.table_config import Keys, TableConfig
from ..errors import InvalidTableConfigError, KeyGeneratorError

__all__ = [
    "DEFAULT_PARTITION_PATH",
    "DEPRECATED_DEFAULT_PARTITION_PATH",
    "NULL_RECORDKEY_PLACEHOLDER",
    "EMPTY_RECORDKEY_PLACEHOLDER",
    "WriteOptions",
    "TimestampKeys",
    "TimestampConfig",
    "PartitionPart",
    "KeyGenerator",
    "SimpleKeyGenerator",
    "ComplexKeyGenerator",
    "NonpartitionedKeyGenerator",
    "TimestampBasedKeyGenerator",
    "CustomKeyGenerator",
    "GlobalDeleteKeyGenerator",
    "key_generator_from_table_config",
    "key_generator_from_write_options",
    "auto_record_keys",
    "is_field_prefixed_record_key",
    "field_value_as_string",
    "escape_path_name",
    "unescape_path_name",
    "java_double_to_string",
    "java_float_to_string",
    "java_bigdecimal_to_string",
    "java_local_date_to_string",
    "java_timestamp_to_string",
    "joda_format",
    "joda_parse",
]

DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
DEPRECATED_DEFAULT_PARTITION_PATH = "default"  # written for null values before Hudi 0.12
NULL_RECORDKEY_PLACEHOLDER = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"
RECORD_KEY_PARTS_SEPARATOR = ","
RECORD_KEY_FIELD_SEPARATOR = ":"
PARTITION_PATH_SEPARATOR = "/"


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


# -- Java formatting of values ---------------------------------------------------------


def _java_fp_string(value: float, shortest: str) -> str:
    """``Double.toString`` / ``Float.toString`` given the decimal digits to print."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    digits_dec = Decimal(shortest)
    if 1e-3 <= abs(value) < 1e7:
        text = format(digits_dec.normalize(), "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = digits_dec.as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    exp10 = exponent + len(digits) - 1
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if sign else "") + mantissa + "E" + str(exp10)


def _java_digits(value: float, round_trips: Callable[[str], bool], max_digits: int) -> str:
    """Shortest round-trip digits, but never fewer than two (Java prints ``d.d``).

    With two digits to spend Java picks the closest two-digit decimal, which only
    differs from the one-digit shortest near the subnormal end (``4.9E-324``).
    """
    for precision in range(1, max_digits + 1):
        candidate = f"{value:.{precision - 1}e}"
        if round_trips(candidate):
            if precision == 1:
                two = f"{value:.1e}"
                return two if round_trips(two) else candidate
            return candidate
    return repr(value)  # pragma: no cover - max_digits always round-trip


def java_double_to_string(value: float) -> str:
    """Java ``Double.toString``: plain for 1e-3 <= |x| < 1e7, else ``1.0E7`` form.

    Uses the JDK 19+ algorithm (shortest digits); JDK 8/11 print more digits for
    rare values.
    """
    value = float(value)
    if math.isnan(value) or math.isinf(value) or value == 0:
        return _java_fp_string(value, "0")
    shortest = repr(value)  # Python's repr is the shortest round-trip form
    if len(Decimal(shortest).normalize().as_tuple().digits) > 1:
        return _java_fp_string(value, shortest)
    return _java_fp_string(value, _java_digits(value, lambda text: float(text) == value, 17))


def _to_float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _float32_round_trips(text: str, f32: float) -> bool:
    try:
        return _to_float32(float(text)) == f32
    except OverflowError:  # rounded past the largest float32
        return False


def java_float_to_string(value: float) -> str:
    """Java ``Float.toString`` of a float32 (``1.1``, not ``1.100000023841858``)."""
    f32 = _to_float32(value)
    if math.isnan(f32) or math.isinf(f32) or f32 == 0:
        return _java_fp_string(f32, "0")
    return _java_fp_string(f32, _java_digits(f32, lambda text: _float32_round_trips(text, f32), 9))


def java_bigdecimal_to_string(value: Decimal) -> str:
    """Java ``BigDecimal.toString``: keeps the scale, scientific when exponent < -6."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise KeyGeneratorError(f"decimal value {value} is not finite")
    unscaled = "".join(map(str, digits)).lstrip("0") or "0"
    negative = bool(sign) and unscaled != "0"
    scale = -exponent
    adjusted = -scale + (len(unscaled) - 1)
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            text = unscaled
        else:
            padded = unscaled.rjust(scale + 1, "0")
            text = padded[:-scale] + "." + padded[-scale:]
    else:
        text = unscaled[0] + ("." + unscaled[1:] if len(unscaled) > 1 else "")
        text += "E" + ("+" if adjusted > 0 else "") + str(adjusted)
    return ("-" if negative else "") + text


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of an epoch day, any range."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def java_local_date_to_string(epoch_day: int) -> str:
    """Java ``LocalDate.toString`` (``2023-04-01``; ``+10000-01-01`` beyond 9999)."""
    year, month, day = _civil_from_days(epoch_day)
    if abs(year) < 1000:
        year_text = ("-" if year < 0 else "") + f"{abs(year):04d}"
    else:
        year_text = ("+" if year > 9999 else "") + str(year)
    return f"{year_text}-{month:02d}-{day:02d}"


_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)


def _instant(millis: int, zone: _dt.tzinfo) -> _dt.datetime:
    try:
        return (_EPOCH_UTC + _dt.timedelta(milliseconds=millis)).astimezone(zone)
    except OverflowError as exc:
        raise KeyGeneratorError(f"epoch millis {millis} is out of the supported date range") from exc


def java_timestamp_to_string(epoch_millis: int, jvm_timezone: str = "UTC") -> str:
    """``java.sql.Timestamp.toString`` in the JVM default zone (``2023-04-01 12:01:00.0``)."""
    t = _instant(epoch_millis, _java_zone(jvm_timezone))
    nanos = f"{t.microsecond * 1000:09d}".rstrip("0") or "0"
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d} "
        f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{nanos}"
    )


# -- Arrow types as Hudi sees them (through Avro) ---------------------------------------


def _is_view(dtype: pa.DataType, name: str) -> bool:
    check = getattr(pa.types, f"is_{name}_view", None)  # pyarrow >= 16
    return bool(check and check(dtype))


def _type_kind(dtype: pa.DataType) -> str:
    """Which Java object an Arrow type turns into on Hudi's Avro path."""
    if pa.types.is_dictionary(dtype):
        return _type_kind(dtype.value_type)
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


def _python_kind(value: Any) -> str:
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


def _is_millis_unit(dtype: pa.DataType | None) -> bool:
    """Avro has millis and micros only: s/ms become timestamp-millis, us/ns micros."""
    return dtype is not None and pa.types.is_timestamp(dtype) and dtype.unit in ("s", "ms")


def _epoch_micros(value: _dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    delta = value - _EPOCH_UTC
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _avro_timestamp_long(value: Any, dtype: pa.DataType | None) -> int:
    """The raw Avro long of a timestamp: epoch millis or micros, as its logical type says."""
    if isinstance(value, int):
        unit = dtype.unit if dtype is not None and pa.types.is_timestamp(dtype) else "us"
        return {"s": value * 1000, "ms": value, "us": value, "ns": value // 1000}[unit]
    micros = _epoch_micros(value)
    return micros // 1000 if _is_millis_unit(dtype) else micros


def _epoch_day(value: Any) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        value = value.date()
    return (value - _EPOCH_DATE).days


def _java_trunc_div(a: int, b: int) -> int:
    """Java long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


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
    kind = _type_kind(dtype) if dtype is not None else _python_kind(value)
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
        return java_local_date_to_string(_epoch_day(value))
    if kind in ("timestamp", "local_timestamp"):
        raw = _avro_timestamp_long(value, dtype)
        if kind == "timestamp" and consistent_logical_timestamp:
            millis = raw if _is_millis_unit(dtype) else _java_trunc_div(raw, 1000)
            return java_timestamp_to_string(millis, jvm_timezone)
        return str(raw)
    if kind == "binary":
        return bytes(value).hex()  # StringUtils.objToString prints ByteBuffers as hex
    if kind == "fixed":  # GenericData.Fixed.toString is Arrays.toString of signed bytes
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in bytes(value)) + "]"
    shown = dtype if dtype is not None else type(value).__name__
    raise KeyGeneratorError(f"values of type {shown} cannot be used in a record key or partition path")


# -- PartitionPathEncodeUtils ----------------------------------------------------------

_ESCAPED_CHARS = frozenset(range(0x20)) | {ord(c) for c in "\"#%'*/:=?\\{[]^"} | {0x7F}
_NEEDS_ESCAPE = re.compile("[" + re.escape("".join(chr(c) for c in sorted(_ESCAPED_CHARS))) + "]")


def escape_path_name(value: str | None) -> str:
    """``PartitionPathEncodeUtils.escapePathName``: ``%XX`` for Hive's special ASCII chars."""
    if value is None or value == "":
        return DEFAULT_PARTITION_PATH
    return _NEEDS_ESCAPE.sub(lambda m: f"%{ord(m.group()):02X}", value)


_HEX_PAIR = re.compile(r"[+-]?[0-9A-Fa-f]+")


def unescape_path_name(path: str) -> str:
    """``unescapePathName``: every ``%XY`` that parses as hex becomes that char."""
    out: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "%" and i + 2 < len(path):
            pair = path[i + 1 : i + 3]
            if _HEX_PAIR.fullmatch(pair) and int(pair, 16) >= 0:  # Java parseInt accepts a sign
                out.append(chr(int(pair, 16)))
                i += 3
                continue
        out.append(ch)
        i += 1
    return "".join(out)


_BAD_SEGMENT = re.compile(r"(^|/)(\.|\.\.)?(/|$)")


def _check_partition_path(path: str) -> str:
    if _BAD_SEGMENT.search(path):
        raise KeyGeneratorError(
            f'partition path "{path}" has an empty, "." or ".." segment; a partition value '
            "contains '/' or is '.'/'..' (enable hoodie.datasource.write.partitionpath.urlencode "
            "or clean the value)"
        )
    return path


# -- Joda-Time patterns (the subset timestamp-based partitioning uses) ------------------

_JODA_LETTERS = frozenset("GCYxwkeEDyMdaKhHmsSzZ")
_NUMERIC_LETTERS = frozenset("cCxyYdhHmsSeDFwWkK")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_LITERAL = "'"


@lru_cache(maxsize=256)
def _joda_tokens(pattern: str) -> tuple[tuple[str, Any], ...]:
    """Split a Joda pattern into (letter, count) fields and ("'", text) literals."""
    tokens: list[tuple[str, Any]] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch.isascii() and ch.isalpha():
            j = i
            while j < n and pattern[j] == ch:
                j += 1
            if ch not in _JODA_LETTERS:
                raise KeyGeneratorError(f"Illegal pattern component: {pattern[i:j]} (in {pattern!r})")
            tokens.append((ch, j - i))
            i = j
            continue
        text: list[str] = []
        quoted = False
        while i < n:
            ch = pattern[i]
            if ch == "'":
                if i + 1 < n and pattern[i + 1] == "'":
                    text.append("'")
                    i += 2
                    continue
                quoted = not quoted
                i += 1
                continue
            if not quoted and ch.isascii() and ch.isalpha():
                break
            text.append(ch)
            i += 1
        if text:
            tokens.append((_LITERAL, "".join(text)))
    return tuple(tokens)


def _is_numeric_token(token: tuple[str, Any] | None) -> bool:
    if token is None or token[0] == _LITERAL:
        return False
    return token[0] in _NUMERIC_LETTERS or (token[0] == "M" and token[1] <= 2)


def _zone_id(zone: _dt.tzinfo, at: _dt.datetime) -> str:
    key = getattr(zone, "key", None)
    if key and key not in ("UTC", "GMT", "Etc/UTC", "Etc/GMT"):
        return key
    offset = at.utcoffset() or _dt.timedelta(0)
    return "UTC" if offset == _dt.timedelta(0) else _offset_text(offset, True)


def _offset_text(offset: _dt.timedelta, colon: bool) -> str:
    seconds = int(offset.total_seconds())
    sign = "+" if seconds >= 0 else "-"
    hours, minutes = divmod(abs(seconds) // 60, 60)
    return f"{sign}{hours:02d}{':' if colon else ''}{minutes:02d}"


def _joda_fraction(millis: int, min_digits: int) -> str:
    """Joda's fraction printer: 9-digit fraction, trailing zeros cut to ``min_digits``."""
    if millis == 0:
        return "0" * min_digits
    digits = f"{millis * 1_000_000:09d}"
    return digits[: max(min_digits, len(digits.rstrip("0")))]


def joda_format(epoch_millis: int, pattern: str, zone: str | _dt.tzinfo = "UTC") -> str:
    """Print an instant with a Joda ``DateTimeFormat`` pattern in ``zone``."""
    tz = _java_zone(zone) if isinstance(zone, str) else zone
    t = _instant(epoch_millis, tz)
    out: list[str] = []
    for letter, arg in _joda_tokens(pattern):
        if letter == _LITERAL:
            out.append(arg)
        elif letter in "yY":
            out.append(f"{t.year % 100:02d}" if arg == 2 else str(t.year).zfill(arg))
        elif letter == "M":
            name = _MONTHS[t.month - 1]
            out.append(name if arg >= 4 else name[:3] if arg == 3 else str(t.month).zfill(arg))
        elif letter == "d":
            out.append(str(t.day).zfill(arg))
        elif letter == "H":
            out.append(str(t.hour).zfill(arg))
        elif letter == "k":
            out.append(str(t.hour or 24).zfill(arg))
        elif letter == "h":
            out.append(str(t.hour % 12 or 12).zfill(arg))
        elif letter == "K":
            out.append(str(t.hour % 12).zfill(arg))
        elif letter == "m":
            out.append(str(t.minute).zfill(arg))
        elif letter == "s":
            out.append(str(t.second).zfill(arg))
        elif letter == "S":
            out.append(_joda_fraction(t.microsecond // 1000, arg))
        elif letter == "a":
            out.append("AM" if t.hour < 12 else "PM")
        elif letter == "D":
            out.append(str(t.timetuple().tm_yday).zfill(arg))
        elif letter == "E":
            out.append(_WEEKDAYS[t.weekday()] if arg >= 4 else _WEEKDAYS[t.weekday()][:3])
        elif letter == "Z":
            if arg >= 3:
                out.append(_zone_id(tz, t))
            else:
                out.append(_offset_text(t.utcoffset() or _dt.timedelta(0), arg == 2))
        else:
            raise KeyGeneratorError(f"Joda pattern letter {letter!r} (in {pattern!r}) is not supported")
    return "".join(out)


@dataclass
class _Parsed:
    """Fields a Joda parser saved, before they are resolved to an instant."""

    year: int | None = None
    month: int | None = None
    day: int | None = None
    hour_of_day: int | None = None
    hour_of_halfday: int | None = None
    pm: bool | None = None
    minute: int = 0
    second: int = 0
    millis: int = 0
    offset: _dt.timedelta | None = None
    zone: _dt.tzinfo | None = None


def _parse_number(text: str, pos: int, max_digits: int, signed: bool) -> tuple[int, int] | None:
    """Joda's unpadded number parser: greedy, no backtracking."""
    end = pos
    sign = 1
    if signed and end < len(text) and text[end] in "+-":
        if end + 1 >= len(text) or not text[end + 1].isascii() or not text[end + 1].isdigit():
            return None
        sign = -1 if text[end] == "-" else 1
        end += 1
    start = end
    while end < len(text) and end - start < max_digits and text[end].isascii() and text[end].isdigit():
        end += 1
    if end == start:
        return None
    return sign * int(text[start:end]), end


def _parse_text(text: str, pos: int, choices: Sequence[str]) -> tuple[int, int] | None:
    """Longest case-insensitive match among ``choices``; returns (index, end)."""
    best: tuple[int, int] | None = None
    lower = text.lower()
    for index, choice in enumerate(choices):
        if lower.startswith(choice.lower(), pos) and (best is None or pos + len(choice) > best[1]):
            best = (index, pos + len(choice))
    return best


def _two_digit_year(value: int, today_year: int) -> int:
    pivot = today_year - 30
    low = pivot - 50
    t = low % 100 if low >= 0 else 99 + ((low + 1) % 100)
    return value + low + (100 if value < t else 0) - t


_ZONE_ID_CHARS = re.compile(r"[A-Za-z][A-Za-z0-9_/+\-]*")


def _parse_offset(text: str, pos: int) -> tuple[_dt.timedelta, int] | None:
    if text[pos : pos + 1] in ("Z", "z"):
        return _dt.timedelta(0), pos + 1
    if text[pos : pos + 1] not in ("+", "-"):
        return None
    sign = -1 if text[pos] == "-" else 1
    m = re.compile(r"(\d{2})(?::?(\d{2}))?").match(text, pos + 1)
    if not m:
        return None
    hours, minutes = int(m.group(1)), int(m.group(2) or 0)
    if hours > 23 or minutes > 59:
        return None
    return sign * _dt.timedelta(hours=hours, minutes=minutes), m.end()


def _parse_one(text: str, tokens: tuple[tuple[str, Any], ...]) -> _Parsed | None:
    """Run one Joda pattern over the whole text; None when it does not match all of it."""
    parsed = _Parsed()
    pos = 0
    for index, (letter, arg) in enumerate(tokens):
        nxt = tokens[index + 1] if index + 1 < len(tokens) else None
        if letter == _LITERAL:
            if text[pos : pos + len(arg)].lower() != arg.lower():
                return None
            pos += len(arg)
            continue
        if letter in "yY" and arg == 2:
            lenient = not _is_numeric_token(nxt)
            got = _parse_number(text, pos, 9 if lenient else 2, lenient)
            if got is None:
                return None
            value, end = got
            if end - pos == 2 and text[pos].isdigit():
                value = _two_digit_year(value, _dt.date.today().year)
            elif not lenient:
                return None
            parsed.year, pos = value, end
            continue
        if letter in "yY":
            got = _parse_number(text, pos, arg if _is_numeric_token(nxt) else 9, True)
            if got is None:
                return None
            parsed.year, pos = got
            continue
        if letter == "M" and arg >= 3:
            got = _parse_text(text, pos, _MONTHS + tuple(m[:3] for m in _MONTHS))
            if got is None:
                return None
            parsed.month, pos = got[0] % 12 + 1, got[1]
            continue
        if letter in "MdHkhKms":
            got = _parse_number(text, pos, max(arg, 2), False)
            if got is None:
                return None
            value, pos = got
            if letter == "M":
                parsed.month = value
            elif letter == "d":
                parsed.day = value
            elif letter == "H":
                parsed.hour_of_day = value if value <= 23 else -1
            elif letter == "k":
                parsed.hour_of_day = (0 if value == 24 else value) if 1 <= value <= 24 else -1
            elif letter == "h":
                parsed.hour_of_halfday = (0 if value == 12 else value) if 1 <= value <= 12 else -1
            elif letter == "K":
                parsed.hour_of_halfday = value if value <= 11 else -1
            elif letter == "m":
                parsed.minute = value
            else:
                parsed.second = value
            continue
        if letter == "S":
            got = _parse_number(text, pos, max(arg, 9), False)
            if got is None:
                return None
            parsed.millis = int((text[pos : got[1]] + "000")[:3])  # Joda keeps milliseconds
            pos = got[1]
            continue
        if letter == "a":
            got = _parse_text(text, pos, ("AM", "PM"))
            if got is None:
                return None
            parsed.pm, pos = got[0] == 1, got[1]
            continue
        if letter == "Z" and arg <= 2:
            got_offset = _parse_offset(text, pos)
            if got_offset is None:
                return None
            parsed.offset, pos = got_offset
            continue
        if letter == "Z":
            m = _ZONE_ID_CHARS.match(text, pos)
            if not m:
                return None
            try:
                parsed.zone = _java_zone(m.group())
            except KeyGeneratorError:
                return None
            pos = m.end()
            continue
        raise KeyGeneratorError(f"Joda pattern letter {letter!r} is not supported for parsing")
    return parsed if pos == len(text) else None


def _resolve(parsed: _Parsed, default_zone: _dt.tzinfo, input_zone: _dt.tzinfo | None) -> tuple[int, _dt.tzinfo]:
    """Instant (epoch millis) and zone of a parsed value, as Joda's parseDateTime does."""
    year = parsed.year
    if year is None:
        year = 2000 if (parsed.month is not None or parsed.day is not None) else 1970
    hour = parsed.hour_of_day
    if hour is None:
        hour = (parsed.hour_of_halfday or 0) + (12 if parsed.pm else 0)
    elif parsed.pm is not None:
        hour = hour % 12 + (12 if parsed.pm else 0)
    if hour < 0 or (parsed.hour_of_halfday or 0) < 0:
        raise ValueError("hour out of range")
    wall = _dt.datetime(
        year, parsed.month or 1, parsed.day or 1, hour, parsed.minute, parsed.second, parsed.millis * 1000
    )
    if parsed.offset is not None:
        instant = wall.replace(tzinfo=_dt.timezone(parsed.offset))
        zone: _dt.tzinfo = _dt.timezone.utc if parsed.offset == _dt.timedelta(0) else _dt.timezone(parsed.offset)
    elif parsed.zone is not None:
        instant = wall.replace(tzinfo=parsed.zone)
        zone = parsed.zone
    else:
        zone = input_zone or default_zone
        instant = wall.replace(tzinfo=zone)
    millis = (instant - _EPOCH_UTC) // _dt.timedelta(milliseconds=1)
    return millis, input_zone or zone


def joda_parse(
    text: str,
    patterns: Sequence[str] | str,
    input_zone: str | _dt.tzinfo | None = None,
    default_zone: str | _dt.tzinfo = "UTC",
) -> tuple[int, _dt.tzinfo]:
    """Parse like Hudi's input formatter: the first pattern that matches the whole text wins.

    Without ``input_zone`` the formatter is ``withOffsetParsed()``: an offset in the
    text becomes the zone, else ``default_zone`` (the JVM default) is used. Returns
    (epoch millis, zone of the parsed DateTime).
    """
    pattern_list = [patterns] if isinstance(patterns, str) else list(patterns)
    in_zone = _java_zone(input_zone) if isinstance(input_zone, str) else input_zone
    dflt = _java_zone(default_zone) if isinstance(default_zone, str) else default_zone
    for pattern in pattern_list:
        parsed = _parse_one(text, _joda_tokens(pattern))
        if parsed is None:
            continue
        try:
            return _resolve(parsed, dflt, in_zone)
        except (ValueError, OverflowError) as exc:
            raise KeyGeneratorError(f'Cannot parse "{text}": {exc}') from exc
    raise KeyGeneratorError(f'Invalid format: "{text}" does not match {pattern_list}')


_GMT_CUSTOM = re.compile(r"GMT([+-])(?:(\d{1,2})(?::(\d{2}))?|(\d{2})(\d{2}))")


@lru_cache(maxsize=64)
def _java_zone(zone_id: str) -> _dt.tzinfo:
    """``TimeZone.getTimeZone`` ids (IANA names, UTC/GMT, ``GMT+8:00``); unknown ids raise."""
    zid = zone_id.strip()
    if zid in ("UTC", "GMT", "Etc/UTC", "Etc/GMT"):
        return _dt.timezone.utc
    m = _GMT_CUSTOM.fullmatch(zid)
    if m:
        hours = int(m.group(2) or m.group(4))
        minutes = int(m.group(3) or m.group(5) or 0)
        if hours > 23 or minutes > 59:
            raise KeyGeneratorError(f"time zone id {zone_id!r} is out of range")
        offset = _dt.timedelta(hours=hours, minutes=minutes) * (-1 if m.group(1) == "-" else 1)
        return _dt.timezone.utc if not offset else _dt.timezone(offset)
    try:
        return ZoneInfo(zid)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise KeyGeneratorError(
            f"unknown time zone id {zone_id!r} (Java would silently use GMT; use an IANA name, "
            "UTC or GMT+hh:mm)"
        ) from exc


# -- TimestampBasedKeyGenerator configuration -------------------------------------------

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
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


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
        _joda_tokens(self.output_dateformat)
        if self.timestamp_type in ("DATE_STRING", "MIXED"):
            if not self.input_dateformat.strip():
                raise KeyGeneratorError(
                    f"{TimestampKeys.INPUT_DATEFORMAT} is required when {TimestampKeys.TIMESTAMP_TYPE}="
                    f"{self.timestamp_type}"
                )
            for pattern in self.input_formats:
                _joda_tokens(pattern)
        if self.timestamp_type == "SCALAR" and self.scalar_time_unit.upper() not in _NANOS_PER_UNIT:
            raise KeyGeneratorError(
                f"{TimestampKeys.SCALAR_TIME_UNIT}={self.scalar_time_unit!r} is not a java.util.concurrent.TimeUnit"
            )
        for zone in (self.input_timezone, self.output_timezone):
            if zone is not None:
                _java_zone(zone)

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
            return max(_LONG_MIN, min(_LONG_MAX, number * (unit // millis_unit)))
        return _java_trunc_div(number, millis_unit // unit)

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
        kind = _type_kind(dtype) if dtype is not None else _python_kind(value)
        output_zone = _java_zone(self.output_timezone) if self.output_timezone else None
        if kind == "string":
            if self.timestamp_type not in ("DATE_STRING", "MIXED"):
                raise KeyGeneratorError(
                    f"string partition value {value!r} needs {TimestampKeys.TIMESTAMP_TYPE}=DATE_STRING or "
                    f"MIXED and {TimestampKeys.INPUT_DATEFORMAT} (it is {self.timestamp_type})"
                )
            millis, parsed_zone = joda_parse(str(value), self.input_formats, self.input_timezone, jvm_timezone)
            zone = output_zone or parsed_zone  # keep the parsed offset when no output zone is set
        else:
            zone = output_zone or _java_zone(jvm_timezone)
            if kind == "int":
                millis = self._to_millis(int(value))
            elif kind in ("double", "float"):
                millis = self._to_millis(_java_long_value(float(value)))
            elif kind == "decimal":
                millis = self._to_millis(int(Decimal(value)))
            elif kind == "date":
                millis = self._to_millis(_epoch_day(value))
            elif kind == "timestamp" and consistent_logical_timestamp:
                raw = _avro_timestamp_long(value, dtype)
                millis = raw if _is_millis_unit(dtype) else _java_trunc_div(raw, 1000)
            elif kind in ("timestamp", "local_timestamp"):
                millis = self._to_millis(_avro_timestamp_long(value, dtype))
            else:
                shown = dtype if dtype is not None else type(value).__name__
                raise KeyGeneratorError(f"Unexpected type for partition field: {shown} (value {value!r})")
        return joda_format(millis, self.output_dateformat, zone)


def _java_long_value(value: float) -> int:
    """``Double.longValue``: truncation, NaN -> 0, saturation."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return _LONG_MAX if value > 0 else _LONG_MIN
    return max(_LONG_MIN, min(_LONG_MAX, int(value)))


# -- field access ------------------------------------------------------------------------


def _row_value(row: Mapping[str, Any], path: str) -> Any:
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


def _field_type(schema: pa.Schema | None, path: str) -> pa.DataType | None:
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


def _column(batch: pa.Table | pa.RecordBatch, path: str) -> pa.Array:
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


def _map_values(array: pa.Array, fn: Callable[[Any], str]) -> pa.Array:
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


_PLAIN_DATE_RANGE = ((_dt.date(1000, 1, 1) - _EPOCH_DATE).days, (_dt.date(9999, 12, 31) - _EPOCH_DATE).days)


def _string_array(array: pa.Array, consistent_logical_timestamp: bool, jvm_timezone: str) -> pa.Array:
    """Vectorised ``field_value_as_string`` (pyarrow.compute where Arrow prints like Java)."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    dtype = array.type
    kind = _type_kind(dtype)
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
    return _map_values(array, one)


def _first_true(mask: pa.Array) -> int | None:
    index = pc.index(mask, True).as_py()
    return None if index is None or index < 0 else index


# -- parsing partition values back (readers) ---------------------------------------------

_INVALID = object()
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


def _parse_string_value(text: str, dtype: pa.DataType, consistent_logical_timestamp: bool) -> Any:
    """Candidate typed value whose Java string is ``text``; ``_INVALID`` if there is none.

    Callers re-print the candidate and compare, so a lenient parse here is safe.
    """
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    kind = _type_kind(dtype)
    try:
        if kind == "string":
            return text
        if kind == "bool":
            return {"true": True, "false": False}.get(text, _INVALID)
        if kind == "int":
            if not _JAVA_INT.fullmatch(text):
                return _INVALID
            value = int(text)
            low, high = _INT_RANGES[dtype]
            return value if low <= value <= high else _INVALID
        if kind in ("double", "float"):
            special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
            value = special[text] if text in special else float(text)
            return _to_float32(value) if kind == "float" else value
        if kind == "decimal":
            value = Decimal(text)
            if not value.is_finite() or len(value.as_tuple().digits) > dtype.precision:
                return _INVALID
            return value
        if kind == "date":
            value = _dt.date.fromisoformat(text)
            return value if pa.types.is_date32(dtype) or pa.types.is_date64(dtype) else _INVALID
        if kind in ("timestamp", "local_timestamp"):
            if (kind == "timestamp" and consistent_logical_timestamp) or dtype.unit == "ns":
                return _INVALID  # Timestamp.toString / micros drop precision
            if not _JAVA_INT.fullmatch(text):
                return _INVALID
            raw = int(text)
            if dtype.unit == "s":
                if raw % 1000:
                    return _INVALID
                raw //= 1000
            return pa.scalar(raw, pa.int64()).cast(dtype).as_py()
        if kind == "binary":
            return bytes.fromhex(text) if re.fullmatch(r"(?:[0-9a-f]{2})*", text) else _INVALID
    except (ValueError, InvalidOperation, OverflowError, pa.ArrowInvalid, KeyError):
        return _INVALID
    return _INVALID


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


def _parse_custom_spec(spec: str, allow_untyped: bool) -> PartitionPart:
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
        _java_zone(jvm_timezone)

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
        dtype = _field_type(schema, name)
        if dtype is None:
            raise KeyGeneratorError(f"field {name!r} of {option} is not in the schema: {schema.names}")
        kind = _type_kind(dtype)
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
            bad = _first_true(pc.or_kleene(pc.is_null(column), pc.equal(column, "")))
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
        bad = _first_true(all_missing)
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
                value = _row_value(row, part.field)
                segments.append(self._timestamp_segment(part, value, _field_type(schema, part.field)))
        return _check_partition_path(PARTITION_PATH_SEPARATOR.join(segments))

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
                    column = _map_values(column, escape_path_name)
                if self.hive_style:
                    column = pc.binary_join_element_wise(part.field + "=", column, "")
            else:
                raw = _column(batch, part.field)
                dtype = raw.type

                def one(value: Any, part: PartitionPart = part, dtype: pa.DataType = dtype) -> str:
                    return self._timestamp_segment(part, value, dtype)

                column = _map_values(raw, one)
            segments.append(column)
        paths = segments[0] if len(segments) == 1 else pc.binary_join_element_wise(*segments, PARTITION_PATH_SEPARATOR)
        bad = _first_true(pc.match_substring_regex(paths, _BAD_SEGMENT.pattern))
        if bad is not None:
            _check_partition_path(paths[bad].as_py())
        return paths

    def _value_string(self, row: Mapping[str, Any], name: str, schema: pa.Schema | None) -> str | None:
        return field_value_as_string(
            _row_value(row, name),
            _field_type(schema, name),
            consistent_logical_timestamp=self.consistent_logical_timestamp,
            jvm_timezone=self.jvm_timezone,
        )

    def _string_column(self, batch: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
        return _string_array(_column(batch, name), self.consistent_logical_timestamp, self.jvm_timezone)

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
            dtype = _field_type(schema, part.field)
            if dtype is None:
                return None
            types[part.field] = dtype
            if segment == DEFAULT_PARTITION_PATH:
                if _type_kind(dtype) in ("string", "binary"):
                    return None  # null and "" (or b"") both land here
                values[part.field] = None
                continue
            text = unescape_path_name(segment) if self.url_encode else segment
            value = _parse_string_value(text, dtype, self.consistent_logical_timestamp)
            if value is _INVALID:
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
            [_parse_custom_spec(spec, allow_untyped) for spec in _as_fields(partition_fields)],
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


# -- factories -------------------------------------------------------------------------------


def _split_fields(value: str | None) -> list[str]:
    if value is None:
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


def _infer_kind(record_key_fields: list[str], partition_specs: list[str]) -> str:
    """Hudi's ``inferKeyGeneratorType`` (plus newer Hudi's CUSTOM for ``field:TYPE``)."""
    if any(":" in spec for spec in partition_specs):
        return CUSTOM
    if not partition_specs:
        return NON_PARTITION
    if len(partition_specs) == 1 and len(record_key_fields) <= 1:
        return SIMPLE
    return COMPLEX


def _kind_of_name(name: str, option: str) -> str:
    name = name.strip()
    kind = _KIND_BY_CLASS.get(name) or _KIND_BY_TYPE.get(name.upper())
    if kind is None:
        raise KeyGeneratorError(
            f"{option}={name} is not a supported key generator (supported: "
            f"{', '.join(sorted(CLASS_NAMES))} and their org.apache.hudi.keygen classes)"
        )
    return kind


def _build(
    kind: str,
    record_key_fields: list[str],
    partition_specs: list[str],
    timestamp: TimestampConfig | None,
    *,
    lenient: bool,
    complex_single_field_prefixed: bool,
    **common: Any,
) -> KeyGenerator:
    if kind == SIMPLE:
        return SimpleKeyGenerator(record_key_fields, partition_specs, **common)
    if kind == COMPLEX:
        return ComplexKeyGenerator(
            record_key_fields, partition_specs, single_field_prefixed=complex_single_field_prefixed, **common
        )
    if kind == NON_PARTITION:
        return NonpartitionedKeyGenerator(record_key_fields, partition_specs, **common)
    if kind == GLOBAL_DELETE:
        return GlobalDeleteKeyGenerator(record_key_fields, partition_specs, **common)
    if kind == TIMESTAMP:
        return TimestampBasedKeyGenerator(record_key_fields, partition_specs, timestamp, **common)
    return CustomKeyGenerator(record_key_fields, partition_specs, timestamp, allow_untyped=lenient, **common)


def key_generator_from_table_config(
    config: TableConfig,
    *,
    complex_single_field_prefixed: bool | None = None,
    consistent_logical_timestamp: bool = False,
    jvm_timezone: str = "UTC",
) -> KeyGenerator:
    """The key generator a table was written with (v6 class names, v8+ type names).

    ``complex_single_field_prefixed`` None picks by table version: v8 tables come
    from Hudi 1.0.x, which writes bare values; otherwise the 0.14.0 ``field:value``
    form. Missing timestamp configs do not fail here (see TimestampBasedKeyGenerator).
    """
    try:
        record_key_fields = config.record_key_fields
        specs = config.partition_fields_spec
        if config.key_generator_class:
            kind = _kind_of_name(config.key_generator_class, Keys.KEY_GENERATOR_CLASS)
        elif config.key_generator_type:
            kind = _kind_of_name(config.key_generator_type, Keys.KEY_GENERATOR_TYPE)
        else:
            kind = _infer_kind(record_key_fields, specs)
        if kind == SIMPLE and not specs:
            kind = NON_PARTITION
        if kind in (SIMPLE, COMPLEX, TIMESTAMP):
            specs = [spec.split(":", 1)[0] for spec in specs]
        timestamp = None
        if kind in (TIMESTAMP, CUSTOM):
            try:
                timestamp = TimestampConfig.from_properties(config.props, infer_type=True)
            except KeyGeneratorError:
                timestamp = None
        if complex_single_field_prefixed is None:
            complex_single_field_prefixed = config.version != 8
        return _build(
            kind,
            record_key_fields,
            specs,
            timestamp,
            lenient=True,
            complex_single_field_prefixed=complex_single_field_prefixed,
            hive_style=config.hive_style_partitioning,
            url_encode=config.url_encode_partitioning,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
        )
    except KeyGeneratorError as exc:
        raise InvalidTableConfigError(f"{config.source or 'hoodie.properties'}: {exc}") from exc


def _bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None or str(value).strip() == "":
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise KeyGeneratorError(f"{key}={value!r} is not a boolean (true/false)")
    return text == "true"


def key_generator_from_write_options(
    options: Mapping[str, str],
    schema: pa.Schema | None = None,
    *,
    complex_single_field_prefixed: bool = True,
    jvm_timezone: str = "UTC",
) -> KeyGenerator:
    """The key generator for a write, from Hudi datasource options.

    Infers the class as Hudi does when none is given; rejects options that
    contradict each other (naming the option). With ``schema`` every configured
    field must exist with a usable type.
    """
    raw_rk = options.get(WriteOptions.RECORDKEY_FIELD)
    record_key_fields = _split_fields(raw_rk)
    specs = _split_fields(options.get(WriteOptions.PARTITIONPATH_FIELD))
    class_option = (options.get(WriteOptions.KEYGENERATOR_CLASS) or "").strip()
    type_option = (options.get(WriteOptions.KEYGENERATOR_TYPE) or "").strip()
    kind_from_class = _kind_of_name(class_option, WriteOptions.KEYGENERATOR_CLASS) if class_option else None
    kind_from_type = _kind_of_name(type_option, WriteOptions.KEYGENERATOR_TYPE) if type_option else None
    if kind_from_class and kind_from_type and kind_from_class != kind_from_type:
        raise KeyGeneratorError(
            f"{WriteOptions.KEYGENERATOR_CLASS}={class_option} contradicts "
            f"{WriteOptions.KEYGENERATOR_TYPE}={type_option}"
        )
    kind = kind_from_class or kind_from_type or _infer_kind(record_key_fields, specs)
    if kind == SIMPLE and not specs:
        kind = NON_PARTITION  # Hudi switches a partition-less SimpleKeyGenerator
    if kind != CUSTOM and any(":" in spec for spec in specs):
        raise KeyGeneratorError(
            f"{WriteOptions.PARTITIONPATH_FIELD}={','.join(specs)} uses field:TYPE, which only "
            f"CustomKeyGenerator understands (key generator is {CLASS_NAMES[kind]})"
        )
    if kind == NON_PARTITION and specs:
        raise KeyGeneratorError(
            f"{WriteOptions.PARTITIONPATH_FIELD}={','.join(specs)} contradicts the non-partitioned key generator "
            f"({WriteOptions.KEYGENERATOR_CLASS}={class_option or type_option})"
        )
    if kind == GLOBAL_DELETE and not record_key_fields:
        raise KeyGeneratorError(f"GlobalDeleteKeyGenerator needs {WriteOptions.RECORDKEY_FIELD}")
    timestamp = None
    needs_timestamp = kind == TIMESTAMP or (
        kind == CUSTOM and any(_parse_custom_spec(s, False).kind == TIMESTAMP for s in specs)
    )
    if needs_timestamp:
        timestamp = TimestampConfig.from_properties(options)
    generator = _build(
        kind,
        record_key_fields,
        specs,
        timestamp,
        lenient=False,
        complex_single_field_prefixed=complex_single_field_prefixed,
        hive_style=_bool_option(options, WriteOptions.HIVE_STYLE_PARTITIONING, False),
        url_encode=_bool_option(options, WriteOptions.URL_ENCODE_PARTITIONING, False),
        consistent_logical_timestamp=_bool_option(options, WriteOptions.CONSISTENT_LOGICAL_TIMESTAMP, False),
        jvm_timezone=jvm_timezone,
    )
    if schema is not None:
        generator.validate_schema(schema)
    return generator


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
