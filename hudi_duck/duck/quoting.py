"""How names and strings are written into DuckDB SQL: one rule for every statement the DuckDB layer renders."""

from __future__ import annotations

from typing import Iterable


def quote_ident(name: str) -> str:
    """A column or table name as a DuckDB identifier (double quotes, inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: object) -> str:
    """A string (or path) as a DuckDB string literal (single quotes, inner quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def list_literal(values: Iterable[str]) -> str:
    """Strings as a DuckDB list literal (``read_parquet``'s file list: thousands of paths, one
    join of them all)."""
    items = [str(v).replace("'", "''") for v in values]
    return "['" + "', '".join(items) + "']" if items else "[]"
