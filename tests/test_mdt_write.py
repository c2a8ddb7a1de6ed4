"""The metadata table the Spark writer keeps (table version 6, as Hudi 0.14 lays it out).

After every write and table service the ``files`` partition read back equals a listing
of the table's storage; hudi-rs (which plans from the metadata table once
``hoodie.properties`` lists it) reads the same rows as our reader; the layout follows
Hudi 0.14: file group names, instants of bootstrap, delta commits and compaction, log
block types and headers, HFile keys.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import spark_writer
from hudi_duck.api import read_snapshot
from hudi_duck.core.config.table_config import Keys, TableConfig
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, read_log_file
from hudi_duck.core.hfile.reader import open_hfile
from hudi_duck.core.metadata import layout
from hudi_duck.core.metadata.files_reader import files_listing
from hudi_duck.core.metadata.records import decode_values, writer_schema_json
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.timeline.active import Timeline
from hudi_duck.core.timeline.instant import Action
from mdt_options import mdt_test_options
from oracle import canonical_rows, hudi_rs_read

pyspark = pytest.importorskip("pyspark")

DDL = "id string, p string, v int, ts long"
COLUMNS = ["_hoodie_commit_time", "_hoodie_record_key", "_hoodie_file_name", "id", "p", "v", "ts"]


_opts = mdt_test_options


def _write(spark, path: str, rows: list[tuple], opts: dict, **overrides):
    df = spark.createDataFrame(rows, DDL)
    return spark_writer.write(df, path, {**opts, **{k: str(v) for k, v in overrides.items()}})


def _disk_listing(path: str) -> dict[str, list[tuple[str, int]]]:
    """Data files (base and log) of every partition, from the storage itself."""
    out = {}
    root = Path(path)
    for folder, dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel.split(os.sep)[0] == ".hoodie":
            dirs[:] = []
            continue
        if ".hoodie_partition_metadata" not in names:
            continue
        files = sorted(
            (n, os.path.getsize(os.path.join(folder, n)))
            for n in names
            if not n.startswith(".hoodie_partition") and (n.endswith(".parquet") or ".log." in n)
        )
        out["" if rel == "." else rel.replace(os.sep, "/")] = files
    return out


def _check(path: str) -> None:
    """The metadata table lists what the storage holds; hudi-rs (planning from it) reads
    what our reader reads."""
    config = TableConfig.load(Storage(path))
    assert config.props.get(Keys.METADATA_PARTITIONS) == "files"
    listing = files_listing(Storage(path)).partitions
    disk = _disk_listing(path)
    assert {p: f for p, f in listing.items() if f or p in disk} == disk
    ours = canonical_rows(read_snapshot(path).read_all(), COLUMNS)
    rs = canonical_rows(hudi_rs_read(path), COLUMNS)
    assert rs == ours


def _mdt_timeline(path: str) -> Timeline:
    storage = Storage(path).child(layout.METADATA_FOLDER)
    return Timeline.load(storage, TableConfig.load(storage))


def _data_timeline(path: str) -> Timeline:
    storage = Storage(path)
    return Timeline.load(storage, TableConfig.load(storage))


@pytest.mark.parametrize(
    "table_type,partitioned",
    [("COPY_ON_WRITE", True), ("MERGE_ON_READ", False)],
    ids=["cow-partitioned", "mor-nonpartitioned"],
)
def test_writes_keep_files_partition(small_spark, tmp_path, table_type, partitioned):
    path = str(tmp_path / "t")
    opts = _opts("mdt_w", table_type, partitioned)
    first = _write(small_spark, path, [(f"k{i}", "a" if i % 2 else "b", i, 1) for i in range(6)], opts)
    _check(path)
    mdt = _mdt_timeline(path)
    # bootstrapped at 00000000000000010 (no completed instant before), then the write's delta commit
    times = [i.requested_time for i in mdt.completed()]
    assert times == [layout.initialization_instant(None), first.instant_time]
    _write(small_spark, path, [("k1", "a", 10, 2), ("k7", "c", 7, 2)], opts)
    _check(path)
    _write(small_spark, path, [("k2", "b", 0, 3)], opts, **{"hoodie.datasource.write.operation": "delete"})
    _check(path)
    _write(small_spark, path, [("k9", "c", 9, 4)], opts, **{"hoodie.datasource.write.operation": "insert_overwrite"})
    _check(path)
    data = _data_timeline(path)
    mdt = _mdt_timeline(path)
    data_times = {i.requested_time for i in data.completed()}
    deltas = [i.requested_time for i in mdt.completed([Action.DELTA_COMMIT])]
    assert set(deltas[1:]) == data_times and deltas[0] == "00000000000000010"


def _rs_slices(path: str) -> list[tuple]:
    """File slices hudi-rs plans through the metadata table."""
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(path).with_option("hoodie.metadata.enable", "true").build()
    return sorted((s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in table.get_file_slices())


def _our_slices(path: str) -> list[tuple]:
    from hudi_duck.core.table.table import HudiTable

    table = HudiTable(path)
    out = []
    for s in table.file_system_view.latest_slices():
        base = os.path.basename(s.base_file.path) if s.base_file is not None else ""
        out.append((s.partition_path, s.file_id, base, tuple(os.path.basename(lf.path) for lf in s.sorted_logs())))
    return sorted(out)


def test_services_keep_files_partition(small_spark, tmp_path):
    """Compaction, clustering, clean, savepoint/restore and rollback: after each the files
    partition equals the storage, and hudi-rs plans the same slices from it as we do."""
    path = str(tmp_path / "t")
    opts = _opts("mdt_s", "MERGE_ON_READ", True)
    _write(small_spark, path, [(f"k{i}", "ab"[i % 2], i, 1) for i in range(6)], opts)
    _write(small_spark, path, [("k1", "b", 10, 2), ("k2", "a", 20, 2)], opts)
    (compaction_time,) = spark_writer.compact(small_spark, path, opts)
    _check(path)
    assert compaction_time in {i.requested_time for i in _mdt_timeline(path).completed([Action.DELTA_COMMIT])}
    _write(small_spark, path, [("k3", "b", 30, 3)], opts)
    (cluster_time,) = spark_writer.cluster(small_spark, path, dict(opts, **{"hoodie.clustering.plan.strategy.sort.columns": "v"}))
    _check(path)
    assert _rs_slices(path) == _our_slices(path)
    clean_time = spark_writer.clean(small_spark, path, dict(opts, **{"hoodie.cleaner.commits.retained": "1"}))
    assert clean_time
    _check(path)
    savepoint_time = spark_writer.savepoint(path)
    _write(small_spark, path, [("k4", "a", 40, 4)], opts)
    spark_writer.restore(path, savepoint_time)
    _check(path)
    assert _rs_slices(path) == _our_slices(path)
    done = _write(small_spark, path, [("k5", "b", 50, 5)], opts)
    spark_writer.rollback(path)
    _check(path)
    mdt = _mdt_timeline(path)
    # the rolled-back write's delta commit is rolled back on the metadata table too
    assert done.instant_time not in {i.requested_time for i in mdt.completed([Action.DELTA_COMMIT])}
    assert any(i.requested_time.endswith(layout.OperationSuffix.ROLLBACK) for i in mdt.completed([Action.ROLLBACK]))
    assert _rs_slices(path) == _our_slices(path)


def _mdt_files(path: str) -> list[str]:
    return sorted(os.listdir(os.path.join(path, layout.METADATA_FOLDER, "files")))


def test_compaction_clean_and_layout_of_metadata_table(small_spark, tmp_path):
    """After ``hoodie.metadata.compact.max.delta.commits`` delta commits the metadata table is
    compacted into an HFile base file at ``<latest delta commit>001``, later cleaned at
    ``...002``; names, log blocks and HFile keys are laid out as Hudi 0.14 does."""
    path = str(tmp_path / "t")
    opts = _opts(
        "mdt_c", "COPY_ON_WRITE", True,
        **{"hoodie.metadata.compact.max.delta.commits": 3, "hoodie.cleaner.commits.retained": 1, "hoodie.clean.automatic": "false"},
    )
    times = [_write(small_spark, path, [(f"k{i}", "ab"[i % 2], i, i)], opts).instant_time for i in range(7)]
    _check(path)
    mdt = _mdt_timeline(path)
    compactions = [i.requested_time for i in mdt.completed([Action.COMMIT])]
    # bootstrap + w0 + w1 = 3 delta commits: compacted before w2 at w1 + 001; then w2..w4: before w5
    assert compactions == [times[1] + "001", times[4] + "001"]
    cleans = [i.requested_time for i in mdt.completed([Action.CLEAN])]
    assert cleans and all(c.endswith("002") for c in cleans)
    names = _mdt_files(path)
    bases = [n for n in names if n.endswith(".hfile")]
    assert bases and all(re.fullmatch(r"files-0000-0_\d+-\d+-\d+_\d{20}\.hfile", n) for n in bases)
    assert max(b.rsplit("_", 1)[1][:-6] for b in bases) == compactions[-1]
    logs = [n for n in names if ".log." in n]
    assert all(re.fullmatch(r"\.files-0000-0_\d{17,20}\.log\.\d+_\d+-\d+-\d+", n) for n in logs)
    assert ".hoodie_partition_metadata" in names
    # the delta commits after the latest compaction: one HFile data block each, headed by its instant
    folder = Path(path) / layout.METADATA_FOLDER / "files"
    blocks = []
    for name in logs:
        if name.split("_")[1].split(".")[0] != compactions[-1]:
            continue
        for block in read_log_file((folder / name).read_bytes(), name):
            blocks.append(block)
    assert [b.block_type for b in blocks] == [BlockType.HFILE_DATA_BLOCK] * len(blocks)
    assert sorted(b.header[HeaderKey.INSTANT_TIME] for b in blocks) == times[5:]
    assert all(b.header[HeaderKey.SCHEMA] == writer_schema_json() for b in blocks)
    hfile = open_hfile(blocks[-1].content, "block")
    keys = [k.decode() for k in (c[0] for c in hfile.cells)]
    assert keys == sorted(keys) and "__all_partitions__" in keys and {"a", "b"} & set(keys)
    base = open_hfile((folder / max(bases)).read_bytes(), "base")
    records = decode_values(base.cells, base.schema_json, "base")
    assert {r.key for r in records} == {"__all_partitions__", "a", "b"}
    # commit metadata of the delta commits: one log write stat of files-0000-0
    last = mdt.commit_metadata(mdt.completed([Action.DELTA_COMMIT])[-1])
    (stat,) = last.write_stats()
    assert stat.file_id == "files-0000-0" and stat.partition_path == "files" and stat.prev_commit == compactions[-1]
    assert last.operation_type == "UPSERT_PREPPED"


def test_bootstrap_of_existing_table_then_disable(small_spark, tmp_path):
    """A table written without the metadata table gets one at ``<latest instant>010`` on the first
    write with it; ``hoodie.metadata.enable=false`` deletes it and hoodie.properties stops naming it."""
    path = str(tmp_path / "t")
    opts = _opts("mdt_b", "MERGE_ON_READ", True)
    off = {"hoodie.metadata.enable": "false"}
    _write(small_spark, path, [("k1", "a", 1, 1), ("k2", "b", 2, 1)], opts, **off)
    second = _write(small_spark, path, [("k1", "a", 3, 2)], opts, **off)
    assert not os.path.exists(os.path.join(path, layout.METADATA_FOLDER))
    assert Keys.METADATA_PARTITIONS not in TableConfig.load(Storage(path)).props
    third = _write(small_spark, path, [("k3", "a", 3, 3)], opts)
    _check(path)
    times = [i.requested_time for i in _mdt_timeline(path).completed()]
    assert times == [second.instant_time + "010", third.instant_time]
    base = [n for n in _mdt_files(path) if n.endswith(".hfile")]
    assert len(base) == 1 and base[0].endswith(f"_{second.instant_time}010.hfile")
    assert f".files-0000-0_{second.instant_time}010.log.1_0-0-0" in _mdt_files(path)
    _write(small_spark, path, [("k4", "b", 4, 4)], opts, **off)
    assert not os.path.exists(os.path.join(path, layout.METADATA_FOLDER))
    props = TableConfig.load(Storage(path)).props
    assert Keys.METADATA_PARTITIONS not in props and Keys.METADATA_PARTITIONS_INFLIGHT not in props
    assert canonical_rows(hudi_rs_read(path), COLUMNS) == canonical_rows(read_snapshot(path).read_all(), COLUMNS)


def test_failed_write_leaves_metadata_table_consistent(small_spark, tmp_path, monkeypatch):
    """A write that fails after its delta commit landed on the metadata table is rolled back on
    both; one whose process died between the two commits is rolled back by the next writer."""
    from hudi_duck.core.timeline import transaction

    path = str(tmp_path / "t")
    opts = _opts("mdt_f", "MERGE_ON_READ", True)
    _write(small_spark, path, [("k1", "a", 1, 1), ("k2", "b", 2, 1)], opts)

    class Fail:
        def prepare_commit(self, txn, metadata):
            if txn.action == Action.DELTA_COMMIT and txn.timeline.config.metadata_partitions:
                raise RuntimeError("injected failure after the metadata table's delta commit")

    def failing_write(rows, ts):
        factory = lambda timeline: Fail()  # noqa: E731
        transaction.register_participant_factory(factory)
        try:
            with pytest.raises(Exception, match="injected failure"):
                _write(small_spark, path, rows, opts)
        finally:
            transaction._PARTICIPANT_FACTORIES.remove(factory)

    failing_write([("k1", "a", 5, 2)], 2)
    _check(path)
    mdt = _mdt_timeline(path)
    data = _data_timeline(path)
    assert len(mdt.completed([Action.ROLLBACK])) == 1 and len(data.completed([Action.ROLLBACK])) == 1
    # one delta commit per completed data instant: the write and the rollback of the failed one
    assert {i.requested_time for i in mdt.completed([Action.DELTA_COMMIT])} - {"00000000000000010"} == {
        i.requested_time for i in data.completed()
    }
    # the process dies after the metadata table's delta commit, before the data commit (nothing undone)
    # (nothing is undone; its heartbeat stops as a dead writer's does, so the next writer may roll it back)
    monkeypatch.setattr(transaction.Transaction, "abort", lambda self: self._stop_concurrency())
    failing_write([("k2", "b", 6, 3)], 3)
    monkeypatch.undo()
    (pending,) = _data_timeline(path).pending()
    assert pending.requested_time in {i.requested_time for i in _mdt_timeline(path).completed([Action.DELTA_COMMIT])}
    # its block does not count: the log file it wrote is on storage, not in the listing
    assert files_listing(Storage(path)).partitions != _disk_listing(path)
    _write(small_spark, path, [("k3", "a", 7, 4)], opts)
    _check(path)
    mdt = _mdt_timeline(path)
    assert pending.requested_time not in {i.requested_time for i in mdt.completed([Action.DELTA_COMMIT])}
