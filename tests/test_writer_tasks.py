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


def test_buckets_go_to_tasks_in_runs_balanced_by_records():
    from spark_writer.partitioner import Bucket, WorkloadPlan

    plan = WorkloadPlan([Bucket(i, "append", f"p{i}", num_updates=n) for i, n in enumerate([100, 1, 1, 1, 1, 100])])
    tasks = plan.task_of_buckets(2)
    assert [tasks[i] for i in range(6)] == [0, 0, 0, 1, 1, 1]  # consecutive buckets, half of the records each
    even = WorkloadPlan([Bucket(i, "create", "p", num_inserts=5) for i in range(8)]).task_of_buckets(4)
    assert [even[i] for i in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    one = WorkloadPlan([Bucket(i, "create", "p") for i in range(3)]).task_of_buckets(1)
    assert set(one.values()) == {0}
    big = WorkloadPlan([Bucket(0, "merge", "p", num_updates=1000), Bucket(1, "create", "p", num_inserts=1)]).task_of_buckets(2)
    assert big == {0: 0, 1: 1}  # never more than the tasks there are


def test_input_check_lists_partitions_only_of_repeatable_input(small_spark):
    """The check of the input lists the records' partition paths for locating them; an input
    that reads differently each time (``rand()``) has them listed from the records tagged."""
    from pyspark.sql import functions as F

    from spark_writer import prepare
    from spark_writer.config import parse_options

    cfg = parse_options(_options("upsert"))
    frame = small_spark.createDataFrame(_rows(1), "id string, part string, ts long, v long")
    checked = prepare.refuse_unwritable_records(frame, cfg, "upsert", True, "/t")
    assert checked.partitions == [f"p{p:02d}" for p in range(PARTITIONS)]
    assert checked.key_filter is None  # not asked for
    drawn = frame.withColumn("part", F.concat(F.lit("p"), (F.rand() * 3).cast("int").cast("string")))
    assert prepare.refuse_unwritable_records(drawn, cfg, "upsert", True, "/t") is None
    assert prepare.refuse_unwritable_records(drawn, cfg, "upsert", True, "/t", key_filter=True) is None


def test_small_inputs_are_keyed_in_no_more_tasks_than_cores():
    from spark_writer.prepare import ROWS_PER_INPUT_TASK, input_tasks

    assert input_tasks(10_000, 2) == 2  # a micro-batch from a 16-partition source (coalesced: never more than it has)
    assert input_tasks(0, 2) == 2
    assert input_tasks(10 * ROWS_PER_INPUT_TASK, 2) == 10  # enough rows: more tasks than cores
    assert input_tasks(10_000, 64) == 64  # a cluster's cores


def test_input_check_counts_rows_and_tasks(small_spark):
    from spark_writer import prepare
    from spark_writer.config import parse_options

    cores = small_spark.sparkContext.defaultParallelism
    for partitions in (cores - 1, cores + 3):
        frame = small_spark.createDataFrame(_rows(1), "id string, part string, ts long, v long").repartition(partitions)
        checked = prepare.refuse_unwritable_records(frame, parse_options(_options("upsert")), "upsert", True, "/t")
        assert (checked.rows, checked.tasks) == (len(_rows(1)), min(partitions, cores))


def test_the_input_check_runs_no_job_of_its_own_before_it(small_spark):
    """The check reads an input with shuffles (an adaptive plan) once: nothing asks Spark for its
    partitions first, which would run those shuffles in jobs of their own."""
    from pyspark.sql import functions as F

    from spark_writer import prepare
    from spark_writer.config import parse_options

    rows = small_spark.createDataFrame(_rows(1), "id string, part string, ts long, v long")
    shuffled = rows.groupBy("id", "part").agg(F.max("ts").alias("ts"), F.max("v").alias("v"))
    tracker = small_spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    checked = prepare.refuse_unwritable_records(shuffled, parse_options(_options("upsert")), "upsert", True, "/t")
    assert checked is not None and checked.rows == len(_rows(1))
    jobs = sorted(set(tracker.getJobIdsForGroup(None)) - before)
    # every job (the aggregation's shuffle stage and the check's result) is the check's own query
    names = [tracker.getStageInfo(stage).name for job in jobs for stage in tracker.getJobInfo(job).stageIds]
    assert jobs and all("prepare.py" in name for name in names), names


def test_upsert_of_a_small_many_partition_input_keys_it_in_few_tasks(small_spark, con, tmp_path):
    """Checking, keying and locating the records of a small input in 16 partitions run in no
    more tasks than cores: none runs a task per input partition."""
    import spark_writer

    path = str(tmp_path / "t")
    schema = "id string not null, part string not null, ts long not null, v long not null"
    spark_writer.write(small_spark.createDataFrame(_rows(1), schema), path, _options("bulk_insert"))
    updates = small_spark.createDataFrame(_rows(2), schema).repartition(16)
    tracker = small_spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    spark_writer.write(updates, path, _options("upsert"))
    stages = [
        tracker.getStageInfo(stage)
        for job in sorted(set(tracker.getJobIdsForGroup(None)) - before)
        for stage in tracker.getJobInfo(job).stageIds
    ]
    cores = small_spark.sparkContext.defaultParallelism
    assert cores < 16
    assert not [s.name for s in stages if s is not None and s.numTasks == 16]
    checks = [s for s in stages if s is not None and "prepare.py" in s.name]
    assert checks and all(s.numTasks <= cores for s in checks), [(s.name, s.numTasks) for s in checks]
    got = sorted(con.sql(f"SELECT id, ts FROM hudi_snapshot('{path}')").fetchall())
    assert got == sorted((k, 2) for k, _, _, _ in _rows(1))


@pytest.mark.parametrize("cached", [False, True])
def test_ties_go_to_the_later_record_of_the_input_when_its_partitions_merge(small_spark, con, tmp_path, cached):
    """A key's records with equal ordering values: the later one in the input wins, also when the
    input is keyed in fewer tasks than it has partitions (a coalesce of cached partitions groups
    them out of order). Every pair of the 16 input partitions shares a key, one record in each."""
    from pyspark.sql import functions as F

    import spark_writer

    path = str(tmp_path / "t")
    schema = "id string not null, part string not null, ts long not null, v long not null"
    spark_writer.write(small_spark.createDataFrame(_rows(1), schema), path, _options("bulk_insert"))
    here, other = F.col("id"), F.explode(F.sequence(F.lit(0), F.lit(15))).alias("other")
    ties = (
        small_spark.range(0, 16, 1, 16)
        .select(here, other)
        .where(F.col("other") != here)
        .select(
            F.format_string("pair-%02d-%02d", F.least(here, F.col("other")), F.greatest(here, F.col("other"))).alias("id"),
            F.lit("p00").alias("part"),
            F.lit(5).cast("long").alias("ts"),
            here.alias("v"),  # the input partition the record is in
        )
    )
    if cached:
        ties = ties.cache()
        ties.count()
    spark_writer.write(ties, path, _options("upsert"))
    got = con.sql(f"SELECT id, v FROM hudi_snapshot('{path}') WHERE id LIKE 'pair-%' ORDER BY id").fetchall()
    assert got == [(f"pair-{i:02d}-{j:02d}", j) for i in range(16) for j in range(i + 1, 16)]


def test_input_check_filters_the_keys_it_saw(small_spark):
    """Asked for, the check of the input returns a filter holding every record key it keyed,
    and few others: the simple index hands Spark only base-file keys the filter may hold."""
    import pyarrow as pa

    from spark_writer import index, prepare
    from spark_writer.config import parse_options

    cfg = parse_options(_options("upsert"))
    assert index.uses_key_filter(cfg, "upsert") and index.uses_key_filter(cfg, "delete")
    assert not index.uses_key_filter(cfg, "insert") and not index.uses_key_filter(cfg, "bulk_insert")
    assert not index.uses_key_filter(parse_options(_options("upsert", **{"hoodie.index.type": "BLOOM"})), "upsert")
    frame = small_spark.createDataFrame(_rows(1), "id string, part string, ts long, v long").repartition(3)
    checked = prepare.refuse_unwritable_records(frame, cfg, "upsert", True, "/t", key_filter=True)
    keys = [row[0] for row in _rows(1)]
    assert checked.key_filter.might_contain(pa.array(keys)).all()
    others = pa.array([f"other-{i}" for i in range(10_000)])
    assert checked.key_filter.might_contain(others).sum() < 50


def _table_and_drifting_input(small_spark, con, tmp_path, column: str, first: tuple, later: str, **extra: str):
    """A written table (its rows read back, its delta commits) and a one-row input whose ``column``
    is ``first``'s value on the first read of the input and ``later`` on every read after (a UDF over
    outside state: Spark takes Python UDFs as deterministic)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    import spark_writer

    path = str(tmp_path / "t")
    schema = "id string not null, part string not null, ts long not null, v long not null"
    spark_writer.write(small_spark.createDataFrame(_rows(1), schema), path, _options("bulk_insert", **extra))
    before = sorted(con.sql(f"SELECT id, part, ts, v FROM hudi_snapshot('{path}')").fetchall())
    commits = sorted(n for n in os.listdir(os.path.join(path, ".hoodie")) if n.endswith(".deltacommit"))
    marker = str(tmp_path / "read-once")

    def drifting(value):  # no type hints: pyspark would take them for a pandas UDF's
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            return value
        except FileExistsError:
            return later

    udf = F.udf(drifting, T.StringType())
    return path, before, commits, small_spark.createDataFrame([first], schema).withColumn(column, udf(column))


def _unchanged(con, path: str, before: list, commits: list) -> bool:
    rows = sorted(con.sql(f"SELECT id, part, ts, v FROM hudi_snapshot('{path}')").fetchall())
    return rows == before and sorted(n for n in os.listdir(os.path.join(path, ".hoodie")) if n.endswith(".deltacommit")) == commits


def test_input_whose_keys_change_between_reads_is_refused_before_writing(small_spark, con, tmp_path):
    """The simple index reads only base-file keys the input's check saw. An input that gives
    another key when read again (here: a key the table has) would have that key written as new,
    a duplicate. The records' keys are checked against the filter before any file is written."""
    import spark_writer
    from hudi_duck.core.errors import WriteError

    path, before, commits, updates = _table_and_drifting_input(
        small_spark, con, tmp_path, "id", ("new-key", "p00", 2, 7), later="k00-0"
    )
    with pytest.raises(WriteError, match=r"gave other records when read again \(1 record keys.*nothing was written"):
        spark_writer.write(updates, path, _options("upsert"))
    assert _unchanged(con, path, before, commits)


@pytest.mark.parametrize("index", ["SIMPLE", "BUCKET"])
def test_input_that_changes_between_reads_is_refused_before_writing(small_spark, con, tmp_path, index):
    """Locating looks only in the partitions the input's check listed. An input Spark calls
    deterministic that still reads differently (a UDF over outside state, a live source) would
    have records the index never looked for, written as new: duplicate keys. Refused instead.
    (The bucket index maps only the listed partitions' buckets: it reads the input once too.)"""
    import spark_writer
    from hudi_duck.core.errors import WriteError

    extra = {"hoodie.index.type": index, "hoodie.bucket.index.num.buckets": "4"}
    path, before, commits, updates = _table_and_drifting_input(
        small_spark, con, tmp_path, "part", _rows(2)[0], later="p11", **extra
    )
    with pytest.raises(WriteError, match=r"gave other records when read again.*'p11'.*nothing was written"):
        spark_writer.write(updates, path, _options("upsert", **extra))
    assert _unchanged(con, path, before, commits)


@pytest.mark.parametrize("enumerated", [True, False])
def test_bucket_index_writes_only_the_buckets_its_records_fall_in(small_spark, con, tmp_path, monkeypatch, enumerated):
    """The bucket index maps every bucket of the input's partitions (or, for a map that would be
    too large, the pairs its records fall in): either way each record lands in its key's bucket,
    a later write finds the same file groups, and no file group is made for an empty bucket."""
    import spark_writer
    from hudi_duck.core.index.bucket import bucket_id, bucket_of_file_id
    from spark_writer import index

    if not enumerated:
        monkeypatch.setattr(index, "ENUMERATED_BUCKET_PAIRS", 0)
    path = str(tmp_path / "t")
    schema = "id string not null, part string not null, ts long not null, v long not null"
    extra = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "64"}
    rows = [(f"key-{i}", f"p{i % 2}", 1, i) for i in range(6)]
    spark_writer.write(small_spark.createDataFrame(rows, schema), path, _options("bulk_insert", **extra))
    spark_writer.write(small_spark.createDataFrame([(k, p, 2, v + 100) for k, p, _, v in rows], schema), path, _options("upsert", **extra))
    located = con.sql(
        f"SELECT _hoodie_record_key, _hoodie_partition_path, _hoodie_file_name, v FROM hudi_snapshot('{path}') ORDER BY 1"
    ).fetchall()
    assert [(k, p, v) for k, p, _, v in located] == [(k, p, v + 100) for k, p, _, v in sorted(rows)]
    for key, _, file_name, _ in located:
        assert bucket_of_file_id(file_name.split("_")[0].lstrip(".")) == bucket_id(key, ["id"], 64)
    groups = {(p, name.split("_")[0].lstrip(".")) for _, p, name, _ in located}
    on_disk = {
        (part, name.split("_")[0].lstrip("."))
        for part in ("p0", "p1")
        for name in os.listdir(os.path.join(path, part))
        if not name.startswith(".hoodie_partition_metadata")
    }
    assert on_disk == groups and len(groups) == len({(p, bucket_id(k, ["id"], 64)) for k, p, _, _ in rows})


@pytest.mark.parametrize("spark_before_4_1", [False, True])
def test_rows_reach_the_task_of_their_bucket(small_spark, spark_before_4_1):
    """Every row of a task number lands in one Spark partition, with ``repartitionById`` and with the
    range partitioning Spark releases before 4.1 offer instead."""
    from pyspark.sql import functions as F

    from spark_writer.client import _TASK, _to_tasks

    frame = small_spark.range(200).withColumn(_TASK, (F.col("id") % 3).cast("int"))

    class Before41:  # a DataFrame of a Spark without repartitionById
        def repartitionByRange(self, tasks, column):
            return frame.repartitionByRange(tasks, column)

    moved = _to_tasks(Before41() if spark_before_4_1 else frame, 3)
    placed = moved.select(_TASK, F.spark_partition_id().alias("pid")).distinct().collect()
    by_task: dict[int, set[int]] = {}
    for row in placed:
        by_task.setdefault(row[_TASK], set()).add(row["pid"])
    assert sorted(by_task) == [0, 1, 2] and all(len(p) == 1 for p in by_task.values())
    if not spark_before_4_1:
        assert by_task == {0: {0}, 1: {1}, 2: {2}}  # the task number is the partition
