"""Filters known when a read is planned: ``column op value`` conjunctions.

A read's filters keep only the rows that match them and let planning skip
files and partitions whose statistics show no row can match (see
``metadata/data_skipping.py``). Two spellings, as hudi-rs takes them:

* a list of ``(column, op, value)`` tuples, e.g. ``[("city", "=", "sf"), ("fare", ">", 10)]``;
* a string of terms joined by ``AND``: ``"city = sf AND fare > 10"``; a value
  may be single-quoted (``'san francisco'``, ``''`` escapes a quote), a column
  double-quoted.

Operators: ``=`` (``==``), ``!=`` (``<>``), ``<``, ``<=``, ``>``, ``>=``.
Values take the column's type (numbers, strings, booleans, dates, decimals,
timestamps); a value that does not fit the column is an error naming both.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
from dataclasses import dataclass
from typing import Any, Sequence, Union

import pyarrow as pa

from ..errors import HudiError

#: Operators and their canonical spelling.
OPERATORS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

FilterSpec = Union[str, Sequence[Sequence[Any]], None]


class FilterError(HudiError):
    """A read filter that cannot be parsed or does not fit the table's columns."""


@dataclass(frozen=True)
class ColumnFilter:
    """``column op value``, ``value`` typed as the column (None never: nulls match no comparison)."""

    column: str
    op: str
    value: Any

    def __str__(self) -> str:
        return f"{self.column} {self.op} {self.value!r}"

    def matches(self, value: Any) -> bool:
        """Whether a row's ``value`` passes (SQL semantics: null fails every comparison)."""
        if value is None:
            return False
        return _compare(value, self.op, self.value)

    def may_match_range(self, low: Any, high: Any) -> bool:
        """Whether some value in ``[low, high]`` could pass; True when the bounds cannot tell
        (missing, of another kind than the filter's value, NaN)."""
        if not comparable(low, self.value) or not comparable(high, self.value):
            return True
        if isinstance(self.value, float) and self.op in (">", ">=", "!="):
            return True  # NaN passes these (it sorts above every number) and bounds may leave it out
        if self.op == "=":
            return low <= self.value <= high
        if self.op == "!=":
            return not (low == high == self.value)
        if self.op == "<":
            return low < self.value
        if self.op == "<=":
            return low <= self.value
        if self.op == ">":
            return high > self.value
        return high >= self.value


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


_NUMBERS = (int, float, decimal.Decimal)


def comparable(stat: Any, value: Any) -> bool:
    """Whether a statistic and a filter value compare exactly as the engine compares them."""
    if stat is None or value is None:
        return False
    if isinstance(stat, bool) or isinstance(value, bool):
        return isinstance(stat, bool) and isinstance(value, bool)
    if isinstance(stat, _NUMBERS) and isinstance(value, _NUMBERS):
        return not (isinstance(stat, float) and stat != stat)
    if isinstance(stat, _dt.datetime) or isinstance(value, _dt.datetime):
        return False  # time zones and units make these inexact: keep the file
    if isinstance(stat, _dt.date) and isinstance(value, _dt.date):
        return True
    if isinstance(stat, str) and isinstance(value, str):
        # Java orders strings by UTF-16 code units, DuckDB by code points; the two agree on
        # every comparison with a value free of characters from U+D800 on
        return all(ord(ch) < 0xD800 for ch in value)
    return False


# -- parsing --------------------------------------------------------------------------------

_TERM = re.compile(
    r"""\s*(?P<column>"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_.]*)\s*
        (?P<op><=|>=|!=|<>|==|=|<|>)\s*
        (?P<value>'(?:[^']|'')*'|[^\s'].*?)\s*$""",
    re.VERBOSE | re.DOTALL,
)


def _split_and(text: str) -> list[str]:
    """Terms of ``text`` joined by AND (case-insensitive), ignoring AND inside quotes."""
    terms, current, quote = [], [], None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif re.match(r"(?i)\sand\s", text[i : i + 5]):
            terms.append("".join(current))
            current = []
            i += 4
            continue
        else:
            current.append(ch)
        i += 1
    terms.append("".join(current))
    return terms


def _parse_term(term: str, source: str) -> tuple[str, str, Any]:
    match = _TERM.fullmatch(term)
    if not match:
        raise FilterError(
            f"filters {source!r}: cannot read {term.strip()!r}; write terms as 'column op value' joined by AND "
            f"(op one of {', '.join(sorted(set(OPERATORS)))}), e.g. 'city = sf AND fare > 10'"
        )
    column = match["column"]
    if column.startswith('"'):
        column = column[1:-1].replace('""', '"')
    value: Any = match["value"]
    if value.startswith("'"):
        value = value[1:-1].replace("''", "'")
    return column, match["op"], value


def parse_filters(spec: FilterSpec, schema: pa.Schema, where: str = "") -> tuple[ColumnFilter, ...]:
    """Typed filters of ``spec`` (a string or ``(column, op, value)`` tuples) for ``schema``."""
    if spec is None:
        return ()
    if isinstance(spec, str):
        if not spec.strip():
            return ()
        raw = [_parse_term(term, spec) for term in _split_and(spec)]
    else:
        raw = []
        for item in spec:
            if isinstance(item, (str, bytes)) or len(item) != 3:
                raise FilterError(f"{where}filters: {item!r} is not a (column, op, value) tuple")
            raw.append(tuple(item))
    return tuple(_typed(column, op, value, schema, where) for column, op, value in raw)


def _typed(column: Any, op: Any, value: Any, schema: pa.Schema, where: str) -> ColumnFilter:
    canonical_op = OPERATORS.get(str(op).strip())
    if canonical_op is None:
        raise FilterError(f"{where}filters: operator {op!r} of column {column!r} is not one of {', '.join(OPERATORS)}")
    if str(column) not in schema.names:
        raise FilterError(f"{where}filters: no column {column!r}; the table's columns are {', '.join(schema.names)}")
    if value is None:
        raise FilterError(f"{where}filters: {column} {op} NULL matches no row; use IS NULL in a WHERE clause instead")
    dtype = schema.field(str(column)).type
    try:
        typed = coerce(value, dtype)
    except (ValueError, TypeError, decimal.InvalidOperation) as exc:
        raise FilterError(f"{where}filters: value {value!r} does not fit column {column!r} of type {dtype}: {exc}") from exc
    return ColumnFilter(str(column), canonical_op, typed)


_TRUE = {"true", "1", "t", "yes"}
_FALSE = {"false", "0", "f", "no"}


def coerce(value: Any, dtype: pa.DataType) -> Any:
    """``value`` (a Python value or its text) as a value of a column of ``dtype``."""
    text = value.strip() if isinstance(value, str) else None
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return str(value)
    if pa.types.is_boolean(dtype):
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError("expected true or false")
    if pa.types.is_integer(dtype):
        if isinstance(value, bool):
            raise TypeError("expected a number")
        if isinstance(value, _NUMBERS):
            return value
        return int(text) if re.fullmatch(r"[+-]?\d+", text or "") else decimal.Decimal(text)
    if pa.types.is_floating(dtype):
        if isinstance(value, bool):
            raise TypeError("expected a number")
        return float(value)
    if pa.types.is_decimal(dtype):
        if isinstance(value, (bool, float)):
            return decimal.Decimal(str(value))
        return decimal.Decimal(text if text is not None else value)
    if pa.types.is_date(dtype):
        if isinstance(value, _dt.datetime):
            return value.date()
        if isinstance(value, _dt.date):
            return value
        return _dt.date.fromisoformat(text)
    if pa.types.is_timestamp(dtype):
        if isinstance(value, _dt.datetime):
            return value
        return _dt.datetime.fromisoformat(text)
    raise TypeError(f"filters on {dtype} columns are not supported; filter those rows with a WHERE clause")


__all__ = ["ColumnFilter", "FilterError", "FilterSpec", "OPERATORS", "comparable", "coerce", "parse_filters"]
