"""Query results in the DuckDB CLI's output modes.

``duckbox`` (the default) is DuckDB's own renderer, the one ``relation.show()``
uses. The other modes follow the DuckDB CLI's formats: every value is DuckDB's
own text for it (a cast to VARCHAR; in JSON modes nested and floating-point
values are cast to JSON), laid out as the CLI lays it out.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..api import arrow_reader
from ..duck.sql import quote_ident

MODES = ("duckbox", "box", "column", "csv", "json", "jsonlines", "line", "list", "markdown", "table", "tabs")
_JSON_MODES = ("json", "jsonlines")
_NUMERIC = {
    "tinyint", "smallint", "integer", "bigint", "hugeint", "uhugeint", "utinyint", "usmallint", "uinteger",
    "ubigint", "float", "double", "decimal",
}
_QUOTED_NUMERIC = {"ubigint", "hugeint", "uhugeint", "decimal"}  # may not fit a JSON reader's number
_FLOATING = {"float", "double"}
_NESTED = {"list", "struct", "map", "union", "array"}
_UNLIMITED = 2**62
_RESULT_ALIAS = "hudi_duck_shell_result"

Row = Sequence[str | None]


class Interrupted(Exception):
    """Output of a result stopped by Ctrl-C (worded as DuckDB words an interrupted query)."""

    def __init__(self) -> None:
        super().__init__("INTERRUPT Error: Interrupted!")


@dataclass(frozen=True)
class Column:
    """A result column: its name and DuckDB type (``str(type)`` and ``type.id``)."""

    name: str
    type_name: str
    type_id: str

    @property
    def numeric(self) -> bool:
        return self.type_id in _NUMERIC

    @property
    def nested(self) -> bool:
        return self.type_id in _NESTED

    @property
    def json_text(self) -> bool:
        """Values that are JSON text already (nested values cast to JSON, JSON columns)."""
        return self.nested or self.type_name == "JSON"

    @property
    def json_bare(self) -> bool:
        """Values written unquoted in JSON: booleans and numbers JSON readers hold exactly."""
        if self.type_id == "boolean":
            return True
        return self.numeric and self.type_id not in _QUOTED_NUMERIC


@dataclass(frozen=True)
class OutputOptions:
    """What the dot commands set: mode, headers, NULL text and duckbox limits (None: no limit)."""

    mode: str = "duckbox"
    headers: bool = True
    null_value: str = "NULL"
    max_rows: int | None = 40
    max_width: int | None = None


def render(relation: Any, options: OutputOptions, out: TextIO, cancelled: Callable[[], bool]) -> None:
    """Write a query result to ``out`` in ``options.mode``."""
    columns = [Column(name, str(kind), kind.id) for name, kind in zip(relation.columns, relation.types)]
    if options.mode == "duckbox":
        if [c.name for c in columns] == ["explain_key", "explain_value"]:
            _write_plan(text_rows(relation, columns, False, cancelled), out)
        else:
            out.write(duckbox(relation, options))
        return
    rows = _started(text_rows(relation, columns, options.mode in _JSON_MODES, cancelled))
    _WRITERS[options.mode](columns, rows, options, out)


def duckbox(relation: Any, options: OutputOptions) -> str:
    """DuckDB's box rendering of a relation, as ``relation.show()`` prints it."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        relation.show(
            max_width=options.max_width or _UNLIMITED,
            max_rows=_UNLIMITED if options.max_rows is None else options.max_rows,
            null_value=options.null_value,
        )
    return buffer.getvalue().rstrip("\n") + "\n"


def text_rows(relation: Any, columns: list[Column], json_values: bool, cancelled: Callable[[], bool]) -> Iterator[Row]:
    """The rows as DuckDB's text for each value (None for NULL), a batch at a time."""
    expressions = ", ".join(
        f"{_text_expression(index + 1, column, json_values)} AS {quote_ident(f'c{index}')}"
        for index, column in enumerate(columns)
    )
    texts = relation.query(_RESULT_ALIAS, f"SELECT {expressions} FROM {_RESULT_ALIAS}")
    reader = arrow_reader(texts)
    try:
        for batch in reader:
            if cancelled():
                raise Interrupted()
            yield from zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns)))
        if cancelled():  # an interrupted stream may just end: never pass it off as the whole result
            raise Interrupted()
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()


def _started(rows: Iterator[Row]) -> Iterator[Row]:
    """Run the query before anything is written, so a failing query prints no header."""
    first = next(rows, None)
    if first is None:
        return iter(())
    return itertools.chain([first], rows)


def _text_expression(position: int, column: Column, json_values: bool) -> str:
    """Positional (#n), so duplicate column names stay apart."""
    if json_values and (column.nested or column.type_id in _FLOATING):
        return f"CAST(CAST(#{position} AS JSON) AS VARCHAR)"
    return f"CAST(#{position} AS VARCHAR)"


def display_width(text: str) -> int:
    """Terminal columns of ``text`` (wide East Asian characters and emoji take two)."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def _align(text: str, width: int, how: str) -> str:
    space = max(0, width - display_width(text))
    if how == "left":
        return text + " " * space
    if how == "right":
        return " " * space + text
    return " " * (space // 2) + text + " " * ((space + 1) // 2)


def _values(row: Row, options: OutputOptions) -> list[str]:
    return [options.null_value if value is None else value for value in row]


# ---- row modes: one row at a time ------------------------------------------------------------


def _write_csv(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    if options.headers:
        out.write(",".join(_csv_field(c.name) for c in columns) + "\n")
    for row in rows:
        out.write(",".join(_csv_field(v) for v in _values(row, options)) + "\n")


def _csv_field(text: str) -> str:
    """Quoted, doubling quotes, when it holds the separator, a quote, a control or non-ASCII character."""
    if "," in text or any(ord(c) <= 31 or ord(c) >= 127 or c in "\"'" for c in text):
        return '"' + text.replace('"', '""') + '"'
    return text


def _write_list(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO, sep: str = "|") -> None:
    if options.headers:
        out.write(sep.join(c.name for c in columns) + "\n")
    for row in rows:
        out.write(sep.join(_values(row, options)) + "\n")


def _write_tabs(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    _write_list(columns, rows, options, out, "\t")


def _write_line(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    width = max([5, *(len(c.name) for c in columns)])
    for index, row in enumerate(rows):
        if index:
            out.write("\n")
        for column, value in zip(columns, _values(row, options)):
            out.write(f"{column.name.rjust(width)} = {value}\n")


def _write_json(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    out.write("[")
    for index, row in enumerate(rows):
        if index:
            out.write(",\n")
        out.write(_json_object(columns, row))
    out.write("]\n")


def _write_jsonlines(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    for index, row in enumerate(rows):
        if index:
            out.write("\n")
        out.write(_json_object(columns, row))
    out.write("\n")


def _json_object(columns: list[Column], row: Row) -> str:
    fields = (f"{_json_string(c.name)}:{_json_value(c, v)}" for c, v in zip(columns, row))
    return "{" + ",".join(fields) + "}"


def _json_value(column: Column, value: str | None) -> str:
    if value is None:
        return "null"
    if column.json_text or column.json_bare:
        return value
    return _json_string(value)


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _write_plan(rows: Iterable[Row], out: TextIO) -> None:
    """EXPLAIN in duckbox mode: the plan text itself, as the CLI shows it."""
    for row in rows:
        plan = row[1] or ""
        out.write(plan if plan.endswith("\n") else plan + "\n")


# ---- aligned modes: every row first, for the column widths ----------------------------------


def _aligned(
    columns: list[Column], rows: Iterable[Row], options: OutputOptions, escape: Callable[[str], str]
) -> tuple[list[str], list[list[str]], list[int]]:
    """Names, rows and column widths: every row is read first, as the CLI does."""
    names = [escape(c.name) for c in columns]
    table = [[escape(v) for v in _values(row, options)] for row in rows]
    widths = [max([display_width(n), *(display_width(r[i]) for r in table)]) for i, n in enumerate(names)]
    return names, table, widths


def _no_escape(text: str) -> str:
    return text


def _write_box(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    names, table, widths = _aligned(columns, rows, options, lambda text: text.replace("\n", "\\n"))

    def rule(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * (w + 2) for w in widths) + right + "\n"

    out.write(rule("┌", "┬", "┐"))
    out.write("│ " + " │ ".join(_align(n, w, "center") for n, w in zip(names, widths)) + " │\n")
    out.write(rule("├", "┼", "┤"))
    for row in table:
        out.write("│ " + " │ ".join(_align(v, w, "left") for v, w in zip(row, widths)) + " │\n")
    out.write(rule("└", "┴", "┘"))


def _write_table(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    names, table, widths = _aligned(columns, rows, options, _no_escape)
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+\n"
    out.write(rule)
    out.write("| " + " | ".join(_align(n, w, "center") for n, w in zip(names, widths)) + " |\n")
    out.write(rule)
    for row in table:
        out.write("| " + " | ".join(_align(v, w, "left") for v, w in zip(row, widths)) + " |\n")
    out.write(rule)


def _write_markdown(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    names, table, widths = _aligned(columns, rows, options, lambda text: text.replace("|", "\\|"))
    out.write("| " + " | ".join(_align(n, w, "center") for n, w in zip(names, widths)) + " |\n")
    marks = ("-" * (w + 1) + ":" if c.numeric else "-" * (w + 2) for c, w in zip(columns, widths))
    out.write("|" + "|".join(marks) + "|\n")
    for row in table:
        out.write("| " + " | ".join(_align(v, w, "left") for v, w in zip(row, widths)) + " |\n")


def _write_column(columns: list[Column], rows: Iterable[Row], options: OutputOptions, out: TextIO) -> None:
    names, table, widths = _aligned(columns, rows, options, _no_escape)
    if options.headers:
        out.write("  ".join(_align(n, w, "left") for n, w in zip(names, widths)) + "\n")
        out.write("  ".join("-" * w for w in widths) + "\n")
    for row in table:
        out.write("  ".join(_align(v, w, "left") for v, w in zip(row, widths)) + "\n")


_WRITERS: dict[str, Callable[[list[Column], Iterable[Row], OutputOptions, TextIO], None]] = {
    "box": _write_box,
    "column": _write_column,
    "csv": _write_csv,
    "json": _write_json,
    "jsonlines": _write_jsonlines,
    "line": _write_line,
    "list": _write_list,
    "markdown": _write_markdown,
    "table": _write_table,
    "tabs": _write_tabs,
}
