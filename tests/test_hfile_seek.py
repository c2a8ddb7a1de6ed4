"""HFile lookups through the block index: the same cells as a full parse, for our HFiles
(single- and multi-level indexes) and the Apache-written fixtures', while reading only the
blocks that can hold the keys; a damaged index or trailer is an error naming the file."""

from __future__ import annotations

import random
import re
import struct
import zipfile
from pathlib import Path

import pytest
from fixtures import CountingStorage, fixture_id, fixture_zips, unzip_fixture

from hudi_duck.core.errors import CorruptFileError
from hudi_duck.core.hfile.checksum import CHECKSUM_CRC32C, block_checksums
from hudi_duck.core.file_group.log_format import BlockType, read_log_file
from hudi_duck.core.hfile.reader import TRAILER_SIZE, open_hfile, parse_trailer
from hudi_duck.core.hfile.seek import TAIL_READ_SIZE, KeyRange, SeekableHFile
from hudi_duck.core.hfile.writer import HFileWriterOptions, write_hfile, write_hudi_base_hfile
from hudi_duck.core.index import bloom
from hudi_duck.core.metadata import layout
from hudi_duck.core.metadata.files_reader import MetadataTable
from hudi_duck.core.metadata.indexes import lookup_record_index
from hudi_duck.core.metadata.records import encode_cells, record_index_record, record_location, writer_schema_json
from hudi_duck.core.storage.storage import Storage

LAYOUTS = {
    "one_level": HFileWriterOptions(block_size=512),
    "uncompressed": HFileWriterOptions(block_size=300, compression="NONE"),
    "two_level": HFileWriterOptions(block_size=200, index_chunk_size=200),
    "three_level": HFileWriterOptions(block_size=100, index_chunk_size=120, index_min_entries=2),
}


def _cells(seed: int, count: int = 2000) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    rows = sorted({("%x" % rng.getrandbits(rng.randint(4, 40))).encode() for _ in range(count)})
    return [(row, rng.randbytes(rng.randint(0, 40))) for row in rows]


class Recording:
    """A range reader over bytes that records every range read."""

    def __init__(self, data: bytes):
        self.data = data
        self.ranges: list[tuple[int, int]] = []

    def __call__(self, start: int, end: int) -> bytes:
        self.ranges.append((start, end))
        return self.data[start:end]


def _probe_keys(hfile: SeekableHFile, rows: list[bytes], rng: random.Random) -> set[bytes]:
    """Present and absent rows, rows before the first and after the last, rows just after
    present ones, and the index's own (midpoint) rows."""
    keys = set(rng.sample(rows, min(len(rows), 25)))
    keys |= {rows[0], rows[-1], b"", b"\x00", rows[0][:-1], rows[-1] + b"\xff", b"\xff" * 3}
    keys |= {r + b"0" for r in rng.sample(rows, 10)}
    keys |= {entry.row for entry in hfile.data_blocks([KeyRange(b"", None)])}
    return keys


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_lookups_equal_a_full_parse(name):
    cells = _cells(len(name))
    data = write_hfile(cells, options=LAYOUTS[name])
    assert open_hfile(data).cells == cells
    trailer = parse_trailer(data)
    expected_levels = {"one_level": 1, "uncompressed": 1, "two_level": 2, "three_level": 3}[name]
    assert trailer.num_data_index_levels >= expected_levels
    hfile = SeekableHFile.of_bytes(data, f"{name}.hfile")
    rows = [row for row, _ in cells]
    blocks = hfile.data_blocks([KeyRange(b"", None)])
    assert len(blocks) == trailer.data_index_count if expected_levels == 1 else len(blocks) > 20
    # the last row of each block and the first row of the next one
    boundaries: set[bytes] = set()
    for entry in blocks[1:]:
        position = next(i for i, row in enumerate(rows) if row >= entry.row)
        boundaries |= {rows[position - 1], rows[position]}
    rng = random.Random(7)
    for trial in range(30):
        keys = _probe_keys(hfile, rows, rng) if trial == 0 else set(rng.sample(rows, rng.randint(0, 12)))
        keys |= boundaries if trial == 1 else set()
        keys |= {("%x" % rng.getrandbits(32)).encode() for _ in range(3)}
        assert hfile.get(keys) == [cell for cell in cells if cell[0] in keys]
        prefix = rng.choice(rows)[: rng.randint(0, 3)]
        assert hfile.with_prefixes([prefix]) == [cell for cell in cells if cell[0].startswith(prefix)]
    assert hfile.get(rows) == cells
    assert hfile.with_prefixes([b""]) == cells
    assert hfile.get([]) == [] and hfile.with_prefixes([]) == []


def test_duplicate_rows_are_all_found():
    cells = [(b"a", b"1"), (b"b", b"2"), (b"b", b"3"), (b"b", b"4"), (b"c", b"5")]
    data = write_hfile(cells, options=HFileWriterOptions(block_size=1, compression="NONE"))
    assert SeekableHFile.of_bytes(data).get([b"b"]) == cells[1:4]


def test_empty_hfile_has_nothing():
    hfile = SeekableHFile.of_bytes(write_hfile([], file_info={b"schema": b"{}"}), "empty.hfile")
    assert hfile.get([b"a"]) == [] and hfile.with_prefixes([b""]) == []
    assert hfile.schema_json == "{}"


# -- the Apache-written fixtures ---------------------------------------------------------------

VERSIONED_ZIPS = [z for z in fixture_zips() if re.search(r"(^|/)v[89]_", fixture_id(z))]


@pytest.fixture(scope="module")
def apache_hfiles(tmp_path_factory) -> list[tuple[str, bytes]]:
    """(name, bytes) of every base HFile and HFile log block of the v8/v9 fixtures."""
    root = tmp_path_factory.mktemp("seek_fixtures")
    out: list[tuple[str, bytes]] = []
    for zip_path in VERSIONED_ZIPS:
        mdt = Path(unzip_fixture(zip_path, root)) / ".hoodie" / "metadata"
        out += [(str(p), p.read_bytes()) for p in sorted(mdt.glob("*/*.hfile"))]
        for log in sorted(mdt.glob("*/.*.log.*")):
            for block in read_log_file(log.read_bytes(), str(log)):
                if block.block_type is BlockType.HFILE_DATA_BLOCK:
                    out.append((f"{log}@{block.offset}", block.content))
    assert len(out) > 50
    return out


def test_apache_hfiles_seek_to_the_same_cells(apache_hfiles):
    rng = random.Random(3)
    prefixes_seen = 0
    for name, data in apache_hfiles:
        cells = open_hfile(data, name).cells
        hfile = SeekableHFile.of_bytes(data, name)
        rows = [row for row, _ in cells]
        keys = set(rng.sample(rows, min(len(rows), 4))) | {b"", b"zzzz", b"0", b"__all_partitions__"}
        if rows:
            keys |= {rows[0], rows[-1], rows[0] + b"\x00", rows[-1][:-1]}
        assert hfile.get(keys) == [cell for cell in cells if cell[0] in keys], name
        assert hfile.get(rows) == cells, name
        for row in rng.sample(rows, min(len(rows), 2)):
            prefix = row[: len(row) // 2]
            prefixes_seen += 1
            assert hfile.with_prefixes([prefix, b"~"]) == [c for c in cells if c[0].startswith((prefix, b"~"))], name


# -- reading only what is needed ----------------------------------------------------------------


def test_lookup_reads_only_the_blocks_that_can_hold_the_keys():
    cells = _cells(11, 20000)
    data = write_hfile(cells, options=HFileWriterOptions(block_size=16 * 1024, compression="NONE"))
    recording = Recording(data)
    hfile = SeekableHFile(recording, len(data), "big.hfile")
    all_blocks = hfile.data_blocks([KeyRange(b"", None)])
    assert len(all_blocks) > 30 and len(data) > 10 * TAIL_READ_SIZE
    opened = list(recording.ranges)
    assert opened == [(len(data) - TAIL_READ_SIZE, len(data))]  # trailer + load-on-open section at once

    wanted = [cells[100][0], cells[101][0], cells[15000][0], cells[-1][0], b"no-such-key"]
    got = hfile.get(wanted)
    assert got == [cells[100], cells[101], cells[15000], cells[-1]]
    reads = recording.ranges[len(opened) :]
    holding = hfile.data_blocks([KeyRange.exact(row) for row in wanted])
    assert 2 <= len(holding) <= 4
    # exactly the blocks that can hold the keys, adjacent ones in one read
    assert sorted(reads) == sorted(_runs(holding))
    assert sum(end - start for start, end in reads) < len(data) / 10


def _runs(entries) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for entry in sorted(entries, key=lambda e: e.offset):
        if runs and runs[-1][1] == entry.offset:
            runs[-1] = (runs[-1][0], entry.offset + entry.size)
        else:
            runs.append((entry.offset, entry.offset + entry.size))
    return runs


def test_multi_level_lookup_reads_one_path_of_index_blocks():
    cells = _cells(5, 3000)
    data = write_hfile(cells, options=HFileWriterOptions(block_size=100, index_chunk_size=120, index_min_entries=2))
    trailer = parse_trailer(data)
    assert trailer.num_data_index_levels >= 3
    recording = Recording(data)
    hfile = SeekableHFile(recording, len(data), "deep.hfile")
    before = len(recording.ranges)
    assert hfile.get([cells[1234][0]]) == [cells[1234]]
    # one block per index level below the root, then one data block
    assert len(recording.ranges) - before == trailer.num_data_index_levels


def _big_record_index_base_file(table: str, count: int) -> tuple[Path, list[str]]:
    """Replace the base HFile of the fixture's record-index file group 1 by one of ``count``
    entries (keys of that file group) in 64 KiB blocks; returns its path and keys."""
    folder = Path(table) / ".hoodie" / "metadata" / layout.RECORD_INDEX.name
    (base,) = sorted(folder.glob(f"{layout.file_group_id(layout.RECORD_INDEX, 1)}_*.hfile"))
    groups = len({re.sub(r"^\.", "", p.name)[: len("record-index-0000-0")] for p in folder.glob("*record-index-*")})
    assert groups == 10
    keys = [k for k in (f"key-{i:08d}" for i in range(count * groups * 2)) if layout.file_group_index(k, groups) == 1]
    keys = keys[:count]
    records = [record_index_record(k, "2024/01/01", "9b1c5fb1-2c23-4d35-b1c5-6a2e1e2e1b64-0", "20251220210130942") for k in keys]
    data = write_hudi_base_hfile(
        encode_cells(records), writer_schema_json(), bloom_filter=bloom.create(),
        options=HFileWriterOptions(block_size=64 * 1024),
    )
    base.write_bytes(data)
    return base, keys


def test_record_index_lookup_reads_only_the_blocks_of_the_keys(fresh_fixture):
    table = fresh_fixture("quickstart_trips_table/mor/avro/v8_trips_8i3u1d")
    base, keys = _big_record_index_base_file(table, 40000)
    size = base.stat().st_size
    hfile = SeekableHFile.of_bytes(base.read_bytes())
    assert len(hfile.data_blocks([KeyRange(b"", None)])) > 20

    storage = CountingStorage(table)
    mdt = MetadataTable(storage)
    (file_slice,) = [
        s for s in mdt.view.latest_slices(partitions=[layout.RECORD_INDEX.name])
        if s.file_id == layout.file_group_id(layout.RECORD_INDEX, 1)
    ]
    full = {k: record_location(r) for k, r in mdt._slice_records(file_slice, None, set()).items()}
    assert len(full) == len(keys)

    wanted = [keys[7], keys[20000], keys[-1], "key-absent-1"]
    del storage.log[:]
    found = lookup_record_index(mdt, wanted)
    assert found == {k: full[k] for k in wanted if k in full}
    reads = [(start, end) for path, start, end in storage.log if path == str(base)]
    holding = hfile.data_blocks([KeyRange.exact(k.encode()) for k in wanted])
    assert len(holding) == 3
    assert reads[0] == (size - TAIL_READ_SIZE, size)  # trailer, root index, file info
    assert sorted(reads[1:]) == sorted(_runs(holding))
    assert sum(end - start for start, end in reads) < size / 4


# -- damage ---------------------------------------------------------------------------------------


def _two_level() -> bytes:
    return write_hfile(_cells(2, 800), options=HFileWriterOptions(block_size=100, index_chunk_size=1000, compression="NONE"))


def _patched(data: bytes, at: int, raw: bytes) -> bytes:
    return data[:at] + raw + data[at + len(raw) :]


def test_damaged_trailer_is_corrupt():
    data = _two_level()
    with pytest.raises(CorruptFileError, match="bad.hfile"):
        SeekableHFile.of_bytes(data[:-10], "bad.hfile")
    with pytest.raises(CorruptFileError, match="bad.hfile.*trailer"):
        SeekableHFile.of_bytes(_patched(data, len(data) - TRAILER_SIZE, b"XXXX"), "bad.hfile")
    with pytest.raises(CorruptFileError, match="bad.hfile"):
        SeekableHFile.of_bytes(data[TRAILER_SIZE:], "bad.hfile")


def _with_root_entry(data: bytes, entry: int, offset: int | None = None, size: int | None = None, row: bytes | None = None) -> bytes:
    """``data`` (uncompressed, single-level index) with one root index entry changed and
    the root block's checksums recomputed, so only the index check can catch it."""
    trailer = parse_trailer(data)
    root_at = trailer.load_on_open_offset
    payload_end = root_at + struct.unpack_from(">i", data, root_at + 29)[0]
    block = bytearray(data[root_at:payload_end])
    pos = 33
    for _ in range(entry):
        key_len = block[pos + 12]
        pos += 13 + key_len
    if offset is not None:
        struct.pack_into(">q", block, pos, offset)
    if size is not None:
        struct.pack_into(">i", block, pos + 8, size)
    if row is not None:
        key_len = block[pos + 12]
        assert len(row) <= key_len - 2
        block[pos + 15 : pos + 15 + len(row)] = row
    checksums = block_checksums(bytes(block), CHECKSUM_CRC32C, 16 * 1024)
    out = data[:root_at] + bytes(block) + checksums + data[payload_end + len(checksums) :]
    assert len(out) == len(data)
    return out


def _one_level() -> tuple[list[tuple[bytes, bytes]], bytes]:
    cells = [(b"row-%05d" % i, b"v" * 20) for i in range(400)]
    return cells, write_hfile(cells, options=HFileWriterOptions(block_size=100, compression="NONE"))


def test_root_index_entry_outside_the_data_is_corrupt():
    cells, data = _one_level()
    bad = _with_root_entry(data, 3, offset=len(data))
    with pytest.raises(CorruptFileError, match="bad.hfile.*outside the data section"):
        SeekableHFile.of_bytes(bad, "bad.hfile")


def test_root_index_entry_with_a_wrong_size_is_corrupt():
    cells, data = _one_level()
    first = SeekableHFile.of_bytes(data).data_blocks([KeyRange(b"", None)])[0]
    bad = _with_root_entry(data, 0, size=first.size + 1)
    with pytest.raises(CorruptFileError, match="bad.hfile.*block at 0 .*index entry says"):
        SeekableHFile.of_bytes(bad, "bad.hfile").get([cells[0][0]])


def test_root_index_keys_out_of_order_are_corrupt():
    cells, data = _one_level()
    bad = _with_root_entry(data, 5, row=b"zzz")
    with pytest.raises(CorruptFileError, match="bad.hfile.*out of order"):
        SeekableHFile.of_bytes(bad, "bad.hfile")


def test_damaged_root_index_fails_its_checksum():
    cells, data = _one_level()
    root_at = parse_trailer(data).load_on_open_offset
    with pytest.raises(CorruptFileError, match="bad.hfile.*checksum"):
        SeekableHFile.of_bytes(_patched(data, root_at + 40, b"\x7f\x7f"), "bad.hfile")


def test_damaged_leaf_index_is_corrupt():
    data = _two_level()
    cells = _cells(2, 800)
    hfile = SeekableHFile.of_bytes(data)
    assert hfile.trailer.num_data_index_levels == 2
    leaf = hfile._root[1]  # noqa: SLF001 - the second leaf index block
    bad = _patched(data, leaf.offset + 33 + 4, b"\xff\xff\xff\x7f")
    with pytest.raises(CorruptFileError, match="bad.hfile.*IDXLEAF2.*checksum"):
        SeekableHFile.of_bytes(bad, "bad.hfile").get([row for row, _ in cells])
    # a lookup under the first leaf does not read the damaged one
    assert SeekableHFile.of_bytes(bad, "bad.hfile").get([cells[0][0]]) == [cells[0]]


def test_wrong_index_level_count_is_corrupt():
    data = _two_level()
    trailer = parse_trailer(data)
    assert trailer.num_data_index_levels == 2
    # the trailer's level count (field 8) as one: root entries then point at leaf blocks
    tail = bytearray(data[-TRAILER_SIZE:])
    at = tail.index(bytes([8 << 3, 2]), 9)
    tail[at + 1] = 1
    bad = data[:-TRAILER_SIZE] + bytes(tail)
    with pytest.raises(CorruptFileError, match="bad.hfile.*IDXLEAF2.*expected b'DATABLK"):
        SeekableHFile.of_bytes(bad, "bad.hfile").get([_cells(2, 800)[5][0]])


def test_damaged_data_block_fails_its_checksum_on_lookup():
    cells = _cells(4, 400)
    data = write_hfile(cells, options=HFileWriterOptions(block_size=100, compression="NONE"))
    hfile = SeekableHFile.of_bytes(data)
    block = hfile.data_blocks([KeyRange.exact(cells[200][0])])[0]
    bad = _patched(data, block.offset + 40, b"\x00\x01\x02")
    with pytest.raises(CorruptFileError, match="bad.hfile.*checksum"):
        SeekableHFile.of_bytes(bad, "bad.hfile").get([cells[200][0]])
    # blocks the lookup does not need are not read, so not checked
    assert SeekableHFile.of_bytes(bad, "bad.hfile").get([cells[0][0]]) == [cells[0]]


def test_damaged_base_file_names_the_file_in_a_record_index_lookup(fresh_fixture):
    table = fresh_fixture("quickstart_trips_table/mor/avro/v8_trips_8i3u1d")
    base, keys = _big_record_index_base_file(table, 3000)
    data = base.read_bytes()
    trailer = parse_trailer(data)
    base.write_bytes(_patched(data, trailer.load_on_open_offset + 40, b"\x00\x00\x00\x00"))
    with pytest.raises(CorruptFileError, match=re.escape(base.name)):
        lookup_record_index(MetadataTable(Storage(table)), keys[:2])


# -- metadata-table lookups on the Apache-written fixtures ---------------------------------------

def _has_index_partitions(zip_path: Path) -> bool:
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
    return any(re.search(r"\.hoodie/metadata/(column_stats|record_index)/[^/]+\.hfile$", n) for n in names)


MDT_FIXTURES = [fixture_id(z) for z in VERSIONED_ZIPS if _has_index_partitions(z)]


@pytest.mark.parametrize("fid", MDT_FIXTURES)
def test_metadata_key_and_prefix_lookups_equal_full_reads(fixture_tables, fid):
    """Column-stats reads by column (key prefix) and record-index lookups (exact keys) of
    the Apache-written metadata tables equal filtering a full read of each partition."""
    assert len(MDT_FIXTURES) >= 3
    mdt = MetadataTable(Storage(fixture_tables[fid]))
    partitions = {s.partition_path for s in mdt.view.latest_slices()} & {layout.COLUMN_STATS.name, layout.RECORD_INDEX.name}
    assert partitions, fid
    rng = random.Random(fid)
    for partition in sorted(partitions):
        full, _ = mdt.records(partition)
        assert full, (fid, partition)
        keys = sorted(full)
        if partition == layout.COLUMN_STATS.name:
            prefixes = sorted({k[:12] for k in rng.sample(keys, min(len(keys), 3))}) + ["no-such-column"]
            got, _ = mdt.records(partition, prefixes)
            assert got == {k: r for k, r in full.items() if k.startswith(tuple(prefixes))}, (fid, prefixes)
        else:
            wanted = rng.sample(keys, min(len(keys), 5)) + ["no-such-key"]
            expected = {k: record_location(full[k]) for k in wanted if k in full}
            assert lookup_record_index(mdt, wanted) == expected, fid
