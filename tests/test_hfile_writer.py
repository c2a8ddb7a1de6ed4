"""HFile writer: byte-for-byte equal to the HFiles Apache Hudi wrote through HBase's
writer (the v8 fixtures), readable by our reader and by hudi-rs in every layout."""

from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path

import pytest
from fixtures import fixture_id, fixture_zips, unzip_fixture

from hudi_duck.core.file_group.log_format import BlockType, encode_block, read_log_file
from hudi_duck.core.hfile.reader import open_hfile, parse_trailer, read_block
from hudi_duck.core.hfile.writer import (
    HFileWriteError,
    HFileWriter,
    HFileWriterOptions,
    cell_key,
    crc32c,
    index_key,
    java_gzip,
    midpoint_row,
    write_hfile,
    write_hudi_base_hfile,
    write_hudi_block_hfile,
)
from hudi_duck.core.index import bloom


def _metadata_table(tmp_path_factory, pattern: str) -> Path:
    zips = [z for z in fixture_zips() if re.search(pattern, fixture_id(z))]
    assert zips, pattern
    root = tmp_path_factory.mktemp("hfw")
    return Path(unzip_fixture(zips[0], root)) / ".hoodie" / "metadata"


@pytest.fixture(scope="module")
def hbase_mdt(tmp_path_factory) -> Path:
    """A metadata table whose HFiles were written by HBase's writer (Hudi 1.0, as 0.14/0.15)."""
    return _metadata_table(tmp_path_factory, r"v8_trips_8i3u1d$")


@pytest.fixture(scope="module")
def native_mdt(tmp_path_factory) -> Path:
    """A metadata table written by Hudi 1.1's own HFile writer."""
    return _metadata_table(tmp_path_factory, r"mor/avro/v9_txns_simple_meta$")


def _records(data: bytes) -> tuple[list[tuple[str, bytes]], str]:
    hfile = open_hfile(data)
    return [(k.decode("utf-8"), v) for k, v in hfile.cells], hfile.schema_json or ""


def _hfile_blocks(mdt: Path):
    for path in sorted(mdt.glob("*/.*.log.*")):
        for block in read_log_file(path.read_bytes(), str(path)):
            if block.block_type is BlockType.HFILE_DATA_BLOCK:
                yield path, block


# -- byte equality with Apache ---------------------------------------------------------------


def test_base_files_byte_identical_to_apache(hbase_mdt):
    paths = sorted(hbase_mdt.glob("*/*.hfile"))
    partitions = {p.parent.name for p in paths}
    assert {"files", "record_index", "column_stats"} <= partitions
    for path in paths:
        data = path.read_bytes()
        records, schema = _records(data)
        ours = write_hudi_base_hfile(records, schema, bloom_filter=bloom.create())
        assert ours == data, path.name
    assert len(paths) >= 20


def test_log_block_contents_byte_identical_to_apache(hbase_mdt):
    count = 0
    for path, block in _hfile_blocks(hbase_mdt):
        records, schema = _records(block.content)
        assert schema == block.schema  # the block header and the file info carry the same text
        assert write_hudi_block_hfile(records, schema) == block.content, path.name
        count += 1
    assert count >= 30


def test_record_order_does_not_matter(hbase_mdt):
    path = next(p for p in sorted(hbase_mdt.glob("column_stats/*.hfile")) if len(open_hfile(p.read_bytes()).cells) > 3)
    data = path.read_bytes()
    records, schema = _records(data)
    assert write_hudi_base_hfile(list(reversed(records)), schema, bloom_filter=bloom.create()) == data


def test_native_writer_files_rewrite_to_same_cells(native_mdt):
    """Hudi 1.1's own writer differs in framing (no checksums, minor version 0); the
    cells, the schema and Hudi's keys survive a rewrite."""
    for path in sorted(native_mdt.glob("*/*.hfile")):
        data = path.read_bytes()
        theirs = open_hfile(data)
        records, schema = _records(data)
        ours = open_hfile(write_hudi_base_hfile(records, schema, bloom_filter=bloom.create()))
        assert ours.cells == theirs.cells
        for key in (b"schema", b"minRecordKey", b"maxRecordKey", b"bloomFilterTypeCode"):
            assert ours.file_info[key] == theirs.file_info[key], (path.name, key)


# -- hudi-rs reads what we write -------------------------------------------------------------

LAYOUTS = {
    "default": HFileWriterOptions(),
    "uncompressed": HFileWriterOptions(compression="NONE"),
    "one_cell_blocks": HFileWriterOptions(block_size=1),
    "two_level_index": HFileWriterOptions(block_size=1, index_chunk_size=40),
    "three_level_index": HFileWriterOptions(block_size=1, index_chunk_size=40, index_min_entries=1),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_hudi_rs_reads_rewritten_base_files(hbase_mdt, tmp_path, layout):
    from hudi import HudiFileGroupReader

    mdt = tmp_path / "metadata"
    shutil.copytree(hbase_mdt, mdt)
    options = LAYOUTS[layout]
    levels = set()
    for path in sorted(mdt.glob("*/*.hfile")):
        relative = path.relative_to(mdt).as_posix()
        expected = HudiFileGroupReader(str(mdt)).read_file_slice_from_paths(relative, []).to_pylist()
        data = path.read_bytes()
        records, schema = _records(data)
        ours = write_hudi_base_hfile(records, schema, bloom_filter=bloom.create(), options=options)
        path.write_bytes(ours)
        levels.add(parse_trailer(ours).num_data_index_levels)
        assert open_hfile(ours).cells == open_hfile(data).cells
        got = HudiFileGroupReader(str(mdt)).read_file_slice_from_paths(relative, []).to_pylist()
        assert got == expected, (layout, relative)
    minimum_levels = {"two_level_index": 2, "three_level_index": 3}.get(layout, 1)
    assert max(levels) >= minimum_levels


@pytest.mark.parametrize("layout", ["uncompressed", "three_level_index"])
def test_hudi_rs_lists_table_through_rewritten_metadata_table(tmp_path, layout):
    """hudi-rs plans file slices from the metadata table (``hoodie.metadata.enable``); with every
    HFile of the ``files`` partition rewritten by us (base files and log-block contents) it
    plans the same slices."""
    import hudi

    zip_path = next(z for z in fixture_zips() if fixture_id(z).endswith("v8_trips_8i3u1d"))
    table = Path(unzip_fixture(zip_path, tmp_path))

    def slices():
        builder = hudi.HudiTableBuilder.from_base_uri(str(table)).with_option("hoodie.metadata.enable", "true")
        return sorted(
            (s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names))
            for s in builder.build().get_file_slices()
        )

    expected = slices()
    options = LAYOUTS[layout]
    folder = table / ".hoodie" / "metadata" / "files"
    rewritten = 0
    for path in sorted(folder.glob("*.hfile")):
        records, schema = _records(path.read_bytes())
        path.write_bytes(write_hudi_base_hfile(records, schema, bloom_filter=bloom.create(), options=options))
        rewritten += 1
    for path in sorted(folder.glob(".*.log.*")):
        blocks = read_log_file(path.read_bytes(), str(path))
        out = bytearray()
        for block in blocks:
            content = block.content
            if block.block_type is BlockType.HFILE_DATA_BLOCK:
                records, schema = _records(content)
                content = write_hfile(
                    [(k.encode(), v) for k, v in records], file_info={b"schema": schema.encode()}, options=options
                )
                rewritten += 1
            out += encode_block(block.block_type, block.header, content, block.footer)
        path.write_bytes(bytes(out))
    assert rewritten >= 8
    assert slices() == expected


def test_multi_level_index_layout():
    """Leaf blocks sit between data blocks; the root holds leaf entries plus mid-key metadata."""
    cells = [(b"k%04d" % i, b"v" * 10) for i in range(50)]
    options = HFileWriterOptions(block_size=1, index_chunk_size=400, compression="NONE")
    data = write_hfile(cells, options=options)
    trailer = parse_trailer(data)
    assert trailer.num_data_index_levels == 2
    assert trailer.data_index_count > 1
    magics = []
    offset = 0
    while offset < trailer.load_on_open_offset:
        block = read_block(data, offset, len(data) - 4096, trailer.compression_codec)
        magics.append(block.magic)
        offset = block.next_offset
    assert magics.count(b"DATABLK*") == 50 and b"IDXLEAF2" in magics
    root = read_block(data, trailer.load_on_open_offset, len(data) - 4096, trailer.compression_codec)
    assert root.magic == b"IDXROOT2"
    mid_offset, _mid_size, _mid_entry = struct.unpack(">qii", root.payload[-16:])
    assert read_block(data, mid_offset, len(data), trailer.compression_codec).magic == b"IDXLEAF2"
    assert open_hfile(data).cells == cells


# -- pieces ---------------------------------------------------------------------------------


def test_crc32c_known_value():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_java_gzip_header_and_roundtrip():
    import gzip

    payload = os.urandom(100) + b"a" * 1000
    out = java_gzip(payload)
    assert out[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
    assert gzip.decompress(out) == payload


@pytest.mark.parametrize(
    "left, right, expected",
    [
        (b"abc", b"abd", b"abd"),  # next byte is right's: no shorter row
        (b"abc", b"abz", b"abd"),  # left byte + 1 fits before right
        (b"ab", b"abc", b"abc"),  # left is a prefix: right's prefix one longer
        (b"a\xfe", b"a\xff", b"a\xff"),
        (b"a\x80", b"a\x90", b"a\x81"),
        (b"a\x7f", b"a\x81", b"a\x80"),
    ],
)
def test_midpoint_row(left, right, expected):
    assert midpoint_row(left, right) == expected
    assert left < expected <= right


def test_index_key_forms():
    assert index_key(None, b"k1") == cell_key(b"k1")
    first_on_row = index_key(b"apple", b"banana")
    assert first_on_row == struct.pack(">H", 1) + b"b" + b"\x00" + struct.pack(">q", (1 << 63) - 1) + b"\xff"


def test_duplicate_rows_stay_in_one_block():
    cells = [(b"a", b"1"), (b"b", b"2"), (b"b", b"3"), (b"c", b"4")]
    data = write_hfile(cells, options=HFileWriterOptions(block_size=1, compression="NONE"))
    assert parse_trailer(data).data_index_count == 3
    assert open_hfile(data).cells == cells


def test_empty_hfile():
    data = write_hfile([], file_info={b"schema": b"{}"})
    hfile = open_hfile(data)
    assert hfile.cells == [] and hfile.trailer.entry_count == 0
    assert hfile.trailer.first_data_block_offset == (1 << 64) - 1  # -1 as uint64, as HBase writes it
    assert b"hfile.LASTKEY" not in hfile.file_info


def test_unsorted_rows_rejected():
    with pytest.raises(HFileWriteError, match="key order"):
        write_hfile([(b"b", b""), (b"a", b"")])


def test_reserved_file_info_key_rejected():
    writer = HFileWriter()
    with pytest.raises(HFileWriteError, match="reserved"):
        writer.append_file_info(b"hfile.LASTKEY", b"x")


def test_unsupported_compression_rejected():
    with pytest.raises(HFileWriteError, match="SNAPPY"):
        HFileWriterOptions(compression="SNAPPY")


def test_finished_writer_rejects_more_cells():
    writer = HFileWriter()
    writer.finish()
    with pytest.raises(HFileWriteError, match="finished"):
        writer.append(b"a", b"")
