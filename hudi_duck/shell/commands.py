"""Dot commands (``.help``, ``.mode``, ``.tables`` ...), named and worded as in the DuckDB CLI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .render import MODES

if TYPE_CHECKING:
    from .session import Shell

_TRUE = {"on", "yes", "true", "1"}
_FALSE = {"off", "no", "false", "0"}


class ExitShell(Exception):
    """``.quit``/``.exit``: leave the shell with this exit status."""

    def __init__(self, code: int = 0):
        super().__init__(code)
        self.code = code


class CommandError(Exception):
    """A dot command that cannot do what was asked; shown as one ``Error:`` line."""


@dataclass(frozen=True)
class DotCommand:
    """One dot command: ``run`` returns False when it failed without raising."""

    usage: str
    help: str
    run: Callable[["Shell", list[str]], bool | None]


def _error(message: str) -> CommandError:
    return CommandError(message)


def _one(args: list[str], usage: str) -> str:
    if len(args) != 1:
        raise _error(f"usage: {usage}")
    return args[0]


def _switch(args: list[str], usage: str) -> bool:
    word = _one(args, usage).lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise _error(f'"{args[0]}" is not on or off; usage: {usage}')


def _count(args: list[str], usage: str) -> int:
    word = _one(args, usage)
    try:
        value = int(word)
    except ValueError:
        raise _error(f'"{word}" is not a number; usage: {usage}') from None
    if value < 0:
        raise _error(f"{word} is negative; usage: {usage}")
    return value


def _help(shell: "Shell", args: list[str]) -> None:
    listed = [command for command in COMMANDS.values() if command.usage]
    width = max(len(command.usage) for command in listed)
    lines = [f"{command.usage:<{width}}  {command.help}" for command in listed]
    functions = shell.fetch(
        "SELECT DISTINCT function_name, parameters FROM duckdb_functions() "
        "WHERE function_name LIKE 'hudi\\_%' ESCAPE '\\' AND function_name NOT LIKE 'hudi\\_duck\\_%' ESCAPE '\\' "
        "ORDER BY function_name"
    )
    lines += ["", "Hudi table functions (pass named parameters as name := value):"]
    lines += [f"  {name}({', '.join(parameters)})" for name, parameters in functions]
    shell.write("\n".join(lines) + "\n")


def _mode(shell: "Shell", args: list[str]) -> None:
    if not args:
        shell.write(f"current output mode: {shell.settings.mode}\n")
        return
    mode = _one(args, ".mode MODE").lower()
    if mode not in MODES:
        raise _error(f'unknown mode "{args[0]}"; mode should be one of: {", ".join(MODES)}')
    shell.settings.mode = mode


def _tables(shell: "Shell", args: list[str]) -> None:
    """Names in columns, down then across, as the CLI lists them."""
    pattern = args[0] if args else "%"
    names = [row[0] for row in shell.fetch("SELECT name FROM (SHOW TABLES) WHERE name LIKE ? ORDER BY name", [pattern])]
    if not names:
        return
    width = max(len(name) for name in names)
    per_line = max(1, 80 // (width + 2))
    lines = (len(names) + per_line - 1) // per_line
    for first in range(lines):
        row = names[first::lines]
        shell.write("  ".join(name.ljust(width) for name in row).rstrip() + "\n")


def _schema(shell: "Shell", args: list[str]) -> None:
    pattern = args[0] if args else "%"
    rows = shell.fetch(
        "SELECT sql FROM (SELECT table_name AS name, sql FROM duckdb_tables() WHERE NOT internal "
        "UNION ALL SELECT view_name, sql FROM duckdb_views() WHERE NOT internal) "
        "WHERE name LIKE ? ORDER BY name",
        [pattern],
    )
    for (sql,) in rows:
        sql = sql.strip()
        shell.write(sql + ("" if sql.endswith(";") else ";") + "\n")


def _timer(shell: "Shell", args: list[str]) -> None:
    shell.settings.timer = _switch(args, ".timer on|off")


def _bail(shell: "Shell", args: list[str]) -> None:
    shell.settings.bail = _switch(args, ".bail on|off")


def _headers(shell: "Shell", args: list[str]) -> None:
    shell.settings.headers = _switch(args, ".headers on|off")


def _nullvalue(shell: "Shell", args: list[str]) -> None:
    shell.settings.null_value = _one(args, ".nullvalue STRING")


def _maxrows(shell: "Shell", args: list[str]) -> None:
    shell.settings.max_rows = _count(args, ".maxrows COUNT")


def _maxwidth(shell: "Shell", args: list[str]) -> None:
    shell.settings.max_width = _count(args, ".maxwidth COUNT")


def _read(shell: "Shell", args: list[str]) -> bool:
    return shell.run_file(_one(args, ".read FILE"))


def _open(shell: "Shell", args: list[str]) -> None:
    read_only = "--readonly" in args
    names = [arg for arg in args if arg != "--readonly"]
    if len(names) > 1:
        raise _error("usage: .open [--readonly] [FILE]")
    shell.reopen(names[0] if names else ":memory:", read_only)


def _output(shell: "Shell", args: list[str]) -> None:
    if len(args) > 1:
        raise _error("usage: .output [FILE]")
    shell.set_output(args[0] if args else None)


def _exit(shell: "Shell", args: list[str]) -> None:
    code = _count(args, ".exit [CODE]") if args else 0
    raise ExitShell(code)


def _quit(shell: "Shell", args: list[str]) -> None:
    raise ExitShell(0)


COMMANDS: dict[str, DotCommand] = {
    "bail": DotCommand(".bail on|off", "Stop after hitting an error (scripts, piped input). Default OFF", _bail),
    "exit": DotCommand(".exit [CODE]", "Exit this program with return-code CODE", _exit),
    "headers": DotCommand(".headers on|off", "Turn display of headers on or off (csv, list, tabs, column)", _headers),
    "header": DotCommand("", "", _headers),
    "help": DotCommand(".help", "Show this message", _help),
    "maxrows": DotCommand(".maxrows COUNT", "Rows shown in duckbox mode (0: all). Default 40", _maxrows),
    "maxwidth": DotCommand(".maxwidth COUNT", "Width of duckbox output (0: the terminal's width)", _maxwidth),
    "mode": DotCommand(".mode MODE", f"Set output mode: {', '.join(MODES)}", _mode),
    "nullvalue": DotCommand(".nullvalue STRING", "Use STRING in place of NULL values. Default NULL", _nullvalue),
    "open": DotCommand(".open [--readonly] [FILE]", "Close this database and open FILE (none: in-memory)", _open),
    "output": DotCommand(".output [FILE]", "Send output to FILE, or back to stdout without FILE", _output),
    "quit": DotCommand(".quit", "Exit this program", _quit),
    "read": DotCommand(".read FILE", "Read input from FILE", _read),
    "schema": DotCommand(".schema [PATTERN]", "Show the CREATE statements of tables and views matching PATTERN", _schema),
    "tables": DotCommand(".tables [PATTERN]", "List names of tables and views matching LIKE pattern PATTERN", _tables),
    "timer": DotCommand(".timer on|off", "Turn the run time of each statement on or off", _timer),
}
