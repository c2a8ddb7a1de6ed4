"""The shell's state and how it runs input: SQL statements, dot commands, errors, Ctrl-C.

Every statement runs on a worker thread while the main thread waits. Python
delivers SIGINT to the main thread only, so Ctrl-C there can call DuckDB's
``connection.interrupt()`` and stop the query, not the shell.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import duckdb

from ..core.errors import HudiError
from ..duck.sql import quote_ident
from .commands import COMMANDS, CommandError, ExitShell
from .render import Interrupted, OutputOptions, render
from .statements import is_blank, split_statements

_UDF_WRAPPER = re.compile(r"Python exception occurred while executing the UDF: (.*)", re.S)
_QUERY_CONTEXT = re.compile(r"\n\s*\n\s*LINE \d+:")
_DUCKDB_ERROR = re.compile(r"[A-Z][A-Za-z]*( [A-Z][A-Za-z]*)* Error: ")
MAX_READ_DEPTH = 25


@dataclass
class Settings:
    """What dot commands and command-line flags change."""

    mode: str = "duckbox"
    headers: bool = True
    null_value: str = "NULL"
    max_rows: int = 40
    max_width: int = 0  # 0: the terminal's width
    timer: bool = False
    bail: bool = False


def open_database(database: str, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every ``hudi_*`` function the package registers.

    The functions are registered on the in-memory catalog; a database file is
    attached and made current, so opening it writes nothing into it and
    ``read_only`` works.
    """
    from .. import connect

    con = connect()
    if database in ("", ":memory:"):
        return con
    try:
        taken = {row[0] for row in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
        alias = Path(database).stem or "db"
        while alias in taken:  # a file named memory.duckdb, temp.duckdb ...
            alias += "_db"
        con.execute(f"ATTACH {_sql_string(database)} AS {quote_ident(alias)}{' (READ_ONLY)' if read_only else ''}")
        con.execute(f"USE {quote_ident(alias)}")
    except BaseException:
        con.close()
        raise
    return con


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def error_text(exc: BaseException) -> str:
    """One line: DuckDB's own error text, or the hudi-duck error a planner raised."""
    text = str(exc).strip()
    wrapped = _UDF_WRAPPER.search(text)
    if wrapped:
        text = wrapped.group(1)
    text = _QUERY_CONTEXT.split(text, maxsplit=1)[0]
    text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    known = isinstance(exc, (duckdb.Error, HudiError, CommandError, Interrupted)) or wrapped
    if not known and not _DUCKDB_ERROR.match(text):  # DuckDB's text can arrive re-raised by Arrow
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"Error: {text}"


class Shell:
    """One connection plus the settings and input state of a hudi-duck session."""

    def __init__(
        self,
        database: str = ":memory:",
        read_only: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        interactive: bool = False,
    ):
        self.database = database
        self.read_only = read_only
        self.con = open_database(database, read_only)
        self.stdout = stdout or sys.stdout
        self.err = stderr or sys.stderr
        self.out: TextIO = self.stdout
        self.output_path: str | None = None
        self.settings = Settings()
        self.interactive = interactive
        self.failed = False
        self.pending = ""
        self._cancel = threading.Event()
        self._read_depth = 0

    # ---- input -------------------------------------------------------------------------------

    def feed_line(self, line: str) -> bool:
        """One line of input: a dot command, or SQL run once its statements are complete.

        Returns False when something failed. After an error the rest of the line is
        skipped, as in the DuckDB CLI.
        """
        if not self.pending and line.lstrip().startswith("."):
            return self.run_command(line.strip())
        split = split_statements(self.pending + line + "\n")
        self.pending = "" if split.rest_is_blank else split.rest
        return self._run_all(split.statements)

    def finish(self) -> bool:
        """End of input: run what is left unterminated (DuckDB runs it too)."""
        rest, self.pending = self.pending, ""
        if is_blank(rest):
            return True
        return self.run_statement(rest.strip())

    def discard_pending(self) -> None:
        self.pending = ""

    def run_text(self, text: str) -> bool:
        """``-c`` text: one dot command, or SQL statements (the last may lack its ``;``)."""
        if text.lstrip().startswith("."):
            return self.run_command(text.strip())
        split = split_statements(text)
        statements = split.statements if split.rest_is_blank else [*split.statements, split.rest.strip()]
        return self._run_all(statements)

    def run_script(self, text: str) -> bool:
        """Lines of a file (``-f``, ``.read``): with ``bail`` on, stop at the first error."""
        saved, self.pending = self.pending, ""
        ok = True
        try:
            for line in text.splitlines():
                if not self.feed_line(line):
                    ok = False
                    if self.settings.bail:
                        return False
            return self.finish() and ok
        finally:
            self.pending = saved

    def run_file(self, path: str) -> bool:
        """Run a script file; a file that cannot be read is one error line."""
        if self._read_depth >= MAX_READ_DEPTH:
            self.report(f"Error: .read nested more than {MAX_READ_DEPTH} files deep at {path!r}")
            return False
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            self.report(f'Error: cannot read "{path}": {getattr(exc, "strerror", None) or exc}')
            return False
        self._read_depth += 1
        try:
            return self.run_script(text)
        finally:
            self._read_depth -= 1

    def _run_all(self, statements: list[str]) -> bool:
        for statement in statements:
            if not self.run_statement(statement):
                return False
        return True

    # ---- statements ----------------------------------------------------------------------------

    def run_statement(self, sql: str) -> bool:
        """Run one statement and print its rows (statements without rows print nothing)."""
        started, cpu = time.perf_counter(), os.times()
        try:
            self.in_worker(lambda: self._execute(sql))
            return True
        except Exception as exc:  # every failure is one line; the shell goes on
            self.report(error_text(Interrupted() if self._cancel.is_set() else exc))
            return False
        finally:
            if self.settings.timer:
                self._print_time(started, cpu)
            self.out.flush()

    def _execute(self, sql: str) -> None:
        relation = self.con.sql(sql)
        if relation is None or not _returns_rows(relation):
            return
        if self._cancel.is_set():
            raise Interrupted()
        render(relation, self.output_options(), self.out, self._cancel.is_set)

    def fetch(self, sql: str, parameters: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows of a query for a dot command (interruptible like any statement)."""
        rows: list[tuple[Any, ...]] = []
        self.in_worker(lambda: rows.extend(self.con.execute(sql, parameters or []).fetchall()))
        return rows

    def in_worker(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a worker thread; Ctrl-C meanwhile interrupts DuckDB, not the shell."""
        failure: list[BaseException] = []
        done = threading.Event()

        def target() -> None:
            try:
                work()
            except BaseException as exc:  # handed to the main thread
                failure.append(exc)
            finally:
                done.set()

        self._cancel.clear()
        with self._interrupt_on_ctrl_c():
            threading.Thread(target=target, name="hudi-duck-statement", daemon=True).start()
            while not done.wait(0.1):
                if self._cancel.is_set():
                    # again and again: an interrupt that came before DuckDB started the query is lost
                    self.con.interrupt()
        if failure:
            raise failure[0]

    @contextlib.contextmanager
    def _interrupt_on_ctrl_c(self) -> Iterator[None]:
        """While a statement runs, SIGINT calls ``connection.interrupt()``.

        A handler, not KeyboardInterrupt: an exception raised in the waiting main
        thread would leave the worker running unnoticed.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def interrupt(signum: int, frame: Any) -> None:
            self._cancel.set()
            self.con.interrupt()
            if self.interactive:
                self.err.write("\n")  # past the terminal's ^C

        previous = signal.signal(signal.SIGINT, interrupt)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def output_options(self) -> OutputOptions:
        """DuckDB CLI limits: to a file, every row at full width; to a terminal, its width."""
        settings = self.settings
        to_file = self.output_path is not None
        width: int | None = settings.max_width or None
        if width is None and not to_file and _is_terminal(self.stdout):
            width = shutil.get_terminal_size((80, 24)).columns
        max_rows = None if to_file or settings.max_rows <= 0 else settings.max_rows
        return OutputOptions(settings.mode, settings.headers, settings.null_value, max_rows, width)

    def _print_time(self, started: float, cpu: os.times_result) -> None:
        now = os.times()
        self.out.write(
            f"Run Time (s): real {time.perf_counter() - started:.3f} "
            f"user {now.user - cpu.user:f} sys {now.system - cpu.system:f}\n"
        )

    # ---- dot commands ------------------------------------------------------------------------

    def run_command(self, line: str) -> bool:
        """A dot command line, e.g. ``.mode csv``."""
        try:
            words = _split_words(line)
        except ValueError:
            self.report(f"Error: unbalanced quotes in {line}")
            return False
        name = words[0][1:]
        command = COMMANDS.get(name)
        if command is None:
            self.report(f'Error: unknown command or invalid arguments: "{name}". Enter ".help" for help')
            return False
        try:
            return command.run(self, words[1:]) is not False
        except ExitShell:
            raise
        except Exception as exc:  # one line, as for statements
            self.report(error_text(exc))
            return False
        finally:
            self.out.flush()

    # ---- output and connection ---------------------------------------------------------------

    def write(self, text: str) -> None:
        self.out.write(text)

    def report(self, message: str) -> None:
        """An error line on stderr, after the output printed so far."""
        self.failed = True
        self.out.flush()
        self.err.write(message + "\n")
        self.err.flush()

    def set_output(self, path: str | None) -> None:
        """Send results to ``path`` (None: back to stdout)."""
        target: TextIO = self.stdout
        if path is not None:
            try:
                target = open(path, "w", encoding="utf-8")
            except OSError as exc:
                raise CommandError(f'cannot open "{path}" for writing: {exc.strerror or exc}') from exc
        self._close_output()
        self.out, self.output_path = target, path

    def _close_output(self) -> None:
        if self.out is not self.stdout:
            self.out.close()
        self.out, self.output_path = self.stdout, None

    def reopen(self, database: str, read_only: bool = False) -> None:
        """``.open``: close this database, open another; if that fails, go on in memory."""
        self.con.close()
        try:
            self.con = open_database(database, read_only)
        except BaseException:
            self.con, database, read_only = open_database(":memory:"), ":memory:", False
            raise
        finally:
            self.database, self.read_only = database, read_only

    def close(self) -> None:
        self._close_output()
        self.con.close()


def _returns_rows(relation: Any) -> bool:
    """Whether the engine reported rows for the statement (not a count or success flag).

    DuckDB 2's relation keeps the engine's own report of what the statement
    returned; DuckDB 1 returns no relation at all for statements without rows.
    """
    return getattr(relation, "_return_type", "query_result") == "query_result"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _split_words(line: str) -> list[str]:
    """Dot command words: whitespace-separated, quotes group, backslashes are literal."""
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace_split = True
    lexer.escape = ""
    lexer.commenters = ""
    return list(lexer)
