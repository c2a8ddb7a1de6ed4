"""Avro data blocks decoded in compiled code give exactly what the record-by-record decoder gives."""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import os
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_duck.core.errors import CorruptFileError
from hudi_duck.core.file_group.avro_decoder import compiled_reader, decode_framed
from hudi_duck.core.file_group.log_blocks import COMPILED_MIN_RECORDS, avro_block_table, decode_data_block, encode_avro_records
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, LogBlock, read_log_file

UTC = _dt.timezone.utc


def _compiled(content: bytes, schema_json: str, source: str) -> pa.Table:
    """The compiled reader's table itself (never the fallback), or fastavro's when it is chosen."""
    table = avro_block_table(content, schema_json, source)
    if os.environ.get("HUDI_DUCK_AVRO_DECODER") == "fastavro":
        return table
    count = struct.unpack_from(">i", content, 4)[0]
    framed = decode_framed(content, count, schema_json, table.schema, source)
    assert framed is not None, source
    return framed


def _both(monkeypatch, decode):
    """``decode()`` with the compiled reader and with fastavro."""
    assert compiled_reader() is not None, "the test extra installs datafusion: the compiled path must run"
    fast = decode()
    monkeypatch.setenv("HUDI_DUCK_AVRO_DECODER", "fastavro")
    slow = decode()
    monkeypatch.delenv("HUDI_DUCK_AVRO_DECODER")
    return fast, slow


def _fixture_avro_blocks(fixture_tables) -> list[LogBlock]:
    blocks = []
    for base in fixture_tables.values():
        for path in sorted(Path(base).rglob("*.log.*")):
            if ".hoodie" in path.parts:
                continue
            for block in read_log_file(path.read_bytes(), str(path)):
                if block.block_type is BlockType.AVRO_DATA_BLOCK and block.schema:
                    blocks.append(block)
    return blocks


def test_every_fixture_log_block_decodes_the_same(fixture_tables, monkeypatch):
    blocks = _fixture_avro_blocks(fixture_tables)
    assert len(blocks) >= 5
    records = 0
    for block in blocks:
        source = f"{block.file_path}@{block.offset}"
        fast, slow = _both(monkeypatch, lambda: _compiled(block.content, block.schema, source))
        assert fast.schema == slow.schema, source
        assert fast.equals(slow), source
        records += fast.num_rows
    assert records > 0


ALL_TYPES = {
    "type": "record",
    "name": "trip",
    "namespace": "hoodie.t",
    "fields": [
        {"name": "_hoodie_record_key", "type": ["null", "string"], "default": None},
        {"name": "id", "type": "long"},
        {"name": "i", "type": ["null", "int"], "default": None},
        {"name": "f", "type": ["null", "float"], "default": None},
        {"name": "d", "type": ["null", "double"], "default": None},
        {"name": "b", "type": ["null", "boolean"], "default": None},
        {"name": "s", "type": ["null", "string"], "default": None},
        {"name": "raw", "type": ["null", "bytes"], "default": None},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
        {"name": "us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
        {"name": "ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None},
        {
            "name": "dec_fixed",
            "type": ["null", {"type": "fixed", "name": "fx", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}],
            "default": None,
        },
        {
            "name": "dec_bytes",
            "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}],
            "default": None,
        },
        {"name": "tags", "type": ["null", {"type": "map", "values": ["null", "string"]}], "default": None},
        {"name": "nums", "type": ["null", {"type": "array", "items": ["null", "int"]}], "default": None},
        {
            "name": "nested",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "inner",
                    "fields": [
                        {"name": "x", "type": ["null", "double"], "default": None},
                        {"name": "deep", "type": ["null", {"type": "record", "name": "deeper", "fields": [
                            {"name": "y", "type": ["null", "string"], "default": None}]}], "default": None},
                    ],
                },
            ],
            "default": None,
        },
    ],
}


def _record(i: int) -> dict:
    if i % 5 == 4:  # every nullable field null
        return {"id": i, **{f["name"]: None for f in ALL_TYPES["fields"] if f["name"] != "id"}}
    return {
        "_hoodie_record_key": f"k{i}",
        "id": i,
        "i": -i,
        "f": [1.5, float("nan"), -0.0, float("inf")][i % 4],
        "d": [math.pi, -0.0, float("nan"), 1e300][i % 4],
        "b": i % 2 == 0,
        "s": ["", "ü€𝄞", "tokyo", "x" * 300][i % 4],
        "raw": bytes([i % 256, 0, 255]),
        "day": _dt.date(1969, 12, 31) + _dt.timedelta(days=i),
        "us": _dt.datetime(2024, 1, 1, tzinfo=UTC) + _dt.timedelta(microseconds=i * 1001),
        "ms": _dt.datetime(1960, 1, 1, tzinfo=UTC) + _dt.timedelta(milliseconds=i * 7),
        "dec_fixed": decimal.Decimal(i * 37 - 500).scaleb(-2),
        "dec_bytes": decimal.Decimal("-12345678901234.5678") if i % 3 == 0 else decimal.Decimal(i).scaleb(-4),
        "tags": {} if i % 3 == 0 else {"a": str(i), "null": None},
        "nums": [] if i % 3 == 1 else [i, None, -i],
        "nested": {"x": None if i % 2 else 2.5, "deep": None if i % 3 == 0 else {"y": f"y{i}"}},
    }


def _equal_with_nans(a: pa.Table, b: pa.Table) -> bool:
    """Table equality where NaN equals NaN (Arrow's equals treats NaN as unequal to itself)."""
    return a.schema == b.schema and json.dumps(a.to_pylist(), default=repr) == json.dumps(b.to_pylist(), default=repr)


def test_all_types_nulls_and_nesting_decode_the_same(monkeypatch):
    schema_json = json.dumps(ALL_TYPES)
    content = encode_avro_records([_record(i) for i in range(200)], schema_json)
    fast, slow = _both(monkeypatch, lambda: _compiled(content, schema_json, "mem@0"))
    assert fast.num_rows == 200
    assert _equal_with_nans(fast, slow)
    row = fast.slice(1, 1).to_pylist()[0]
    assert row["dec_fixed"] == decimal.Decimal("-4.63") and row["tags"] == [("a", "1"), ("null", None)]
    assert row["us"] == _dt.datetime(2024, 1, 1, 0, 0, 0, 1001, tzinfo=UTC)


def _block(schema: dict, records: list[dict], instant: str = "001") -> LogBlock:
    schema_json = json.dumps(schema)
    return LogBlock(
        BlockType.AVRO_DATA_BLOCK,
        header={HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema_json},
        content=encode_avro_records(records, schema_json),
        file_path="mem.log",
    )


def test_schema_evolution_across_blocks_decodes_the_same(monkeypatch):
    old = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "int"}, {"name": "v", "type": ["null", "float"], "default": None}]}
    new = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "v", "type": ["null", "double"], "default": None},
        {"name": "added", "type": ["null", "string"], "default": None}]}
    target = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("added", pa.string())])
    n = COMPILED_MIN_RECORDS
    blocks = [_block(old, [{"id": i, "v": i / 2} for i in range(n)]),
              _block(new, [{"id": 2**40 + i, "v": None, "added": "a"} for i in range(n)], "002")]
    fast, slow = _both(monkeypatch, lambda: pa.concat_tables([decode_data_block(b, target) for b in blocks]))
    assert fast.equals(slow) and fast.num_rows == 2 * n


def _simple_content(n: int = 3) -> tuple[bytes, str]:
    schema = json.dumps({"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]})
    return encode_avro_records([{"s": "abc" * (i % 3)} for i in range(n)], schema), schema


def test_corrupt_length_prefix_names_the_block():
    content, schema = _simple_content(COMPILED_MIN_RECORDS)
    bad = bytearray(content)
    bad[8:12] = struct.pack(">i", 5)  # the first record claims one byte more than it has
    with pytest.raises(CorruptFileError, match="mem.log@7"):
        avro_block_table(bytes(bad), schema, "mem.log@7")


@pytest.mark.parametrize("records", [3, COMPILED_MIN_RECORDS])
@pytest.mark.parametrize("damage", ["truncated", "count", "garbage"])
def test_damaged_blocks_raise_corrupt_file_errors(damage, records):
    content, schema = _simple_content(records)
    if damage == "truncated":
        bad = content[:-2]
    elif damage == "count":
        bad = content[:4] + struct.pack(">i", 10**9) + content[8:]
    else:
        bad = content[:8] + os.urandom(len(content) - 8)
    with pytest.raises(CorruptFileError, match="mem.log@3"):
        avro_block_table(bad, schema, "mem.log@3")


def test_empty_block():
    schema = json.dumps({"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]})
    table = avro_block_table(encode_avro_records([], schema), schema, "m")
    assert table.num_rows == 0 and table.schema.names == ["s"]
