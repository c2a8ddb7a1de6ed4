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
from hudi_duck.core.metadata.writer import list_data_files
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.timeline.active import Timeline
from hudi_duck.core.timeline.commit_metadata import CommitMetadata
from hudi_duck.core.timeline.instant import Action
from oracle import canonical_rows, hudi_rs_read

pyspark = pytest.importorskip("pyspark")

DDL = "id string, p string, v int, ts long"
COLUMNS = ["_hoodie_commit_time", "_hoodie_record_key", "_hoodie_file_name", "id", "p", "v", "ts"]


def _opts(name: str, table_type: str, partitioned: bool, **extra) -> dict:
    opts = {
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": "upsert",
    }
    if partitioned:
        opts["hoodie.datasource.write.partitionpath.field"] = "p"
    else:
        opts["hoodie.datasource.write.keygenerator.class"] = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    opts.update({k: str(v) for k, v in extra.items()})
    return opts


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


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "nonpartitioned"])
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
