"""Tables without meta fields (hoodie.populate.meta.fields=false): keys come from the key generator."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest

from hudi_duck.api import arrow_table
from hudi_duck.core.errors import WriteError
from oracle import canonical_rows, hudi_rs_read

pytest.importorskip("pyspark")

COLUMNS = ["id", "region", "ts", "v"]


def options(table_type: str, operation: str, index: str = "SIMPLE") -> dict[str, str]:
    return {
        "hoodie.table.name": "virtual",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id,region",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.operation": operation,
        "hoodie.populate.meta.fields": "false",
        "hoodie.index.type": index,
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
    }


def check(con, path: str, model: dict) -> None:
    want = Counter(tuple(r) for r in model.values())
    ours = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{path}')"))
    assert "_hoodie_record_key" not in ours.column_names
    assert canonical_rows(ours, COLUMNS) == want
    assert canonical_rows(hudi_rs_read(path), COLUMNS) == want


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("index", ["SIMPLE", "GLOBAL_SIMPLE"])
def test_virtual_key_table_upserts_and_deletes(spark, con, tmp_path, table_type, index):
    import spark_writer

    path = str(tmp_path / "t")
    schema = "id string, region string, ts long, v string"
    model: dict[tuple, list] = {}

    def write(rows, operation):
        spark_writer.write(spark.createDataFrame(rows, schema), path, options(table_type, operation, index))

    first = [(f"k{i}", ["eu", "us"][i % 2], 1, f"a{i}") for i in range(10)]
    write(first, "insert")
    model.update({(r[0], r[1]): list(r) for r in first})
    check(con, path, model)
    for f in (tmp_path / "t").rglob("*.parquet"):  # meta columns exist (Hudi's schema) but stay empty
        assert pq.read_table(f, columns=["_hoodie_record_key"]).column(0).null_count == 10 // 2

    second = [("k0", "eu", 2, "b0"), ("k3", "us", 0, "stale"), ("k10", "eu", 2, "b10"), ("k0", "eu", 3, "b0'")]
    write(second, "upsert")
    model[("k0", "eu")] = ["k0", "eu", 3, "b0'"]  # the batch collapses to the greatest ts
    model[("k3", "us")] = ["k3", "us", 0, "stale"]  # commit-time ordering across commits (Hudi's default payload)
    model[("k10", "eu")] = ["k10", "eu", 2, "b10"]
    check(con, path, model)

    write([("k1", "us", 9, "x"), ("k10", "eu", 9, "x")], "delete")
    del model[("k1", "us")], model[("k10", "eu")]
    check(con, path, model)

    write([("k2", "eu", 5, "c2")], "upsert")
    model[("k2", "eu")] = ["k2", "eu", 5, "c2"]
    check(con, path, model)

    # a table service rewrites file groups (COW: clustering; MOR: compaction merging with
    # keys derived from the data); a later update must still find its key
    opts = options(table_type, "upsert", index)
    if table_type == "COPY_ON_WRITE":
        assert spark_writer.cluster(spark, path, dict(opts, **{"hoodie.clustering.plan.strategy.sort.columns": "v"}))
    else:
        assert spark_writer.compact(spark, path, dict(opts, **{"hoodie.compact.inline.max.delta.commits": "1"}))
    check(con, path, model)
    write([("k4", "eu", 7, "d4")], "upsert")
    model[("k4", "eu")] = ["k4", "eu", 7, "d4"]
    check(con, path, model)


def test_virtual_keys_reject_bloom_and_generated_keys(spark, tmp_path):
    import spark_writer

    df = spark.createDataFrame([("k", "eu", 1, "a")], "id string, region string, ts long, v string")
    with pytest.raises(WriteError, match="populate.meta.fields=false use SIMPLE"):
        spark_writer.write(df, str(tmp_path / "a"), options("COPY_ON_WRITE", "upsert", "BLOOM"))
    opts = options("COPY_ON_WRITE", "insert")
    del opts["hoodie.datasource.write.recordkey.field"]
    with pytest.raises(WriteError, match="needs hoodie.datasource.write.recordkey.field"):
        spark_writer.write(df, str(tmp_path / "b"), opts)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
