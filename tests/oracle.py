"""Test oracle helpers: read tables with hudi-rs and compare results as multisets."""

from __future__ import annotations

import datetime as _dt
import decimal
from collections import Counter
from typing import Any, Iterable

import pyarrow as pa


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((k, _norm(v)) for k, v in value.items())
    if isinstance(value, list):
        # Arrow maps come back as lists of (key, value) tuples; order is not meaningful
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return tuple(sorted(((_norm(k), _norm(v)) for k, v in value), key=repr))
        return tuple(_norm(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_norm(v) for v in value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return ("ts", value)
    if isinstance(value, decimal.Decimal):
        return ("dec", value.normalize() if value == value else value)
    if isinstance(value, float) and value != value:
        return ("nan",)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def canonical_rows(table: pa.Table, columns: Iterable[str] | None = None) -> Counter:
    """The rows of ``table`` as a multiset of normalised tuples."""
    if columns is not None:
        table = table.select(list(columns))
    names = table.column_names
    out: Counter = Counter()
    for row in table.to_pylist():
        out[tuple(_norm(row[name]) for name in names)] += 1
    return out


def diff_rows(left: pa.Table, right: pa.Table, columns: Iterable[str] | None = None) -> str:
    """Human-readable difference of two tables compared as multisets (empty if equal)."""
    cols = list(columns) if columns is not None else left.column_names
    if columns is None and left.column_names != right.column_names:
        return f"column names differ:\n  ours:   {left.column_names}\n  theirs: {right.column_names}"
    a, b = canonical_rows(left, cols), canonical_rows(right, cols)
    if a == b:
        return ""
    only_a = a - b
    only_b = b - a
    lines = [f"rows differ ({sum(a.values())} vs {sum(b.values())}); columns {cols}"]
    for row in list(only_a)[:5]:
        lines.append(f"  only ours:   {row}")
    for row in list(only_b)[:5]:
        lines.append(f"  only theirs: {row}")
    return "\n".join(lines)


def hudi_rs_read(
    path: str,
    as_of: str | None = None,
    begin: str | None = None,
    end: str | None = None,
    read_optimized: bool = False,
    incremental: bool = False,
) -> pa.Table:
    """Read a table with hudi-rs (the independent Rust reader)."""
    from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder

    builder = HudiTableBuilder.from_base_uri(path)
    if read_optimized:
        builder = builder.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    table = builder.build()
    options = HudiReadOptions()
    if incremental:
        options = options.with_query_type(HudiQueryType.Incremental)
        if begin is not None:
            options = options.with_start_timestamp(begin)
        if end is not None:
            options = options.with_end_timestamp(end)
    elif as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = table.read(options)
    if not batches:
        return pa.Table.from_batches([], schema=table.get_schema_with_meta_fields())
    return pa.Table.from_batches(batches)
