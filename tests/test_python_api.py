"""The Python API (no SQL) returns what the SQL functions return."""

from __future__ import annotations

import pyarrow as pa

import hudi_duck
from hudi_duck.api import arrow_table
from oracle import diff_rows, hudi_rs_read

MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
COW = "sample_table/cow/v9_txns_simple_meta"


def test_read_snapshot_returns_a_record_batch_reader(fixture_tables):
    path = fixture_tables[MOR]
    reader = hudi_duck.read_snapshot(path)
    assert isinstance(reader, pa.RecordBatchReader)
    assert not diff_rows(reader.read_all(), hudi_rs_read(path))


def test_columns_and_filters_are_pushed_down(fixture_tables):
    path = fixture_tables[COW]
    table = hudi_duck.read_snapshot(path, columns=["txn_id", "region"], filter="region = 'us'").read_all()
    assert table.column_names == ["txn_id", "region"]
    assert set(table.column("region").to_pylist()) == {"us"}
    expected = [r["txn_id"] for r in hudi_rs_read(path).to_pylist() if r["region"] == "us"]
    assert sorted(table.column("txn_id").to_pylist()) == sorted(expected)


def test_as_of_incremental_and_read_optimized_match_sql(fixture_tables):
    path = fixture_tables[MOR]
    table = hudi_duck.open_table(path)
    first = table.timeline()[0]["requested_time"]
    con = hudi_duck.connect()
    sql_as_of = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{path}', as_of := '{first}')"))
    assert not diff_rows(table.snapshot(as_of=first).read_all(), sql_as_of)
    sql_incr = arrow_table(con.sql(f"SELECT * FROM hudi_incremental('{path}', begin_time := '{first}')"))
    assert not diff_rows(hudi_duck.read_incremental(path, begin_time=first).read_all(), sql_incr)
    sql_ro = arrow_table(con.sql(f"SELECT * FROM hudi_read_optimized('{path}')"))
    assert not diff_rows(hudi_duck.read_read_optimized(path).read_all(), sql_ro)


def test_notebook_repr_names_the_table(fixture_tables):
    table = hudi_duck.open_table(fixture_tables[MOR])
    text = repr(table)
    assert "v8_trips_8i3u1d" in text and "MERGE_ON_READ" in text and "version 8" in text
    html = table._repr_html_()
    assert "<table>" in html and "uuid" in html
    slices = table.file_slices()
    assert {s["partition_path"] for s in slices} == {"city=chennai", "city=san_francisco", "city=sao_paulo"}


def test_inspection_functions(fixture_tables):
    path = fixture_tables[MOR]
    con = hudi_duck.connect()
    timeline = arrow_table(con.sql(f"SELECT * FROM hudi_timeline('{path}')")).to_pylist()
    actions = [(r["action"], r["state"]) for r in timeline]
    assert ("commit", "COMPLETED") in actions  # the compaction
    assert ("indexing", "COMPLETED") in actions
    completed = [r for r in timeline if r["action"] == "deltacommit"]
    assert all(r["completion_time"] and r["completion_time"] > r["requested_time"] for r in completed)
    slices = arrow_table(con.sql(f"SELECT * FROM hudi_file_slices('{path}')")).to_pylist()
    assert len(slices) == 3
    sao = next(s for s in slices if s["partition_path"] == "city=sao_paulo")
    assert sao["base_instant_time"] == "20251220210129235" and sao["num_log_files"] == 1


def test_functions_live_in_the_connection_not_in_the_database_file(tmp_path, fixture_tables):
    """The macros are temporary: a database file opened with hudi_duck keeps none of them,
    and a read-only database file can be queried with them."""
    import duckdb

    db = str(tmp_path / "user.duckdb")
    hudi_duck.connect(db).close()
    plain = duckdb.connect(db)
    assert plain.sql("SELECT count(*) FROM duckdb_functions() WHERE function_name LIKE 'hudi_%'").fetchall() == [(0,)]
    plain.close()
    path = next(iter(fixture_tables.values()))
    con = hudi_duck.connect(db, read_only=True)
    assert con.sql(f"SELECT count(*) FROM hudi_timeline('{path}')").fetchall()[0][0] > 0
    con.close()
