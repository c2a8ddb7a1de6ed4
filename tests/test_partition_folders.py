"""Partition values taken from hive-style folders: DuckDB's ``hive_partitioning`` reads a base file's
partition columns from its path only when the file's footer statistics prove every row stores those
values; a file whose rows differ is read (and checked row by row) as before."""

from __future__ import annotations

import datetime as dt
import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures import record_base_file_size

import hudi_duck
from hudi_duck.core.file_group import parquet_stats
from hudi_duck.core.storage.storage import get_storage
from hudi_duck.duck import planner

COMPLEX_KEYGEN = "sample_table/cow/v6_complexkeygen_hivestyle"


def _write(path, table: pa.Table, **kwargs) -> str:
    pq.write_table(table, path, **kwargs)
    return os.path.basename(path)


def _holds(tmp_path, name: str, values: dict) -> bool:
    return parquet_stats.holds_only(get_storage(str(tmp_path), {}), name, values)


def test_statistics_prove_a_constant_column(tmp_path):
    n = 1000
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "city": pa.array(["tokyo"] * n),
        "year": pa.array([2024] * n, pa.int32()),
        "big": pa.array([7] * n, pa.int64()),
        "day": pa.array([dt.date(2024, 1, 2)] * n, pa.date32()),
    })
    name = _write(tmp_path / "a.parquet", table, row_group_size=300)  # four row groups
    assert _holds(tmp_path, name, {"city": "tokyo", "year": 2024, "big": 7, "day": dt.date(2024, 1, 2)})
    assert not _holds(tmp_path, name, {"city": "paris"})
    assert not _holds(tmp_path, name, {"year": 2023})
    assert not _holds(tmp_path, name, {"day": dt.date(2024, 1, 3)})
    assert not _holds(tmp_path, name, {"id": 5})  # many values
    assert not _holds(tmp_path, name, {"missing": "x"})
    assert not _holds(tmp_path, name, {"year": "2024"})  # a string is not an INT32


def test_statistics_that_prove_nothing(tmp_path):
    mixed = _write(tmp_path / "mixed.parquet", pa.table({"city": ["tokyo"] * 10 + ["paris"]}), row_group_size=5)
    nulls = _write(tmp_path / "nulls.parquet", pa.table({"city": ["tokyo", None]}))
    no_stats = _write(tmp_path / "nostats.parquet", pa.table({"city": ["tokyo"]}), write_statistics=False)
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not a footer PAR1")
    assert not _holds(tmp_path, mixed, {"city": "tokyo"})  # the last row group holds paris
    assert not _holds(tmp_path, nulls, {"city": "tokyo"})
    assert not _holds(tmp_path, no_stats, {"city": "tokyo"})
    assert not _holds(tmp_path, "broken.parquet", {"city": "tokyo"})
    assert not _holds(tmp_path, "gone.parquet", {"city": "tokyo"})


def test_footer_statistics_agree_with_pyarrow(fixture_tables):
    """The Thrift reader gives the same statistics pyarrow does, on base files Apache Hudi wrote."""
    base = fixture_tables[COMPLEX_KEYGEN]
    files = glob.glob(f"{base}/*/*/*.parquet")
    assert files
    storage = get_storage(base, {})
    for file in files:
        meta = pq.read_metadata(file)
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        wanted = frozenset(n for n in names if "." not in n)
        groups = parquet_stats.column_stats(parquet_stats.read_footer(storage, os.path.relpath(file, base)), wanted)
        assert len(groups) == meta.num_row_groups
        for i, group in enumerate(groups):
            for name in wanted:
                chunk = meta.row_group(i).column(names.index(name))
                stats = group[name]
                assert stats.num_values == chunk.num_values
                if chunk.statistics is not None and chunk.statistics.has_null_count:
                    assert stats.null_count == chunk.statistics.null_count



def test_hive_folders_read_by_duckdb(con, fixture_tables):
    path = fixture_tables[COMPLEX_KEYGEN]
    for values_from_path in (True, False):
        sql = planner.plan_sql("snapshot", path, None, None, {}, values_from_path=values_from_path)
        assert "hive_partitioning=true" in sql and "error(" not in sql
    rows = con.sql(f"SELECT byteField, shortField, count(*) FROM hudi_snapshot('{path}') GROUP BY ALL ORDER BY ALL")
    latest = [f"{path}/{s['partition_path']}/{s['base_file']}" for s in hudi_duck.open_table(path).file_slices()]
    stored = con.sql(
        f"SELECT byteField, shortField, count(*) FROM read_parquet({latest!r}, hive_partitioning=false) "
        "GROUP BY ALL ORDER BY ALL"
    )
    assert rows.fetchall() == stored.fetchall()
    pruned = con.sql(f"SELECT DISTINCT byteField FROM hudi_snapshot('{path}') WHERE byteField = 10").fetchall()
    assert pruned == [(10,)]


def test_file_whose_rows_differ_from_its_folder(con, fresh_fixture):
    """A file storing other values than its folder names is not read through its path: the folder
    mode fails as before, the file mode returns the stored values."""
    path = fresh_fixture(COMPLEX_KEYGEN)
    file = sorted(glob.glob(f"{path}/byteField=20/*/*.parquet"))[0]
    original = pq.read_table(file)
    column = original.schema.get_field_index("shortField")
    other = pa.array([999] * original.num_rows, original.schema.field(column).type)
    changed = original.set_column(column, "shortField", other)
    pq.write_table(changed, file)
    record_base_file_size(path, os.path.basename(file), os.path.getsize(file))
    planner.clear_plan_cache()

    sql = planner.plan_sql("snapshot", path, None, None, {}, values_from_path=True)
    branches = sql.split("\nUNION ALL\n")
    hive = [b for b in branches if "hive_partitioning=true" in b]
    checked = [b for b in branches if os.path.basename(file) in b]
    assert len(hive) == 1 and os.path.basename(file) not in hive[0]
    assert len(checked) == 1 and "error(" in checked[0]
    with pytest.raises(Exception, match="extract_partition_values_from_path := false"):
        con.sql(f"SELECT * FROM hudi_snapshot('{path}')").fetchall()
    stored = con.sql(
        f"SELECT shortField FROM hudi_snapshot('{path}', extract_partition_values_from_path := false) "
        "WHERE byteField = 20"
    ).fetchall()
    assert stored == [(999,)] * original.num_rows


def test_statistics_past_the_first_read_of_a_footer(tmp_path):
    """A footer whose row groups run past the first bytes read of it is read whole: the statistics
    of its last column are proven, and a value they refute is not."""
    n, columns = 30, 300
    table = pa.table({f"c{i:03d}": pa.array([i] * n, pa.int64()) for i in range(columns)} | {"city": ["tokyo"] * n})
    name = _write(tmp_path / "wide.parquet", table, row_group_size=10)  # three row groups
    storage = get_storage(str(tmp_path), {})
    assert pq.read_metadata(tmp_path / name).serialized_size > parquet_stats._HEAD
    with pytest.raises(parquet_stats.Truncated):
        parquet_stats.column_stats(parquet_stats.read_footer(storage, name, parquet_stats._HEAD), frozenset({"city"}))
    assert _holds(tmp_path, name, {"city": "tokyo", "c299": 299})
    assert not _holds(tmp_path, name, {"city": "paris"})
    assert not _holds(tmp_path, name, {"c299": 298})
    whole = parquet_stats.column_stats(parquet_stats.read_footer(storage, name), frozenset({"c000", "city"}))
    assert [sorted(g) for g in whole] == [["c000", "city"]] * 3


def test_cut_footer_proves_nothing(tmp_path):
    """The start of a footer that ends inside its row groups is refused (never half-read statistics);
    from the shortest start that holds them all on, the statistics are those of the whole footer."""
    name = _write(tmp_path / "a.parquet", pa.table({"city": ["tokyo"] * 5}))
    footer = parquet_stats.read_footer(get_storage(str(tmp_path), {}), name)
    whole = parquet_stats.column_stats(footer, frozenset({"city"}))
    assert whole[0]["city"].min == b"tokyo"
    shortest = next(n for n in range(len(footer) + 1) if _parses(footer[:n]))
    assert parquet_stats.column_stats(footer[:shortest], frozenset({"city"})) == whole
    for cut in range(shortest):
        with pytest.raises(parquet_stats.Truncated):
            parquet_stats.column_stats(footer[:cut], frozenset({"city"}))


def _parses(head: bytes) -> bool:
    try:
        parquet_stats.column_stats(head, frozenset({"city"}))
    except parquet_stats.Truncated:
        return False
    return True


def test_many_small_files_are_checked_row_by_row(con, fresh_fixture, monkeypatch):
    """Beyond the count of files a plan proves whatever their size, small files are not proven but
    still read with each row's stored value checked against its folder: a file whose rows differ
    from its folder still fails the folder mode, and the other files read the same rows."""
    from hudi_duck.duck import sql as sql_module

    path = fresh_fixture(COMPLEX_KEYGEN)
    expected = con.sql(
        f"SELECT byteField, shortField, count(*) FROM hudi_snapshot('{path}') GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    monkeypatch.setattr(sql_module, "_PROVE_ALL_UP_TO", 0)
    parquet_stats.forget()
    planner.clear_plan_cache()
    sql = planner.plan_sql("snapshot", path, None, None, {}, values_from_path=True)
    assert "hive_partitioning=true" not in sql and "error(" in sql
    rows = con.sql(f"SELECT byteField, shortField, count(*) FROM hudi_snapshot('{path}') GROUP BY ALL ORDER BY ALL")
    assert rows.fetchall() == expected

    # files big enough are still proven and read through their folders
    sizes = {s.base_file.file_name: s.base_file.size for s in hudi_duck.open_table(path).plan().slices}
    threshold = max(sizes.values())
    monkeypatch.setattr(sql_module, "_PROOF_MIN_BYTES", threshold)
    planner.clear_plan_cache()
    sql = planner.plan_sql("snapshot", path, None, None, {}, values_from_path=True)
    (hive,) = [b for b in sql.split("\nUNION ALL\n") if "hive_partitioning=true" in b]
    assert {n for n in sizes if n in hive} == {n for n, size in sizes.items() if size >= threshold}
    rows = con.sql(f"SELECT byteField, shortField, count(*) FROM hudi_snapshot('{path}') GROUP BY ALL ORDER BY ALL")
    assert rows.fetchall() == expected

    file = sorted(glob.glob(f"{path}/byteField=20/*/*.parquet"))[0]
    original = pq.read_table(file)
    column = original.schema.get_field_index("shortField")
    pq.write_table(original.set_column(column, "shortField", pa.array([999] * original.num_rows, pa.int16())), file)
    record_base_file_size(path, os.path.basename(file), os.path.getsize(file))
    planner.clear_plan_cache()
    with pytest.raises(Exception, match="extract_partition_values_from_path := false"):
        con.sql(f"SELECT * FROM hudi_snapshot('{path}')").fetchall()
