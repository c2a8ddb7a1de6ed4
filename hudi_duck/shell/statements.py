"""Splitting shell input into SQL statements.

As in the DuckDB CLI, a statement ends at a ``;`` outside string literals
('...', E'...'), quoted identifiers ("..."), dollar-quoted strings ($tag$...$tag$)
and comments (-- to the end of the line, nested /* ... */). The shell needs this
before DuckDB parses anything: it decides whether to run what was typed or to
show the continuation prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


@dataclass(frozen=True)
class Split:
    """Complete statements (without their ``;``) and the unfinished rest."""

    statements: list[str]
    rest: str

    @property
    def rest_is_blank(self) -> bool:
        """True when the rest holds only whitespace and finished comments."""
        return is_blank(self.rest)


def split_statements(text: str) -> Split:
    """Cut ``text`` at every statement-ending ``;``; blank statements are dropped."""
    statements: list[str] = []
    start = 0
    position = 0
    while position < len(text):
        char = text[position]
        if char == ";":
            statement = text[start:position]
            if not is_blank(statement):
                statements.append(statement.strip())
            start = position + 1
            position += 1
            continue
        end = _skip_quoted_or_comment(text, position)
        if end is None:
            # an unterminated literal or comment: everything from `start` is unfinished
            return Split(statements, text[start:])
        position = end
    return Split(statements, text[start:])


def is_blank(text: str) -> bool:
    """Only whitespace and complete comments (an unterminated comment is not blank)."""
    position = 0
    while position < len(text):
        char = text[position]
        if char.isspace():
            position += 1
        elif text.startswith("--", position) or text.startswith("/*", position):
            end = _skip_quoted_or_comment(text, position)
            if end is None:
                return False
            position = end
        else:
            return False
    return True


def _skip_quoted_or_comment(text: str, position: int) -> int | None:
    """The index after the token starting at ``position``; None if it never ends."""
    char = text[position]
    if char == "'":
        return _end_of_string(text, position, backslash_escapes=_is_escape_string(text, position))
    if char == '"':
        return _end_of_doubled_quote(text, position, '"')
    if char == "$":
        return _end_of_dollar_quote(text, position)
    if text.startswith("--", position):
        newline = text.find("\n", position)
        return len(text) if newline < 0 else newline + 1
    if text.startswith("/*", position):
        return _end_of_block_comment(text, position)
    return position + 1


def _is_escape_string(text: str, quote: int) -> bool:
    """E'...' (a lone E or e before the quote) takes backslash escapes."""
    if quote == 0 or text[quote - 1] not in "eE":
        return False
    return quote == 1 or not (text[quote - 2].isalnum() or text[quote - 2] == "_")


def _end_of_string(text: str, quote: int, backslash_escapes: bool) -> int | None:
    position = quote + 1
    while position < len(text):
        char = text[position]
        if backslash_escapes and char == "\\":
            position += 2
            continue
        if char == "'":
            if text.startswith("''", position):
                position += 2
                continue
            return position + 1
        position += 1
    return None


def _end_of_doubled_quote(text: str, quote: int, mark: str) -> int | None:
    position = quote + 1
    while True:
        close = text.find(mark, position)
        if close < 0:
            return None
        if text.startswith(mark * 2, close):
            position = close + 2
            continue
        return close + 1


def _end_of_dollar_quote(text: str, position: int) -> int | None:
    """$tag$...$tag$; a ``$`` that opens no such quote ($1 parameters) is ordinary."""
    previous = text[position - 1] if position > 0 else ""
    match = _DOLLAR_TAG.match(text, position)
    if match is None or previous.isalnum() or previous == "_":
        return position + 1
    tag = match.group(0)
    close = text.find(tag, match.end())
    return None if close < 0 else close + len(tag)


def _end_of_block_comment(text: str, start: int) -> int | None:
    depth = 0
    position = start
    while position < len(text):
        if text.startswith("/*", position):
            depth += 1
            position += 2
        elif text.startswith("*/", position):
            depth -= 1
            position += 2
            if depth == 0:
                return position
        else:
            position += 1
    return None
