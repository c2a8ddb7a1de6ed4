"""``hudi-duck [OPTIONS] [DATABASE [SQL]]``: command line and interactive prompt, as the DuckDB CLI has them."""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass, field
from typing import TextIO

import duckdb

from .commands import ExitShell
from .line_editor import LineEditor
from .render import MODES
from .session import Shell, error_text

MAIN_PROMPT = "D "
CONTINUE_PROMPT = "· "

USAGE = """\
Usage: hudi-duck [OPTIONS] [DATABASE [SQL]]
DATABASE is a DuckDB database file (created if missing); without it, an in-memory database.
Every connection has the hudi_* table functions: SELECT * FROM hudi_snapshot('/path/to/table');
With SQL, or -c/-f, the statements run and hudi-duck exits; piped stdin runs the same way.

OPTIONS:
   -bail                stop after hitting an error
   -batch               force batch I/O (no prompt, no banner)
   -c COMMAND           run "COMMAND" (SQL or a dot command) and exit
   -cmd COMMAND         run "COMMAND" before reading stdin
   -f FILENAME          read/process named file and exit
   -header              turn headers on (csv, list, tabs, column)
   -noheader            turn headers off
   -help                show this message
   -no-stdin            exit after processing options instead of reading stdin
   -nullvalue TEXT      set text string for NULL values. Default 'NULL'
   -readonly            open the database read-only
   -version             show the hudi-duck and DuckDB versions
"""
USAGE += "".join(f"   -{mode:<19} set output mode to '{mode}'\n" for mode in MODES)

_FLAGS_WITH_VALUE = {"c", "cmd", "f", "nullvalue"}


class UsageError(Exception):
    """A command line hudi-duck cannot read."""


@dataclass
class Options:
    """The parsed command line; ``actions`` are -c/-f/SQL arguments in their order."""

    database: str = ":memory:"
    actions: list[tuple[str, str]] = field(default_factory=list)
    init_commands: list[str] = field(default_factory=list)
    mode: str | None = None
    headers: bool | None = None
    null_value: str | None = None
    bail: bool = False
    batch: bool = False
    read_only: bool = False
    no_stdin: bool = False
    help: bool = False
    version: bool = False


def parse_args(argv: list[str]) -> Options:
    """DuckDB-style options: one or two dashes, in any order around DATABASE and SQL."""
    options = Options()
    positional: list[str] = []
    args = iter(argv)
    for arg in args:
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name = arg.lstrip("-")
        if name in _FLAGS_WITH_VALUE:
            value = next(args, None)
            if value is None:
                raise UsageError(f"missing argument to {arg}")
            _apply_value(options, name, value)
        else:
            _apply_flag(options, name, arg)
    if len(positional) > 2:
        raise UsageError(f"too many arguments: {' '.join(positional[2:])}")
    if positional:
        options.database = positional[0]
    if len(positional) == 2:
        options.actions.append(("sql", positional[1]))
    return options


def _apply_value(options: Options, name: str, value: str) -> None:
    if name == "c":
        options.actions.append(("sql", value))
    elif name == "f":
        options.actions.append(("file", value))
    elif name == "cmd":
        options.init_commands.append(value)
    else:
        options.null_value = value


def _apply_flag(options: Options, name: str, arg: str) -> None:
    flags = {
        "bail": "bail",
        "batch": "batch",
        "readonly": "read_only",
        "no-stdin": "no_stdin",
        "help": "help",
        "h": "help",
        "version": "version",
    }
    if name in MODES:
        options.mode = name
    elif name in ("header", "noheader"):
        options.headers = name == "header"
    elif name in flags:
        setattr(options, flags[name], True)
    else:
        raise UsageError(f"unknown option: {arg}")


def banner(shell: Shell) -> str:
    """The start-up text: versions, the ``.help`` hint and, in memory, how to persist."""
    lines = [
        f"hudi-duck {_version()} (DuckDB v{duckdb.__version__})",
        'Enter ".help" for usage hints; query a Hudi table with SELECT * FROM hudi_snapshot(\'/path/to/table\');',
    ]
    if shell.database == ":memory:":
        lines += ["Connected to a transient in-memory database.", 'Use ".open FILENAME" to reopen on a persistent database.']
    return "\n".join(lines) + "\n"


def _version() -> str:
    from .. import __version__

    return __version__


def run_interactive(shell: Shell, editor: LineEditor) -> int:
    """The prompt loop: Ctrl-C clears the line (or stops a query), Ctrl-D leaves."""
    lines: list[str] = []
    while True:
        try:
            line = input(CONTINUE_PROMPT if shell.pending else MAIN_PROMPT)
        except KeyboardInterrupt:
            shell.stdout.write("\n")
            shell.discard_pending()
            lines.clear()
            continue
        except EOFError:
            shell.stdout.write("\n")
            return 0
        lines.append(line)
        try:
            shell.feed_line(line)
        except KeyboardInterrupt:  # Ctrl-C between reading the line and running it
            shell.stdout.write("\n")
            shell.discard_pending()
        finally:  # .quit too is remembered
            if not shell.pending:
                editor.remember("\n".join(lines))
                lines.clear()


def run_stream(shell: Shell, stream: TextIO) -> int:
    """Statements and dot commands piped on stdin; exit status 1 if one failed."""
    for line in stream:
        if not shell.feed_line(line.rstrip("\n").rstrip("\r")) and shell.settings.bail:
            return 1
    shell.finish()
    return 1 if shell.failed else 0


def _run_actions(shell: Shell, options: Options) -> int:
    """-c/-f/SQL arguments in order; the first failing one ends the run with status 1."""
    for kind, value in options.actions:
        ok = shell.run_text(value) if kind == "sql" else shell.run_file(value)
        if not ok:
            return 1
    return 1 if shell.failed else 0


def _configure(shell: Shell, options: Options) -> None:
    settings = shell.settings
    settings.bail = options.bail
    if options.mode is not None:
        settings.mode = options.mode
    if options.headers is not None:
        settings.headers = options.headers
    if options.null_value is not None:
        settings.null_value = options.null_value


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hudi-duck`` command and ``python -m hudi_duck``."""
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        sys.stderr.write(f"hudi-duck: Error: {exc}\nUse -help for a list of options.\n")
        return 1
    if options.help:
        sys.stdout.write(USAGE)
        return 0
    if options.version:
        sys.stdout.write(f"hudi-duck {_version()} (DuckDB v{duckdb.__version__})\n")
        return 0
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `hudi-duck ... | head` ends quietly
    interactive = not (options.batch or options.actions or options.no_stdin) and sys.stdin.isatty()
    try:
        shell = Shell(options.database, options.read_only, interactive=interactive)
    except Exception as exc:  # a database that cannot be opened: one line, no traceback
        sys.stderr.write(f"{error_text(exc)}\n")
        return 1
    _configure(shell, options)
    try:
        return _run(shell, options, interactive)
    except ExitShell as exit_request:
        return exit_request.code
    except KeyboardInterrupt:
        return 130
    finally:
        shell.close()


def _run(shell: Shell, options: Options, interactive: bool) -> int:
    for command in options.init_commands:
        if not shell.run_text(command) and options.bail:
            return 1
    if options.actions:
        return _run_actions(shell, options)
    if options.no_stdin:
        return 1 if shell.failed else 0
    if not interactive:
        return run_stream(shell, sys.stdin)
    editor = LineEditor.start()
    shell.stdout.write(banner(shell))
    try:
        return run_interactive(shell, editor)
    finally:
        editor.save()
