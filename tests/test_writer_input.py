"""Writer input Hudi refuses is refused before an instant starts; overwrite replaces a plain folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import hudi_duck
from hudi_duck.core.errors import WriteError

DDL = "id string, ts long, p string, n int, s string, l long"


def _options(table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    o = {
        "hoodie.table.name": "input_t",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
    }
    o.update(extra)
    return o


def _rows(n: int = 4, start: int = 0) -> list[tuple]:
    return [(f"k{i}", 1000 + i, f"p{i % 2}", i, f"s{i}", 10**10 + i) for i in range(start, start + n)]


def _files(path: str) -> list[str]:
    root = Path(path)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _snapshot(path: str) -> list[tuple]:
    table = hudi_duck.read_snapshot(path).read_all()
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "ts", "n", "s", "l"))))


@pytest.fixture(params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def seeded(request, small_spark, tmp_path):
    import spark_writer

    path = str(tmp_path / "t")
    spark_writer.write(small_spark.createDataFrame(_rows(), DDL), path, _options(request.param))
    return path, request.param


@pytest.mark.parametrize(
    "column, cast, table_type_name, incoming_name",
    [("n", "string", "int", "string"), ("s", "int", "string", "int"), ("l", "int", "long", "int")],
)
def test_incompatible_type_change_is_refused_before_an_instant(small_spark, seeded, column, cast, table_type_name, incoming_name):
    import pyspark.sql.functions as F
    import spark_writer

    path, table_type = seeded
    before_files, before_rows = _files(path), _snapshot(path)
    df = small_spark.createDataFrame(_rows(2, start=10), DDL).withColumn(column, F.col(column).cast(cast))
    with pytest.raises(WriteError) as info:
        spark_writer.write(df, path, _options(table_type))
    text = str(info.value)
    assert f"column {column}" in text and f"table's type is {table_type_name}" in text, text
    assert f"incoming data's is {incoming_name}" in text, text
    assert _files(path) == before_files  # no instant, no rollback
    assert _snapshot(path) == before_rows


def test_narrower_values_are_written_in_the_table_type_when_reconciled(small_spark, seeded):
    import pyarrow as pa
    import pyspark.sql.functions as F
    import spark_writer

    path, table_type = seeded
    df = small_spark.createDataFrame(_rows(1, start=20), DDL).withColumn("l", F.lit(7).cast("int"))
    spark_writer.write(df, path, _options(table_type, **{"hoodie.datasource.write.reconcile.schema": "true"}))
    table = hudi_duck.read_snapshot(path).read_all()
    assert table.schema.field("l").type == pa.int64()
    values = dict(zip(table.column("id").to_pylist(), table.column("l").to_pylist()))
    assert values["k20"] == 7 and values["k0"] == 10**10


def test_widening_is_allowed(small_spark, seeded):
    import pyarrow as pa
    import pyspark.sql.functions as F
    import spark_writer

    path, table_type = seeded
    df = small_spark.createDataFrame(_rows(1, start=30), DDL).withColumn("n", F.lit(2**40).cast("long"))
    spark_writer.write(df, path, _options(table_type))
    table = hudi_duck.read_snapshot(path).read_all()
    assert table.schema.field("n").type == pa.int64()
    assert dict(zip(table.column("id").to_pylist(), table.column("n").to_pylist()))["k30"] == 2**40


@pytest.mark.parametrize("bad_key", [None, ""])
def test_null_record_key_is_refused_before_an_instant(small_spark, seeded, bad_key):
    import spark_writer

    path, table_type = seeded
    before_files, before_rows = _files(path), _snapshot(path)
    rows = _rows(3, start=40) + [(bad_key, 1, "p0", 1, "x", 1)]
    with pytest.raises(WriteError) as info:
        spark_writer.write(small_spark.createDataFrame(rows, DDL), path, _options(table_type))
    text = str(info.value)
    assert "record key" in text and "id" in text and "cannot be null or empty" in text, text
    assert _files(path) == before_files  # no requested/inflight instant, no rollback files
    assert _snapshot(path) == before_rows


def test_null_record_key_into_a_new_table_creates_nothing(small_spark, tmp_path):
    import spark_writer

    path = tmp_path / "new"
    rows = _rows(2) + [(None, 1, "p0", 1, "x", 1)]
    with pytest.raises(WriteError):
        spark_writer.write(small_spark.createDataFrame(rows, DDL), str(path), _options())
    assert not path.exists() or not any(path.iterdir())


def test_complex_key_with_some_null_fields_is_written(small_spark, tmp_path):
    """Hudi's complex key generator writes ``__null__`` for a null part; only all-null keys are refused."""
    import spark_writer

    path = str(tmp_path / "complex")
    opts = _options(**{"hoodie.datasource.write.recordkey.field": "id,s"})
    rows = [("a", 1, "p0", 1, None, 1), ("b", 1, "p0", 1, "x", 1)]
    spark_writer.write(small_spark.createDataFrame(rows, DDL), path, opts)
    keys = sorted(hudi_duck.read_snapshot(path).read_all().column("_hoodie_record_key").to_pylist())
    assert keys == ["id:a,s:__null__", "id:b,s:x"]
    before = _files(path)
    with pytest.raises(WriteError, match="entirely null or empty"):
        spark_writer.write(small_spark.createDataFrame([(None, 1, "p0", 1, None, 1)], DDL), path, opts)
    assert _files(path) == before


def test_overwrite_replaces_a_plain_parquet_folder(small_spark, tmp_path):
    import spark_writer

    path = str(tmp_path / "plain")
    small_spark.createDataFrame(_rows(6, start=100), DDL).write.parquet(path)
    assert any(name.startswith("part-") for name in os.listdir(path))
    spark_writer.write(small_spark.createDataFrame(_rows(3), DDL), path, _options(), mode="overwrite")
    leftovers = [f for f in _files(path) if "part-" in f or f.endswith("_SUCCESS")]
    assert leftovers == []
    assert [r[0] for r in _snapshot(path)] == ["k0", "k1", "k2"]


def test_refused_overwrite_leaves_a_plain_folder_alone(small_spark, tmp_path):
    import spark_writer

    path = str(tmp_path / "plain")
    small_spark.createDataFrame(_rows(2), DDL).write.parquet(path)
    before = _files(path)
    rows = [(None, 1, "p0", 1, "x", 1)]
    with pytest.raises(WriteError):
        spark_writer.write(small_spark.createDataFrame(rows, DDL), path, _options(), mode="overwrite")
    assert _files(path) == before
