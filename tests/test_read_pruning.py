"""Filters on partition columns never open files of other partitions (counted)."""

from __future__ import annotations

import threading

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

import hudi_duck
from hudi_duck.api import arrow_table
from oracle import canonical_rows, hudi_rs_read

OPENED: list[str] = []
_LOCK = threading.Lock()


class CountingFileSystem(LocalFileSystem):
    """The local filesystem under ``counting://``, recording every file opened."""

    protocol = "counting"
    root_marker = "/"

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, str) and path.startswith("counting://"):
            path = path[len("counting://") :]
        return LocalFileSystem._strip_protocol(path)

    def unstrip_protocol(self, name):
        return "counting://" + name

    def _open(self, path, mode="rb", **kwargs):
        with _LOCK:
            OPENED.append(str(path))
        return super()._open(path, mode, **kwargs)


fsspec.register_implementation("counting", CountingFileSystem, clobber=True)


@pytest.fixture(scope="module")
def con():
    connection = hudi_duck.connect(filesystems=[CountingFileSystem()])
    yield connection
    connection.close()


def data_files_opened(table_path: str) -> set[str]:
    """Relative paths of data files (base/log) opened below the table folder."""
    out = set()
    for path in OPENED:
        if path.startswith(table_path) and "/.hoodie" not in path:
            out.add(path[len(table_path) + 1 :])
    return out


def query(con, table: str, where: str):
    OPENED.clear()
    return arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('counting://{table}') WHERE {where}"))


@pytest.mark.parametrize(
    "fid, column, value, folder",
    [
        ("sample_table/cow/v6_simplekeygen_nonhivestyle", "byteField", 20, "20/"),
        ("sample_table/cow/v8_simplekeygen_nonhivestyle", "byteField", 30, "30/"),
        ("sample_table/cow/v9_txns_simple_meta", "region", "apac", "region=apac/"),
        ("quickstart_trips_table/mor/avro/v6_trips_8i1u", "city", "chennai", "city=chennai/"),
        ("quickstart_trips_table/mor/avro/v8_trips_8i3u1d", "city", "sao_paulo", "city=sao_paulo/"),
        ("sample_table/mor/avro/v9_txns_simple_meta", "region", "us", "region=us/"),
        ("sample_table/mor/parquet/v6_simplekeygen_nonhivestyle", "byteField", 10, "10/"),
    ],
)
def test_partition_filter_opens_only_that_partition(con, fixture_tables, fid, column, value, folder):
    path = fixture_tables[fid]
    literal = f"'{value}'" if isinstance(value, str) else str(value)
    ours = query(con, path, f"{column} = {literal}")
    opened = data_files_opened(path)
    assert opened, "the partition's own files must be read"
    assert all(p.startswith(folder) for p in opened), f"opened files of other partitions: {sorted(opened)}"
    theirs = hudi_rs_read(path)
    mask = [v == value for v in theirs.column(column).to_pylist()]
    assert canonical_rows(ours) == canonical_rows(theirs.filter(pa.array(mask)))


def test_nested_hive_partitions_prune_on_the_second_field(con, fixture_tables):
    path = fixture_tables["sample_table/cow/v6_complexkeygen_hivestyle"]
    ours = query(con, path, "shortField = 100")
    opened = data_files_opened(path)
    assert opened and all("/shortField=100/" in "/" + p for p in opened), sorted(opened)
    assert sorted(r["byteField"] for r in ours.to_pylist()) == [20, 30]


def test_without_a_filter_every_partition_is_read(con, fixture_tables):
    path = fixture_tables["quickstart_trips_table/mor/avro/v6_trips_8i1u"]
    rows = query(con, path, "true")
    opened = data_files_opened(path)
    assert {p.split("/")[0] for p in opened} == {"city=chennai", "city=san_francisco", "city=sao_paulo"}
    assert rows.num_rows == 8


def test_timestamp_keygen_table_reads_values_from_files(con, fixture_tables):
    """Partition paths of the timestamp-based key generator do not invert to the
    column's value; those files are read (no pruning) and values come from data."""
    path = fixture_tables["sample_table/cow/v6_timebasedkeygen_nonhivestyle"]
    ours = query(con, path, "ts_str IS NOT NULL")
    assert canonical_rows(ours) == canonical_rows(hudi_rs_read(path))
