"""Every fixture table (written by Apache Hudi) reads through the SQL functions
exactly as hudi-rs reads it: snapshot, read-optimized, as of every completed
instant, and incremental for every window between consecutive instants."""

from __future__ import annotations

import pytest

from hudi_duck.api import arrow_table
from hudi_duck.core.table.table import HudiTable
from oracle import diff_rows, hudi_rs_read
from conftest import FIXTURE_IDS


def _sql_arg(value: str | None) -> str:
    return "NULL" if value is None else f"'{value}'"


def duck(con, function: str, path: str, *args: str | None, named: tuple[str, ...] = ()) -> object:
    parts = [f"'{path}'"] + [f"{name} := {_sql_arg(v)}" for name, v in zip(named, args)]
    return arrow_table(con.sql(f"SELECT * FROM {function}({', '.join(parts)})"))


def instants_of(path: str) -> list[tuple[str, str | None]]:
    """(requested, completion) of every completed write instant."""
    table = HudiTable(path)
    return [(i.requested_time, i.completion_time) for i in table.timeline.completed_writes]


def window_times(path: str) -> list[str]:
    """Boundaries an incremental window may start or end at: the times the
    table version windows on (requested for v6, completion for v8+), plus the
    other spelling, to cover both."""
    times = set()
    for requested, completed in instants_of(path):
        times.add(requested)
        if completed:
            times.add(completed)
    return sorted(times)


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_snapshot_equals_hudi_rs(con, fixture_tables, fid):
    path = fixture_tables[fid]
    diff = diff_rows(duck(con, "hudi_snapshot", path), hudi_rs_read(path))
    assert not diff, diff


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_read_optimized_equals_hudi_rs(con, fixture_tables, fid):
    path = fixture_tables[fid]
    diff = diff_rows(duck(con, "hudi_read_optimized", path), hudi_rs_read(path, read_optimized=True))
    assert not diff, diff


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_as_of_every_instant_equals_hudi_rs(con, fixture_tables, fid):
    path = fixture_tables[fid]
    checked = 0
    for requested, completed in instants_of(path):
        for as_of in filter(None, (requested, completed)):
            ours = duck(con, "hudi_snapshot", path, as_of, named=("as_of",))
            diff = diff_rows(ours, hudi_rs_read(path, as_of=as_of))
            assert not diff, f"as of {as_of}: {diff}"
            checked += 1
    assert checked == 0 or checked >= len(instants_of(path))


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_incremental_windows_equal_hudi_rs(con, fixture_tables, fid):
    path = fixture_tables[fid]
    times = window_times(path)
    windows = [(None, None)] + [(None, t) for t in times] + [(t, None) for t in times]
    windows += [(a, b) for a, b in zip(times, times[1:])]
    for begin, end in windows:
        ours = duck(con, "hudi_incremental", path, begin, end, named=("begin_time", "end_time"))
        theirs = hudi_rs_read(path, begin=begin, end=end, incremental=True)
        diff = diff_rows(ours, theirs)
        assert not diff, f"window ({begin}, {end}]: {diff}"
