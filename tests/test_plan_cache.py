"""Plans are reused while the table's timeline and merged log files are unchanged, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_duck.duck import planner

TRIPS_V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"


@pytest.fixture()
def counted(monkeypatch):
    """Counts the tables opened for planning."""
    planner.clear_plan_cache()
    opened = []
    real = planner.HudiTable

    def opening(*args, **kwargs):
        opened.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(planner, "HudiTable", opening)
    yield opened
    planner.clear_plan_cache()


def test_a_repeated_query_reuses_its_plan(fresh_fixture, counted):
    path = fresh_fixture(TRIPS_V6)
    first = planner.plan_sql("snapshot", path, None, None, {})
    assert planner.plan_sql("snapshot", path, None, None, {}) == first
    assert len(counted) == 1
    planner.plan_sql("read_optimized", path, None, None, {})  # another query: its own plan
    assert len(counted) == 2


def test_a_timeline_change_plans_again(fresh_fixture, counted):
    path = fresh_fixture(TRIPS_V6)
    planner.plan_sql("snapshot", path, None, None, {})
    (Path(path) / ".hoodie" / "99990101000000000.deltacommit.requested").write_bytes(b"")
    planner.plan_sql("snapshot", path, None, None, {})
    assert len(counted) == 2


def test_a_changed_log_file_plans_again(fresh_fixture, counted):
    path = fresh_fixture(TRIPS_V6)
    planner.plan_sql("snapshot", path, None, None, {})
    log_file = next(p for p in Path(path).rglob("*.log.*") if ".hoodie" not in p.parts)
    log_file.write_bytes(log_file.read_bytes() + b"\0")
    planner.plan_sql("snapshot", path, None, None, {})
    assert len(counted) == 2
