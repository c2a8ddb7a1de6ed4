"""Tiny file slices merged whole: a job of batched tiny slices keeps every row of its slices in its
cache entry, and the snapshot reads those slices from it alone (no base file scan, no keep filter).

The table: a merge-on-read table written by ``spark_writer`` with small slices in several
partitions, updates of the same keys in several log files (one with a lower ordering value), deletes
and a schema change (a new column). Every read is checked against hudi-rs and
against the merge that scans the base files (whole merging turned off)."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fixtures import record_base_file_size
from oracle import diff_rows, hudi_rs_read

import hudi_duck
from hudi_duck.api import arrow_table
from hudi_duck.duck import lazy, planner
from hudi_duck.duck import whole as whole_slices

CITIES = ["ams", "ber", "cph", "dub", "edi", "fra"]
DDL = "id string not null, city string not null, fare double, ts long not null, v int"
EVOLVED_DDL = DDL + ", extra string"
OPTIONS = {
    "hoodie.table.name": "whole_t",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.index.type": "SIMPLE",
    "hoodie.index.bloom.num_entries": "100",
    "hoodie.metadata.enable": "false",  # (a test rewrites a base file; the file listing is then storage's)
    "hoodie.upsert.shuffle.parallelism": "2",
    "hoodie.insert.shuffle.parallelism": "2",
    "hoodie.bulkinsert.shuffle.parallelism": "2",
}


def _row(key: int, ts: int, fare: float) -> tuple:
    return (f"k{key:03d}", CITIES[key % len(CITIES)], fare, ts, key)


def _write(spark, path: str, rows: list[tuple], operation: str, ddl: str = DDL) -> None:
    import spark_writer

    frame = spark.createDataFrame(rows, ddl).coalesce(1)
    spark_writer.write(frame, path, {**OPTIONS, "hoodie.datasource.write.operation": operation})


@pytest.fixture(scope="module")
def table(small_spark, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("whole") / "t")
    _write(small_spark, path, [_row(k, 1, float(k)) for k in range(36)], "bulk_insert")
    _write(small_spark, path, [_row(k, 5, 100.0 + k) for k in range(0, 36, 2)], "upsert")
    # the same keys again, in another log file: one with a lower ordering value, others higher
    _write(small_spark, path, [_row(0, 2, -1.0)] + [_row(k, 7, 200.0 + k) for k in range(4, 36, 4)], "upsert")
    _write(small_spark, path, [_row(k, 9, 0.0) for k in (3, 8, 13)], "delete")
    # a new nullable column, for some keys
    evolved = [(*_row(k, 11, 300.0 + k), f"x{k}") for k in (1, 6, 12)]
    _write(small_spark, path, evolved, "upsert", EVOLVED_DDL)
    return path


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    """A fresh cache, every plan batching its small slices (the table has fewer than a plan needs),
    into as few jobs as their sizes allow (as on one core)."""
    monkeypatch.setenv("HUDI_DUCK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(lazy, "GROUP_MIN_SLICES", 1)
    monkeypatch.setattr(lazy, "_cores", lambda: 1)
    _forget_plans()
    yield tmp_path / "cache"
    _forget_plans()


@pytest.fixture()
def materialized(monkeypatch) -> list[int]:
    """How many slices each whole merge wrote (one entry per whole merge run)."""
    calls: list[int] = []
    original = whole_slices.materialize

    def counting(plan, ctx, slices, path, key):
        calls.append(len(slices))
        return original(plan, ctx, slices, path, key)

    monkeypatch.setattr(whole_slices, "materialize", counting)
    return calls


def _forget_plans() -> None:
    lazy.REGISTRY.clear()
    planner.clear_plan_cache()


def _read(con, path: str, columns: str = "*", **options: object) -> pa.Table:
    args = "".join(f", {k} := {json.dumps(v) if not isinstance(v, bool) else str(v).lower()}" for k, v in options.items())
    return arrow_table(con.sql(f"SELECT {columns} FROM hudi_snapshot('{path}'{args})"))


def _scanning_base_files(monkeypatch) -> None:
    """Whole merging off: batched slices keep their merged log rows apart and their base files scanned."""
    monkeypatch.setattr(lazy, "WHOLE_MAX_BASE_BYTES", -1)
    _forget_plans()


def test_whole_merged_slices_read_as_hudi_rs_and_the_base_scan_read_them(table, cache_dir, materialized, monkeypatch):
    con = hudi_duck.connect()
    sql = planner.plan_sql("snapshot", table, None, None, {})
    assert lazy.KEEP_FUNCTION not in sql and "hudiduck://" in sql  # no base file of a merged slice is scanned
    (state,) = [s for s in lazy.REGISTRY.plans.values() if s.plan is not None]
    assert len(state.whole) == 1 and len(state.jobs[next(iter(state.whole))]) == len(state.slices) > len(CITIES)
    got = _read(con, table)
    assert materialized == [len(state.slices)]
    expected = hudi_rs_read(table)
    assert not diff_rows(got, expected)
    keys = dict(zip(got.column("id").to_pylist(), zip(got.column("fare").to_pylist(), got.column("extra").to_pylist())))
    assert keys["k000"] == (-1.0, None)  # the later log record wins (the table's merge: latest commit)
    assert keys["k004"] == (204.0, None) and keys["k001"] == (301.0, "x1")
    assert not {"k003", "k008", "k013"} & set(keys) and len(keys) == 33
    assert keys["k012"] == (312.0, "x12") and keys["k002"] == (102.0, None)

    _scanning_base_files(monkeypatch)
    sql = planner.plan_sql("snapshot", table, None, None, {})
    assert lazy.KEEP_FUNCTION in sql
    scanned = _read(con, table)
    assert materialized == [len(state.slices)] and not diff_rows(got, scanned)


@pytest.mark.parametrize("cores", [2, 3])
def test_small_slices_make_a_job_per_core(table, cache_dir, materialized, monkeypatch, cores):
    """On several cores the small slices are split into that many jobs of about equal size, each
    merged whole (by DuckDB's scan threads side by side); the rows are the same."""
    monkeypatch.setattr(lazy, "_cores", lambda: cores)
    con = hudi_duck.connect()
    got = _read(con, table)
    (state,) = [s for s in lazy.REGISTRY.plans.values() if s.plan is not None]
    sizes = sorted(len(state.jobs[j]) for j in state.whole)
    assert len(sizes) == cores and sum(sizes) == len(state.slices) and sizes[-1] - sizes[0] <= cores
    assert sorted(materialized) == sizes
    assert not diff_rows(got, hudi_rs_read(table))


def test_projections_filters_and_partition_values_from_folders(table, cache_dir, materialized, monkeypatch):
    con = hudi_duck.connect()
    expected = hudi_rs_read(table)
    for from_path in (False, True):
        got = _read(con, table, "fare, city, _hoodie_commit_time, id", extract_partition_values_from_path=from_path)
        assert not diff_rows(got, expected.select(["fare", "city", "_hoodie_commit_time", "id"]))
        for city in ("cph", "fra"):
            sql = f"SELECT id, fare FROM hudi_snapshot('{table}', extract_partition_values_from_path := {str(from_path).lower()}) WHERE city = '{city}'"
            rows = arrow_table(con.sql(sql))
            assert not diff_rows(rows, expected.filter(pc.equal(expected.column("city"), city)).select(["id", "fare"]))
        counted = con.sql(f"SELECT count(*), sum(fare) FROM hudi_snapshot('{table}')").fetchall()
        assert counted == [(expected.num_rows, pytest.approx(sum(expected.column("fare").to_pylist())))]
    assert materialized == [len(lazy.REGISTRY.plan(next(iter(lazy.REGISTRY.plans))).slices)]  # merged once


def test_whole_merge_is_reused_warm_and_from_another_process_state(table, cache_dir, materialized):
    con = hudi_duck.connect()
    first = _read(con, table)
    assert len(materialized) == 1
    assert len(list(cache_dir.glob("*.logrows.parquet"))) == 1
    again = _read(con, table)
    lazy.REGISTRY.clear()  # as another process would: the entry is taken from the cache
    from_cache = _read(con, table)
    assert len(materialized) == 1 and not diff_rows(first, again) and not diff_rows(first, from_cache)


def _damage_and_read_again(con, table: str, entry, first: pa.Table, materialized: list) -> None:
    """Flip a byte in the middle of the whole entry; the next read merges it again, same rows."""
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    _forget_plans()
    assert not diff_rows(_read(con, table), first)
    assert len(materialized) == 2


def test_a_damaged_whole_entry_is_merged_again(table, cache_dir, materialized):
    con = hudi_duck.connect()
    first = _read(con, table)
    (entry,) = cache_dir.glob("*.logrows.parquet")
    _damage_and_read_again(con, table, entry, first, materialized)


def test_a_merged_again_entry_reports_a_new_modified_time(table, cache_dir, materialized):
    """DuckDB reuses bytes it read of a file while its modified time stays the same: an entry
    merged again (its rows may come in another order) must report a new one."""
    con = hudi_duck.connect()
    first = _read(con, table)
    (entry,) = cache_dir.glob("*.logrows.parquet")
    fs = lazy.LazySliceFileSystem()
    keys = [k for k, job in lazy.REGISTRY.jobs.items() if job.logrows_file == str(entry)]
    assert len(keys) == 1
    path = f"{lazy.PROTOCOL}://{keys[0]}/token/rows.parquet"
    before = fs.modified(path)
    assert before.timestamp() == pytest.approx(entry.stat().st_mtime, abs=1e-5)
    _damage_and_read_again(con, table, entry, first, materialized)
    after = fs.modified(path)
    assert after != before and after.timestamp() == pytest.approx(entry.stat().st_mtime, abs=1e-5)


def test_a_row_whose_partition_column_differs_from_its_folder(table, cache_dir, tmp_path):
    """Values from the folders are checked for whole merged slices as for scanned base files."""
    path = str(tmp_path / "changed")
    shutil.copytree(table, path)
    file = sorted(glob.glob(f"{path}/city=ber/*.parquet"))[0]
    original = pq.read_table(file)
    column = original.schema.get_field_index("city")
    changed = original.set_column(column, "city", pa.array(["zzz"] * original.num_rows, original.schema.field(column).type))
    pq.write_table(changed, file)
    record_base_file_size(path, os.path.basename(file), os.path.getsize(file))
    con = hudi_duck.connect()
    with pytest.raises(Exception, match="extract_partition_values_from_path := false"):
        _read(con, path, extract_partition_values_from_path=True)
    stored = _read(con, path, "city, id", extract_partition_values_from_path=False)
    expected = hudi_rs_read(path)
    assert not diff_rows(stored, expected.select(["city", "id"]))
    assert "zzz" in stored.column("city").to_pylist()



def test_a_new_commit_merges_again(small_spark, table, cache_dir, materialized, tmp_path):
    path = str(tmp_path / "grown")
    shutil.copytree(table, path)
    con = hudi_duck.connect()
    before = _read(con, path)
    assert len(materialized) == 1
    assert not diff_rows(_read(con, path), before) and len(materialized) == 1
    _write(small_spark, path, [(*_row(k, 20, 500.0 + k), "new") for k in (2, 5)], "upsert", EVOLVED_DDL)
    after = _read(con, path)
    assert len(materialized) == 2
    assert not diff_rows(after, hudi_rs_read(path))
    fares = dict(zip(after.column("id").to_pylist(), after.column("fare").to_pylist()))
    assert fares["k002"] == 502.0 and fares["k005"] == 505.0


def test_tables_behind_urls_batch_without_merging_whole(table, cache_dir, materialized):
    """The whole merge reads base files with its own DuckDB, which knows no storage options:
    tables behind URLs keep the merge that scans their base files in the query."""
    import fsspec

    fs = fsspec.filesystem("memory")
    root = "/whole_slices_test/t"
    if fs.exists(root):
        fs.rm(root, recursive=True)
    for folder, _, files in os.walk(table):
        for file_name in files:
            src = os.path.join(folder, file_name)
            with open(src, "rb") as handle:
                fs.pipe(f"{root}/{os.path.relpath(src, table)}", handle.read())
    con = hudi_duck.connect(filesystems=[fs])
    remote = _read(con, f"memory://{root}")
    states = [s for s in lazy.REGISTRY.plans.values() if s.plan is not None]
    assert states and all(not s.whole and len(s.jobs) < len(s.slices) for s in states)
    assert not materialized and not diff_rows(remote, hudi_rs_read(table))


def test_the_merge_budget_bounds_whole_jobs(table, cache_dir, materialized):
    """A job merged whole holds at most a quarter of the read's merge budget of base files: a smaller
    budget merges the slices in more jobs, and a budget of nothing merges none whole."""
    base_bytes = sum(os.path.getsize(f) for f in glob.glob(f"{table}/*/*.parquet"))
    con = hudi_duck.connect()
    expected = hudi_rs_read(table)
    budget = 4 * (base_bytes // 2)  # room for about half the base files per job
    got = _read(con, table, memory_merge_max_size=str(budget))
    (state,) = [s for s in lazy.REGISTRY.plans.values() if s.plan is not None]
    assert len(state.whole) >= 2 and len(materialized) == len(state.whole)
    assert all(sum(state.slices[k].base_file.size for k in state.jobs[j] if state.slices[k].base_file) <= budget // 4
               for j in state.whole)
    assert not diff_rows(got, expected)
    _forget_plans()
    got = _read(con, table, memory_merge_max_size="0")
    states = [s for s in lazy.REGISTRY.plans.values() if s.plan is not None and not s.whole]
    assert states and len(materialized) == len(state.whole) and not diff_rows(got, expected)
