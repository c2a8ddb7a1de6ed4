"""The metadata table's index records come from the Spark write tasks, not from the driver
reading the files back.

* a spy on the driver's storage reads shows no written data file is opened for them, and
  the driver-side builders (``commit_column_stats_records``, ``commit_record_index_update``)
  are never called;
* at every commit the records the tasks produced equal, byte for byte, what the driver
  path builds from the written files at that moment (COW and MOR, inserts, updates,
  deletes, partitioned and not, many column types, Avro and parquet log blocks); the
  record-index log files Spark tasks wrote are byte for byte the files the driver path
  writes for the same changes, in the same file groups;
* the tables read the same through the metadata table, from a listing and with hudi-rs,
  and the record index equals the model of the latest file slices;
* the same holds for table services, inline after a write and standalone: a compaction's
  column stats come from its tasks' footers (it moves no key: no record-index change), a
  clustering's column stats and record-index changes (every key it rewrote, now in a new
  file group) from its tasks, and the driver opens neither the files they wrote nor the
  file groups a clustering replaced.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pytest

import spark_writer
from hudi_duck.api import read_snapshot
from hudi_duck.core.metadata import indexes, writer
from hudi_duck.core.metadata.files_reader import MetadataTable as MetadataReader
from hudi_duck.core.config.table_config import TableConfig
from hudi_duck.core.errors import WriteError
from hudi_duck.core.file_group.reader import read_slice
from hudi_duck.core.metadata.layout import COLUMN_STATS, RECORD_INDEX, file_group_id, file_group_index, records_by_file_group
from hudi_duck.core.metadata.records import encode_value, record_location
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.read_plan import plan_snapshot
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.active import Timeline
from hudi_duck.core.timeline.commit_metadata import CommitMetadata
from mdt_options import mdt_test_options
from oracle import canonical_rows, hudi_rs_read

pyspark = pytest.importorskip("pyspark")

DDL = "id string, p string, v int, ts long, f float, d double, b boolean, dec decimal(12,3), day date, at timestamp, bin binary"
COLUMNS = ["id", "p", "v", "ts", "f", "d", "b", "dec", "day", "at", "bin"]
INDEXES = {
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.record.index.min.filegroup.count": "3",
    "hoodie.metadata.record.index.max.filegroup.count": "3",
}


def _row(rng: random.Random, key: str, ts: int) -> tuple:
    nothing = rng.random() < 0.2
    return (
        key,
        "abc"[sum(map(ord, key)) % 3],
        None if nothing else rng.randint(-1000, 1000),
        ts,
        None if nothing else rng.uniform(-5, 5),
        rng.uniform(-1e6, 1e6),
        rng.random() < 0.5,
        None if nothing else decimal.Decimal(rng.randint(-10**8, 10**8)).scaleb(-3),
        dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 2000)),
        None if nothing else dt.datetime(2021, 1, 1) + dt.timedelta(seconds=rng.randint(0, 10**8), microseconds=rng.randint(0, 999999)),
        bytes(rng.randrange(256) for _ in range(rng.randint(0, 6))),
    )


class _Twin:
    """Checks, at every data commit, the tasks' index records against the driver path's."""

    def __init__(self, tmp_path) -> None:
        self.checked_column_stats = 0
        self.checked_record_index = 0
        self.record_index_files = 0
        self.scratch = tmp_path / "scratch"
        #: (operation type, whether the tasks' record index was compared) of every commit checked
        self.operations: list[tuple[str, bool]] = []

    def install(self, monkeypatch) -> None:
        original = writer.MetadataParticipant.prepare_commit
        twin = self

        def prepare_commit(participant, transaction, metadata):
            expected = None
            if isinstance(metadata, CommitMetadata) and participant.written is not None:
                twin.compare(participant, transaction.requested_time, metadata)
                expected = twin.driver_record_index(participant, transaction.requested_time, metadata)
            result = original(participant, transaction, metadata)
            if expected is not None:
                twin.compare_record_index(participant, transaction.requested_time, expected)
            if isinstance(metadata, CommitMetadata) and participant.written is not None:
                twin.operations.append((metadata.operation_type, expected is not None))
            return result

        monkeypatch.setattr(writer.MetadataParticipant, "prepare_commit", prepare_commit)

    def compare(self, participant, instant_time: str, metadata: CommitMetadata) -> None:
        storage = participant.table.storage
        if participant.indexes.column_stats:
            columns = writer.index_columns(storage, participant.table.data_config(), participant.indexes, metadata)
            expected = indexes.commit_column_stats_records(storage, metadata, instant_time, columns)
            got = participant._written_column_stats(columns, metadata)
            assert got is not None, "the tasks' column stats were not used"
            assert [(r.key, encode_value(r)) for r in got] == [(r.key, encode_value(r)) for r in expected]
            self.checked_column_stats += 1

    def driver_record_index(self, participant, instant_time: str, metadata: CommitMetadata):
        """What the driver path writes into each record-index file group for this commit."""
        if not participant._record_index_by_engine(metadata):
            return None
        storage = participant.table.storage
        reader = MetadataReader(storage)
        update = indexes.commit_record_index_update(
            storage, HudiTable(storage.base_uri), metadata, instant_time, lambda keys: indexes.lookup_record_index(reader, keys)
        )
        count = len(reader.view.latest_slices(partitions=[RECORD_INDEX.name]))
        upserts = records_by_file_group(update.upserts, RECORD_INDEX, count)
        deletes: dict[str, list[str]] = {}
        for key in update.deletes:
            deletes.setdefault(file_group_id(RECORD_INDEX, file_group_index(key, count)), []).append(key)
        return {f: (upserts.get(f, []), deletes.get(f, [])) for f in set(upserts) | set(deletes)}

    def compare_record_index(self, participant, instant_time: str, expected) -> None:
        mdt = participant.table.mdt
        timeline = Timeline.load(mdt, TableConfig.load(mdt))
        delta = next(i for i in timeline.completed() if i.requested_time == instant_time)
        stats = [s for s in timeline.commit_metadata(delta).partition_to_write_stats.get(RECORD_INDEX.name) or ()]
        assert {s.file_id for s in stats} == set(expected)
        for stat in stats:
            target = writer.LogFileTarget(RECORD_INDEX.name, stat.file_id, stat.prev_commit, stat.log_version, stat.base_file)
            assert target.file_name == stat.path.rsplit("/", 1)[-1]
            scratch = Storage(str(self.scratch / instant_time / stat.file_id))
            records, deletes = expected[stat.file_id]
            twin_stat = writer.write_log_file(scratch, target, instant_time, records, deletes)
            assert mdt.read(stat.path) == scratch.read(twin_stat.path)
            assert twin_stat.to_json_record() == stat.to_json_record()
            self.record_index_files += 1
        self.checked_record_index += 1


def _opts(name: str, table_type: str, partitioned: bool, **extra) -> dict:
    return mdt_test_options(name, table_type, partitioned, **{**INDEXES, **extra})


def _write(spark, path: str, rows: list[tuple], opts: dict, **overrides):
    df = spark.createDataFrame(rows, DDL)
    return spark_writer.write(df, path, {**opts, **{k: str(v) for k, v in overrides.items()}})


def _sequence(spark, path: str, opts: dict, seed: int) -> None:
    """Inserts, updates (with new keys and keys deleted before), deletes, then inserts again."""
    rng = random.Random(seed)
    ts = 0

    def rows(keys):
        nonlocal ts
        ts += 1
        return [_row(rng, k, ts) for k in keys]

    keys = [f"k{i:03d}" for i in range(60)]
    _write(spark, path, rows(keys), opts)
    deleted: list[str] = []
    for step in range(2):
        # keys deleted before come back (on MOR their base file still holds them)
        again = [k for k in rng.sample(keys, 12) if k not in deleted] + deleted
        _write(spark, path, rows(again + [f"n{step}{i}" for i in range(6)]), opts)
        live = sorted(read_snapshot(path, columns=["id"]).read_all().column("id").to_pylist())
        deleted = rng.sample(live, 4)
        _write(spark, path, rows(deleted), opts, **{"hoodie.datasource.write.operation": "delete"})
    _write(spark, path, rows([f"m{i}" for i in range(5)]), opts, **{"hoodie.datasource.write.operation": "insert"})


def _check_reads(path: str) -> None:
    """Reads agree, and the record index is the model of the latest file slices."""
    plan = plan_snapshot(HudiTable(path))
    model = {}
    for file_slice in plan.slices:
        for key in plan.context().keys(read_slice(plan.context(), file_slice)).to_pylist():
            model[key] = (file_slice.partition_path, file_slice.file_id)
    index, _ = MetadataReader(Storage(path)).records(RECORD_INDEX.name)
    assert {k: (record_location(r).partition_path, record_location(r).file_id) for k, r in index.items()} == model
    columns = ["_hoodie_record_key", "id", "p", "v", "ts", "d", "b", "day"]
    ours = canonical_rows(read_snapshot(path).read_all(), columns)
    assert canonical_rows(read_snapshot(path, metadata_enable=False).read_all(), columns) == ours
    assert canonical_rows(hudi_rs_read(path), columns) == ours


@pytest.mark.parametrize(
    "table_type,partitioned,block_format",
    [
        ("COPY_ON_WRITE", True, "avro"),
        ("COPY_ON_WRITE", False, "avro"),
        ("MERGE_ON_READ", True, "avro"),
        ("MERGE_ON_READ", False, "parquet"),
    ],
    ids=["cow-partitioned", "cow-nonpartitioned", "mor-partitioned", "mor-parquet-blocks"],
)
def test_task_index_records_equal_the_driver_path(small_spark, tmp_path, monkeypatch, table_type, partitioned, block_format):
    twin = _Twin(tmp_path)
    twin.install(monkeypatch)
    path = str(tmp_path / "t")
    opts = _opts("cs", table_type, partitioned, **{"hoodie.logfile.data.block.format": block_format})
    _sequence(small_spark, path, opts, seed=3 if partitioned else 5)
    assert twin.checked_column_stats == 6
    assert twin.checked_record_index == 6 and twin.record_index_files >= 10
    stats, _ = MetadataReader(Storage(path)).records(COLUMN_STATS.name)
    assert stats
    _check_reads(path)


def test_driver_reads_no_written_file_for_index_records(small_spark, tmp_path, monkeypatch):
    """The driver process opens none of the data files a write made (executors are other
    processes: the spy sees the driver's reads only)."""
    path = str(tmp_path / "t")
    opened, builders = _spy_driver_reads(monkeypatch)
    rng = random.Random(1)
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        target = f"{path}-{table_type}"
        opts = _opts("spy", table_type, True)
        _write(small_spark, target, [_row(rng, f"k{i}", 1) for i in range(30)], opts)
        opened.clear()
        results = [
            _write(small_spark, target, [_row(rng, f"k{i}", 2) for i in range(0, 30, 3)] + [_row(rng, "new", 2)], opts),
            _write(small_spark, target, [_row(rng, "k1", 3)], opts, **{"hoodie.datasource.write.operation": "delete"}),
        ]
        written = _data_files(target, [r.instant_time for r in results])
        assert written
        assert not [p for p in opened if any(p.endswith(w) for w in written)]
    assert builders == []


def _data_files(path: str, instants: list[str]) -> list[str]:
    from hudi_duck.core.table.table import HudiTable

    table = HudiTable(path)
    out = []
    for instant in table.timeline.completed():
        if instant.requested_time in instants:
            metadata = table.timeline.commit_metadata(instant)
            out += [s.path for stats in metadata.partition_to_write_stats.values() for s in stats or () if s.path]
    return out


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_partition_moves_and_overwrites_equal_the_driver_path(small_spark, tmp_path, monkeypatch, table_type):
    """Under a global record index records move partition (a delete where they were, an
    insert where they go: the key keeps its new location); bulk_insert and insert_overwrite
    (the replaced file groups' keys are deleted unless written again) take the same path."""
    twin = _Twin(tmp_path)
    twin.install(monkeypatch)
    path = str(tmp_path / "t")
    rng = random.Random(9)
    opts = _opts(
        "moves", table_type, True,
        **{"hoodie.index.type": "RECORD_INDEX", "hoodie.record.index.update.partition.path": "true"},
    )

    def moved(row: tuple) -> tuple:
        return (row[0], {"a": "b", "b": "c", "c": "a"}[row[1]], *row[2:])

    keys = [f"k{i:03d}" for i in range(40)]
    _write(small_spark, path, [_row(rng, k, 1) for k in keys], opts, **{"hoodie.datasource.write.operation": "bulk_insert"})
    _write(small_spark, path, [moved(_row(rng, k, 2)) for k in keys[:10]] + [_row(rng, "new1", 2)], opts)
    _write(small_spark, path, [_row(rng, k, 3) for k in keys[20:22]], opts, **{"hoodie.datasource.write.operation": "delete"})
    in_a = [k for k in keys[22:] if _row(rng, k, 0)[1] == "a"][:2]
    rewritten = [_row(rng, k, 4) for k in in_a] + [("fresh", "a", *_row(rng, "fresh", 4)[2:])]
    _write(small_spark, path, rewritten, opts, **{"hoodie.datasource.write.operation": "insert_overwrite"})
    assert twin.checked_record_index == 4
    assert twin.checked_column_stats == 4
    _check_reads(path)


def test_failed_record_index_job_leaves_the_table_as_it_was(small_spark, tmp_path, monkeypatch):
    """The record-index log files are written, then the job fails: the write fails, its data
    files and the metadata table's delta commit are rolled back, and the next write keeps
    the record index equal to the table."""
    from spark_writer.metadata_index import SparkRecordIndexWriter

    path = str(tmp_path / "t")
    rng = random.Random(4)
    opts = _opts("fail", "MERGE_ON_READ", True)
    _write(small_spark, path, [_row(rng, f"k{i}", 1) for i in range(30)], opts)
    before = canonical_rows(read_snapshot(path).read_all(), ["_hoodie_record_key", "v", "ts"])
    original = SparkRecordIndexWriter.write_log_files

    def written_then_lost(self, *args, **kwargs):
        stats = original(self, *args, **kwargs)
        assert stats
        raise RuntimeError("executor lost after writing the record-index log files")

    monkeypatch.setattr(SparkRecordIndexWriter, "write_log_files", written_then_lost)
    with pytest.raises(WriteError, match="nothing was committed"):
        _write(small_spark, path, [_row(rng, f"k{i}", 2) for i in range(0, 30, 2)] + [_row(rng, "new", 2)], opts)
    monkeypatch.setattr(SparkRecordIndexWriter, "write_log_files", original)
    assert canonical_rows(read_snapshot(path).read_all(), ["_hoodie_record_key", "v", "ts"]) == before
    _check_reads(path)
    _write(small_spark, path, [_row(rng, f"k{i}", 3) for i in range(0, 30, 3)] + [_row(rng, "again", 3)], opts)
    _check_reads(path)


# -- table services ---------------------------------------------------------------------------

CLUSTER_SORTED = {"hoodie.clustering.plan.strategy.sort.columns": "v"}


def _service_instants(path: str, after: str | None = None) -> dict[str, str]:
    """Completed compactions and clusterings (instant time -> operation type) after ``after``."""
    table = HudiTable(path)
    out = {}
    for instant in table.timeline.completed():
        if after is not None and instant.requested_time <= after:
            continue
        metadata = table.timeline.commit_metadata(instant)
        if metadata is not None and metadata.operation_type in ("COMPACT", "CLUSTER"):
            out[instant.requested_time] = metadata.operation_type
    return out


@pytest.mark.parametrize(
    "table_type,partitioned",
    [("COPY_ON_WRITE", True), ("MERGE_ON_READ", True), ("MERGE_ON_READ", False)],
    ids=["cow-partitioned", "mor-partitioned", "mor-nonpartitioned"],
)
def test_service_index_records_equal_the_driver_path(small_spark, tmp_path, monkeypatch, table_type, partitioned):
    """Compactions and clusterings, inline after writes and standalone: their tasks' column
    stats equal the driver path's records of the files they wrote, and a clustering's
    record-index log files (written by the record-index job) are byte for byte the driver
    path's; the record index equals the model after clustering moved every key."""
    twin = _Twin(tmp_path)
    twin.install(monkeypatch)
    path = str(tmp_path / "t")
    mor = table_type == "MERGE_ON_READ"
    inline = {
        "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "3", **CLUSTER_SORTED,
        "hoodie.compact.inline": str(mor).lower(), "hoodie.compact.inline.max.delta.commits": "2",
    }
    opts = _opts("svc", table_type, partitioned, **inline)
    _sequence(small_spark, path, opts, seed=11 if partitioned else 13)
    plain = _opts("svc", table_type, partitioned, **CLUSTER_SORTED)
    rng = random.Random(7)
    if mor:  # updates only: inserts into a small base file rewrite it (Hudi's small-file merge)
        live = sorted(read_snapshot(path, columns=["id"]).read_all().column("id").to_pylist())
        _write(small_spark, path, [_row(rng, k, 50) for k in live[::4]], plain)
        assert spark_writer.compact(small_spark, path, plain)
    assert spark_writer.cluster(small_spark, path, plain)
    _check_reads(path)
    _write(small_spark, path, [_row(rng, f"k{i:03d}", 60) for i in range(1, 60, 5)] + [_row(rng, "late", 60)], plain)
    _check_reads(path)
    services = [(op, ri) for op, ri in twin.operations if op in ("COMPACT", "CLUSTER")]
    clusterings = [ri for op, ri in services if op == "CLUSTER"]
    assert len(clusterings) >= 2 and all(clusterings)  # inline and standalone, record index by the tasks
    if mor:
        compactions = [ri for op, ri in services if op == "COMPACT"]
        assert len(compactions) >= 2 and not any(compactions)  # a compaction moves no key
    assert len(_service_instants(path)) == len(services)
    assert twin.checked_column_stats == len(twin.operations)


def _spy_driver_reads(monkeypatch) -> tuple[list[str], list[str]]:
    """The URIs the driver process opens or reads, and the driver-side index builders called."""
    opened: list[str] = []
    for name in ("open", "read", "read_range"):
        original = getattr(Storage, name)

        def spy(self, rel, *args, _original=original, **kwargs):
            opened.append(self.uri(rel))
            return _original(self, rel, *args, **kwargs)

        monkeypatch.setattr(Storage, name, spy)
    builders: list[str] = []
    for name in ("commit_column_stats_records", "commit_record_index_update", "replaced_keys", "base_file_column_stats"):
        original_builder = getattr(indexes, name)

        def builder(*args, _name=name, _original=original_builder, **kwargs):
            builders.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(indexes, name, builder)
    return opened, builders


def _service_files(path: str, instants: list[str]) -> tuple[list[str], list[str]]:
    """The data files the service instants wrote, and the files of the file groups their
    clusterings replaced (as of before them)."""
    table = HudiTable(path)
    written, replaced = [], []
    for instant in table.timeline.completed():
        if instant.requested_time not in instants:
            continue
        metadata = table.timeline.commit_metadata(instant)
        written += [s.path for stats in metadata.partition_to_write_stats.values() for s in stats or () if s.path]
        for partition, file_ids in (metadata.partition_to_replace_file_ids or {}).items():
            names = [e.name for e in table.storage.list(partition) if not e.is_dir]
            replaced += [f"{partition}/{n}".lstrip("/") for n in names if any(f in n for f in file_ids)]
    return written, replaced


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_driver_reads_no_file_of_a_table_service_for_index_records(small_spark, tmp_path, monkeypatch, table_type):
    """With column stats and the record index, compactions (MOR) and clusterings, inline after
    a write and standalone, never open on the driver the files they wrote, nor (clustering)
    the files of the file groups they replaced: the index records come from their tasks."""
    path = str(tmp_path / "t")
    mor = table_type == "MERGE_ON_READ"
    rng = random.Random(2)
    plain = _opts("svcspy", table_type, True, **CLUSTER_SORTED)
    _write(small_spark, path, [_row(rng, f"k{i:02d}", 1) for i in range(40)], plain)
    _write(small_spark, path, [_row(rng, f"k{i:02d}", 2) for i in range(0, 40, 3)] + [_row(rng, "n1", 2)], plain)
    start = HudiTable(path).timeline.completed()[-1].requested_time
    opened, builders = _spy_driver_reads(monkeypatch)
    inline = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"} if mor else {
        "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "3"
    }
    result = _write(small_spark, path, [_row(rng, f"k{i:02d}", 3) for i in range(1, 40, 4)] + [_row(rng, "n2", 3)], {**plain, **inline})
    assert result.services and not result.service_errors, "the inline service did not run"
    if mor:
        _write(small_spark, path, [_row(rng, f"k{i:02d}", 4) for i in range(2, 40, 5)], plain)
        assert spark_writer.compact(small_spark, path, plain)
    assert spark_writer.cluster(small_spark, path, plain)
    services = _service_instants(path, after=start)
    kinds = sorted(services.values())
    assert kinds == (["CLUSTER", "COMPACT", "COMPACT"] if mor else ["CLUSTER", "CLUSTER"])
    written, replaced = _service_files(path, list(services))
    assert written and replaced
    assert not [p for p in opened if any(p.endswith(w) for w in written)]
    assert not [p for p in opened if any(p.endswith(r) for r in replaced)]
    assert builders == []
    monkeypatch.undo()
    _check_reads(path)
