"""bulk_insert: every sort mode, with and without combining duplicates, read back by us and hudi-rs."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest

from hudi_duck.api import arrow_table
from oracle import canonical_rows, hudi_rs_read

pytest.importorskip("pyspark")

ROWS = [(f"k{i % 40:02d}", i, f"p{i % 40 % 3}", f"v{i}") for i in range(100)]  # 40 keys, duplicates inside the batch
COLUMNS = ["id", "ts", "p", "v"]


def options(**extra: str) -> dict[str, str]:
    o = {
        "hoodie.table.name": "bulk",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "bulk_insert",
        "hoodie.bulkinsert.shuffle.parallelism": "2",
    }
    o.update(extra)
    return o


def expected(combine: bool) -> Counter:
    rows = ROWS
    if combine:
        best: dict[str, tuple] = {}
        for r in ROWS:
            if r[0] not in best or r[1] > best[r[0]][1]:
                best[r[0]] = r
        rows = list(best.values())
    return Counter((r[0], r[2], *r) for r in rows)  # record key, partition path (plain), data


def read_back(con, path: str) -> tuple[Counter, Counter]:
    cols = ["_hoodie_record_key", "_hoodie_partition_path"] + COLUMNS
    ours = canonical_rows(arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{path}')")), cols)
    theirs = canonical_rows(hudi_rs_read(path), cols)
    return ours, theirs


@pytest.mark.parametrize("mode", ["NONE", "GLOBAL_SORT", "PARTITION_SORT", "PARTITION_PATH_REPARTITION"])
@pytest.mark.parametrize("combine", [False, True], ids=["keep-duplicates", "combine"])
def test_bulk_insert_modes(spark, con, tmp_path, mode, combine):
    import spark_writer

    path = str(tmp_path / f"t_{mode}_{combine}")
    df = spark.createDataFrame(ROWS, "id string, ts long, p string, v string")
    opts = options(**{"hoodie.bulkinsert.sort.mode": mode, "hoodie.combine.before.insert": str(combine).lower()})
    result = spark_writer.write(df, path, opts, mode="overwrite")
    want = expected(combine)
    assert result.num_inserts == sum(want.values())
    ours, theirs = read_back(con, path)
    assert ours == want
    assert theirs == want
    if mode in ("GLOBAL_SORT", "PARTITION_SORT"):
        # records sorted by (partition path, record key) inside every base file
        for f in result_files(path):
            keys = pq.read_table(f, columns=["_hoodie_record_key"]).column(0).to_pylist()
            assert keys == sorted(keys), f


def result_files(path: str) -> list[str]:
    from pathlib import Path

    return [str(f) for f in Path(path).rglob("*.parquet")]
