"""Java's ``toString`` of values, Java long arithmetic and ``TimeZone`` ids, as key generators need them.

Hudi turns every key field value into a Java object and prints it with ``toString``;
these are small copies of the JDK's rules (``Double``, ``Float``, ``BigDecimal``,
``LocalDate``, ``java.sql.Timestamp``) so keys match Apache Hudi byte for byte.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
from decimal import Decimal
from functools import lru_cache
from typing import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import KeyGeneratorError

__all__ = [
    "java_double_to_string",
    "java_float_to_string",
    "java_bigdecimal_to_string",
    "java_local_date_to_string",
    "java_timestamp_to_string",
]

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


def to_float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _float32_round_trips(text: str, f32: float) -> bool:
    try:
        return to_float32(float(text)) == f32
    except OverflowError:  # rounded past the largest float32
        return False


def java_float_to_string(value: float) -> str:
    """Java ``Float.toString`` of a float32 (``1.1``, not ``1.100000023841858``)."""
    f32 = to_float32(value)
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


EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
EPOCH_DATE = _dt.date(1970, 1, 1)


def instant_in_zone(millis: int, zone: _dt.tzinfo) -> _dt.datetime:
    """The instant ``millis`` after the epoch, as a datetime in ``zone``."""
    try:
        return (EPOCH_UTC + _dt.timedelta(milliseconds=millis)).astimezone(zone)
    except OverflowError as exc:
        raise KeyGeneratorError(f"epoch millis {millis} is out of the supported date range") from exc


def java_timestamp_to_string(epoch_millis: int, jvm_timezone: str = "UTC") -> str:
    """``java.sql.Timestamp.toString`` in the JVM default zone (``2023-04-01 12:01:00.0``)."""
    t = instant_in_zone(epoch_millis, java_zone(jvm_timezone))
    nanos = f"{t.microsecond * 1000:09d}".rstrip("0") or "0"
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d} "
        f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{nanos}"
    )


# -- Java arithmetic ---------------------------------------------------------------------

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def java_trunc_div(a: int, b: int) -> int:
    """Java long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def java_long_value(value: float) -> int:
    """``Double.longValue``: truncation, NaN -> 0, saturation."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return LONG_MAX if value > 0 else LONG_MIN
    return max(LONG_MIN, min(LONG_MAX, int(value)))


# -- java.util.TimeZone ids ------------------------------------------------------------

_GMT_CUSTOM = re.compile(r"GMT([+-])(?:(\d{1,2})(?::(\d{2}))?|(\d{2})(\d{2}))")


@lru_cache(maxsize=64)
def java_zone(zone_id: str) -> _dt.tzinfo:
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
