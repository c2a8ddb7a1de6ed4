"""The metadata table's ``column_stats`` and ``record_index`` partitions the Spark writer keeps.

After every commit of a short sequence (upserts, deletes, compaction, clean) both
partitions equal a model computed from the table's latest file slices: column ranges
of every base file (recomputed from its rows), an entry per log file, and one
record-index entry per live key pointing at the file group holding it. Reads through
the metadata table equal reads from a listing and hudi-rs; filters leave out files;
RECORD_INDEX upserts give what SIMPLE gives.
"""

from __future__ import annotations

import random

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import spark_writer
from hudi_duck.api import open_table, read_snapshot
from hudi_duck.core.config.table_config import Keys, TableConfig
from hudi_duck.core.file_group.reader import read_slice
from hudi_duck.core.metadata import layout
from hudi_duck.core.metadata.data_skipping import stat_value
from hudi_duck.core.metadata.files_reader import MetadataTable, files_listing
from hudi_duck.core.metadata.records import column_stats_key, record_location
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.read_plan import plan_snapshot
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.active import Timeline
from hudi_duck.core.timeline.instant import Action
from mdt_options import mdt_test_options
from oracle import canonical_rows, hudi_rs_read

pyspark = pytest.importorskip("pyspark")

DDL = "id string, p string, v int, ts long"
DATA_COLUMNS = ["id", "p", "v", "ts"]
INDEXES = {
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.record.index.min.filegroup.count": "2",
    "hoodie.metadata.record.index.max.filegroup.count": "2",
}


def _opts(name: str, table_type: str, partitioned: bool, **extra) -> dict:
    return mdt_test_options(name, table_type, partitioned, **{**INDEXES, **extra})


def _partition_of(key: str) -> str:
    """Keys keep their partition (a non-global index would otherwise keep two copies)."""
    return "abc"[sum(map(ord, key)) % 3]


def _write(spark, path: str, rows: list[tuple], opts: dict, **overrides):
    df = spark.createDataFrame(rows, DDL)
    return spark_writer.write(df, path, {**opts, **{k: str(v) for k, v in overrides.items()}})


def _latest_slices(path: str):
    table = HudiTable(path)
    plan = plan_snapshot(table)
    return plan, list(plan.slices)


def _log_names(path: str) -> set[str]:
    return {lf.file_name for s in _latest_slices(path)[1] for lf in s.log_files}


def _check_indexes(path: str, unindexed_logs: set[str] = frozenset()) -> None:
    """column_stats and record_index equal the model of the latest file slices. Log files
    written before the index was bootstrapped have no ranges (Hudi 0.14 indexes base files then)."""
    storage = Storage(path)
    listed = set(TableConfig.load(storage).metadata_partitions)
    assert {"files", "column_stats", "record_index"} <= listed
    mdt = MetadataTable(storage)
    stats, _ = mdt.records(layout.COLUMN_STATS.name)
    index, _ = mdt.records(layout.RECORD_INDEX.name)
    plan, slices = _latest_slices(path)
    model_index = {}
    for s in slices:
        rows = read_slice(plan.context(), s)
        for key in plan.context().keys(rows).to_pylist():
            model_index[key] = (s.partition_path, s.file_id)
        if s.base_file is not None:
            data = pq.read_table(storage.uri(s.base_file.path))
            for column in ["_hoodie_record_key", *DATA_COLUMNS]:
                record = stats.get(column_stats_key(s.partition_path, s.base_file.file_name, column))
                assert record is not None, (s.base_file.file_name, column)
                cs = record.column_stats
                values = data.column(column)
                bounds = pc.min_max(values)
                assert not cs["isDeleted"]
                assert cs["valueCount"] == len(values) and cs["nullCount"] == values.null_count
                assert stat_value(cs["minValue"]) == bounds["min"].as_py(), (column, cs)
                assert stat_value(cs["maxValue"]) == bounds["max"].as_py(), (column, cs)
        for log_file in s.log_files:
            if log_file.file_name in unindexed_logs:
                assert column_stats_key(s.partition_path, log_file.file_name, "id") not in stats
                continue
            record = stats.get(column_stats_key(s.partition_path, log_file.file_name, "id"))
            assert record is not None and not record.column_stats["isDeleted"], log_file.file_name
    got_index = {}
    for key, record in index.items():
        location = record_location(record)
        got_index[key] = (location.partition_path, location.file_id)
    assert got_index == model_index
    # the reads: through the metadata table, from a listing, with hudi-rs
    columns = ["_hoodie_record_key", *DATA_COLUMNS]
    ours = canonical_rows(read_snapshot(path).read_all(), columns)
    assert canonical_rows(read_snapshot(path, metadata_enable=False).read_all(), columns) == ours
    assert canonical_rows(hudi_rs_read(path), columns) == ours


@pytest.mark.parametrize(
    "table_type,partitioned",
    [("COPY_ON_WRITE", True), ("MERGE_ON_READ", False), ("MERGE_ON_READ", True)],
    ids=["cow-partitioned", "mor-nonpartitioned", "mor-partitioned"],
)
def test_indexes_follow_every_commit(small_spark, tmp_path, table_type, partitioned):
    path = str(tmp_path / "t")
    rng = random.Random(7 if partitioned else 11)
    # the metadata table compacts its file groups (every partition's) a few times on the way
    opts = _opts("idx", table_type, partitioned, **{"hoodie.metadata.compact.max.delta.commits": 4})
    ts = 0

    def rows(keys):
        nonlocal ts
        ts += 1
        return [(k, _partition_of(k), rng.randint(0, 1000), ts) for k in keys]

    first = rows([f"k{i:03d}" for i in range(40)])
    _write(small_spark, path, first, opts)
    _check_indexes(path)
    for step in range(4):
        upserts = rows(rng.sample(sorted({r[0] for r in first}), 8) + [f"n{step}{i}" for i in range(5)])
        _write(small_spark, path, upserts, opts)
        _check_indexes(path)
        doomed = rows(rng.sample(sorted(read_snapshot(path, columns=["id"]).read_all().column("id").to_pylist()), 3))
        _write(small_spark, path, doomed, opts, **{"hoodie.datasource.write.operation": "delete"})
        _check_indexes(path)
    if table_type == "MERGE_ON_READ":
        assert spark_writer.compact(small_spark, path, opts)
        _check_indexes(path)
    clean_opts = {**opts, "hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"}
    assert spark_writer.clean(small_spark, path, clean_opts)
    _check_indexes(path)
    # cleaned files left only tombstones
    stats, _ = MetadataTable(Storage(path)).records(layout.COLUMN_STATS.name)
    assert any(r.column_stats["isDeleted"] for r in stats.values())
    mdt = Storage(path).child(layout.METADATA_FOLDER)
    compactions = Timeline.load(mdt, TableConfig.load(mdt)).completed([Action.COMMIT])
    assert compactions
    for partition in (layout.COLUMN_STATS.name, layout.RECORD_INDEX.name):
        assert any(e.name.endswith(f"_{compactions[-1].requested_time}.hfile") for e in mdt.list(partition))


def test_filters_skip_files_with_written_column_stats(small_spark, tmp_path, con):
    path = str(tmp_path / "t")
    opts = _opts("skip", "COPY_ON_WRITE", True, **{"hoodie.metadata.record.index.enable": "false"})
    # each partition holds one value range of v
    _write(small_spark, path, [(f"k{i}", "abc"[i % 3], (i % 3) * 100 + i, 1) for i in range(30)], opts)
    table = open_table(path)
    everything = table.plan()
    filtered = table.plan(filters=[("v", ">=", 200)])
    assert filtered.skipped_slices > 0 and len(filtered.slices) < len(everything.slices)
    got = canonical_rows(read_snapshot(path, filters=[("v", ">=", 200)]).read_all(), DATA_COLUMNS)
    unfiltered = read_snapshot(path, metadata_enable=False).read_all()
    expected = canonical_rows(unfiltered.filter(pc.greater_equal(unfiltered.column("v"), 200)), DATA_COLUMNS)
    assert got == expected and sum(got.values()) == 10
    sql = con.sql(f"SELECT id, p, v, ts FROM hudi_snapshot('{path}', filters := 'v >= 200')").arrow().read_all()
    assert canonical_rows(sql, DATA_COLUMNS) == expected
    rs = hudi_rs_read(path)
    assert canonical_rows(rs.filter(pc.greater_equal(rs.column("v"), 200)), DATA_COLUMNS) == expected


def test_indexes_bootstrapped_for_an_existing_table(small_spark, tmp_path):
    path = str(tmp_path / "t")
    opts = _opts("boot", "MERGE_ON_READ", True)
    plain = {k: v for k, v in opts.items() if k not in INDEXES}
    _write(small_spark, path, [(f"k{i}", "ab"[i % 2], i, 1) for i in range(20)], plain)
    _write(small_spark, path, [(f"k{i}", "ab"[i % 2], i + 50, 2) for i in range(5)], plain)
    assert TableConfig.load(Storage(path)).metadata_partitions == ["files"]
    before = _log_names(path)
    assert before  # the upsert went to log files
    _write(small_spark, path, [("k1", "b", 99, 3), ("z1", "a", 1, 3)], opts)
    config = TableConfig.load(Storage(path))
    assert config.props[Keys.METADATA_PARTITIONS] == "column_stats,files,record_index"
    names = sorted(p.name for p in Storage(path).child(".hoodie/metadata/column_stats").list("") if p.name.endswith(".hfile"))
    assert [n.split("_")[0] for n in names] == ["col-stats-0000-0", "col-stats-0001-0"]
    _check_indexes(path, before)
    # disabling an index drops its partition
    _write(small_spark, path, [("k2", "a", 5, 4)], {**opts, "hoodie.metadata.index.column.stats.enable": "false"})
    assert TableConfig.load(Storage(path)).props[Keys.METADATA_PARTITIONS] == "files,record_index"
    assert not Storage(path).exists(".hoodie/metadata/column_stats")


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_record_index_upserts_equal_simple(small_spark, tmp_path, table_type):
    rng = random.Random(3)
    first = [(f"k{i:03d}", _partition_of(f"k{i:03d}"), i, 1) for i in range(50)]
    batches = [
        [(f"k{i:03d}", _partition_of(f"k{i:03d}"), rng.randint(0, 99), 2) for i in rng.sample(range(50), 10)]
        + [("new1", "a", 1, 2)],
        [(f"k{i:03d}", _partition_of(f"k{i:03d}"), rng.randint(0, 99), 3) for i in rng.sample(range(50), 10)],
    ]
    results = {}
    for index in ("SIMPLE", "RECORD_INDEX"):
        path = str(tmp_path / index)
        opts = _opts("ri", table_type, True, **{"hoodie.index.type": index})
        _write(small_spark, path, first, opts)
        for batch in batches:
            _write(small_spark, path, batch, opts)
        _write(small_spark, path, [first[0], first[1]], opts, **{"hoodie.datasource.write.operation": "delete"})
        _check_indexes(path)
        results[index] = canonical_rows(read_snapshot(path).read_all(), DATA_COLUMNS)
    assert results["RECORD_INDEX"] == results["SIMPLE"]
    assert sum(results["SIMPLE"].values()) == 49


def test_record_index_type_needs_the_record_index(small_spark, tmp_path):
    path = str(tmp_path / "t")
    opts = _opts("ri", "COPY_ON_WRITE", True, **{"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.record.index.enable": "false"})
    with pytest.raises(Exception, match="hoodie.metadata.record.index.enable=true"):
        _write(small_spark, path, [("k1", "a", 1, 1)], opts)


def test_clustering_insert_overwrite_and_restore(small_spark, tmp_path):
    path = str(tmp_path / "t")
    opts = _opts("replace", "COPY_ON_WRITE", True)
    _write(small_spark, path, [(f"k{i:02d}", _partition_of(f"k{i:02d}"), i, 1) for i in range(30)], opts)
    _write(small_spark, path, [(f"m{i:02d}", _partition_of(f"m{i:02d}"), i, 2) for i in range(30)], opts)
    saved = spark_writer.savepoint(path)
    assert spark_writer.cluster(small_spark, path, {**opts, "hoodie.clustering.plan.strategy.sort.columns": "v"})
    _check_indexes(path)  # keys moved to the clustered file groups
    overwrite = [("o1", "a", 1, 3), ("o2", "a", 2, 3)]
    _write(small_spark, path, overwrite, opts, **{"hoodie.datasource.write.operation": "insert_overwrite"})
    _check_indexes(path)  # the overwritten partition's keys are gone
    spark_writer.restore(path, saved)
    assert TableConfig.load(Storage(path)).props[Keys.METADATA_PARTITIONS] == "files"
    _write(small_spark, path, [("k01", _partition_of("k01"), 100, 4)], opts)
    _check_indexes(path)


def _log_blocks(storage: Storage, folder: str, prefix: str, instant: str | None = None):
    from hudi_duck.core.file_group.log_format import read_log_file

    out = []
    for entry in storage.list(folder):
        if entry.name.startswith("." + prefix) and ".log." in entry.name and not entry.name.endswith("_0-0-0"):
            out += read_log_file(storage.read(entry.path), entry.path)
    return out


def test_layout_matches_apache_written_index_partitions(small_spark, tmp_path, fixture_tables):
    """Keys, value fields, file names and log block headers as in the Apache-written fixtures
    (their fields of later versions aside)."""
    from hudi_duck.core.file_group.log_format import BlockType, HeaderKey

    path = str(tmp_path / "t")
    opts = _opts("layout", "MERGE_ON_READ", True)
    _write(small_spark, path, [(f"k{i}", _partition_of(f"k{i}"), i, 1) for i in range(10)], opts)
    _write(small_spark, path, [("k1", _partition_of("k1"), 5, 2), ("k9", _partition_of("k9"), 0, 2)], opts)
    _write(small_spark, path, [("k2", _partition_of("k2"), 0, 3)], opts, **{"hoodie.datasource.write.operation": "delete"})
    ours = MetadataTable(Storage(path))
    fixture = fixture_tables["quickstart_trips_table/mor/avro/v8_trips_8i3u1d"]
    theirs = MetadataTable(Storage(fixture))
    for partition in (layout.COLUMN_STATS.name, layout.RECORD_INDEX.name):
        mine, _ = ours.records(partition)
        apache, _ = theirs.records(partition)
        field = "column_stats" if partition == layout.COLUMN_STATS.name else "record_index"
        mine_fields = {k for r in mine.values() for k in getattr(r, field)}
        apache_fields = {k for r in apache.values() for k in getattr(r, field)}
        assert mine_fields <= apache_fields
        assert apache_fields - mine_fields <= {"isTightBound", "valueType", "position"}  # added after 0.14
        if partition == layout.COLUMN_STATS.name:
            # the key builder our writer uses reproduces Apache's keys
            where = {name: p for p, files in files_listing(Storage(fixture)).partitions.items() for name, _ in files}
            checked = 0
            for key, record in apache.items():
                cs = record.column_stats
                if cs["fileName"] in where:
                    assert key == column_stats_key(where[cs["fileName"]], cs["fileName"], cs["columnName"])
                    checked += 1
            assert checked > 10
        names = sorted(e.name for e in Storage(path).child(layout.METADATA_FOLDER).list(partition))
        prefix = layout.COLUMN_STATS.file_id_prefix if partition == layout.COLUMN_STATS.name else layout.RECORD_INDEX.file_id_prefix
        assert any(n.startswith("." + prefix + "0000-0_") and n.endswith(".log.1_0-0-0") for n in names)
        assert any(n.startswith(prefix + "0000-0_") and n.endswith(".hfile") for n in names)
        for storage in (Storage(path), Storage(fixture)):
            blocks = _log_blocks(storage.child(layout.METADATA_FOLDER), partition, prefix)
            data = [b for b in blocks if b.block_type is BlockType.HFILE_DATA_BLOCK]
            assert data and all(set(b.header) == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA} for b in data)
    # the record index deleted k2 in a delete block after the data block of its delta commit
    deletes = [
        b for b in _log_blocks(Storage(path).child(layout.METADATA_FOLDER), layout.RECORD_INDEX.name, layout.RECORD_INDEX.file_id_prefix)
        if b.block_type is BlockType.DELETE_BLOCK
    ]
    assert deletes and all(set(b.header) == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA} for b in deletes)
    index, _ = ours.records(layout.RECORD_INDEX.name)
    assert "k2" not in index and {"k1", "k9"} <= set(index)
