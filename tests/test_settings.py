"""Write settings are built once from the options and reach every writer of data files.

``hoodie.parquet.*`` (codec, file, row group and page sizes, bloom filter) and
``hoodie.logfile.*`` become frozen settings objects once per write; base-file writing
takes them as one object; writes, compaction and clustering use the same ones (a
compaction or clustering with ``hoodie.parquet.page.size`` / ``hoodie.parquet.block.size``
writes pages and row groups of those sizes, on a table whose logs are parquet blocks).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_duck.core.config.write_settings import BloomFilterSettings, FileSettings, LogSettings, ParquetSettings
from hudi_duck.core.file_group.base_file import write_base_file
from hudi_duck.core.file_group.log_format import BlockType, read_log_file
from hudi_duck.core.file_group.naming import base_file_name, parse_base_file, parse_log_file
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.instant import Action, State

# -- counting pages: parquet page headers (Thrift compact protocol) ------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _skip(data: bytes, pos: int, kind: int, in_container: bool = False) -> int:
    if kind in (1, 2):  # booleans: in the field header, one byte inside lists
        return pos + 1 if in_container else pos
    if kind == 3:
        return pos + 1
    if kind in (4, 5, 6):
        return _varint(data, pos)[1]
    if kind == 7:
        return pos + 8
    if kind == 8:
        size, pos = _varint(data, pos)
        return pos + size
    if kind in (9, 10):
        header = data[pos]
        pos += 1
        size, element = header >> 4, header & 0x0F
        if size == 15:
            size, pos = _varint(data, pos)
        for _ in range(size):
            pos = _skip(data, pos, element, True)
        return pos
    if kind == 11:
        size, pos = _varint(data, pos)
        if size:
            kinds = data[pos]
            pos += 1
            for _ in range(size):
                pos = _skip(data, pos, kinds >> 4, True)
                pos = _skip(data, pos, kinds & 0x0F, True)
        return pos
    if kind == 12:
        return _struct(data, pos)[1]
    raise ValueError(f"thrift type {kind}")


def _struct(data: bytes, pos: int) -> tuple[dict[int, int], int]:
    """The i32 fields of a Thrift compact struct (enough of a ``PageHeader``)."""
    fields: dict[int, int] = {}
    last = 0
    while True:
        header = data[pos]
        pos += 1
        if header == 0:
            return fields, pos
        kind, delta = header & 0x0F, header >> 4
        if delta:
            field_id = last + delta
        else:
            raw, pos = _varint(data, pos)
            field_id = _zigzag(raw)
        last = field_id
        if kind == 5:
            raw, pos = _varint(data, pos)
            fields[field_id] = _zigzag(raw)
        else:
            pos = _skip(data, pos, kind)


DATA_PAGE, DATA_PAGE_V2 = 0, 3


def data_pages(path: Path) -> dict[str, int]:
    """Data pages per column, summed over the row groups."""
    data = path.read_bytes()
    meta = pq.ParquetFile(path).metadata
    out: dict[str, int] = {}
    for rg in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            chunk = meta.row_group(rg).column(c)
            pos = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
            end = pos + chunk.total_compressed_size
            while pos < end:
                header, pos = _struct(data, pos)
                if header[1] in (DATA_PAGE, DATA_PAGE_V2):
                    out[chunk.path_in_schema] = out.get(chunk.path_in_schema, 0) + 1
                pos += header[3]  # compressed_page_size
    return out


# -- the settings objects --------------------------------------------------------------------------------


def test_options_become_settings_objects_once():
    from spark_writer.config import parse_options

    cfg = parse_options(
        {
            "hoodie.table.name": "t",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.parquet.compression.codec": "snappy",
            "hoodie.parquet.max.file.size": "1000000",
            "hoodie.parquet.small.file.limit": "1000",
            "hoodie.parquet.block.size": "200000",
            "hoodie.parquet.page.size": "4096",
            "hoodie.bloom.index.filter.type": "SIMPLE",
            "hoodie.index.bloom.num_entries": "1000",
            "hoodie.index.bloom.fpp": "0.01",
            "hoodie.bloom.index.filter.dynamic.max.entries": "5000",
            "hoodie.logfile.data.block.format": "parquet",
            "hoodie.logfile.max.size": "2048",
            "hoodie.compact.inline": "true",
            "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
            "hoodie.clustering.plan.strategy.sort.columns": "a, b",
            "hoodie.fail.writes.on.inline.table.service.exception": "false",
        }
    )
    files = cfg.file_settings
    assert files == FileSettings(
        parquet=ParquetSettings(
            compression="snappy",
            max_file_size=1000000,
            block_size=200000,
            page_size=4096,
            bloom_filter=BloomFilterSettings(type="SIMPLE", num_entries=1000, fpp=0.01, max_entries=5000),
        ),
        log=LogSettings(block_format="parquet", max_size=2048),
    )
    assert cfg.file_settings is files  # built once
    with pytest.raises(dataclasses.FrozenInstanceError):
        files.parquet.page_size = 1  # type: ignore[misc]
    services = cfg.service_settings
    assert services is cfg.service_settings
    assert services.compact_inline and not services.fail_on_service_error
    assert services.clean.policy == "KEEP_LATEST_FILE_VERSIONS"
    assert services.clustering.sort_columns == ("a", "b")
    # Hudi's defaults
    default = parse_options({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"})
    assert default.file_settings == FileSettings()
    assert default.service_settings.fail_on_service_error and default.service_settings.fail_on_archival_error
    with pytest.raises(ValueError, match="log block format"):
        LogSettings(block_format="orc")


SCHEMA = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "id", "type": "string"}, {"name": "text", "type": ["null", "string"], "default": None}],
}


def _rows(n: int, seed: int = 1) -> pa.Table:
    rng = random.Random(seed)
    ids = [f"k{i:06d}" for i in range(n)]
    text = ["".join(rng.choice("abcdefghij") for _ in range(40)) for _ in range(n)]
    return pa.table({"id": ids, "text": text})


def test_base_files_take_one_settings_object(tmp_path):
    storage = Storage(str(tmp_path))
    data = _rows(5000)
    file_id = "aaaaaaaa-0000-0000-0000-000000000000-0"

    def write(token: str, settings: ParquetSettings) -> Path:
        name = base_file_name(file_id, token, "20240101000000000")
        write_base_file(storage, name, data, SCHEMA, commit_time="20240101000000000", file_id=file_id,
                        partition_path="", record_keys=data.column("id"), settings=settings)
        return tmp_path / name

    default = write("0-0-0", ParquetSettings())
    small = write("0-0-1", ParquetSettings(page_size=4096, block_size=64 * 1024, compression="snappy"))
    assert pq.ParquetFile(default).metadata.num_row_groups == 1
    assert max(data_pages(default).values()) == 1
    assert pq.ParquetFile(small).metadata.num_row_groups > 1
    assert data_pages(small)["text"] > pq.ParquetFile(small).metadata.num_row_groups  # several pages per row group
    assert pq.ParquetFile(small).metadata.row_group(0).column(0).compression == "SNAPPY"


# -- compaction and clustering use the writes' settings (Spark) ---------------------------------------------

SMALL_PAGES = {"hoodie.parquet.page.size": "4096", "hoodie.parquet.block.size": str(64 * 1024)}


def _options(**extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "settings",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.logfile.data.block.format": "parquet",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        **extra,
    }


def _frame(spark, n: int, ts: int, seed: int):
    rows = _rows(n, seed).to_pylist()
    return spark.createDataFrame([(r["id"], r["text"], ts) for r in rows], "id string, text string, ts long")


def _files_of(path: str, instant: str) -> list[Path]:
    return [p for p in Path(path).iterdir() if (b := parse_base_file("", p.name)) is not None and b.instant_time == instant]


def test_compaction_and_clustering_write_with_the_writes_settings(small_spark, tmp_path):
    import hudi_duck
    import spark_writer

    path = str(tmp_path / "t")
    spark_writer.write(_frame(small_spark, 4000, 1, 1), path, _options())
    spark_writer.write(_frame(small_spark, 4000, 2, 2), path, _options())  # every record updated: logs
    logs = [p for p in Path(path).iterdir() if parse_log_file("", p.name) is not None]
    assert logs and all(
        b.block_type is BlockType.PARQUET_DATA_BLOCK for p in logs for b in read_log_file(p.read_bytes()) if b.block_type.is_data
    ), "the writes' logs are parquet blocks"

    # clustering of that table: the new base files have the writes' page and row group sizes
    clustering_options = _options(**SMALL_PAGES, **{"hoodie.clustering.plan.strategy.sort.columns": "id"})
    (clustered,) = spark_writer.cluster(small_spark, path, clustering_options)
    files = _files_of(path, clustered)
    assert files
    for f in files:
        assert pq.ParquetFile(f).metadata.num_row_groups > 1, f.name
        assert data_pages(f)["text"] > pq.ParquetFile(f).metadata.num_row_groups, f.name

    # more updates (parquet log blocks again), then a compaction with the same settings
    spark_writer.write(_frame(small_spark, 4000, 3, 3), path, _options())
    (compacted,) = spark_writer.compact(small_spark, path, _options(**SMALL_PAGES))
    table = HudiTable(path)
    assert table.timeline.state_file(compacted, State.COMPLETED).action == Action.COMMIT
    files = _files_of(path, compacted)
    assert files
    for f in files:
        assert pq.ParquetFile(f).metadata.num_row_groups > 1, f.name
        assert data_pages(f)["text"] > pq.ParquetFile(f).metadata.num_row_groups, f.name

    # and the table reads as the last write left it
    rows = hudi_duck.read_snapshot(path).read_all()
    assert rows.num_rows == 4000 and set(rows.column("ts").to_pylist()) == {3}
    assert sorted(rows.column("text").to_pylist()) == sorted(_rows(4000, 3).column("text").to_pylist())


def test_metadata_indexes_the_writer_does_not_build_are_refused():
    """A job asking for a metadata-table index the writer does not keep (bloom_filters) fails
    before writing, naming the option, instead of leaving a table without the index it asked for."""
    from hudi_duck.core.errors import WriteError
    from spark_writer.config import parse_options

    options = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"}
    index = "index.bloom.filter"
    assert parse_options({**options, f"hoodie.metadata.{index}.enable": "false"}).metadata_settings.enabled
    with pytest.raises(WriteError, match=f"hoodie.metadata.{index}.enable=true"):
        parse_options({**options, f"hoodie.metadata.{index}.enable": "true"})


def test_metadata_index_options():
    """column_stats and record_index options reach the metadata settings; RECORD_INDEX without
    the record index, or the indexes without the metadata table, are refused naming the options."""
    from hudi_duck.core.errors import WriteError
    from spark_writer.config import parse_options

    options = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"}
    indexes = parse_options({
        **options,
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.index.column.stats.column.list": "id, v",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.index.type": "RECORD_INDEX",
    }).metadata_settings.indexes
    assert indexes.column_stats and indexes.record_index
    assert indexes.column_stats_columns == ("id", "v") and indexes.column_stats_file_groups == 2
    with pytest.raises(WriteError, match="hoodie.metadata.record.index.enable=true"):
        parse_options({**options, "hoodie.index.type": "RECORD_INDEX"})
    with pytest.raises(WriteError, match="hoodie.metadata.enable=true"):
        parse_options({**options, "hoodie.metadata.enable": "false", "hoodie.metadata.record.index.enable": "true"})
