"""What a process's first plan must not pay for: importing pandas (DuckDB imports it when an Arrow
table is registered or numpy is fetched, pyarrow when a schema makes an empty table: 0.3-0.4 s
where pandas is installed, as PySpark's extra installs it) or opening a DuckDB database of its own
(30-100 ms) to hash base file names."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import duckdb
import pytest

TRIPS_V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_pandas_is_installed_here():
    pytest.importorskip("pandas")  # (else the tests below would prove nothing; the test extra has it)


def test_base_file_hashes_import_no_pandas():
    names = ["/t/p=1/a.parquet", "/t/p=2/b.parquet", "s3://bucket/t/c.parquet"]
    got = _run(f"""
        import json, sys
        from hudi_duck.duck import lazy
        hashes = lazy.duckdb_hashes({names!r})
        print(json.dumps({{"pandas": "pandas" in sys.modules, "hashes": hashes}}))
    """)
    assert got["pandas"] is False
    expected = [duckdb.connect().execute("SELECT hash(?::VARCHAR)", [n]).fetchone()[0] for n in names]
    assert got["hashes"] == expected  # what a query computes of a row's file name


def test_a_first_plan_imports_no_pandas(fresh_fixture, tmp_path):
    path = fresh_fixture(TRIPS_V6)
    got = _run(f"""
        import json, os, sys
        os.environ["HUDI_DUCK_CACHE_DIR"] = {str(tmp_path / "cache")!r}
        from hudi_duck.duck import planner
        sql = planner.plan_sql("snapshot", {path!r}, None, None, {{}})
        planner.clear_plan_cache()
        planner.plan_sql("read_optimized", {path!r}, None, None, {{}})
        print(json.dumps({{"pandas": "pandas" in sys.modules, "merged": "hudiduck://" in sql}}))
    """)
    assert got == {"pandas": False, "merged": True}


def test_hashes_come_from_the_users_database_and_survive_its_close():
    names = ["/t/a.parquet", "/t/b.parquet"]
    got = _run(f"""
        import json, duckdb, hudi_duck
        from hudi_duck.duck import lazy
        con = hudi_duck.connect()
        opened = []
        real = duckdb.connect
        duckdb.connect = lambda *a, **k: opened.append(1) or real(*a, **k)
        first = lazy.duckdb_hashes({names[:1]!r})
        opened_before_close = len(opened)
        con.close()
        second = lazy.duckdb_hashes({names!r})
        print(json.dumps({{"first": first, "second": second, "opened": [opened_before_close, len(opened)]}}))
    """)
    expected = [duckdb.connect().execute("SELECT hash(?::VARCHAR)", [n]).fetchone()[0] for n in names]
    assert got["first"] == expected[:1] and got["second"] == expected
    assert got["opened"] == [0, 1]  # none while the connection lived; one after it was closed
