"""Log file format: framing round trips, corrupt-block recovery, block selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_duck.core.errors import CorruptFileError
from hudi_duck.core.file_group.log_format import MAGIC, BlockType, HeaderKey, encode_block, read_log_file
from hudi_duck.core.file_group.log_blocks import DeleteRecord, decode_delete_block, encode_delete_records
from hudi_duck.core.file_group.log_scanner import scan_blocks


def _all_fixture_logs(fixture_tables) -> list[Path]:
    out = []
    for path in fixture_tables.values():
        out.extend(p for p in Path(path).rglob(".*.log.*") if p.is_file())
    return sorted(out)


def test_every_fixture_log_file_round_trips_byte_for_byte(fixture_tables):
    files = _all_fixture_logs(fixture_tables)
    assert len(files) > 300
    for path in files:
        data = path.read_bytes()
        blocks = read_log_file(data, str(path))
        assert blocks and all(b.block_type is not BlockType.CORRUPT_BLOCK for b in blocks), path
        rebuilt = b"".join(encode_block(b.block_type, b.header, b.content, b.footer) for b in blocks)
        assert rebuilt == data, path


def test_delete_blocks_decode_and_reencode_identically(fixture_tables):
    seen = 0
    for path in _all_fixture_logs(fixture_tables):
        for block in read_log_file(path.read_bytes(), str(path)):
            if block.block_type is not BlockType.DELETE_BLOCK:
                continue
            records = decode_delete_block(block)
            if records and all(r.ordering_wrapper == "IntWrapper" for r in records):
                assert encode_delete_records(records) == block.content
                seen += 1
    assert seen > 10


def _block(instant: str, payload: bytes = b"x", kind: BlockType = BlockType.AVRO_DATA_BLOCK) -> bytes:
    return encode_block(kind, {HeaderKey.INSTANT_TIME: instant}, payload)


def _rollback(instant: str, target: str) -> bytes:
    return encode_block(
        BlockType.COMMAND_BLOCK,
        {HeaderKey.INSTANT_TIME: instant, HeaderKey.TARGET_INSTANT_TIME: target, HeaderKey.COMMAND_BLOCK_TYPE: "0"},
        b"",
    )


def kinds(data: bytes) -> list[str]:
    return [b.block_type.name for b in read_log_file(data, "test.log")]


def test_truncated_last_block_is_corrupt():
    a, b = _block("1"), _block("2")
    assert kinds(a + b[:-5]) == ["AVRO_DATA_BLOCK", "CORRUPT_BLOCK"]


def test_garbage_after_a_block_makes_that_block_corrupt_then_resyncs():
    a, b = _block("1"), _block("2")
    blocks = read_log_file(a + b"garbage" + b, "test.log")
    assert [x.block_type.name for x in blocks] == ["CORRUPT_BLOCK", "AVRO_DATA_BLOCK"]
    assert blocks[1].instant_time == "2"


def test_bad_size_is_corrupt_up_to_the_next_magic():
    a, b = bytearray(_block("1")), _block("2")
    a[6:14] = (10**6).to_bytes(8, "big")  # a size running past the end
    blocks = read_log_file(bytes(a) + b, "test.log")
    assert [x.block_type.name for x in blocks] == ["CORRUPT_BLOCK", "AVRO_DATA_BLOCK"]


def test_partial_magic_at_eof_is_ignored():
    assert kinds(_block("1") + MAGIC[:3]) == ["AVRO_DATA_BLOCK"]


def test_a_file_without_magic_is_not_a_log_file():
    with pytest.raises(CorruptFileError, match="not a Hudi log file"):
        read_log_file(b"PAR1....", "x.log")


def test_empty_file_has_no_blocks():
    assert read_log_file(b"", "x.log") == []


def test_rollback_removes_earlier_blocks_of_its_target_and_corrupt_blocks():
    data = _block("1") + _block("2") + _block("3")[:-4] + _rollback("9", "2") + _block("2") + _block("4")
    blocks = read_log_file(data, "t.log")
    result = scan_blocks(blocks, lambda _t: True)
    # block 2 before the rollback is gone, the corrupt one too; a later block 2 survives
    assert [b.instant_time for b in result.blocks] == ["1", "2", "4"]
    assert result.rollback_blocks == 1 and result.corrupt_blocks == 1


def test_admission_skips_uncommitted_and_later_instants():
    data = _block("1") + _block("2") + _block("3")
    result = scan_blocks(read_log_file(data, "t.log"), lambda t: t != "2" and t <= "3")
    assert [b.instant_time for b in result.blocks] == ["1", "3"]


def test_log_compacted_blocks_replace_their_sources_in_place():
    compacted = encode_block(
        BlockType.AVRO_DATA_BLOCK, {HeaderKey.INSTANT_TIME: "5", HeaderKey.COMPACTED_BLOCK_TIMES: "1,2"}, b"c"
    )
    data = _block("1") + _block("2") + _block("3") + compacted
    result = scan_blocks(read_log_file(data, "t.log"), lambda _t: True)
    # the compacted block stands where its newest source (2) was, before 3
    assert [b.instant_time for b in result.blocks] == ["5", "3"]


def test_delete_block_round_trip_with_ordering_values():
    records = [
        DeleteRecord("k1", "p", None),
        DeleteRecord("k2", "p", 5, "LongWrapper"),
        DeleteRecord("k3", "p", "x", "StringWrapper"),
    ]
    block = read_log_file(encode_block(BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: "1"}, encode_delete_records(records)))[0]
    decoded = decode_delete_block(block)
    assert [(r.record_key, r.ordering_value, r.ordering_wrapper) for r in decoded] == [
        ("k1", 0, "IntWrapper"),
        ("k2", 5, "LongWrapper"),
        ("k3", "x", "StringWrapper"),
    ]


def test_corrupt_block_keeps_a_readable_header():
    (block,) = read_log_file(_block("3")[:-4], "t.log")
    assert block.block_type is BlockType.CORRUPT_BLOCK and block.instant_time == "3"
    mangled = bytearray(_block("3"))
    mangled[14:18] = (99).to_bytes(4, "big")  # an unknown format version: nothing in it is trusted
    (block,) = read_log_file(bytes(mangled), "t.log")
    assert block.block_type is BlockType.CORRUPT_BLOCK and block.header == {}


def test_skipped_corrupt_blocks_are_the_ones_that_survive_and_may_hold_read_records():
    name = "p/.f1_001.log.1_0-1-1"
    data = _block("1") + _block("2")[:-4] + _block("4")
    result = scan_blocks(read_log_file(data, name), lambda _t: True)
    assert [(s.file_path, s.offset, s.instant, s.file_instant, s.previous_instant) for s in result.skipped] == [
        (name, len(_block("1")), "2", "001", "1")
    ]
    assert "p/.f1_001.log.1_0-1-1: corrupt log block at offset" in result.skipped[0].describe()
    # a later rollback block removes every earlier corrupt block, whatever its target
    rolled_back = _block("1") + _block("2")[:-4] + _rollback("9", "7") + _block("4")
    assert scan_blocks(read_log_file(rolled_back, name), lambda _t: True).skipped == []
    # the block's instant is not read (failed write, after as_of): nothing is missing
    assert scan_blocks(read_log_file(data, name), lambda t: t != "2").skipped == []
