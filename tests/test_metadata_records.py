"""Metadata table: records, keys, layout rules and the files listing, checked against the
metadata tables Apache Hudi wrote in the v8/v9 fixtures (where the layout is shared with
table version 6), against the data files on disk and against hudi-rs."""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from pathlib import Path

import pytest
from fixtures import fixture_id, fixture_zips, unzip_fixture

from hudi_duck.core.config.table_config import TableConfig, format_properties, parse_properties, table_checksum
from hudi_duck.core.file_group.log_format import BlockType, read_log_file
from hudi_duck.core.hfile.reader import decode_hfile_block_records, open_hfile
from hudi_duck.core.metadata import layout
from hudi_duck.core.metadata.files_reader import MetadataTableError, files_listing, merged_records
from hudi_duck.core.metadata.java import hashmap_order, string_hash, xxhash64
from hudi_duck.core.metadata.records import (
    FileInfo,
    MetadataRecord,
    RecordType,
    TOMBSTONE,
    column_stats_key,
    combine,
    combine_column_stats,
    decode_values,
    encode_value,
    from_avro,
    instant_to_epoch_millis,
    partition_files_record,
    partition_list_record,
    record_index_record,
    record_location,
    writer_schema_json,
)
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.timeline.active import Timeline
from hudi_duck.core.timeline.commit_metadata import CommitMetadata

MDT_FIXTURES = [z for z in fixture_zips() if re.search(r"(^|/)v[89]_(trips_8i3u1d|txns_simple_meta)$", fixture_id(z))]


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mdt")
    out = {fixture_id(z): Path(unzip_fixture(z, root)) for z in MDT_FIXTURES}
    assert len(out) == 3, out
    return out


@pytest.fixture(scope="module")
def trips(tables) -> Path:
    return next(p for k, p in tables.items() if k.endswith("v8_trips_8i3u1d"))


def _hfile_records(path: Path) -> list[MetadataRecord]:
    hfile = open_hfile(path.read_bytes(), str(path))
    return decode_values(hfile.cells, hfile.schema_json, str(path))


def _log_blocks(folder: Path):
    for path in sorted(folder.glob(".*.log.*")):
        for block in read_log_file(path.read_bytes(), str(path)):
            if block.block_type is BlockType.HFILE_DATA_BLOCK:
                yield path, block


# -- the schema -----------------------------------------------------------------------------

_ONE_X_FIELDS = {"isTightBound", "position", "SecondaryIndexMetadata"}


def _strip_one_x(node):
    """The 1.x writer schema without what 1.x added to 0.14's (LocalDateWrapper, isTightBound,
    position, SecondaryIndexMetadata)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "fields":
                value = [f for f in value if f["name"] not in _ONE_X_FIELDS]
            out[key] = _strip_one_x(value)
        return out
    if isinstance(node, list):
        return [
            _strip_one_x(v)
            for v in node
            if not (v == "LocalDateWrapper" or (isinstance(v, dict) and v.get("name") == "LocalDateWrapper"))
        ]
    return node


def test_writer_schema_matches_apache_text(trips):
    """Same fields, order, docs, defaults and Java string properties as the schema text Hudi
    stored in the fixture's HFiles, once the fields 1.x added are taken out."""
    path = next((trips / ".hoodie/metadata/files").glob("*.hfile"))
    theirs = json.loads(open_hfile(path.read_bytes()).schema_json, object_pairs_hook=lambda p: dict(p))
    ours = json.loads(writer_schema_json())
    assert ours == _strip_one_x(theirs)
    assert list(ours) == list(theirs)  # key order of the top-level rendering
    assert writer_schema_json().startswith('{"type":"record","name":"HoodieMetadataRecord"')


# -- records of every partition -------------------------------------------------------------


def test_fixture_records_reencode_and_decode(trips):
    """Every record of the fixture's base files decodes, re-encodes with the 0.14 schema and
    decodes back to the same payload."""
    checked = {t: 0 for t in RecordType}
    for folder in ("files", "column_stats", "record_index"):
        for path in (trips / ".hoodie/metadata" / folder).glob("*.hfile"):
            for record in _hfile_records(path):
                value = encode_value(record)
                back = decode_values([(record.key.encode(), value)], writer_schema_json())[0]
                assert back.type == record.type and back.key == record.key
                assert back.files == record.files
                if record.record_index is not None:
                    assert back.record_index == {k: v for k, v in record.record_index.items() if k != "position"}
                if record.column_stats is not None:
                    assert back.column_stats["minValue"] == record.column_stats["minValue"]
                checked[record.type] += 1
    assert checked[RecordType.FILE_LIST] >= 3 and checked[RecordType.RECORD_INDEX] >= 5
    assert checked[RecordType.COLUMN_STATS] >= 10 and checked[RecordType.PARTITION_LIST] >= 1


def test_record_index_records_match_fixture(trips):
    compared = 0
    for path in (trips / ".hoodie/metadata/record_index").glob("*.hfile"):
        for theirs in _hfile_records(path):
            location = record_location(theirs)
            instant = _dt.datetime.fromtimestamp(location.instant_millis / 1000, _dt.timezone.utc)
            instant_time = instant.strftime("%Y%m%d%H%M%S") + f"{location.instant_millis % 1000:03d}"
            ours = record_index_record(theirs.key, location.partition_path, location.file_id, instant_time)
            expected = {k: v for k, v in theirs.record_index.items() if k != "position"}
            assert dict(ours.record_index) == expected
            assert record_location(ours) == location
            compared += 1
    assert compared >= 5


def test_record_index_raw_encoding_and_bad_ids():
    record = record_index_record("k", "p", "not-a-uuid", "20240101010101123", file_id_encoding=1)
    assert record.record_index["fileId"] == "not-a-uuid" and record.record_index["fileIdHighBits"] == -1
    assert record_location(record).file_id == "not-a-uuid"
    bare = record_index_record("k", "p", "8aa68f7e-afd6-4c94-b86c-8a886552e08d", "20240101010101123")
    assert bare.record_index["fileIndex"] == -1
    assert record_location(bare).file_id == "8aa68f7e-afd6-4c94-b86c-8a886552e08d"
    with pytest.raises(Exception, match="raw file id encoding"):
        record_index_record("k", "p", "not-a-uuid", "20240101010101123")


def test_instant_to_epoch_millis():
    assert instant_to_epoch_millis("20251220210108078") == 1766264468078
    assert instant_to_epoch_millis("20251220210108") == 1766264468999  # seconds: 999 ms
    tz = _dt.timezone(_dt.timedelta(hours=-6))
    assert instant_to_epoch_millis("20251220210108078", tz) == 1766264468078 + 6 * 3600 * 1000
    with pytest.raises(Exception, match="yyyyMMdd"):
        instant_to_epoch_millis("2025-12-20")


def test_column_stats_keys_match_fixture(trips):
    listing = files_listing(Storage(str(trips))).partitions
    partition_of = {name: partition for partition, files in listing.items() for name, _ in files}
    compared = 0
    for path in (trips / ".hoodie/metadata/column_stats").glob("*.hfile"):
        for record in _hfile_records(path):
            stats = record.column_stats
            partition = partition_of.get(stats["fileName"])
            if partition is None:
                continue  # stats of a file cleaned since
            assert column_stats_key(partition, stats["fileName"], stats["columnName"]) == record.key
            compared += 1
    assert compared >= 10


def test_xxhash64_and_java_hash():
    assert xxhash64(b"", 0) == 0xEF46DB3751D8E999
    assert xxhash64(b"abc", 0) == 0x44BC2CF5AD770999
    assert xxhash64(b"x" * 100, 7) == xxhash64(b"x" * 100, 7 + (1 << 64))
    assert string_hash("hello") == 99162322
    assert string_hash("polygenelubricants") == -(1 << 31)
    assert string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00  # two UTF-16 code units


# -- merge rules ----------------------------------------------------------------------------


def test_combine_files_rules():
    base = partition_files_record("p", {"a": 10, "b": 20})
    newer = MetadataRecord("p", RecordType.FILE_LIST, {"a": FileInfo(15), "b": TOMBSTONE, "c": TOMBSTONE, "d": FileInfo(5)})
    merged = combine(base, newer)
    assert merged.files == {"a": FileInfo(15), "c": TOMBSTONE, "d": FileInfo(5)}
    assert merged.live_files() == {"a": 15, "d": 5}
    assert combine(newer, partition_files_record("p", {"a": 3})).files["a"] == FileInfo(15)  # sizes only grow
    revived = combine(MetadataRecord("p", RecordType.FILE_LIST, {"c": TOMBSTONE}), partition_files_record("p", {"c": 7}))
    assert revived.live_files() == {"c": 7}
    with pytest.raises(Exception, match="cannot combine"):
        combine(base, partition_list_record(["p"]))


def test_combine_column_stats():
    older = {"fileName": "f", "columnName": "c", "minValue": {"value": 3}, "maxValue": {"value": 9},
             "valueCount": 2, "nullCount": 0, "totalSize": 10, "totalUncompressedSize": 12, "isDeleted": False}
    newer = dict(older, minValue={"value": 1}, maxValue={"value": 5}, valueCount=3)
    merged = combine_column_stats(older, newer)
    assert merged["minValue"] == {"value": 1} and merged["maxValue"] == {"value": 9}
    assert merged["valueCount"] == 5 and merged["totalSize"] == 20
    assert combine_column_stats(older, dict(newer, isDeleted=True))["isDeleted"] is True


def test_hashmap_order_matches_log_blocks(tables):
    """Maps written by Hudi's writers iterate like a default Java HashMap; ours too."""
    compared = 0
    for table in tables.values():
        for _, block in _log_blocks(table / ".hoodie/metadata/files"):
            for record in decode_hfile_block_records(block.content, block.schema):
                names = list(record["filesystemMetadata"] or {})
                if len(names) > 1:
                    assert list(hashmap_order((n, None) for n in sorted(names))) == names
                    compared += 1
    assert compared >= 5


# -- files records of commits ---------------------------------------------------------------


def _files_block_records(table: Path, instant: str) -> dict[str, MetadataRecord]:
    out = {}
    for _, block in _log_blocks(table / ".hoodie/metadata/files"):
        if block.instant_time == instant:
            hfile = open_hfile(block.content)
            out.update({r.key: r for r in decode_values(hfile.cells, block.schema)})
    return out


def test_commit_files_records_match_fixture(tables):
    """``files`` records built from each data commit's write stats equal the ones Hudi wrote
    for that commit (same keys, same entries, same map order)."""
    compared = 0
    for table in tables.values():
        storage = Storage(str(table))
        timeline = Timeline.load(storage, TableConfig.load(storage))
        for instant in timeline.completed(["commit", "deltacommit", "replacecommit"]):
            theirs = _files_block_records(table, instant.requested_time)
            if not theirs:
                continue
            metadata: CommitMetadata = timeline.commit_metadata(instant)
            ours = layout.commit_files_records(
                metadata.partition_to_write_stats,
                operation_type=metadata.operation_type,
                partition_to_replace_file_ids=metadata.partition_to_replace_file_ids,
            )
            assert {r.key: r.files for r in ours} == {k: r.files for k, r in theirs.items()}, instant
            for record in ours:
                assert list(record.files) == list(theirs[record.key].files), instant
            compared += 1
    assert compared >= 10


def test_clean_rollback_restore_files_records():
    clean = layout.clean_files_records(
        {"p1": {"deletePathPatterns": ["a.parquet"], "isPartitionDeleted": False},
         "p2": {"deletePathPatterns": [], "isPartitionDeleted": True}}
    )
    assert [(r.key, dict(r.files)) for r in clean] == [
        ("p1", {"a.parquet": TOMBSTONE}),
        ("p2", {}),
        ("__all_partitions__", {"p2": FileInfo(0, True)}),
    ]
    rollback = layout.rollback_files_records(
        {"": {"partitionPath": "", "rollbackLogFiles": {"/t/.f1_001.log.1_0-1-1": 100, "/t/p/.f1_001.log.1_0-1-1": 120}}}
    )
    assert rollback[0].key == "." and rollback[0].live_files() == {".f1_001.log.1_0-1-1": 120}
    restore = layout.restore_files_records({"p1": {"a": 1, "b": 2}}, {"p1": {"a": 1, "c": 3}, "gone": {"x": 1}})
    assert [(r.key, dict(r.files)) for r in restore] == [
        ("p1", {"b": FileInfo(2), "c": TOMBSTONE}),
        ("__all_partitions__", {"gone": FileInfo(0, True)}),
    ]


def test_empty_file_rejected():
    with pytest.raises(Exception, match="size 0"):
        partition_files_record("p", {"a": 0})


# -- layout -----------------------------------------------------------------------------------


def test_file_group_mapping_matches_fixture(trips):
    checked = 0
    for folder, count in (("record_index", 10), ("column_stats", 2)):
        for path in (trips / ".hoodie/metadata" / folder).glob("*.hfile"):
            index = int(re.search(r"-(\d{4})-0_", path.name).group(1))
            assert path.name.startswith(layout.file_group_id(layout.PARTITIONS[folder], index))
            for key, _ in open_hfile(path.read_bytes()).cells:
                assert layout.file_group_index(key.decode(), count) == index
                checked += 1
    assert checked >= 50
    assert layout.file_group_index("polygenelubricants", 7) == 2  # hash is Integer.MIN_VALUE


def test_initial_log_files_byte_identical(tables):
    compared = 0
    for table in tables.values():
        for path in (table / ".hoodie/metadata").glob("*/.*.log.1_0-0-0"):
            instant = re.search(r"_(\d+)\.log\.", path.name).group(1)
            assert path.read_bytes() == layout.initial_log_file(instant), path
            compared += 1
    assert compared >= 20
    assert layout.initial_log_file_name(layout.FILES, 0, "00000000000000010") == ".files-0000-0_00000000000000010.log.1_0-0-0"


def test_instants_and_counts():
    assert layout.initialization_instant(None) == "00000000000000010"
    assert layout.initialization_instant("20240101000000000", 2) == "20240101000000000012"
    assert layout.compaction_instant("20240101000000000") == "20240101000000000001"
    assert layout.clean_instant("20240101000000000") == "20240101000000000002"
    assert layout.default_file_group_count(layout.FILES) == 1
    assert layout.default_file_group_count(layout.COLUMN_STATS) == 2
    assert layout.default_file_group_count(layout.RECORD_INDEX, 1000) == 10
    assert layout.estimate_file_group_count(10**9) == 89  # 2e9 records x 48 B over 1 GiB groups
    assert layout.file_group_id(layout.RECORD_INDEX, 12) == "record-index-0012-0"


def test_metadata_table_properties():
    props = layout.metadata_table_properties("trips")
    assert props["hoodie.table.name"] == "trips_metadata"
    assert props["hoodie.table.base.file.format"] == "HFILE"
    assert props["hoodie.populate.meta.fields"] == "false"
    assert props["hoodie.table.version"] == "6"
    assert int(props["hoodie.table.checksum"]) == table_checksum(props)
    assert parse_properties(format_properties(props)) == props
    assert layout.metadata_partitions_value(["files", "column_stats", "files"]) == "column_stats,files"


def test_hfile_data_block_reads_back():
    records = [partition_list_record(["a", "b"]), partition_files_record("a", {"f1": 3})]
    framed = layout.hfile_data_block(records, "20240101000000000")
    (block,) = read_log_file(framed)
    assert block.block_type is BlockType.HFILE_DATA_BLOCK and block.instant_time == "20240101000000000"
    assert block.schema == writer_schema_json()
    hfile = open_hfile(block.content)
    assert [from_avro(r) for r in decode_hfile_block_records(block.content, block.schema)] == sorted(
        records, key=lambda r: r.key.encode()
    )
    assert hfile.trailer.compression_codec == 1  # GZ


def test_records_by_file_group():
    records = [record_index_record(f"key{i}", "p", "8aa68f7e-afd6-4c94-b86c-8a886552e08d-0", "20240101000000000") for i in range(50)]
    groups = layout.records_by_file_group(records, layout.RECORD_INDEX, 10)
    assert sum(len(v) for v in groups.values()) == 50
    for group_id, members in groups.items():
        assert all(layout.file_group_id(layout.RECORD_INDEX, layout.file_group_index(r.key, 10)) == group_id for r in members)


# -- the files listing ------------------------------------------------------------------------


def _disk_listing(table: Path) -> dict[str, list[tuple[str, int]]]:
    out = {}
    for root, _dirs, names in os.walk(table):
        rel = os.path.relpath(root, table)
        if rel.split(os.sep)[0] == ".hoodie":
            continue
        files = sorted((n, os.path.getsize(os.path.join(root, n))) for n in names if not n.startswith(".hoodie_partition"))
        if files:
            out["" if rel == "." else rel] = files
    return out


def test_files_listing_equals_storage(tables):
    for fid, table in tables.items():
        listing = files_listing(Storage(str(table)))
        assert listing.partitions == _disk_listing(table), fid
        assert listing.applied_instants


def test_files_listing_covers_hudi_rs_slices(tables):
    import hudi

    for fid, table in tables.items():
        listing = files_listing(Storage(str(table))).partitions
        slices = hudi.HudiTableBuilder.from_base_uri(str(table)).build().get_file_slices()
        assert slices, fid
        for file_slice in slices:
            files = dict(listing[file_slice.partition_path])
            if file_slice.base_file_name:
                assert files[file_slice.base_file_name] == file_slice.base_file_size, fid
            for name, size in zip(file_slice.log_file_names, file_slice.log_file_sizes):
                assert files[name] == size, fid
        latest_base = {}
        for partition, files in listing.items():
            for name, _ in files:
                if not name.startswith("."):
                    file_id = name.split("_")[0]
                    latest_base[(partition, file_id)] = max(latest_base.get((partition, file_id), ""), name.rsplit("_", 1)[1])
        rs = {(s.partition_path, s.file_id): s.base_file_name.rsplit("_", 1)[1] for s in slices if s.base_file_name}
        assert {k: latest_base[k] for k in rs} == rs


def test_uncommitted_delta_commit_is_ignored(tables, tmp_path):
    """A block of a delta commit the data table never completed does not count."""
    import shutil

    source = next(iter(tables.values()))
    table = tmp_path / "t"
    shutil.copytree(source, table)
    folder = table / ".hoodie/metadata/files"
    before = files_listing(Storage(str(table))).partitions
    bogus = partition_files_record(next(iter(before)), {"ghost.parquet": 5})
    log = sorted(folder.glob(".files-0000-0_*.log.*"))[-1]
    with open(log, "ab") as out:
        out.write(layout.hfile_data_block([bogus], "29990101000000000"))
    assert files_listing(Storage(str(table))).partitions == before
    # the same block under a completed data instant does count
    done = sorted(p.name.split("_")[0].split(".")[0] for p in (table / ".hoodie/timeline").glob("*.deltacommit"))[-1]
    with open(log, "ab") as out:
        out.write(layout.hfile_data_block([bogus], done))
    after = files_listing(Storage(str(table))).partitions
    assert ("ghost.parquet", 5) in after[next(iter(before))]


def test_no_metadata_table(tmp_path):
    (tmp_path / ".hoodie").mkdir()
    with pytest.raises(MetadataTableError, match="no metadata table"):
        merged_records(Storage(str(tmp_path)))
