"""Read options a new user reaches for: Hudi's time idioms, ``=>`` parameters,
corrupt log blocks (warned about, or refused with ``strict``), merge progress."""

from __future__ import annotations

import logging
import os
import pty
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_duck
from hudi_duck.api import arrow_table
from hudi_duck.core.services import archival
from hudi_duck.core.errors import CorruptFileError, TimelineError
from hudi_duck.core.file_group.reader import SliceLogMerge
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, encode_block
from hudi_duck.core.file_group.log_scanner import SkippedBlock
from hudi_duck.core.table.table import HudiTable
from hudi_duck.duck import lazy, progress
from oracle import diff_rows, hudi_rs_read

TRIPS_V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
TRIPS_V8 = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
MULTI_COMMIT = [TRIPS_V8, "sample_table/mor/avro/v9_txns_simple_meta", "sample_table/cow/v9_txns_simple_meta"]
#: the v6 trips table's update, written into its only log file (whose name carries the base instant)
UPDATE_INSTANT = "20250331030645735"
BASE_INSTANT = "20250331030642808"
#: a v8 trips instant at which three file slices have logs to merge
THREE_MERGES_AS_OF = "20251220210128625"
WARNING_TEXT = "corrupt log block"


def rows(con, sql: str):
    return arrow_table(con.sql(sql))


def error_of(con, sql: str) -> str:
    with pytest.raises(Exception) as info:
        rows(con, sql)
    return str(info.value)


def incremental(con, path: str, begin: str | None = None, end: str | None = None):
    args = [f"'{path}'"]
    if begin is not None:
        args.append(f"begin_time := '{begin}'")
    if end is not None:
        args.append(f"end_time := '{end}'")
    return rows(con, f"SELECT * FROM hudi_incremental({', '.join(args)})")


# -- begin_time / end_time / as_of idioms -------------------------------------------------------------------------


@pytest.mark.parametrize("fid", MULTI_COMMIT)
@pytest.mark.parametrize("idiom", ["000", "0", "earliest", "EARLIEST", "Earliest"])
def test_begin_time_idioms_read_from_the_first_commit(con, fixture_tables, fid, idiom):
    path = fixture_tables[fid]
    everything = incremental(con, path)
    ours = incremental(con, path, begin=idiom)
    assert ours.num_rows > 0
    assert not diff_rows(ours, everything)
    assert not diff_rows(ours, hudi_rs_read(path, begin="000", incremental=True))
    assert not diff_rows(hudi_duck.read_incremental(path, begin_time=idiom).read_all(), everything)
    first = HudiTable(path).timeline.completed_writes[0].requested_time
    assert first in set(ours.column("_hoodie_commit_time").to_pylist())


@pytest.mark.parametrize("fid", [TRIPS_V6, "sample_table/cow/v6_simplekeygen_nonhivestyle"])
def test_earliest_begin_includes_archived_commits(con, fresh_fixture, fid):
    path = fresh_fixture(fid)
    before = incremental(con, path)
    first = HudiTable(path).timeline.completed_writes[0].requested_time
    assert archival.archive(HudiTable(path), archival.ArchivalSettings(min_commits=1, max_commits=1)) == [first]
    assert first not in [i.requested_time for i in HudiTable(path).timeline.completed_writes]
    for idiom in ("000", "0", "earliest"):
        ours = incremental(con, path, begin=idiom)
        assert first in set(ours.column("_hoodie_commit_time").to_pylist()), idiom
        assert not diff_rows(ours, before), idiom
        assert not diff_rows(hudi_duck.read_incremental(path, begin_time=idiom).read_all(), before), idiom


@pytest.mark.parametrize("end", ["000", "0"])
def test_end_time_000_is_an_empty_window(con, fixture_tables, end):
    """Hudi compares instant times as strings: no commit is at or before '000'."""
    path = fixture_tables[TRIPS_V8]
    ours = incremental(con, path, begin="000", end=end)
    assert ours.num_rows == 0 and ours.column_names == incremental(con, path).column_names
    assert incremental(con, path, end=end).num_rows == 0
    assert hudi_rs_read(path, begin="000", end=end, incremental=True).num_rows == 0


@pytest.mark.parametrize(
    "function, parameter, value",
    [
        ("hudi_snapshot", "as_of", "000"),
        ("hudi_snapshot", "as_of", "0"),
        ("hudi_snapshot", "as_of", "earliest"),
        ("hudi_read_optimized", "as_of", "earliest"),
        ("hudi_file_slices", "as_of", "000"),
        ("hudi_incremental", "end_time", "earliest"),
    ],
)
def test_begin_idioms_elsewhere_are_refused_with_a_hint(con, fixture_tables, function, parameter, value):
    """Hudi's time travel accepts instant times only; 'earliest' is only a begin time."""
    path = fixture_tables[TRIPS_V8]
    message = error_of(con, f"SELECT * FROM {function}('{path}', {parameter} := '{value}')")
    assert "TimelineError" in message and path in message and f"{parameter} '{value}'" in message
    assert "yyyyMMddHHmmssSSS" in message and "only as begin_time" in message


@pytest.mark.parametrize(
    "call, parameter",
    [
        ("hudi_incremental('/t', begin_time := 'yesterday')", "begin_time"),
        ("hudi_incremental('/t', end_time => 'yesterday')", "end_time"),
        ("hudi_snapshot('/t', as_of := 'yesterday')", "as_of"),
        ("hudi_read_optimized('/t', as_of => 'yesterday')", "as_of"),
    ],
)
def test_bad_times_name_the_table_the_parameter_and_the_value(con, call, parameter):
    message = error_of(con, f"SELECT * FROM {call}")
    assert "TimelineError" in message and "Hudi table /t:" in message
    assert f"{parameter} 'yesterday' is not an instant time" in message
    assert "yyyyMMddHHmmssSSS" in message and "'yyyy-MM-dd HH:mm:ss[.SSS]'" in message
    assert ("'000' / 'earliest'" in message) == (parameter == "begin_time")


def test_python_api_takes_the_idioms_and_names_bad_values(fixture_tables):
    path = fixture_tables[TRIPS_V8]
    with pytest.raises(TimelineError, match=r"begin_time 'yesterday' is not an instant time") as info:
        hudi_duck.read_incremental(path, begin_time="yesterday")
    assert path in str(info.value)
    with pytest.raises(TimelineError, match=r"as_of 'earliest' is not an instant time"):
        hudi_duck.read_snapshot(path, as_of="earliest")
    assert hudi_duck.open_table(path).incremental(begin_time="000", end_time="000").read_all().num_rows == 0


# -- `=>` as well as `:=` -----------------------------------------------------------------------------------------

#: every named parameter of every table function, with a value that changes the result where one can
NAMED_PARAMETERS = [
    ("hudi_snapshot", "as_of", "'20251220210108078'"),
    ("hudi_snapshot", "extract_partition_values_from_path", "false"),
    ("hudi_snapshot", "strict", "true"),
    ("hudi_read_optimized", "as_of", "'20251220210108078'"),
    ("hudi_read_optimized", "extract_partition_values_from_path", "false"),
    ("hudi_incremental", "begin_time", "'20251220210125441'"),
    ("hudi_incremental", "end_time", "'20251220210108078'"),
    ("hudi_incremental", "extract_partition_values_from_path", "false"),
    ("hudi_incremental", "strict", "true"),
    ("hudi_file_slices", "as_of", "'20251220210108078'"),
]
CHANGES_ROWS = {"as_of", "begin_time", "end_time"}


@pytest.mark.parametrize("function, parameter, value", NAMED_PARAMETERS)
def test_named_parameters_take_both_spellings(con, fixture_tables, function, parameter, value):
    path = fixture_tables[TRIPS_V8]
    walrus = rows(con, f"SELECT * FROM {function}('{path}', {parameter} := {value})")
    arrow = rows(con, f"SELECT * FROM {function}('{path}', {parameter} => {value})")
    assert not diff_rows(walrus, arrow)
    if parameter in CHANGES_ROWS:
        assert diff_rows(arrow, rows(con, f"SELECT * FROM {function}('{path}')")), "the parameter had no effect"


def test_several_parameters_mix_spellings(con, fixture_tables):
    path = fixture_tables[TRIPS_V8]
    times = [i.requested_time for i in HudiTable(path).timeline.completed_writes]
    mixed = rows(con, f"SELECT * FROM hudi_incremental('{path}', begin_time => '{times[0]}', end_time := '{times[3]}')")
    assert not diff_rows(mixed, incremental(con, path, begin=times[0], end=times[3]))
    assert not diff_rows(mixed, hudi_rs_read(path, begin=times[0], end=times[3], incremental=True))


# -- corrupt log blocks: a warning, or an error when strict ---------------------------------------------------------


def _log_file(path: str) -> Path:
    (log,) = sorted(p for p in Path(path).rglob(".*.log.*") if ".hoodie" not in p.parts)
    return log


def truncated_table(fresh_fixture) -> tuple[str, Path]:
    """The v6 trips table with its only log block cut short, as by a crash mid-write."""
    path = fresh_fixture(TRIPS_V6)
    log = _log_file(path)
    data = log.read_bytes()
    log.write_bytes(data[: len(data) - 40])
    return path, log


def corrupt_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "hudi_duck" and WARNING_TEXT in r.getMessage()]


def test_truncated_block_warns_once_per_file_naming_file_offset_and_instant(con, fresh_fixture, caplog):
    caplog.set_level(logging.WARNING, logger="hudi_duck")
    path, log = truncated_table(fresh_fixture)
    expected = rows(con, f"SELECT * FROM hudi_read_optimized('{path}')")
    for _ in range(2):
        assert not diff_rows(rows(con, f"SELECT * FROM hudi_snapshot('{path}')"), expected)
    incremental(con, path)
    hudi_duck.read_snapshot(path).read_all()
    (message,) = corrupt_warnings(caplog)
    assert str(log) in message and "at offset 0" in message and f"of instant {UPDATE_INSTANT}" in message
    assert "strict := true" in message and "roll back" in message
    assert all(r.levelno == logging.WARNING for r in caplog.records if r.name == "hudi_duck")


def test_garbage_after_a_block_is_warned_about(con, fresh_fixture, caplog):
    caplog.set_level(logging.WARNING, logger="hudi_duck")
    path = fresh_fixture(TRIPS_V6)
    log = _log_file(path)
    log.write_bytes(log.read_bytes() + b"garbage!")
    rows(con, f"SELECT * FROM hudi_snapshot('{path}')")
    (message,) = corrupt_warnings(caplog)
    assert str(log) in message and "at offset 0" in message and f"of instant {UPDATE_INSTANT}" in message


def test_unreadable_header_names_the_instants_nearby(con, fresh_fixture, caplog):
    """Two corrupt blocks in one file: one warning; the one without a header names the file's instant."""
    caplog.set_level(logging.WARNING, logger="hudi_duck")
    path = fresh_fixture(TRIPS_V6)
    log = _log_file(path)
    block = log.read_bytes()
    bad_version = block[:14] + (99).to_bytes(4, "big") + block[18:]  # the format version after magic and size
    log.write_bytes(bad_version + block[:-40])
    rows(con, f"SELECT * FROM hudi_snapshot('{path}')")
    (message,) = corrupt_warnings(caplog)
    assert str(log) in message and "at offset 0" in message
    assert f"unknown instant (its header is unreadable; the log file is named for instant {BASE_INSTANT})" in message
    assert f"and 1 more corrupt blocks in this file, at offsets {len(block)}" in message


def test_rolled_back_corrupt_block_is_not_reported(con, fresh_fixture, caplog):
    """Hudi: a rollback block removes the corrupt blocks before it; nothing is missing."""
    caplog.set_level(logging.WARNING, logger="hudi_duck")
    path, log = truncated_table(fresh_fixture)
    rollback = encode_block(
        BlockType.COMMAND_BLOCK,
        {
            HeaderKey.INSTANT_TIME: "20250331030699999",
            HeaderKey.TARGET_INSTANT_TIME: UPDATE_INSTANT,
            HeaderKey.COMMAND_BLOCK_TYPE: "0",
        },
        b"",
    )
    log.write_bytes(log.read_bytes() + rollback)
    expected = rows(con, f"SELECT * FROM hudi_read_optimized('{path}')")
    assert not diff_rows(rows(con, f"SELECT * FROM hudi_snapshot('{path}', strict := true)"), expected)
    assert not diff_rows(rows(con, f"SELECT * FROM hudi_snapshot('{path}')"), expected)
    assert corrupt_warnings(caplog) == []


def test_corrupt_block_of_a_failed_write_is_not_reported(con, fresh_fixture, caplog):
    """The block's instant never completed: its records are not read anyway."""
    caplog.set_level(logging.WARNING, logger="hudi_duck")
    path, _log = truncated_table(fresh_fixture)
    (Path(path) / ".hoodie" / f"{UPDATE_INSTANT}.deltacommit").unlink()
    ours = rows(con, f"SELECT * FROM hudi_snapshot('{path}', strict := true)")
    assert not diff_rows(ours, hudi_rs_read(path))
    assert corrupt_warnings(caplog) == []


def test_as_of_before_the_corrupt_instant_is_not_reported(con, fresh_fixture, caplog):
    caplog.set_level(logging.WARNING, logger="hudi_duck")
    path, _log = truncated_table(fresh_fixture)
    rows(con, f"SELECT * FROM hudi_snapshot('{path}', as_of := '{BASE_INSTANT}', strict := true)")
    assert corrupt_warnings(caplog) == []
    rows(con, f"SELECT * FROM hudi_snapshot('{path}')")
    assert len(corrupt_warnings(caplog)) == 1


@pytest.mark.parametrize(
    "call",
    [
        "hudi_snapshot('{path}', strict := true)",
        "hudi_snapshot('{path}', strict => true)",
        "hudi_incremental('{path}', strict := true)",
        "hudi_incremental('{path}', begin_time => 'earliest', strict => true)",
    ],
)
def test_strict_sql_read_fails_naming_file_and_offset(con, fresh_fixture, call):
    path, log = truncated_table(fresh_fixture)
    message = error_of(con, "SELECT * FROM " + call.format(path=path))
    assert "CorruptFileError" in message and str(log) in message and "at offset 0" in message
    assert f"of instant {UPDATE_INSTANT}" in message and "strict := false" in message and "roll back" in message
    assert "Traceback" not in message
    # the read-optimized view reads no log block: nothing to refuse
    assert rows(con, f"SELECT * FROM hudi_read_optimized('{path}')").num_rows == 8


def test_strict_python_read_raises_corrupt_file_error(fresh_fixture):
    path, log = truncated_table(fresh_fixture)
    reads = [
        lambda: hudi_duck.read_snapshot(path, strict=True),
        lambda: hudi_duck.read_incremental(path, begin_time="000", strict=True),
        lambda: hudi_duck.open_table(path, strict=True).snapshot(),
        lambda: hudi_duck.open_table(path, strict=True).incremental(),
    ]
    for read in reads:
        with pytest.raises(CorruptFileError) as info:
            read().read_all()
        assert str(log) in str(info.value) and "at offset 0" in str(info.value) and "strict" in str(info.value)
    assert hudi_duck.open_table(path, strict=True).read_optimized().read_all().num_rows == 8
    assert hudi_duck.read_snapshot(path).read_all().num_rows == 8


def test_strict_read_does_not_reuse_a_lenient_cached_merge(con, fresh_fixture, caplog, monkeypatch, tmp_path):
    monkeypatch.setenv("HUDI_DUCK_CACHE_DIR", str(tmp_path / "cache"))
    caplog.set_level(logging.WARNING, logger="hudi_duck")
    path, log = truncated_table(fresh_fixture)
    lenient = rows(con, f"SELECT * FROM hudi_snapshot('{path}')")  # merges and caches, skipping the block
    assert lenient.num_rows == 8 and len(corrupt_warnings(caplog)) == 1
    assert list((tmp_path / "cache").glob("*.dropped.parquet"))
    message = error_of(con, f"SELECT * FROM hudi_snapshot('{path}', strict := true)")
    assert "CorruptFileError" in message and str(log) in message
    with pytest.raises(CorruptFileError):
        hudi_duck.read_snapshot(path, strict=True)


# -- what a user actually sees, in fresh processes ----------------------------------------------------------------

READ_SCRIPT = textwrap.dedent(
    """
    import sys
    import hudi_duck
    path, mode = sys.argv[1], sys.argv[2]
    if mode.startswith("cached"):
        import hudi_duck.duck.lazy as rendering
        def no_merge(*args):
            raise AssertionError("the merge should come from the cache")
        rendering.merge_slice_logs = no_merge
    con = hudi_duck.connect()
    try:
        strict = "true" if mode.endswith("strict") else "false"
        for _ in range(2):
            result = con.sql(f"SELECT count(*) FROM hudi_snapshot('{path}', strict := {strict})").fetchall()
        print("rows", result[0][0])
    except Exception as exc:
        print("error", type(exc).__name__, str(exc))
    finally:
        con.close()
    """
)


def run_python(args: list[str], cache: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != progress.ENV_VAR}
    environment.update(HUDI_DUCK_CACHE_DIR=str(cache), **env)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=environment, timeout=300, check=False
    )


def test_warning_reaches_a_plain_script_and_the_cached_merge_warns_again(fresh_fixture, tmp_path):
    path, log = truncated_table(fresh_fixture)
    cache = tmp_path / "cache"
    first = run_python(["-c", READ_SCRIPT, path, "merge"], cache)
    assert "rows 8" in first.stdout, first.stderr
    assert first.stderr.count(WARNING_TEXT) == 1 and str(log) in first.stderr and "at offset 0" in first.stderr
    # another process: the merge comes from the cache, the warning still comes, once
    second = run_python(["-c", READ_SCRIPT, path, "cached"], cache)
    assert "rows 8" in second.stdout, second.stderr
    assert second.stderr.count(WARNING_TEXT) == 1 and str(log) in second.stderr
    strict = run_python(["-c", READ_SCRIPT, path, "cached-strict"], cache)
    assert "error InvalidInputException" in strict.stdout and "CorruptFileError" in strict.stdout
    assert str(log) in strict.stdout and "AssertionError" not in strict.stdout


NOTEBOOK_SCRIPT = textwrap.dedent(
    """
    import io, sys
    import hudi_duck

    class KernelStream(io.TextIOBase):
        '''Like a notebook kernel's stderr: not a terminal, written to from any thread.'''
        def __init__(self):
            self.parts = []
        def write(self, text):
            self.parts.append(text)
            return len(text)
        def isatty(self):
            return False

    sys.stderr = shown = KernelStream()
    con = hudi_duck.connect()
    con.sql(f"SELECT * FROM hudi_snapshot('{sys.argv[1]}')").fetchall()
    con.close()
    sys.stderr = sys.__stderr__
    print("".join(shown.parts))
    """
)


def test_warning_reaches_a_notebook_like_stderr(fresh_fixture, tmp_path):
    path, log = truncated_table(fresh_fixture)
    result = run_python(["-c", NOTEBOOK_SCRIPT, path], tmp_path / "cache")
    assert result.stdout.count(WARNING_TEXT) == 1 and str(log) in result.stdout, result.stderr
    assert "merging log files" not in result.stdout  # not a terminal: no progress line


# -- progress on a terminal -----------------------------------------------------------------------------------------

PROGRESS_SCRIPT = textwrap.dedent(
    """
    import sys
    import hudi_duck
    con = hudi_duck.connect()
    count = con.sql(f"SELECT count(*) FROM hudi_snapshot('{sys.argv[1]}', as_of := '{sys.argv[2]}')").fetchall()
    print("rows", count[0][0])
    con.close()
    """
)


def run_on_terminal(args: list[str], cache: Path, **env: str) -> tuple[str, str]:
    """Run Python with stderr on a pseudo-terminal; returns (stdout, what the terminal got)."""
    environment = {k: v for k, v in os.environ.items() if k != progress.ENV_VAR}
    environment.update(HUDI_DUCK_CACHE_DIR=str(cache), **env)
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal, env=environment
    )
    os.close(terminal)
    received = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    stdout = proc.stdout.read().decode()
    proc.wait(timeout=300)
    os.close(controller)
    return stdout, received.decode(errors="replace")


def progress_counts(text: str, path: str) -> list[int]:
    prefix = f"hudi_snapshot {path}: merging log files "
    counts = []
    for part in text.split(prefix)[1:]:
        done, total = part.split(" file slices", 1)[0].split("/")
        assert total == "3"
        counts.append(int(done))
    return counts


def test_first_mor_read_shows_progress_on_a_terminal(fresh_fixture, tmp_path):
    path = fresh_fixture(TRIPS_V8)
    stdout, terminal = run_on_terminal(["-c", PROGRESS_SCRIPT, path, THREE_MERGES_AS_OF], tmp_path / "cache")
    assert stdout.startswith("rows "), terminal
    counts = progress_counts(terminal, path)
    assert counts and counts[0] == 0 and counts == sorted(counts), terminal
    last_line = terminal.rindex("file slices")
    assert "\r\x1b[K" in terminal[last_line:], "the progress line is cleared at the end"
    # the merges are cached now: a second read has nothing to show
    _, again = run_on_terminal(["-c", PROGRESS_SCRIPT, path, THREE_MERGES_AS_OF], tmp_path / "cache")
    assert "merging log files" not in again


def test_progress_counts_completed_merges_per_plan(monkeypatch, capsys):
    monkeypatch.setattr(progress, "_REDRAW_SECONDS", 0.0)
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    counter = progress.MergeProgress("hudi_snapshot /t", 3)
    counter.finished("cached", merged=False)  # taken from the cache: counted, nothing drawn
    assert capsys.readouterr().err == ""
    counter.started("a")
    counter.started("b")
    counter.finished("a", merged=True)
    counter.finished("a", merged=False)  # another reader of the same slice: counted once
    counter.finished("b", merged=True)  # nothing merging any more: the line goes
    line = "\rhudi_snapshot /t: merging log files {}/3 file slices\x1b[K"
    assert capsys.readouterr().err == line.format(1) * 2 + line.format(2) + "\r\x1b[K"


def test_progress_can_be_switched_off_and_is_absent_when_not_interactive(fresh_fixture, tmp_path):
    path = fresh_fixture(TRIPS_V8)
    _, terminal = run_on_terminal(
        ["-c", PROGRESS_SCRIPT, path, THREE_MERGES_AS_OF], tmp_path / "off", **{progress.ENV_VAR: "0"}
    )
    assert "merging log files" not in terminal
    piped = run_python(["-c", PROGRESS_SCRIPT, path, THREE_MERGES_AS_OF], tmp_path / "piped")
    assert piped.stdout.startswith("rows ") and "merging log files" not in piped.stderr
    forced = run_python(["-c", PROGRESS_SCRIPT, path, THREE_MERGES_AS_OF], tmp_path / "forced", **{progress.ENV_VAR: "1"})
    assert progress_counts(forced.stderr, path)[0] == 0


def test_set_progress_overrides_the_environment(con, fresh_fixture, monkeypatch, tmp_path, capsys):
    path = fresh_fixture(TRIPS_V8)
    monkeypatch.setenv(progress.ENV_VAR, "0")
    query = f"SELECT count(*) FROM hudi_snapshot('{path}', as_of := '{THREE_MERGES_AS_OF}')"
    try:
        hudi_duck.set_progress(True)
        monkeypatch.setenv("HUDI_DUCK_CACHE_DIR", str(tmp_path / "on"))
        con.sql(query).fetchall()
        shown = capsys.readouterr().err
        assert progress_counts(shown, path)[0] == 0 and shown.endswith("\r\x1b[K")
        hudi_duck.set_progress(False)
        monkeypatch.setenv(progress.ENV_VAR, "1")
        other = shutil.copytree(path, tmp_path / "other")  # another table path: merged again
        con.sql(query.replace(path, str(other))).fetchall()
        assert "merging log files" not in capsys.readouterr().err
    finally:
        hudi_duck.set_progress(None)


def test_a_warning_never_runs_into_the_progress_line(monkeypatch, tmp_path, capsys):
    """A slice's warning comes while another slice of the plan may still be merging, its line shown."""
    monkeypatch.setenv("HUDI_DUCK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # the handler below writes where capsys reads
    handler = logging.StreamHandler(sys.stderr)
    logging.getLogger("hudi_duck").addHandler(handler)
    skipped = SkippedBlock(str(tmp_path / ".f_1.log.1_0-1-1"), 7, 10, UPDATE_INSTANT, "1", None)
    merge = SliceLogMerge(pa.table({"a": pa.array([], pa.int64())}), [], {}, [skipped])
    monkeypatch.setattr(lazy, "merge_slice", lambda state, key: merge)
    job = lazy.REGISTRY.register(lazy.SliceJob(f"test-{tmp_path.name}"))
    plan = lazy.PlanState({}, strict=False, progress=progress.MergeProgress("hudi_snapshot /t", 2))
    lazy.REGISTRY.register_plan(f"plan-{tmp_path.name}", plan)
    try:
        plan.progress.started("another slice")  # still merging when the warning comes
        lazy.REGISTRY.ensure(job.key, f"plan-{tmp_path.name}")
    finally:
        logging.getLogger("hudi_duck").removeHandler(handler)
        progress.clear_line()
    err = capsys.readouterr().err
    assert "hudi_snapshot /t: merging log files 0/2 file slices" in err
    assert f"\r\x1b[KHudi log file {skipped.file_path}: corrupt log block at offset 7" in err
