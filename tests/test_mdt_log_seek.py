"""Keyed reads of the metadata table's log files read only the log blocks' framing and the
HFile blocks that can hold the keys (ranged reads), and give exactly what reading the whole
log files gives: framing by ranges equals the whole-file parser on intact and damaged logs,
and record-index lookups whose index lives in log blocks (with delete and rollback blocks)
equal the full read while reading a fraction of the log's bytes."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import fsspec
import pytest

from hudi_duck.core.errors import CorruptFileError
from hudi_duck.core.file_group.log_blocks import DeleteRecord, encode_delete_records
from hudi_duck.core.file_group.log_format import (
    HEAD_READ_SIZE,
    BlockType,
    HeaderKey,
    LogBlock,
    encode_block,
    iter_blocks_ranged,
    read_log_file,
)
from hudi_duck.core.hfile.reader import SCHEMA_KEY
from hudi_duck.core.hfile.writer import HFileWriterOptions, write_hfile
from hudi_duck.core.metadata import layout
from hudi_duck.core.metadata.files_reader import MetadataTable
from hudi_duck.core.metadata.indexes import lookup_record_index
from hudi_duck.core.metadata.records import encode_cells, record_index_record, record_location, writer_schema_json
from hudi_duck.core.storage.storage import Storage
from fixtures import CountingStorage

FIXTURE = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
FILE_ID = "9b1c5fb1-2c23-4d35-b1c5-6a2e1e2e1b64-0"


def _hfile_block(instant: str, keys: list[str], partition: str, block_size: int = 16 * 1024) -> bytes:
    """An HFILE_DATA_BLOCK of record-index entries whose HFile spans many data blocks."""
    records = [record_index_record(k, partition, FILE_ID, instant) for k in keys]
    content = write_hfile(
        sorted((k.encode(), v) for k, v in encode_cells(records)),
        file_info={SCHEMA_KEY: writer_schema_json().encode()},
        options=HFileWriterOptions(block_size=block_size, compression="NONE"),
    )
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: writer_schema_json()}
    return encode_block(BlockType.HFILE_DATA_BLOCK, header, content)


def _delete_block(instant: str, keys: list[str]) -> bytes:
    return encode_block(
        BlockType.DELETE_BLOCK,
        {HeaderKey.INSTANT_TIME: instant},
        encode_delete_records([DeleteRecord(k, "") for k in keys]),
    )


def _rollback_block(instant: str, target: str) -> bytes:
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.TARGET_INSTANT_TIME: target, HeaderKey.COMMAND_BLOCK_TYPE: "0"}
    return encode_block(BlockType.COMMAND_BLOCK, header, b"")


def _log(keys: list[str], first: str, second: str) -> bytes:
    """Entries at ``first``, some deleted, an overwrite at ``second`` that a rollback undoes,
    then new entries at ``second``."""
    return b"".join(
        [
            _hfile_block(first, keys[: len(keys) // 2], "p1"),
            _delete_block(first, keys[:50:3]),
            _hfile_block(second, keys[::5], "undone"),
            _rollback_block(second, second),
            _hfile_block(second, keys[len(keys) // 2 :] + keys[10:20], "p2"),
        ]
    )


def _content(block: LogBlock) -> bytes:
    if block.content_reader is not None:
        return bytes(block.content_reader(0, block.content_size))
    return bytes(block.content)


def _described(blocks: list[LogBlock]) -> list[tuple]:
    return [
        (b.block_type, b.header, b.footer, b.offset, b.length, b.content_offset if b.block_type is not BlockType.CORRUPT_BLOCK else 0, _content(b))
        for b in blocks
    ]


def _ranged(data: bytes, unread=frozenset({BlockType.HFILE_DATA_BLOCK})) -> tuple[list[LogBlock], list[tuple[int, int]], int]:
    ranges: list[tuple[int, int]] = []
    whole = [0]

    def read(start: int, end: int) -> bytes:
        ranges.append((start, end))
        return data[start:end]

    def read_all() -> bytes:
        whole[0] += 1
        return data

    return list(iter_blocks_ranged(read, len(data), "t.log", unread, read_all)), ranges, whole[0]


def _keys(count: int) -> list[str]:
    return [f"key-{i:08d}" for i in range(count)]


def test_ranged_framing_equals_the_whole_file_and_leaves_hfile_content_unread():
    data = _log(_keys(15000), "20250101000000000", "20250102000000000")
    blocks, ranges, whole = _ranged(data)
    framing = sum(end - start for start, end in ranges)  # before any content is read below
    assert whole == 0
    assert [b.content_reader is not None for b in blocks] == [True, False, True, False, True]
    unread = sum(b.content_size for b in blocks if b.content_reader is not None)
    # a head read per block and the tails of the large ones, not their HFiles
    assert framing <= len(data) - unread + len(blocks) * HEAD_READ_SIZE, (framing, len(data), unread)
    assert framing < len(data) / 10
    assert _described(blocks) == _described(read_log_file(data, "t.log"))


@pytest.mark.parametrize("seed", range(6))
def test_damaged_logs_read_by_ranges_as_whole(seed):
    """Truncations, flipped bytes and garbage between blocks: the ranged reader gives the
    blocks (corrupt ones included) the whole-file parser gives, or the same error."""
    rng = random.Random(seed)
    data = _log(_keys(8000), "20250101000000000", "20250102000000000")
    for _ in range(40):
        damaged = bytearray(data)
        kind = rng.randrange(3)
        at = rng.randrange(len(data))
        if kind == 0:
            damaged = damaged[:at]
        elif kind == 1:
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        else:
            damaged[at:at] = rng.randbytes(rng.randint(1, 30))
        damaged = bytes(damaged)
        try:
            expected = _described(read_log_file(damaged, "t.log"))
        except CorruptFileError as exc:
            with pytest.raises(CorruptFileError, match=re.escape(str(exc))):
                _ranged(damaged)
            continue
        got, _ranges, _whole = _ranged(damaged)
        assert _described(got) == expected, (seed, kind, at)


def test_a_large_header_and_small_blocks_are_framed_alike():
    big_header = {HeaderKey.INSTANT_TIME: "1", HeaderKey.SCHEMA: "x" * (HEAD_READ_SIZE + 10)}
    data = encode_block(BlockType.HFILE_DATA_BLOCK, big_header, b"c" * 5000) + encode_block(
        BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: "1"}, b"d" * 10
    ) + b"#HU"
    blocks, _ranges, whole = _ranged(data)
    assert whole == 0
    assert _described(blocks) == _described(read_log_file(data, "t.log"))
    with pytest.raises(CorruptFileError, match="no log block magic"):
        _ranged(b"PAR1" + data)


def _slice_with_logs(mdt: MetadataTable):
    """The first record-index file slice with log files, and its file group's index."""
    slices = mdt.view.latest_slices(partitions=[layout.RECORD_INDEX.name])
    file_slice = min((s for s in slices if s.log_files), key=lambda s: s.file_id)
    (index,) = [i for i in range(len(slices)) if layout.file_group_id(layout.RECORD_INDEX, i) == file_slice.file_id]
    return file_slice, index, len(slices)


def _log_resident_record_index(table: str, count: int, damage: bool = False) -> tuple[Path, list[str]]:
    """Append to the latest log file of one of the fixture's record-index file groups the
    blocks of :func:`_log` (keys of that file group, at completed metadata-table delta commits)."""
    mdt = MetadataTable(Storage(table))
    file_slice, index, groups = _slice_with_logs(mdt)
    instants = sorted(t for t in mdt.valid if mdt._admit(t))
    keys = [k for k in (f"key-{i:08d}" for i in range(count * groups * 2)) if layout.file_group_index(k, groups) == index][:count]
    latest = max(file_slice.log_files, key=lambda f: f.sort_key())
    path = Path(mdt.mdt_storage.abs(latest.path))
    appended = _log(keys, instants[-2], instants[-1])
    if damage:  # a block cut short by a crash, then the rest written again
        appended = appended[: len(appended) // 3] + appended
    with open(path, "ab") as handle:
        handle.write(appended)
    return path, keys


@pytest.mark.parametrize("damage", [False, True])
def test_record_index_lookup_in_log_files_reads_a_fraction_of_them(fresh_fixture, damage):
    table = fresh_fixture(FIXTURE)
    log_path, keys = _log_resident_record_index(table, 20000, damage)
    size = log_path.stat().st_size
    storage = CountingStorage(table)
    mdt = MetadataTable(storage)
    file_slice, _index, _groups = _slice_with_logs(mdt)
    full = {k: record_location(r) for k, r in mdt._slice_records(file_slice, None, set()).items()}
    assert keys[0] not in full and keys[3] not in full  # deleted
    assert full[keys[12]].partition_path == "p2" and full[keys[15]].partition_path == "p2"  # deleted or not, upserted later
    assert full[keys[5]].partition_path == "p1" and full[keys[-1]].partition_path == "p2"  # the rolled-back block counts not

    wanted = [keys[0], keys[3], keys[5], keys[12], keys[15], keys[len(keys) // 2 + 7], keys[-1], "key-absent-1", "zzz"]
    del storage.log[:]
    found = lookup_record_index(mdt, wanted)
    assert found == {k: full[k] for k in wanted if k in full}
    log_reads = [(start, end) for path, start, end in storage.log if path == str(log_path)]
    assert log_reads
    read_bytes = sum(end - start for start, end in log_reads)
    if damage:
        assert read_bytes >= size  # from the damaged block on, the file is read whole
    else:
        assert all((start, end) != (0, size) for start, end in log_reads)
        assert read_bytes < size / 5, (read_bytes, size)


def test_record_index_lookup_in_log_files_on_object_storage_reads_by_ranges(fresh_fixture):
    """Behind an fsspec URL (``memory://``) the log files are read by ranged reads through
    the storage, and the lookup gives what it gives locally."""
    table = fresh_fixture(FIXTURE)
    log_path, keys = _log_resident_record_index(table, 20000)
    fs = fsspec.filesystem("memory")
    root = "/mdt_log_seek/table"
    if fs.exists(root):
        fs.rm(root, recursive=True)
    for folder, _, files in os.walk(table):
        for name in files:
            src = os.path.join(folder, name)
            with open(src, "rb") as handle:
                fs.pipe(f"{root}/{os.path.relpath(src, table)}", handle.read())
    wanted = [keys[0], keys[5], keys[15], keys[-1], "key-absent-1"]
    expected = lookup_record_index(MetadataTable(Storage(table)), wanted)
    assert len(expected) == 3

    storage = CountingStorage(f"memory://{root}")
    found = lookup_record_index(MetadataTable(storage), wanted)
    assert found == expected
    remote_log = f"{root}/{os.path.relpath(log_path, table)}"
    log_reads = [(start, end) for path, start, end in storage.log if path.endswith(remote_log)]
    assert log_reads and sum(end - start for start, end in log_reads) < log_path.stat().st_size / 5
