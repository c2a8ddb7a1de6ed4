"""Tables behind any fsspec URL read exactly like local ones (here: ``memory://``)."""

from __future__ import annotations

import os

import fsspec
import pytest

import hudi_duck
from hudi_duck.api import arrow_table
from oracle import diff_rows

CASES = [
    "sample_table/cow/v6_complexkeygen_hivestyle",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
]


def _copy_to_memory(local: str, name: str) -> str:
    fs = fsspec.filesystem("memory")
    root = f"/fsspec_tests/{name}"
    if fs.exists(root):
        fs.rm(root, recursive=True)
    for folder, _, files in os.walk(local):
        for file_name in files:
            src = os.path.join(folder, file_name)
            rel = os.path.relpath(src, local)
            with open(src, "rb") as handle:
                fs.pipe(f"{root}/{rel}", handle.read())
    return f"memory://{root}"


@pytest.fixture(scope="module")
def con():
    connection = hudi_duck.connect(filesystems=[fsspec.filesystem("memory")])
    yield connection
    connection.close()


@pytest.mark.parametrize("fid", CASES)
def test_memory_url_reads_like_local(con, fixture_tables, fid):
    local = fixture_tables[fid]
    url = _copy_to_memory(local, fid.replace("/", "_"))
    for function in ("hudi_snapshot", "hudi_read_optimized", "hudi_incremental"):
        remote = arrow_table(con.sql(f"SELECT * FROM {function}('{url}')"))
        here = arrow_table(con.sql(f"SELECT * FROM {function}('{local}')"))
        assert remote.num_rows == here.num_rows
        assert not diff_rows(remote, here)


def test_python_api_reads_memory_urls(fixture_tables):
    local = fixture_tables[CASES[1]]
    url = _copy_to_memory(local, "api_case")
    reader = hudi_duck.read_snapshot(url, filesystems=[fsspec.filesystem("memory")])
    table = reader.read_all()
    assert table.num_rows == 6
    assert table.column_names[:5] == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    ]
