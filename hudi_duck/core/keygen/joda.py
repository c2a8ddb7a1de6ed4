"""Joda-Time ``DateTimeFormat`` patterns, printed and parsed: the subset timestamp-based partitioning uses."""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from ..errors import KeyGeneratorError
from .java import EPOCH_UTC, instant_in_zone, java_zone

__all__ = ["joda_format", "joda_parse"]

_JODA_LETTERS = frozenset("GCYxwkeEDyMdaKhHmsSzZ")
_NUMERIC_LETTERS = frozenset("cCxyYdhHmsSeDFwWkK")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_LITERAL = "'"


@lru_cache(maxsize=256)
def joda_tokens(pattern: str) -> tuple[tuple[str, Any], ...]:
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
    tz = java_zone(zone) if isinstance(zone, str) else zone
    t = instant_in_zone(epoch_millis, tz)
    out: list[str] = []
    for letter, arg in joda_tokens(pattern):
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
                parsed.zone = java_zone(m.group())
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
    millis = (instant - EPOCH_UTC) // _dt.timedelta(milliseconds=1)
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
    in_zone = java_zone(input_zone) if isinstance(input_zone, str) else input_zone
    dflt = java_zone(default_zone) if isinstance(default_zone, str) else default_zone
    for pattern in pattern_list:
        parsed = _parse_one(text, joda_tokens(pattern))
        if parsed is None:
            continue
        try:
            return _resolve(parsed, dflt, in_zone)
        except (ValueError, OverflowError) as exc:
            raise KeyGeneratorError(f'Cannot parse "{text}": {exc}') from exc
    raise KeyGeneratorError(f'Invalid format: "{text}" does not match {pattern_list}')
