"""Small Avro data blocks of one merge decoded together give each block exactly its own records."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_duck.core.errors import CorruptFileError, HudiError
from hudi_duck.core.file_group import avro_decoder, log_blocks
from hudi_duck.core.file_group.file_slice import FileSlice
from hudi_duck.core.file_group.log_blocks import (
    DeleteRecord,
    TinyBlockBatches,
    decode_data_block,
    encode_avro_records,
    encode_delete_records,
)
from hudi_duck.core.file_group.log_format import (
    BlockType,
    HeaderKey,
    LogBlock,
    encode_block,
    read_log_file,
)
from hudi_duck.core.file_group.naming import (
    base_file_name,
    log_file_name,
    parse_base_file,
    parse_log_file,
)
from hudi_duck.core.file_group.reader import SliceReadContext
from hudi_duck.core.file_group.reader import merge_slice_logs as core_merge
from hudi_duck.core.merge.mode import DEFAULT_PAYLOAD, MergeConfig, MergeMode
from hudi_duck.core.storage.storage import get_storage
from hudi_duck.core.table.fs_view import CommittedInstants
from hudi_duck.duck.merge import merge_slices

FIELDS = [
    {"name": "_hoodie_record_key", "type": ["null", "string"], "default": None},
    {"name": "v", "type": ["null", "string"], "default": None},
]
ORD = {"name": "ord", "type": ["null", "long"], "default": None}
WITH_ORD = json.dumps({"type": "record", "name": "r", "fields": FIELDS + [ORD]})
WITHOUT_ORD = json.dumps({"type": "record", "name": "r", "fields": FIELDS})
SCHEMA = pa.schema([("_hoodie_record_key", pa.string()), ("v", pa.string()), ("ord", pa.int64())])
MERGE = MergeConfig(MergeMode.EVENT_TIME_ORDERING, "ord", None, DEFAULT_PAYLOAD, 6)


@pytest.fixture()
def batch_decodes(monkeypatch):
    """Counts the blocks decoded together (each call: the number of blocks it decoded)."""
    assert avro_decoder.compiled_reader() is not None, "the test extra installs datafusion: the compiled path must run"
    calls: list[int] = []
    real = log_blocks.decode_framed_blocks

    def spy(contents, *args, **kwargs):
        out = real(contents, *args, **kwargs)
        if out is not None:
            calls.append(len(contents))
        return out

    monkeypatch.setattr(log_blocks, "decode_framed_blocks", spy)
    return calls


def _records(block: int, n: int, with_ordering: bool = True) -> list[dict]:
    out = []
    for j in range(n):
        record = {"_hoodie_record_key": f"k{(block * 7 + j) % 40}", "v": f"{block}.{j}"}
        if with_ordering:
            record["ord"] = (block * 13 + j) % 9
        out.append(record)
    return out


def _block(schema_json: str, records: list[dict], offset: int) -> LogBlock:
    return LogBlock(
        BlockType.AVRO_DATA_BLOCK,
        header={HeaderKey.INSTANT_TIME: "001", HeaderKey.SCHEMA: schema_json},
        content=encode_avro_records(records, schema_json),
        file_path="mem.log",
        offset=offset,
    )


def _alone(block: LogBlock) -> pa.Table:
    return decode_data_block(block, SCHEMA)


def _take(batches: TinyBlockBatches, block: LogBlock) -> pa.Table:
    """The block's rows from its batch, else decoded alone (as ``iter_data_block`` does)."""
    rows = batches.take(block)
    return rows if rows is not None else _alone(block)


def _batched(blocks: list[LogBlock], max_bytes: int = 1 << 20) -> list[pa.Table]:
    batches = TinyBlockBatches(blocks, max_bytes, SCHEMA)
    return [_take(batches, b) for b in blocks]


def test_blocks_of_different_record_counts_split_back_per_block(batch_decodes):
    counts = [1, 7, 120, 3, 200, 2, 64]
    blocks = [_block(WITH_ORD, _records(i, n), i) for i, n in enumerate(counts)]
    together = _batched(blocks)
    assert batch_decodes == [len(blocks)]
    assert [t.num_rows for t in together] == counts
    for block, table in zip(blocks, together):
        assert table.equals(_alone(block)), block.offset


def test_two_writer_schemas_interleaved_decode_each_with_its_own(batch_decodes):
    blocks = []
    for i in range(12):
        schema = WITH_ORD if i % 2 == 0 else WITHOUT_ORD
        blocks.append(_block(schema, _records(i, 30 + 11 * i, schema is WITH_ORD), i))
    together = _batched(blocks)
    assert sorted(batch_decodes) == [6, 6]
    for block, table in zip(blocks, together):
        alone = _alone(block)
        assert table.equals(alone), block.offset
        if block.schema == WITHOUT_ORD:
            assert table.column("ord").null_count == table.num_rows


def test_batches_stay_within_their_bytes(batch_decodes):
    blocks = [_block(WITH_ORD, _records(i, 100), i) for i in range(9)]
    sizes = [len(b.content) for b in blocks]
    assert 4 * min(sizes) > 3 * max(sizes)
    together = _batched(blocks, max_bytes=3 * max(sizes))
    assert batch_decodes == [3, 3, 3]
    assert all(t.equals(_alone(b)) for b, t in zip(blocks, together))


def test_a_few_records_in_all_are_decoded_record_by_record(batch_decodes):
    blocks = [_block(WITH_ORD, _records(i, 5), i) for i in range(4)]
    assert [t.num_rows for t in _batched(blocks)] == [5] * 4
    assert batch_decodes == []


def test_a_damaged_block_in_a_batch_fails_as_it_fails_alone(batch_decodes, monkeypatch):
    blocks = [_block(WITH_ORD, _records(i, 90), i) for i in range(4)]
    bad = bytearray(blocks[2].content)
    bad[12:] = os.urandom(len(bad) - 12)
    blocks[2] = LogBlock(BlockType.AVRO_DATA_BLOCK, header=blocks[2].header, content=bytes(bad), file_path="mem.log", offset=2)
    with pytest.raises(CorruptFileError) as alone:
        _alone(blocks[2])
    batches = TinyBlockBatches(blocks, 1 << 20, SCHEMA)
    tables = [_take(batches, b) for b in blocks[:2]]
    assert batch_decodes == []  # the batch did not decode together: each block alone
    assert all(t.equals(_alone(b)) for b, t in zip(blocks, tables))
    with pytest.raises(CorruptFileError) as together:
        _take(batches, blocks[2])
    assert str(together.value) == str(alone.value) and "mem.log@2" in str(together.value)


# -- a merge job of several slices, through DuckDB, against the core merge (each block decoded alone) -------------


def _data(i: int, schema_json: str, n: int) -> bytes:
    records = _records(i, n, schema_json == WITH_ORD)
    header = {HeaderKey.INSTANT_TIME: f"{2 + i:03d}", HeaderKey.SCHEMA: schema_json}
    return encode_block(BlockType.AVRO_DATA_BLOCK, header, encode_avro_records(records, schema_json))


def _deletes(i: int, keys: list[str]) -> bytes:
    content = encode_delete_records([DeleteRecord(k, "", None, None) for k in keys])
    return encode_block(BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: f"{2 + i:03d}"}, content)


def _slice(root: Path, folder: str, parts: list[bytes]) -> FileSlice:
    (root / folder).mkdir()
    name = base_file_name("f1", "0-0-0", "001")
    keys = [f"k{i}" for i in range(0, 40, 3)]
    pq.write_table(pa.table({"_hoodie_record_key": keys, "v": ["base"] * len(keys), "ord": [4] * len(keys)}), root / folder / name)
    log_name = log_file_name("f1", "001", 1, "0-0-0")
    data = b"".join(parts)
    (root / folder / log_name).write_bytes(data)
    return FileSlice(folder, "f1", "001", parse_base_file(folder, name, (root / folder / name).stat().st_size),
                     (parse_log_file(folder, log_name, len(data)),))


def _outcome(merge) -> tuple[list[int], list[tuple]]:
    return sorted(merge.dropped_base_rows), sorted(tuple(r.values()) for r in merge.log_rows.to_pylist())


def _context(root: Path, instants: int) -> SliceReadContext:
    committed = CommittedInstants(frozenset(f"{i:03d}" for i in range(1, instants + 3)), None)
    return SliceReadContext(get_storage(str(root)), SCHEMA, MERGE, committed)


def test_a_merge_job_with_deletes_between_and_two_schemas_equals_each_block_alone(tmp_path, batch_decodes):
    slices = [
        _slice(tmp_path, "s0", [_data(0, WITH_ORD, 40), _deletes(1, ["k3", "k7"]), _data(2, WITH_ORD, 9),
                                _data(3, WITHOUT_ORD, 25), _data(4, WITH_ORD, 77)]),
        _slice(tmp_path, "s1", [_data(5, WITHOUT_ORD, 31), _data(6, WITH_ORD, 1), _deletes(7, ["k0"]),
                                _data(8, WITH_ORD, 150), _data(9, WITHOUT_ORD, 60)]),
        _slice(tmp_path, "s2", [_data(10, WITH_ORD, 12), _data(11, WITHOUT_ORD, 200)]),
    ]
    ctx = _context(tmp_path, 12)
    together = [_outcome(m) for m in merge_slices(ctx, slices)]
    assert sorted(batch_decodes) == [4, 6]
    assert together == [_outcome(core_merge(ctx, s)) for s in slices]
    assert any(rows for _, rows in together)


def test_a_corrupt_block_among_batched_blocks_is_skipped_and_reported_as_alone(tmp_path, batch_decodes):
    torn = _data(1, WITH_ORD, 50)
    parts = [_data(0, WITH_ORD, 100), torn[: len(torn) // 2], _data(2, WITH_ORD, 100), _data(3, WITH_ORD, 80)]
    slices = [_slice(tmp_path, "s0", parts), _slice(tmp_path, "s1", [_data(4, WITH_ORD, 30), _data(5, WITH_ORD, 20)])]
    log_path = tmp_path / "s0" / slices[0].log_files[0].file_name
    kinds = [b.block_type for b in read_log_file(log_path.read_bytes(), str(log_path))]
    assert BlockType.CORRUPT_BLOCK in kinds
    ctx = _context(tmp_path, 6)
    merged = merge_slices(ctx, slices)
    assert batch_decodes == [5]
    alone = [core_merge(ctx, s) for s in slices]
    assert [_outcome(m) for m in merged] == [_outcome(m) for m in alone]
    assert merged[0].skipped_blocks == alone[0].skipped_blocks and len(merged[0].skipped_blocks) == 1
    assert merged[0].stats == alone[0].stats


def test_a_damaged_data_block_in_a_merge_job_names_its_file(tmp_path, batch_decodes, monkeypatch):
    good = _data(0, WITH_ORD, 100)
    slices = [_slice(tmp_path, "s0", [good, _data(1, WITH_ORD, 100)]), _slice(tmp_path, "s1", [_data(2, WITH_ORD, 100)])]
    path = tmp_path / "s1" / slices[1].log_files[0].file_name
    data = bytearray(path.read_bytes())
    block = read_log_file(bytes(data), str(path))[0]
    start = data.index(bytes(block.content)) + 12
    data[start : start + 200] = os.urandom(200)
    path.write_bytes(bytes(data))
    ctx = _context(tmp_path, 3)
    with pytest.raises(CorruptFileError) as alone:
        core_merge(ctx, slices[1])
    with pytest.raises(CorruptFileError) as together:
        merge_slices(ctx, slices)
    assert str(together.value) == str(alone.value)
    assert str(slices[1].log_files[0].file_name) in str(together.value)


def test_records_that_cross_block_boundaries_are_not_split_back(batch_decodes):
    """Two blocks whose counts are off by one each way decode together, but not as blocks."""
    import struct

    blocks = [_block(WITH_ORD, _records(i, 150), i) for i in range(2)]
    shifted = []
    for block, delta in zip(blocks, (-1, 1)):
        content = bytearray(block.content)
        content[4:8] = struct.pack(">i", 150 + delta)
        shifted.append(LogBlock(BlockType.AVRO_DATA_BLOCK, header=block.header, content=bytes(content), file_path="mem.log", offset=block.offset))
    with pytest.raises(CorruptFileError) as alone:
        _alone(shifted[0])
    batches = TinyBlockBatches(shifted, 1 << 20, SCHEMA)
    with pytest.raises(CorruptFileError) as together:
        _take(batches, shifted[0])
    assert batch_decodes == [] and str(together.value) == str(alone.value) and "mem.log@0" in str(together.value)


def test_a_batch_that_cannot_take_the_merge_schema_fails_as_each_block_alone(batch_decodes):
    text_ord = json.dumps({"type": "record", "name": "r", "fields": FIELDS + [{"name": "ord", "type": "string"}]})
    blocks = [_block(text_ord, [{**r, "ord": str(r["ord"])} for r in _records(i, 100)], i) for i in range(3)]
    blocks[1] = _block(text_ord, [{**r, "ord": "late"} for r in _records(1, 100)], 1)
    assert _alone(blocks[0]).column("ord").to_pylist()[:2] == [0, 1]
    with pytest.raises(HudiError) as alone:
        _alone(blocks[1])
    batches = TinyBlockBatches(blocks, 1 << 20, SCHEMA)
    assert _take(batches, blocks[0]).equals(_alone(blocks[0]))
    with pytest.raises(HudiError) as together:
        _take(batches, blocks[1])
    assert batch_decodes == [3] and str(together.value) == str(alone.value) and "mem.log@1" in str(together.value)


# -- entries of many blocks computed together ------------------------------------------------------------------------


def _many_slices(root: Path) -> list[FileSlice]:
    """Slices whose blocks mix writer schemas with and without the ordering field, delete blocks and
    records without a key (which have no entry), so each block's numbering and ordering show."""
    no_key = json.dumps({"type": "record", "name": "r", "fields": FIELDS + [ORD]})

    def keyless(i: int, n: int) -> bytes:
        records = _records(i, n)
        for j in range(0, n, 4):
            records[j]["_hoodie_record_key"] = None
        header = {HeaderKey.INSTANT_TIME: f"{2 + i:03d}", HeaderKey.SCHEMA: no_key}
        return encode_block(BlockType.AVRO_DATA_BLOCK, header, encode_avro_records(records, no_key))

    return [
        _slice(root, "s0", [_data(0, WITH_ORD, 3), keyless(1, 9), _deletes(2, ["k3"]), _data(3, WITHOUT_ORD, 5)]),
        _slice(root, "s1", [_data(4, WITHOUT_ORD, 2), _data(5, WITH_ORD, 120), _data(6, WITH_ORD, 1)]),
        _slice(root, "s2", [keyless(7, 300), _deletes(8, ["k1", "k2"]), _data(9, WITH_ORD, 7)]),
        _slice(root, "s3", [_data(10, WITHOUT_ORD, 140), _data(11, WITH_ORD, 140)]),
    ]


@pytest.mark.parametrize("pending", [1, 2, 3, 4096])
def test_entries_of_many_blocks_computed_together_equal_each_block_alone(tmp_path, batch_decodes, monkeypatch, pending):
    """However many blocks' entries are computed at once (``PENDING_PIECES``), each slice folds as
    the core merge folds it block by block."""
    from hudi_duck.duck import merge as duck_merge

    monkeypatch.setattr(duck_merge, "PENDING_PIECES", pending)
    slices = _many_slices(tmp_path)
    ctx = _context(tmp_path, 12)
    merged = merge_slices(ctx, slices)
    alone = [core_merge(ctx, s) for s in slices]
    assert [_outcome(m) for m in merged] == [_outcome(m) for m in alone]
    assert [m.stats for m in merged] == [m.stats for m in alone]
    assert all(rows for _, rows in map(_outcome, merged))


def test_data_entries_of_pieces_number_each_piece_within_its_slice():
    from hudi_duck.core.file_group.reader import (
        ENTRY_KEY,
        ENTRY_NEVER_COMPARED,
        ENTRY_ORDERING,
        ENTRY_ROW,
        ENTRY_SEQ,
        LogPiece,
        data_entries,
        entry_schema,
    )

    ctx = _context(Path("."), 1)
    rows = [
        pa.table({"_hoodie_record_key": ["a", None, "b"], "v": ["1", "2", "3"], "ord": [5, 6, 7]}, schema=SCHEMA),
        pa.table({"_hoodie_record_key": ["c"], "v": ["4"], "ord": [None]}, schema=SCHEMA),
        pa.table({"_hoodie_record_key": [None, "d"], "v": ["5", "6"], "ord": [8, 9]}, schema=SCHEMA),
    ]
    pieces = [LogPiece(rows[0], None, 10, 20, True, 1), LogPiece(rows[1], None, 0, 0, False, 1),
              LogPiece(rows[2], None, 3, 4, True, 1)]
    entries, piece_of = data_entries(ctx, pieces, entry_schema(ctx))
    assert entries.column(ENTRY_KEY).to_pylist() == ["a", "b", "c", "d"]
    assert piece_of.tolist() == [0, 0, 1, 2]
    assert entries.column(ENTRY_SEQ).to_pylist() == [20, 22, 0, 5]
    assert entries.column(ENTRY_ROW).to_pylist() == [10, 12, 0, 4]
    assert entries.column(ENTRY_NEVER_COMPARED).to_pylist() == [False, False, True, False]
    assert entries.column(ENTRY_ORDERING).to_pylist() == [5, 7, None, 9]
    # each piece alone gives its own rows of the same entries
    for i, piece in enumerate(pieces):
        alone, _ = data_entries(ctx, [piece], entry_schema(ctx))
        assert alone.equals(entries.filter(pa.array(piece_of == i)))


def test_blocks_of_a_batch_are_sized_by_their_share_of_it(batch_decodes):
    counts = [10, 100, 40, 250]
    blocks = [_block(WITH_ORD, _records(i, n), i) for i, n in enumerate(counts)]
    batches = TinyBlockBatches(blocks, 1 << 20, SCHEMA)
    sized = [batches.take_sized(b) for b in blocks]
    assert batch_decodes == [4]
    whole = sum(t.num_rows for t, _ in sized)
    total = pa.concat_tables([_alone(b) for b in blocks]).nbytes
    sizes = [n for _, n in sized]
    per_row = [n / c for n, c in zip(sizes, counts)]
    assert max(per_row) - min(per_row) < 1, sizes  # each block's share by its record count
    assert abs(sum(sizes) - total) <= total // 10 + len(blocks), (sizes, total)
    assert whole == sum(counts)


def test_a_merge_of_tiny_batched_blocks_still_spills_past_its_budget(tmp_path, batch_decodes, monkeypatch):
    """The held bytes of blocks decoded in a batch count against the merge budget."""
    from hudi_duck.core.config.read_settings import MergeMemory
    from hudi_duck.duck import merge as duck_merge

    slices = [_slice(tmp_path, f"s{i}", [_data(3 * i + j, WITH_ORD, 60) for j in range(3)]) for i in range(6)]
    ctx = _context(tmp_path, 20)
    tiny = SliceReadContext(ctx.storage, ctx.schema, ctx.merge, ctx.instants, memory=MergeMemory(64 * 1024, str(tmp_path / "spill")))
    entries_computed: list[int] = []
    started: list[int] = []  # entries computed when the spill started
    real_start, real_entries = duck_merge.Spill.start, duck_merge.data_entries

    def start(self):
        started.append(len(entries_computed))
        return real_start(self)

    def entries(*args, **kwargs):
        entries_computed.append(1)
        return real_entries(*args, **kwargs)

    monkeypatch.setattr(duck_merge.Spill, "start", start)
    monkeypatch.setattr(duck_merge, "data_entries", entries)
    merged = merge_slices(tiny, slices)
    outcomes = []
    for x in merged:
        rows = pa.Table.from_batches(list(x.log_rows.to_batches()), schema=x.log_rows.schema)
        outcomes.append((sorted(x.dropped_base_rows), sorted(tuple(r.values()) for r in rows.to_pylist())))
        if isinstance(x.log_rows, duck_merge.SpilledRows):
            x.log_rows.release()
    # the decoded rows alone passed the budget: the spill started before any entries were computed
    assert batch_decodes and started == [0], started
    assert outcomes == [_outcome(core_merge(ctx, s)) for s in slices]


def test_joined_winners_are_each_slices_own(tmp_path, batch_decodes):
    """A whole job's winning rows taken at once: each row is filed under its slice, and each
    outcome counts its own winners."""
    from hudi_duck.duck.merge import merge_slices_joined

    slices = _many_slices(tmp_path)
    ctx = _context(tmp_path, 12)
    merged, joined = merge_slices_joined(ctx, slices)
    alone = [core_merge(ctx, s) for s in slices]
    assert joined is not None and joined.rows.num_rows == len(joined.slice_of) > 0
    for i, (outcome, expected) in enumerate(zip(merged, alone)):
        mine = joined.rows.filter(pa.array(joined.slice_of == i))
        assert sorted(outcome.dropped_base_rows) == sorted(expected.dropped_base_rows)
        assert sorted(tuple(r.values()) for r in mine.to_pylist()) == _outcome(expected)[1]
        assert outcome.stats == expected.stats and outcome.log_rows.num_rows == 0
