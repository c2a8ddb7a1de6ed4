"""The hudi-duck shell: piped input, -c/-f, output modes, errors and exit status, and a
real terminal (tmux) for the prompt, line editing, history and Ctrl-C."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hudi_duck.shell.cli import UsageError, parse_args
from hudi_duck.shell.line_editor import HISTORY_LENGTH, LineEditor
from hudi_duck.shell.statements import is_blank, split_statements

REPO = Path(__file__).resolve().parents[1]
TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
# The fixture's script inserts eight riders, deletes F and J and updates A, G and J: what a snapshot must show.
TRIPS_CSV = "rider,fare\nrider-A,0.0\nrider-C,27.7\nrider-D,33.9\nrider-E,93.5\nrider-G,0.0\nrider-I,41.06\n"
ROWS = (
    "SELECT * FROM (VALUES (1, 'a|b', NULL, 2.5::DOUBLE, [1, 2], 1.50::DECIMAL(4,2), true), "
    "(22, 'x,\"y\"', 3, NULL, NULL, NULL, NULL)) t(id, name, n, f, l, d, b) ORDER BY id"
)
LONG_QUERY = "SELECT sum(hash(i)) FROM range(10000000000) t(i);"
INTERRUPTED = "Error: INTERRUPT Error: Interrupted!"


@pytest.fixture(scope="module")
def trips(fixture_tables) -> str:
    return fixture_tables[TRIPS]


@pytest.fixture()
def env(tmp_path) -> dict[str, str]:
    """A private HOME (history file, merge cache) and a UTF-8 locale."""
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home), "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}


def run_shell(env: dict[str, str], *args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hudi_duck", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def assert_no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout


# ---- statement splitting --------------------------------------------------------------------


def test_split_statements_ignores_semicolons_in_quotes_and_comments():
    text = (
        "SELECT 'a;b', \"c;d\" -- e;f\n; SELECT /* g; /* nested; */ h; */ 1; "
        "SELECT $$i;j$$, $tag$k;$$;l$tag$, E'm\\';n', 'o'';p'; SELECT 2"
    )
    split = split_statements(text)
    assert split.statements == [
        "SELECT 'a;b', \"c;d\" -- e;f",
        "SELECT /* g; /* nested; */ h; */ 1",
        "SELECT $$i;j$$, $tag$k;$$;l$tag$, E'm\\';n', 'o'';p'",
    ]
    assert split.rest == " SELECT 2"
    assert not split.rest_is_blank


def test_split_statements_keeps_unfinished_literals_and_comments_pending():
    assert split_statements("SELECT 'a;\nb;").statements == []
    assert split_statements("SELECT 1 /* ;").rest == "SELECT 1 /* ;"
    assert split_statements("SELECT $1;").statements == ["SELECT $1"]
    assert split_statements("SELECT 1;; -- done\n").statements == ["SELECT 1"]
    assert is_blank(" -- c\n /* d */ ") and not is_blank("/* open")


# ---- piped input, -c, -f ----------------------------------------------------------------------


def test_piped_multi_line_snapshot_query(env, trips):
    """A statement over several lines, against an Apache-written merge-on-read table."""
    stdin = f".mode csv\nSELECT rider,\n       fare\nFROM hudi_snapshot('{trips}')\nORDER BY rider;\n"
    result = run_shell(env, stdin=stdin)
    assert (result.returncode, result.stdout, result.stderr) == (0, TRIPS_CSV, "")


def test_python_m_and_console_script_run_the_same_shell(env, trips):
    query = f"SELECT rider, fare FROM hudi_snapshot('{trips}') ORDER BY rider"
    script = Path(sys.executable).with_name("hudi-duck")
    assert script.is_file(), "pip install -e . installs the hudi-duck console script"
    via_script = subprocess.run([str(script), "-csv", "-c", query], capture_output=True, text=True, env=env, timeout=300)
    assert (via_script.returncode, via_script.stdout) == (0, TRIPS_CSV)
    assert run_shell(env, "-csv", "-c", query).stdout == TRIPS_CSV


EXPECTED_MODES = {
    "duckbox": """\
┌───────┬─────────┬───────┬────────┬─────────┬──────────────┬─────────┐
│  id   │  name   │   n   │   f    │    l    │      d       │    b    │
│ int32 │ varchar │ int32 │ double │ int32[] │ decimal(4,2) │ boolean │
├───────┼─────────┼───────┼────────┼─────────┼──────────────┼─────────┤
│     1 │ a|b     │  NULL │    2.5 │ [1, 2]  │         1.50 │ true    │
│    22 │ x,"y"   │     3 │   NULL │ NULL    │         NULL │ NULL    │
└───────┴─────────┴───────┴────────┴─────────┴──────────────┴─────────┘
""",
    "box": """\
┌────┬───────┬──────┬──────┬────────┬──────┬──────┐
│ id │ name  │  n   │  f   │   l    │  d   │  b   │
├────┼───────┼──────┼──────┼────────┼──────┼──────┤
│ 1  │ a|b   │ NULL │ 2.5  │ [1, 2] │ 1.50 │ true │
│ 22 │ x,"y" │ 3    │ NULL │ NULL   │ NULL │ NULL │
└────┴───────┴──────┴──────┴────────┴──────┴──────┘
""",
    "csv": 'id,name,n,f,l,d,b\n1,a|b,NULL,2.5,"[1, 2]",1.50,true\n22,"x,""y""",3,NULL,NULL,NULL,NULL\n',
    "json": (
        '[{"id":1,"name":"a|b","n":null,"f":2.5,"l":[1,2],"d":"1.50","b":true},\n'
        '{"id":22,"name":"x,\\"y\\"","n":3,"f":null,"l":null,"d":null,"b":null}]\n'
    ),
    "jsonlines": (
        '{"id":1,"name":"a|b","n":null,"f":2.5,"l":[1,2],"d":"1.50","b":true}\n'
        '{"id":22,"name":"x,\\"y\\"","n":3,"f":null,"l":null,"d":null,"b":null}\n'
    ),
    "markdown": """\
| id | name  |  n   |  f   |   l    |  d   |  b   |
|---:|-------|-----:|-----:|--------|-----:|------|
| 1  | a\\|b  | NULL | 2.5  | [1, 2] | 1.50 | true |
| 22 | x,"y" | 3    | NULL | NULL   | NULL | NULL |
""",
    "line": """\
   id = 1
 name = a|b
    n = NULL
    f = 2.5
    l = [1, 2]
    d = 1.50
    b = true

   id = 22
 name = x,"y"
    n = 3
    f = NULL
    l = NULL
    d = NULL
    b = NULL
""",
    "list": 'id|name|n|f|l|d|b\n1|a|b|NULL|2.5|[1, 2]|1.50|true\n22|x,"y"|3|NULL|NULL|NULL|NULL\n',
    "tabs": 'id\tname\tn\tf\tl\td\tb\n1\ta|b\tNULL\t2.5\t[1, 2]\t1.50\ttrue\n22\tx,"y"\t3\tNULL\tNULL\tNULL\tNULL\n',
    "table": """\
+----+-------+------+------+--------+------+------+
| id | name  |  n   |  f   |   l    |  d   |  b   |
+----+-------+------+------+--------+------+------+
| 1  | a|b   | NULL | 2.5  | [1, 2] | 1.50 | true |
| 22 | x,"y" | 3    | NULL | NULL   | NULL | NULL |
+----+-------+------+------+--------+------+------+
""",
    "column": """\
id  name   n     f     l       d     b   
--  -----  ----  ----  ------  ----  ----
1   a|b    NULL  2.5   [1, 2]  1.50  true
22  x,"y"  3     NULL  NULL    NULL  NULL
""",
}


def test_output_modes_exactly(env, tmp_path):
    """Every mode in one session: .output sends each to its own file (duckbox goes to stdout)."""
    script = "".join(f".output {tmp_path / mode}.txt\n.mode {mode}\n{ROWS};\n" for mode in EXPECTED_MODES)
    result = run_shell(env, stdin=script + f".output\n.mode duckbox\n{ROWS};\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, EXPECTED_MODES["duckbox"], "")
    for mode, expected in EXPECTED_MODES.items():
        assert (tmp_path / f"{mode}.txt").read_text() == expected, mode


def test_mode_flags_and_options_parse_as_in_duckdb():
    for mode in EXPECTED_MODES:
        assert parse_args([f"-{mode}"]).mode == mode and parse_args([f"--{mode}"]).mode == mode
    options = parse_args(["db.duckdb", "-bail", "-c", "SELECT 1", "-f", "x.sql", "-noheader", "-nullvalue", "-", "-readonly"])
    assert (options.database, options.actions) == ("db.duckdb", [("sql", "SELECT 1"), ("file", "x.sql")])
    assert (options.bail, options.headers, options.null_value, options.read_only) == (True, False, "-", True)
    with pytest.raises(UsageError, match="missing argument to -c"):
        parse_args(["-c"])


def test_json_mode_is_an_array_of_objects_and_csv_headers_switch_off(env, trips):
    result = run_shell(
        env,
        stdin=f".mode json\nSELECT rider, fare FROM hudi_snapshot('{trips}') WHERE fare > 40 ORDER BY rider;\n"
        ".mode csv\n.headers off\nSELECT 1 AS a;\n.nullvalue ''\nSELECT NULL AS a;\n",
    )
    assert result.stdout == '[{"rider":"rider-E","fare":93.5},\n{"rider":"rider-I","fare":41.06}]\n1\n\n'


def test_several_statements_on_a_line_and_statements_without_rows(env):
    stdin = (
        "CREATE TABLE t(a INTEGER, s VARCHAR); INSERT INTO t VALUES (1, 'x;y'), (2, 'z'); SET threads = 1;\n"
        "UPDATE t SET a = a + 10 WHERE a = 2; BEGIN; COMMIT;\n"
        ".mode csv\n"
        "SELECT a, s FROM t ORDER BY a; SELECT count(*) AS n FROM t; -- trailing; comment\n"
        "INSERT INTO t VALUES (3, 'w') RETURNING a;\n"
    )
    result = run_shell(env, stdin=stdin)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "a,s\n1,x;y\n12,z\nn\n2\na\n3\n"


def test_error_prints_one_line_and_the_shell_goes_on(env, trips):
    stdin = (
        ".mode csv\nSELECT 1 AS a;\nSELECT nope FROM hudi_snapshot('{0}');\n"
        "SELECT * FROM hudi_snapshot('{0}/missing');\nSELECT 2 AS b;\n".format(trips)
    )
    result = run_shell(env, stdin=stdin)
    assert result.returncode == 1  # as the DuckDB CLI: a failed statement fails the run
    assert result.stdout == "a\n1\nb\n2\n"
    errors = result.stderr.splitlines()
    assert len(errors) == 2
    assert errors[0].startswith('Error: Binder Error: Referenced column "nope" not found')
    assert errors[1].startswith("Error: TableNotFoundError: ") and f"{trips}/missing" in errors[1]
    assert_no_traceback(result)


def test_syntax_error_drops_duckdb_query_context(env):
    result = run_shell(env, "-c", "SELEC 1")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == 'Error: Parser Error: syntax error at or near "SELEC"\n'


def test_bail_stops_at_the_first_error(env):
    stdin = ".mode csv\nSELECT 1 AS a;\nSELECT x;\nSELECT 2 AS b;\n"
    for args, script in ((("-bail",), stdin), ((), ".bail on\n" + stdin)):
        result = run_shell(env, *args, stdin=script)
        assert (result.returncode, result.stdout, len(result.stderr.splitlines())) == (1, "a\n1\n", 1)


def test_c_f_and_sql_arguments_run_in_order(env, tmp_path):
    script = tmp_path / "script.sql"
    script.write_text("SELECT 'from file'\n  AS s;\nSELECT 3 AS\n  c\n")  # the last statement lacks its ';'
    result = run_shell(env, "-csv", "-c", "SELECT 1 AS a", "-f", str(script), "-c", ".mode line", "-c", "SELECT 2 AS b")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "a\n1\ns\nfrom file\nc\n3\n    b = 2\n"
    database = tmp_path / "db.duckdb"
    positional = run_shell(env, "-json", str(database), "CREATE TABLE t AS SELECT 5 AS x; SELECT * FROM t")
    assert positional.stdout == '[{"x":5}]\n'
    assert run_shell(env, "-csv", "-c", "SELECT 1", "-c", "SELECT 2 AS never", "-c", "SELEC").returncode == 1
    failing_first = run_shell(env, "-csv", "-c", "SELEC", "-c", "SELECT 2 AS never")
    assert (failing_first.returncode, failing_first.stdout) == (1, "")


def test_read_runs_a_file_and_reports_a_missing_one(env, tmp_path, trips):
    (tmp_path / "inner.sql").write_text(f".mode csv\nSELECT rider, fare\nFROM hudi_snapshot('{trips}')\nORDER BY rider;\n")
    (tmp_path / "outer.sql").write_text(".read inner.sql\nSELECT 'after' AS s;\n")
    result = run_shell(env, stdin=".read outer.sql\n.read nowhere.sql\nSELECT 1 AS one;\n", cwd=tmp_path)
    assert result.stdout == TRIPS_CSV + "s\nafter\none\n1\n"
    assert result.stderr == 'Error: cannot read "nowhere.sql": No such file or directory\n'
    assert result.returncode == 1


def test_dot_commands(env, tmp_path):
    out = tmp_path / "out.csv"
    stdin = (
        "CREATE TABLE trips(a INTEGER); CREATE VIEW trip_view AS SELECT 1 AS b;\n"
        ".tables\n.schema trip_view\n.mode\n.mode csv\n.mode\n"
        f".output {out}\nSELECT 7 AS seven;\n.output\n.foo bar\n.mode nope\n.timer on\nSELECT 8 AS eight;\n"
    )
    result = run_shell(env, stdin=stdin)
    lines = result.stdout.splitlines()
    assert lines[:5] == [
        "trip_view  trips",
        "CREATE VIEW trip_view AS SELECT 1 AS b;",
        "current output mode: duckbox",
        "current output mode: csv",
        "eight",
    ]
    assert lines[5] == "8" and re.fullmatch(r"Run Time \(s\): real \d+\.\d{3} user \d+\.\d+ sys \d+\.\d+", lines[6])
    assert out.read_text() == "seven\n7\n"
    assert result.stderr.splitlines() == [
        'Error: unknown command or invalid arguments: "foo". Enter ".help" for help',
        'Error: unknown mode "nope"; mode should be one of: '
        "duckbox, box, column, csv, json, jsonlines, line, list, markdown, table, tabs",
    ]


def test_help_lists_every_registered_hudi_function(env):
    """The list comes from the connection, so functions added to the macros appear without shell changes."""
    macros = [
        name
        for sql_file in sorted((REPO / "sql").glob("*.sql"))
        for name in re.findall(r"CREATE OR REPLACE (?:TEMP )?MACRO (hudi_\w+)\(", sql_file.read_text())
    ]
    result = run_shell(env, "-c", ".help")
    assert result.returncode == 0
    assert ".mode MODE" in result.stdout and ".read FILE" in result.stdout and ".quit" in result.stdout
    assert macros and all(f"  {name}(path" in result.stdout for name in macros)
    assert "hudi_duck_plan" not in result.stdout


def test_open_persists_and_readonly_refuses_writes(env, tmp_path):
    database = tmp_path / "saved.duckdb"
    created = run_shell(
        env,
        stdin=f".open {database}\nCREATE TABLE kept AS SELECT 42 AS answer;\n.open {database}\n.mode csv\n"
        "SELECT answer, current_database() AS db FROM kept;\n.open /nonexistent/x.duckdb\nSELECT 1 AS still_here;\n",
    )
    assert created.stdout == "answer,db\n42,saved\nstill_here\n1\n"
    assert created.stderr.startswith('Error: IO Error: Cannot open file "/nonexistent/x.duckdb"')
    reopened = run_shell(env, "-csv", "-readonly", str(database), "SELECT answer FROM kept")
    assert reopened.stdout == "answer\n42\n"
    refused = run_shell(env, "-readonly", str(database), "INSERT INTO kept VALUES (1)")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: Invalid Input Error: ")
    assert "read-only" in refused.stderr and len(refused.stderr.splitlines()) == 1


def test_cmd_runs_before_stdin_and_no_stdin_skips_it(env):
    assert run_shell(env, "-cmd", ".mode csv", stdin="SELECT 1 AS a;\n").stdout == "a\n1\n"
    skipped = run_shell(env, "-cmd", ".mode csv", "-no-stdin", stdin="SELECT 1 AS a;\n")
    assert (skipped.returncode, skipped.stdout, skipped.stderr) == (0, "", "")


def test_exit_codes_and_bad_options(env):
    assert run_shell(env, "-c", ".exit 3").returncode == 3
    assert run_shell(env, stdin="SELECT 1;\n.quit\nSELEC;\n").returncode == 0
    bad = run_shell(env, "-nope")
    assert (bad.returncode, bad.stderr) == (1, "hudi-duck: Error: unknown option: -nope\nUse -help for a list of options.\n")
    assert "-c COMMAND" in run_shell(env, "-help").stdout
    assert re.fullmatch(r"hudi-duck \S+ \(DuckDB v\S+\)\n", run_shell(env, "-version").stdout)


def test_explain_prints_the_plan_text(env):
    result = run_shell(env, "-c", "EXPLAIN SELECT 42")
    assert result.returncode == 0 and "explain_value" not in result.stdout
    assert "PROJECTION" in result.stdout.upper()


# ---- a real terminal --------------------------------------------------------------------------


class Terminal:
    """A detached tmux session on a private socket, read with capture-pane."""

    def __init__(self, name: str, command: list[str], env: dict[str, str]):
        self.socket = f"hudi-duck-test-{os.getpid()}-{name}"
        self.name = name
        self.env = env
        # bash waits for the shell and prints its exit status into the pane (tmux itself may miss a fast exit);
        # `trap : INT` keeps bash alive on Ctrl-C without making the shell ignore SIGINT
        script = f'trap : INT; {shlex.join(command)}; echo "[exit status $?]"; exec sleep 3600'
        self.tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "50", shlex.join(["bash", "-c", script]))

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["tmux", "-u", "-L", self.socket, *args], capture_output=True, text=True, env=self.env, check=check
        )

    def type_line(self, text: str) -> None:
        """Literal text then Enter (a ';' ending a tmux argument must be escaped)."""
        self.tmux("send-keys", "-t", self.name, "-l", text[:-1] + "\\;" if text.endswith(";") else text)
        self.keys("Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-t", self.name, "-S", "-1000", check=False).stdout

    def wait_for(self, predicate, what: str, timeout: float = 120.0) -> str:
        """Poll the pane until ``predicate(screen)``; fail with the pane's text after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"terminal never showed {what}; it shows:\n{screen}")
            time.sleep(0.1)

    def wait_text(self, text: str, count: int = 1) -> str:
        return self.wait_for(lambda screen: screen.count(text) >= count, repr(text))

    def at_prompt(self, screen: str) -> bool:
        lines = [line for line in screen.splitlines() if line.strip()]
        return bool(lines) and lines[-1].rstrip() == "D"

    def exit_status(self) -> int | None:
        """The shell's exit status once it has exited, else None."""
        shown = re.search(r"\[exit status (\d+)\]", self.screen())
        return int(shown.group(1)) if shown else None

    def close(self) -> None:
        socket = self.tmux("display-message", "-p", "#{socket_path}", check=False).stdout.strip()
        self.tmux("kill-server", check=False)
        if socket:
            Path(socket).unlink(missing_ok=True)


@pytest.fixture()
def terminal(env):
    sessions: list[Terminal] = []

    def start(name: str, python_args: tuple[str, ...] = ("-m", "hudi_duck")) -> Terminal:
        command = ["env", f"HOME={env['HOME']}", "LC_ALL=C.UTF-8", sys.executable, *python_args]
        session = Terminal(name, command, env)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


def test_interactive_session_in_a_terminal(terminal, env, trips):
    tty = terminal("main")
    tty.wait_text('Enter ".help" for usage hints')
    tty.wait_for(tty.at_prompt, "the prompt")

    # a multi-line statement over a Hudi table: continuation prompt, then DuckDB's box
    tty.type_line("SELECT rider, fare")
    tty.type_line(f"FROM hudi_snapshot('{trips}')")
    tty.type_line("ORDER BY rider;")
    screen = tty.wait_text("│ rider-I │  41.06 │")
    assert f"· FROM hudi_snapshot('{trips}')" in screen and "· ORDER BY rider;" in screen
    assert "rider-F" not in screen and "rider-J" not in screen  # deleted by the table's later commits

    # an error is one line and the shell goes on
    tty.type_line("SELECT nope;")
    tty.wait_text('Error: Binder Error: Referenced column "nope"')

    # .mode, then Up recalls the whole multi-line statement from history
    tty.type_line(".mode csv")
    tty.wait_for(tty.at_prompt, "the prompt after .mode")
    tty.keys("Up", "Up", "Up")
    tty.wait_text("D SELECT rider, fare")
    tty.keys("Enter")
    tty.wait_text("rider-I,41.06")

    # Ctrl-C stops a long query, not the shell; the next query works
    interrupted = 0
    for attempt in range(1, 4):
        tty.type_line(LONG_QUERY)
        tty.wait_text(f"D {LONG_QUERY}", count=attempt)
        tty.keys("C-c")
        screen = tty.wait_for(lambda s: tty.at_prompt(s) and not s.rstrip().endswith(LONG_QUERY), "the prompt back")
        interrupted = screen.count(INTERRUPTED)
        if interrupted:
            break  # else Ctrl-C came before the statement started: it cleared the line; type it again
    assert interrupted == 1
    tty.type_line("SELECT 42 AS answer;")
    tty.wait_text("answer\n42")

    # Ctrl-C at the prompt drops the unfinished statement and the line being typed
    tty.type_line("SELECT 1,")
    tty.wait_for(lambda s: s.rstrip().endswith("D SELECT 1,\n·"), "the continuation prompt")
    tty.keys("-l", "2 +")
    tty.wait_for(lambda s: s.rstrip().endswith("· 2 +"), "the typed line")
    tty.keys("C-c")
    tty.wait_for(tty.at_prompt, "the prompt after Ctrl-C")
    tty.type_line("SELECT 7 AS seven;")
    screen = tty.wait_text("seven\n7")
    assert "Error" not in screen.split("SELECT 7 AS seven;")[1]

    tty.type_line(".quit")
    tty.wait_for(lambda _: tty.exit_status() is not None, "the shell exiting")
    assert tty.exit_status() == 0
    history = (Path(env["HOME"]) / ".hudi_duck_history").read_text().splitlines()
    assert f"SELECT rider, fare\\nFROM hudi_snapshot('{trips}')\\nORDER BY rider;" in history
    assert history[-1] == ".quit" and "SELECT 1," not in history


def test_prompt_works_without_readline(terminal, env, trips):
    blocked = "import sys; sys.modules['readline'] = None; from hudi_duck.shell import main; sys.exit(main())"
    tty = terminal("plain", ("-c", blocked))
    tty.wait_for(tty.at_prompt, "the prompt")
    tty.type_line(".mode csv")
    tty.type_line(f"SELECT rider FROM hudi_snapshot('{trips}')")
    tty.type_line("WHERE fare > 90;")
    tty.wait_text("rider\nrider-E")
    tty.keys("C-d")
    tty.wait_for(lambda _: tty.exit_status() is not None, "the shell exiting")
    assert tty.exit_status() == 0
    assert not (Path(env["HOME"]) / ".hudi_duck_history").exists()


def test_history_file_keeps_the_latest_whole_statements(tmp_path):
    import readline

    readline.clear_history()
    path = tmp_path / "history"
    path.write_text("SELECT 'old',\\n  1;\n")  # a stored two-line statement
    editor = LineEditor.start(path)
    try:
        assert readline.get_history_item(1) == "SELECT 'old',\n  1;"
        for i in range(HISTORY_LENGTH + 5):
            editor.remember(f"SELECT {i};")
        editor.remember(f"SELECT {HISTORY_LENGTH + 4};")  # the same as the one before: kept once
        editor.remember("SELECT 'a\\b',\n  2;")
        editor.save()
    finally:
        readline.clear_history()
    lines = path.read_text().splitlines()
    assert len(lines) == HISTORY_LENGTH
    assert lines[-2:] == [f"SELECT {HISTORY_LENGTH + 4};", "SELECT 'a\\\\b',\\n  2;"]


def test_ctrl_d_at_the_prompt_exits(terminal):
    tty = terminal("eof")
    tty.wait_for(tty.at_prompt, "the prompt")
    tty.keys("C-d")
    tty.wait_for(lambda _: tty.exit_status() is not None, "the shell exiting")
    assert tty.exit_status() == 0


def test_tmux_is_installed():
    """The terminal tests drive a real terminal through tmux."""
    assert shutil.which("tmux"), "install tmux to run the terminal tests"
