"""Base files written by ``write_base_file`` against the ones Apache Hudi wrote."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fixtures import fixture_id, fixture_zips

from hudi_duck.core.errors import SchemaError, WriteError
from hudi_duck.core.config.write_settings import BloomFilterSettings, ParquetSettings
from hudi_duck.core.file_group.base_file import (
    avro_schema_with_meta_fields,
    dictionary_columns,
    footer_key_order,
    java_min_max,
    read_base_file_footer,
    read_record_keys,
    write_base_file,
)
from hudi_duck.core.file_group.naming import base_file_name, parse_base_file
from hudi_duck.core.index import bloom
from hudi_duck.core.keygen.generators import ComplexKeyGenerator
from hudi_duck.core.schema.meta_fields import META_FIELDS
from hudi_duck.core.storage.storage import Storage

FIXTURE_IDS = [fixture_id(z) for z in fixture_zips()]


def _avro_base_files(base: str) -> list[tuple[str, str]]:
    """(partition path, relative path) of base files written by Hudi's Avro parquet writer."""
    root = Path(base)
    out = []
    for path in sorted(root.rglob("*.parquet")):
        rel = path.relative_to(root)
        if ".hoodie" in rel.parts:
            continue
        if b"parquet.avro.schema" in (pq.read_metadata(path).metadata or {}):
            out.append((rel.parent.as_posix() if rel.parent != Path(".") else "", rel.as_posix()))
    return out


def _raw_footer(path: str) -> list[tuple[str, str]]:
    """Footer key-value pairs in file order (pyarrow's dict does not keep it)."""
    rows = duckdb.sql(
        f"SELECT decode(key), decode(value) FROM parquet_kv_metadata('{path}')"
    ).fetchall()
    return [(k, v) for k, v in rows]


def _columns(path: str) -> dict[str, tuple]:
    """Leaf columns keyed by path (2-level ``array`` lists normalised to 3-level names)."""
    pf = pq.ParquetFile(path)
    schema = pf.schema
    rg = pf.metadata.row_group(0) if pf.metadata.num_row_groups else None
    out = {}
    for i in range(len(schema)):
        col = schema.column(i)
        parts = col.path.split(".")
        norm = []
        for j, part in enumerate(parts):
            norm.append(part)
            if part == "array" and j > 0:  # parquet-avro old list: <list>.array.<fields>
                norm[-1:] = ["list", "element"]
        meta = rg.column(i) if rg is not None else None
        out[".".join(norm)] = (
            col.physical_type,
            str(col.logical_type),
            col.converted_type,
            col.length,
            col.precision,
            col.scale,
            meta.compression if meta else None,
            meta.has_dictionary_page if meta else None,
            meta.statistics.has_min_max if meta and meta.statistics else None,
        )
    return out


def _rewrite(src_base: str, dst_base: str, partition: str, rel: str):
    """Read a Hudi base file, drop nothing but pass meta columns only for preservation, rewrite it."""
    src = os.path.join(src_base, rel)
    table = pq.read_table(src)
    footer = dict(_raw_footer(src))
    parsed = parse_base_file(partition, os.path.basename(rel))
    # rows whose commit time is not the file's instant were copied from an older file version
    preserved = pc.not_equal(table.column("_hoodie_commit_time"), parsed.instant_time)
    data = table.drop_columns(["_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"])
    result = write_base_file(
        Storage(dst_base),
        rel,
        data,
        json.loads(footer["parquet.avro.schema"]),
        commit_time=parsed.instant_time,
        file_id=parsed.file_id,
        partition_path=partition,
        record_keys=table.column("_hoodie_record_key"),
        task_partition_id=int(parsed.write_token.split("-")[0]),
        preserve_meta=preserved,
        overwrite=True,
    )
    return table, footer, result


WITHOUT_AVRO_BASE_FILES = {
    "sample_table/cow/v6_empty",
    "sample_table/mor/parquet/v6_nonpartitioned",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle",
}


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_rewrite_fixture_base_files_like_hudi(fixture_tables, fresh_fixture, fid):
    base = fixture_tables[fid]
    files = _avro_base_files(base)
    if not files:
        # these tables were written by Spark's row writer only (no parquet-avro files)
        assert fid in WITHOUT_AVRO_BASE_FILES, f"{fid}: expected base files written by Hudi's Avro writer"
        return
    copy = fresh_fixture(fid)
    for partition, rel in files:
        original, footer, result = _rewrite(base, copy, partition, rel)
        src, dst = os.path.join(base, rel), os.path.join(copy, rel)

        # footer: same keys, same values, same order
        assert _raw_footer(dst) == list(footer.items()), rel
        assert result.footer == footer

        # parquet columns: same leaves, physical/logical types, codec, dictionary choice
        assert _columns(dst) == _columns(src), rel

        # every value, meta columns included, read back equal
        written = pq.read_table(dst)
        assert written.num_rows == original.num_rows == result.num_writes == result.rows_consumed
        assert written.column_names == original.column_names
        for name in original.column_names:
            assert written.column(name).to_pylist() == original.column(name).to_pylist(), (rel, name)

        # stats for the write stat
        assert result.file_size == os.path.getsize(dst)
        assert result.min_record_key == footer["hoodie_min_record_key"]
        assert result.max_record_key == footer["hoodie_max_record_key"]
        stat = result.to_write_stat(prev_commit="null")
        assert stat.path == rel and stat.num_writes == original.num_rows
        assert stat.file_size_in_bytes == stat.total_write_bytes == result.file_size

        # DuckDB reads the same rows
        a = duckdb.sql(f"SELECT * FROM read_parquet('{src}')").to_arrow_table()
        b = duckdb.sql(f"SELECT * FROM read_parquet('{dst}')").to_arrow_table()
        assert a.to_pylist() == b.to_pylist(), rel

        # hudi-rs reads the same rows
        from hudi import HudiFileGroupReader

        a = HudiFileGroupReader(base).read_file_slice_from_paths(rel, [])
        b = HudiFileGroupReader(copy).read_file_slice_from_paths(rel, [])
        assert a.to_pylist() == b.to_pylist(), rel

        # the BLOOM index view of the footer
        info = read_base_file_footer(Storage(copy), rel)
        assert info["bloom_filter"].might_contain_all(original.column("_hoodie_record_key")).all()
        assert info["bloom_filter"].serialize() == footer["org.apache.hudi.bloomfilter"]
        assert info["bloom_type"] == footer["hoodie_bloom_filter_type_code"]
        assert info["avro_schema"] == footer["parquet.avro.schema"]
        assert info["num_rows"] == original.num_rows


def test_meta_schema_from_schema_without_meta_fields(fixture_tables):
    checked = 0
    for base in fixture_tables.values():
        for _, rel in _avro_base_files(base)[:1]:
            text = dict(_raw_footer(os.path.join(base, rel)))["parquet.avro.schema"]
            record = json.loads(text)
            bare = dict(record, fields=[f for f in record["fields"] if f["name"] not in META_FIELDS])
            assert avro_schema_with_meta_fields(json.dumps(bare)) == text
            assert avro_schema_with_meta_fields(text) == text  # meta fields are not doubled
            shuffled = {k: bare[k] for k in reversed(list(bare))}
            shuffled["fields"] = [{k: f[k] for k in reversed(list(f))} for f in bare["fields"]]
            assert avro_schema_with_meta_fields(shuffled) == text
            checked += 1
    assert checked >= 5


def test_operation_meta_field_schema():
    text = avro_schema_with_meta_fields(
        {"type": "record", "name": "r", "namespace": "hoodie.t", "fields": [{"name": "id", "type": "int"}]},
        with_operation_field=True,
    )
    names = [f["name"] for f in json.loads(text)["fields"]]
    assert names == list(META_FIELDS) + ["_hoodie_operation", "id"]
    assert text.startswith('{"type":"record","name":"r","namespace":"hoodie.t","fields":[{"name":"_hoodie_commit_time"')


def test_footer_key_order_matches_parquet_mr_hashmap():
    dynamic = ["org.apache.hudi.bloomfilter", "hoodie_bloom_filter_type_code", "hoodie_min_record_key",
               "hoodie_max_record_key"]
    assert footer_key_order(dynamic) == [
        "parquet.avro.schema", "writer.model.name", "hoodie_bloom_filter_type_code",
        "org.apache.hudi.bloomfilter", "hoodie_min_record_key", "hoodie_max_record_key",
    ]
    simple = footer_key_order(["org.apache.hudi.bloomfilter", "hoodie_min_record_key", "hoodie_max_record_key"])
    assert sorted(simple) == sorted(["parquet.avro.schema", "writer.model.name", "org.apache.hudi.bloomfilter",
                                     "hoodie_min_record_key", "hoodie_max_record_key"])
    assert footer_key_order([]) == ["parquet.avro.schema", "writer.model.name"]


def test_java_string_order_for_min_max():
    keys = pa.array(["b", "\uff01", "\U0001f600", "a"])
    # Java compares UTF-16 units: the surrogate pair (0xD83D...) sorts below U+FF01
    assert java_min_max(keys) == ("a", "\uff01")
    assert java_min_max(pa.array(["b", "a", "c"])) == ("a", "c")
    assert java_min_max(pa.array([], pa.string())) == (None, None)


# -- writing new data ------------------------------------------------------------------------------

SCHEMA = {
    "type": "record",
    "name": "t_record",
    "namespace": "hoodie.t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "small", "type": ["null", "int"], "default": None},
        {"name": "price", "type": ["null", {"type": "fixed", "name": "fixed", "namespace": "hoodie.t.t_record.price",
                                            "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}],
         "default": None},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
        {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}], "default": None},
        {"name": "attrs", "type": ["null", {"type": "map", "values": ["null", "long"]}], "default": None},
        {"name": "nested", "type": ["null", {"type": "record", "name": "nested", "namespace": "hoodie.t.t_record",
                                             "fields": [{"name": "a", "type": ["null", "double"], "default": None}]}],
         "default": None},
        {"name": "part", "type": ["null", "string"], "default": None},
    ],
}


def _sample(n: int, offset: int = 0) -> pa.Table:
    ids = np.arange(offset, offset + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "name": pa.array([None if i % 7 == 0 else f"name-{i}" for i in ids]),
        "small": pa.array(ids % 100, pa.int8()),  # narrower than the Avro int: cast
        "price": pa.array([decimal.Decimal(int(i)) / 100 for i in ids], pa.decimal128(10, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=int(i)) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(i % 30)) for i in ids], pa.date32()),
        "tags": pa.array([[f"t{i}", None] if i % 3 else None for i in ids], pa.list_(pa.string())),
        "attrs": pa.array([[("k", int(i))] if i % 2 else [] for i in ids], pa.map_(pa.string(), pa.int64())),
        "nested": pa.array([{"a": float(i)} if i % 5 else None for i in ids],
                           pa.struct([("a", pa.float64())])),
        "part": pa.array(["p1"] * n),
    })


def _name(file_id: str, token: str = "3-10-20", instant: str = "20240101000000000") -> str:
    return base_file_name(file_id, token, instant)


def test_new_file_meta_columns_and_types(tmp_path):
    storage = Storage(str(tmp_path))
    file_id = "11111111-2222-3333-4444-555555555555-0"
    rel = f"p1/{_name(file_id)}"
    data = _sample(50)
    keys = pc.cast(data.column("id"), pa.string())
    result = write_base_file(storage, rel, data, json.dumps(SCHEMA), commit_time="20240101000000000",
                             file_id=file_id, partition_path="p1", record_keys=keys, task_partition_id=3,
                             seqno_start=0)
    written = pq.read_table(tmp_path / rel)
    assert written.column_names == list(META_FIELDS) + [f["name"] for f in SCHEMA["fields"]]
    assert set(written.column("_hoodie_commit_time").to_pylist()) == {"20240101000000000"}
    assert written.column("_hoodie_commit_seqno").to_pylist() == [f"20240101000000000_3_{i}" for i in range(50)]
    assert written.column("_hoodie_record_key").to_pylist() == [str(i) for i in range(50)]
    assert set(written.column("_hoodie_partition_path").to_pylist()) == {"p1"}
    assert set(written.column("_hoodie_file_name").to_pylist()) == {os.path.basename(rel)}
    assert written.schema.field("small").type == pa.int32()
    assert written.schema.field("id").nullable is False
    for name in ("id", "name", "price", "ts", "day", "tags", "attrs", "nested"):
        assert written.column(name).to_pylist() == data.column(name).to_pylist(), name

    pf = pq.ParquetFile(tmp_path / rel)
    leaves = {pf.schema.column(i).path: pf.schema.column(i) for i in range(len(pf.schema))}
    assert leaves["id"].max_definition_level == 0  # Avro long (no union) -> required
    assert leaves["price"].physical_type == "FIXED_LEN_BYTE_ARRAY" and leaves["price"].length == 5
    assert str(leaves["ts"].logical_type).startswith("Timestamp(isAdjustedToUTC=true, timeUnit=microseconds")
    assert leaves["name"].converted_type == "UTF8"
    assert pf.metadata.row_group(0).column(0).compression == "GZIP"
    assert pf.metadata.format_version == "1.0"

    footer = dict(_raw_footer(str(tmp_path / rel)))
    assert footer["parquet.avro.schema"] == avro_schema_with_meta_fields(SCHEMA)
    assert footer["writer.model.name"] == "avro"
    assert footer["hoodie_bloom_filter_type_code"] == "DYNAMIC_V0"
    assert footer["hoodie_min_record_key"] == "0" and footer["hoodie_max_record_key"] == "9"
    assert bloom.deserialize(footer["org.apache.hudi.bloomfilter"], "DYNAMIC_V0").serialize() == \
        bloom.build(keys).serialize()
    assert result.min_record_key == "0" and result.max_record_key == "9" and result.next_seqno == 50

    rows = duckdb.sql(f"SELECT id, tags, attrs FROM read_parquet('{tmp_path / rel}') ORDER BY id").fetchall()
    assert rows[1] == (1, ["t1", None], {"k": 1})


def test_simple_bloom_no_type_code(tmp_path):
    file_id = "aaaaaaaa-0000-0000-0000-000000000000-0"
    rel = _name(file_id)
    data = _sample(10)
    keys = pc.cast(data.column("id"), pa.string())
    write_base_file(Storage(str(tmp_path)), rel, data, SCHEMA, commit_time="20240101000000000", file_id=file_id,
                    partition_path="", record_keys=keys,
                    settings=ParquetSettings(compression="snappy", bloom_filter=BloomFilterSettings(type="SIMPLE")))
    pairs = _raw_footer(str(tmp_path / rel))
    keys_in_order = [k for k, _ in pairs]
    assert "hoodie_bloom_filter_type_code" not in keys_in_order
    assert keys_in_order == footer_key_order(["org.apache.hudi.bloomfilter", "hoodie_min_record_key",
                                              "hoodie_max_record_key"])
    info = read_base_file_footer(Storage(str(tmp_path)), rel)
    assert info["bloom_type"] == "SIMPLE" and info["bloom_filter"].might_contain_all(keys).all()
    assert pq.ParquetFile(tmp_path / rel).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_without_meta_fields(tmp_path):
    file_id = "bbbbbbbb-0000-0000-0000-000000000000-0"
    rel = _name(file_id)
    data = _sample(10)
    result = write_base_file(Storage(str(tmp_path)), rel, data, SCHEMA, commit_time="20240101000000000",
                             file_id=file_id, partition_path="", record_keys=pc.cast(data.column("id"), pa.string()),
                             populate_meta_fields=False)
    written = pq.read_table(tmp_path / rel)
    for name in META_FIELDS:
        assert written.column(name).null_count == 10
    keys = [k for k, _ in _raw_footer(str(tmp_path / rel))]
    assert keys == ["parquet.avro.schema", "writer.model.name"]
    assert result.bloom_filter is None and result.min_record_key is None


def test_read_record_keys_stored_derived_and_missing(tmp_path):
    """One reader of a base file's keys for every index: the meta column in row order, keys derived by
    the key generator when the table has no meta columns, and a missing column named with its file."""
    storage = Storage(str(tmp_path))
    data = _sample(12)
    stored_keys = pa.array([f"k{i:03d}" for i in range(12)][::-1])
    stored = _name("dddddddd-0000-0000-0000-000000000000-0")
    write_base_file(storage, stored, data, SCHEMA, commit_time="20240101000000000",
                    file_id="dddddddd-0000-0000-0000-000000000000-0", partition_path="", record_keys=stored_keys)
    keys = read_record_keys(storage, stored)
    assert keys.type == pa.string() and keys.to_pylist() == stored_keys.to_pylist()

    virtual = _name("eeeeeeee-0000-0000-0000-000000000000-0")
    write_base_file(storage, virtual, data, SCHEMA, commit_time="20240101000000000",
                    file_id="eeeeeeee-0000-0000-0000-000000000000-0", partition_path="",
                    record_keys=pc.cast(data.column("id"), pa.string()), populate_meta_fields=False)
    generator = ComplexKeyGenerator(["id", "small"], [])
    derived = read_record_keys(storage, virtual, generator)
    assert derived.to_pylist() == generator.record_keys(data).cast(pa.string()).to_pylist()
    assert derived.to_pylist()[1] == "id:1,small:1"

    plain = "plain.parquet"
    pq.write_table(pa.table({"id": [1, 2]}), tmp_path / plain)
    with pytest.raises(SchemaError, match=r"plain\.parquet: no column _hoodie_record_key.*populate\.meta\.fields=true"):
        read_record_keys(storage, plain)
    with pytest.raises(SchemaError, match=r"plain\.parquet: no column small; .*record key fields"):
        read_record_keys(storage, plain, generator)


def test_preserve_meta_mask_and_file_name_rewrite(tmp_path):
    file_id = "cccccccc-0000-0000-0000-000000000000-0"
    rel = _name(file_id, token="1-5-7", instant="20240202000000000")
    data = _sample(4).append_column("_hoodie_commit_time", pa.array(["20240101000000000"] * 4)).append_column(
        "_hoodie_commit_seqno", pa.array([f"20240101000000000_0_{i}" for i in range(4)])).append_column(
        "_hoodie_file_name", pa.array(["old.parquet"] * 4))
    result = write_base_file(Storage(str(tmp_path)), rel, data, SCHEMA, commit_time="20240202000000000",
                             file_id=file_id, partition_path="", record_keys=pa.array(["a", "b", "c", "d"]),
                             task_partition_id=1, preserve_meta=[True, False, True, False])
    written = pq.read_table(tmp_path / rel)
    assert written.column("_hoodie_commit_time").to_pylist() == [
        "20240101000000000", "20240202000000000", "20240101000000000", "20240202000000000"]
    assert written.column("_hoodie_commit_seqno").to_pylist() == [
        "20240101000000000_0_0", "20240202000000000_1_1", "20240101000000000_0_2", "20240202000000000_1_3"]
    assert set(written.column("_hoodie_file_name").to_pylist()) == {rel}
    assert result.num_preserved == 2
    everything = write_base_file(Storage(str(tmp_path)), rel, data, SCHEMA, commit_time="20240202000000000",
                                 file_id=file_id, partition_path="", record_keys=pa.array(list("abcd")),
                                 preserve_meta=True, overwrite=True)
    assert pq.read_table(tmp_path / rel).column("_hoodie_commit_seqno").to_pylist() == \
        data.column("_hoodie_commit_seqno").to_pylist()
    assert everything.num_preserved == 4


def test_max_file_size_rolls_over(tmp_path):
    storage = Storage(str(tmp_path))
    data = _sample(60_000)
    keys = pc.cast(data.column("id"), pa.string())
    limit = 600_000
    first = write_base_file(storage, _name("dddddddd-0000-0000-0000-000000000000-0"), data, SCHEMA,
                            commit_time="20240101000000000", file_id="dddddddd-0000-0000-0000-000000000000-0",
                            partition_path="", record_keys=keys, max_file_size=limit)
    assert 0 < first.rows_consumed < data.num_rows
    footer_size = len(first.bloom_filter) + len(first.avro_schema)
    assert first.file_size - footer_size < limit * 1.1
    rest = data.slice(first.rows_consumed)
    second = write_base_file(storage, _name("eeeeeeee-0000-0000-0000-000000000000-0"), rest, SCHEMA,
                             commit_time="20240101000000000", file_id="eeeeeeee-0000-0000-0000-000000000000-0",
                             partition_path="", record_keys=keys.slice(first.rows_consumed), max_file_size=10**9)
    assert second.rows_consumed == rest.num_rows
    total = pq.read_table(tmp_path / _name("dddddddd-0000-0000-0000-000000000000-0")).num_rows + \
        pq.read_table(tmp_path / _name("eeeeeeee-0000-0000-0000-000000000000-0")).num_rows
    assert total == data.num_rows
    seq = pq.read_table(tmp_path / _name("eeeeeeee-0000-0000-0000-000000000000-0"),
                        columns=["_hoodie_commit_seqno"]).column(0)
    assert seq[0].as_py() == "20240101000000000_0_0"


def test_missing_nullable_column_and_errors(tmp_path):
    storage = Storage(str(tmp_path))
    file_id = "ffffffff-0000-0000-0000-000000000000-0"
    data = _sample(3).drop_columns(["nested"])
    keys = pa.array(["1", "2", "3"])
    kwargs = dict(commit_time="20240101000000000", file_id=file_id, partition_path="", record_keys=keys)
    write_base_file(storage, _name(file_id), data, SCHEMA, **kwargs)
    assert pq.read_table(tmp_path / _name(file_id)).column("nested").null_count == 3
    with pytest.raises(WriteError):  # already exists
        write_base_file(storage, _name(file_id), data, SCHEMA, **kwargs)
    with pytest.raises(WriteError):  # file id does not match the name
        write_base_file(storage, _name("other-0"), data, SCHEMA, **kwargs)
    with pytest.raises(WriteError):  # not a base file name
        write_base_file(storage, "x.parquet", data, SCHEMA, **kwargs)
    with pytest.raises(WriteError):  # column outside the schema
        write_base_file(storage, _name(file_id, token="0-0-1"), data.append_column("zzz", pa.array([1, 2, 3])),
                        SCHEMA, **kwargs)
    with pytest.raises(WriteError):  # required column missing
        write_base_file(storage, _name(file_id, token="0-0-2"), data.drop_columns(["id"]), SCHEMA, **kwargs)
    with pytest.raises(WriteError):  # preserve needs the incoming meta columns
        write_base_file(storage, _name(file_id, token="0-0-3"), data, SCHEMA, preserve_meta=True, **kwargs)
    with pytest.raises(WriteError):  # key count
        write_base_file(storage, _name(file_id, token="0-0-4"), data, SCHEMA,
                        **dict(kwargs, record_keys=pa.array(["1"])))
    assert not (tmp_path / _name(file_id, token="0-0-3")).exists()  # partial files are removed


def test_dictionary_rule_like_parquet_mr():
    table = pa.table({
        "same": pa.array(["x"] * 4),
        "unique": pa.array(["a", "b", "c", "d"]),
        "ints_unique": pa.array(range(4), pa.int32()),
        "ints_few": pa.array([10, 10, 10, 30], pa.int32()),
        "ints_no_gain": pa.array([10, 10, 20, 30], pa.int32()),  # 12 + 4 bytes is not < 16
        "flag": pa.array([True, False, True, False]),
        "dec": pa.array([decimal.Decimal(1)] * 4, pa.decimal128(5, 0)),
        "nested": pa.array([{"s": "k", "u": i} for i in range(4)], pa.struct([("s", pa.string()), ("u", pa.int64())])),
        "lst": pa.array([["a", "a"], None, ["a"], []], pa.list_(pa.string())),
    })
    assert dictionary_columns(table) == ["same", "ints_few", "nested.s", "lst.list.element"]


def test_empty_file(tmp_path):
    file_id = "99999999-0000-0000-0000-000000000000-0"
    result = write_base_file(Storage(str(tmp_path)), f"a/b/{_name(file_id)}", _sample(0), SCHEMA,
                             commit_time="20240101000000000", file_id=file_id, partition_path="a/b",
                             record_keys=pa.array([], pa.string()))
    assert result.num_writes == 0 and result.min_record_key is None
    info = read_base_file_footer(Storage(str(tmp_path)), result.path)
    assert info["num_rows"] == 0 and info["min_record_key"] is None
    assert info["bloom_filter"].serialize() == bloom.create().serialize()
    assert [k for k, _ in _raw_footer(str(tmp_path / result.path))] == footer_key_order(
        ["org.apache.hudi.bloomfilter", "hoodie_bloom_filter_type_code"])


def test_fsspec_storage(tmp_path):
    storage = Storage("memory://hudi-duck-test-base-file/table")
    file_id = "12121212-0000-0000-0000-000000000000-0"
    data = _sample(20)
    result = write_base_file(storage, f"p1/{_name(file_id)}", data, SCHEMA, commit_time="20240101000000000",
                             file_id=file_id, partition_path="p1", record_keys=pc.cast(data.column("id"), pa.string()),
                             overwrite=True)
    assert result.file_size == storage.size(result.path) > 0
    with storage.open(result.path) as handle:
        assert pq.read_table(handle).num_rows == 20
    info = read_base_file_footer(storage, result.path)
    assert info["max_record_key"] == "9" and info["bloom_filter"].might_contain("19")


def test_parsed_base_files_and_their_slices_are_the_values_the_constructors_make():
    """``parse_base_file`` and ``FileSlice.of_base`` skip the dataclasses' generated ``__init__``
    for speed: what they make must be equal, hash equal, print equal and stay frozen."""
    import dataclasses

    from hudi_duck.core.file_group.file_slice import FileSlice
    from hudi_duck.core.file_group.naming import BaseFile, parse_base_file

    name = "3f2a-0_1-22-333_20240418173235694.parquet"
    parsed = parse_base_file("year=2024/month=04", name, 1234)
    made = BaseFile("year=2024/month=04", name, "3f2a-0", "1-22-333", "20240418173235694", ".parquet", 1234)
    assert parsed == made and hash(parsed) == hash(made) and repr(parsed) == repr(made)
    assert dataclasses.astuple(parsed) == dataclasses.astuple(made)
    assert parsed.path == "year=2024/month=04/" + name
    alone = FileSlice.of_base(parsed)
    assert alone == FileSlice("year=2024/month=04", "3f2a-0", "20240418173235694", made)
    assert hash(alone) == hash(FileSlice("year=2024/month=04", "3f2a-0", "20240418173235694", made, ()))
    for value, field in ((parsed, "size"), (alone, "log_files")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, None)
