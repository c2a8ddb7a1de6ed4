"""How many Spark tasks write the file groups of an upsert (each task writes its buckets in turn)."""

from __future__ import annotations

import os

import pytest

from spark_writer.client import write_tasks

PARTITIONS = 12


def test_write_tasks_rule():
    assert write_tasks(763, 0, 2) == 4  # twice the cores, not one task per bucket
    assert write_tasks(3, 0, 2) == 3  # never more tasks than buckets
    assert write_tasks(763, 10, 2) == 10  # hoodie.upsert.shuffle.parallelism caps them
    assert write_tasks(5, 10, 2) == 5
    assert write_tasks(0, 0, 2) == 1


def _options(operation: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "tasks",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "part",
        **extra,
    }


def _rows(ts: int) -> list[tuple[str, str, int, int]]:
    return [(f"k{p:02d}-{i}", f"p{p:02d}", ts, ts * 100 + p) for p in range(PARTITIONS) for i in range(2)]


def _log_tokens(path: str) -> dict[str, str]:
    """Write token (``task-stage-attempt``) of every log file of ``instant``'s write, by file group."""
    tokens = {}
    for root, _, files in os.walk(path):
        if ".hoodie" in root:
            continue
        for name in files:
            if ".log." in name:
                file_id, rest = name[1:].split("_", 1)
                tokens[file_id + "/" + rest.split(".log.")[0]] = name.rsplit("_", 1)[1]
    return tokens


@pytest.mark.parametrize("parallelism", [None, 1])
def test_upsert_of_many_file_groups_runs_in_few_tasks(small_spark, con, tmp_path, parallelism):
    import spark_writer

    path = str(tmp_path / "t")
    schema = "id string not null, part string not null, ts long not null, v long not null"
    spark_writer.write(small_spark.createDataFrame(_rows(1), schema), path, _options("bulk_insert"))
    extra = {} if parallelism is None else {"hoodie.upsert.shuffle.parallelism": str(parallelism)}
    updates = small_spark.createDataFrame([r for r in _rows(2) if r[0].endswith("-0")], schema)
    result = spark_writer.write(updates, path, _options("upsert", **extra))
    assert result.num_updates == PARTITIONS and result.files_written == PARTITIONS

    tokens = list(_log_tokens(path).values())
    assert len(tokens) == PARTITIONS
    tasks = {int(t.split("-")[0]) for t in tokens}
    limit = write_tasks(PARTITIONS, parallelism or 0, small_spark.sparkContext.defaultParallelism)
    assert limit < PARTITIONS
    assert len(tasks) <= limit and max(tasks) < limit
    if parallelism == 1:
        assert tasks == {0}
    # every update landed where it belongs
    got = sorted(con.sql(f"SELECT id, ts, v FROM hudi_snapshot('{path}') ORDER BY id").fetchall())
    want = sorted((k, 2 if k.endswith("-0") else 1, (2 if k.endswith("-0") else 1) * 100 + int(p[1:]))
                  for k, p, _, _ in _rows(1))
    assert got == want
