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


def test_reused_sql_gets_back_the_schema_files_it_binds_to(fresh_fixture, counted, con):
    """A reused plan's SQL names empty schema files in the cache folder (the first file of a
    hive-style scan among them); when the folder loses them, the next query writes them again."""
    import re

    path = fresh_fixture("sample_table/cow/v6_complexkeygen_hivestyle")
    query = f"SELECT byteField, count(*) FROM hudi_snapshot('{path}') GROUP BY ALL ORDER BY ALL"
    expected = con.sql(query).fetchall()
    sql = planner.plan_sql("snapshot", path, None, None, {})
    bound = re.findall(r"'([^']*\.schema\.parquet)'", sql)
    assert bound and any(".hive/" in f for f in bound)
    for file in bound:
        Path(file).unlink()
    assert con.sql(query).fetchall() == expected
    assert all(Path(f).exists() for f in bound)
    assert len(counted) == 1  # the plan was reused, only its files written again
