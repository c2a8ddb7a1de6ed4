"""Hudi bloom filters: bit-exact against the filters Apache Hudi wrote into the fixtures."""

from __future__ import annotations

import base64
import struct
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fixtures import fixture_id, fixture_zips
from hudi_duck.core.index import bloom
from hudi_duck.core.errors import CorruptFileError

FIXTURE_IDS = [fixture_id(z) for z in fixture_zips()]


def _base_files(base: str) -> list[Path]:
    root = Path(base)
    return sorted(p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts)


def _footer(path: Path) -> dict[str, str]:
    raw = pq.read_metadata(path).metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items()}


# -- against Apache Hudi's own filters -------------------------------------------------------------


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_fixture_bloom_filters_bit_exact(fixture_tables, fid):
    files = [f for f in _base_files(fixture_tables[fid]) if bloom.BLOOM_FILTER_FOOTER_KEY in _footer(f)]
    if not files:
        assert fid == "sample_table/cow/v6_empty", f"{fid}: expected base files with bloom filters"
        return
    for path in files:
        footer = _footer(path)
        text = footer[bloom.BLOOM_FILTER_FOOTER_KEY]
        code = footer.get(bloom.BLOOM_FILTER_TYPE_CODE_FOOTER_KEY)
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)

        bf = bloom.deserialize(text, code)
        assert bf.type_code == (code or bloom.SIMPLE)
        assert bf.might_contain_all(keys).all(), path
        for key in keys.to_pylist():
            assert bf.might_contain(key) and key in bf
        assert bf.serialize() == text, f"{path}: re-serialization differs"

        rebuilt = bloom.create(code or bloom.SIMPLE)  # Hudi's default sizing
        for key in keys.to_pylist():
            rebuilt.add(key)
        assert rebuilt.serialize() == text, f"{path}: a filter built from the same keys differs"
        assert bloom.build(keys, code or bloom.SIMPLE).serialize() == text
        assert bloom.from_footer(footer).serialize() == text


def test_fixture_filters_have_hudi_default_shape(fixture_tables):
    seen = 0
    for base in fixture_tables.values():
        for path in _base_files(base):
            footer = _footer(path)
            if bloom.BLOOM_FILTER_FOOTER_KEY not in footer:
                continue
            raw = base64.b64decode(footer[bloom.BLOOM_FILTER_FOOTER_KEY])
            version, nb_hash, hash_type, vector_size = struct.unpack_from(">iibi", raw, 0)
            assert (version, nb_hash, hash_type, vector_size) == (-1, 30, bloom.MURMUR_HASH, 2587966)
            seen += 1
    assert seen > 0


# -- sizing and hashes ----------------------------------------------------------------------------


def test_sizing_matches_bloom_filter_utils():
    bits = bloom.bit_size(60000, 0.000000001)
    assert bits == 2587966
    assert bloom.num_hashes(bits, 60000) == 30
    assert bloom.bit_size(1000, 0.01) == 9586
    assert bloom.num_hashes(9586, 1000) == 7


def test_jenkins_matches_lookup3_vectors():
    assert bloom.jenkins_hash(b"", 0) & 0xFFFFFFFF == 0xDEADBEEF
    assert bloom.jenkins_hash(b"Four score and seven years ago", 0) & 0xFFFFFFFF == 0x17770551
    assert bloom.jenkins_hash(b"Four score and seven years ago", 1) & 0xFFFFFFFF == 0xCD628161


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=30))
def test_vectorised_positions_equal_scalar_reference(keys):
    got = bloom.hash_positions(keys, 30, 2587966)
    for row, key in zip(got, keys):
        assert row.tolist() == bloom.key_positions(key, 30, 2587966)


@pytest.mark.parametrize("key", ["é", "ßü", "日本", "€x", "\x80", "a\U0001f600", "\ufffd\ufffd\ufffd"])
def test_negative_tail_bytes_are_sign_extended(key):
    data = key.encode("utf-8")
    # Hadoop/Hudi: h ^= (int) data[length - 3] << 16 ... with signed bytes (note: not C's
    # data[2] << 16 order); an independent spelled-out port of that Java tail
    h = bloom.murmur_hash(data, 0)
    m = 0x5BD1E995
    length = len(data)
    ref = (0 ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        ref = ((ref * m) & 0xFFFFFFFF) ^ k
    tail = data[length - length % 4 :]
    if tail:
        signed = [b - 256 if b > 127 else b for b in tail]
        if len(tail) >= 3:
            ref ^= (signed[-3] << 16) & 0xFFFFFFFF
        if len(tail) >= 2:
            ref ^= (signed[-2] << 8) & 0xFFFFFFFF
        ref ^= signed[-1] & 0xFFFFFFFF
        ref = (ref * m) & 0xFFFFFFFF
    ref ^= ref >> 13
    ref = (ref * m) & 0xFFFFFFFF
    ref ^= ref >> 15
    assert h & 0xFFFFFFFF == ref
    assert bloom.hash_positions([key], 5, 1000)[0].tolist() == bloom.key_positions(key, 5, 1000)


def test_empty_and_null_keys_are_rejected():
    bf = bloom.create()
    with pytest.raises(bloom.BloomFilterError):
        bf.add("")
    with pytest.raises(bloom.BloomFilterError):
        bf.add_all(pa.array(["a", None]))


# -- dynamic filter growth (beyond num_entries) -------------------------------------------------------


def _java_dynamic_reference(keys, nr, max_nr, vector_size, nb_hash):
    """Key-by-key port of InternalDynamicBloomFilter.add, for comparison with the bulk path."""
    rows = [np.zeros(vector_size, bool)]
    current, reached, cur_index = 0, False, 0
    for key in keys:
        if reached:
            row = rows[cur_index % len(rows)]
            cur_index += 1
        elif current >= nr and len(rows) * nr < max_nr:
            rows.append(np.zeros(vector_size, bool))
            current = 0
            row = rows[-1]
        elif current >= nr:
            reached = True
            row = rows[0]
        else:
            row = rows[-1]
        row[bloom.key_positions(key, nb_hash, vector_size)] = True
        current += 1
    return rows, current


@pytest.mark.parametrize("count", [0, 1, 99, 100, 101, 250, 300, 301, 302, 777])
def test_dynamic_filter_rows_like_java(count):
    keys = [f"key-{i}" for i in range(count)]
    bulk = bloom.create(bloom.DYNAMIC_V0, num_entries=100, fpp=0.01, max_entries=250)
    bulk.add_all(keys)
    one_by_one = bloom.create(bloom.DYNAMIC_V0, num_entries=100, fpp=0.01, max_entries=250)
    for key in keys:
        one_by_one.add(key)
    chunked = bloom.create(bloom.DYNAMIC_V0, num_entries=100, fpp=0.01, max_entries=250)
    for start in range(0, count, 37):
        chunked.add_all(keys[start : start + 37])
    rows, current = _java_dynamic_reference(keys, 100, 250, bulk.vector_size, bulk.nb_hash)
    assert len(bulk.rows) == len(rows)
    assert bulk.current_nb_record == current
    for mine, ref in zip(bulk.rows, rows):
        assert np.array_equal(mine.bits, ref)
    assert bulk.serialize() == one_by_one.serialize() == chunked.serialize()
    back = bloom.deserialize(bulk.serialize(), bloom.DYNAMIC_V0)
    assert back.serialize() == bulk.serialize()
    if keys:
        assert back.might_contain_all(keys).all()
    assert len(bulk.rows) == (1 if count <= 100 else 2 if count <= 200 else 3)


def test_simple_filter_round_trip_and_type_code():
    bf = bloom.create(bloom.SIMPLE, num_entries=500, fpp=0.001)
    bf.add_all([f"k{i}" for i in range(500)])
    text = bf.serialize()
    assert bloom.deserialize(text).serialize() == text  # no type code -> SIMPLE
    assert bloom.deserialize(text, "SIMPLE").might_contain("k42")
    raw = base64.b64decode(text)
    assert struct.unpack_from(">iibi", raw, 0) == (-1, bf.nb_hash, 1, bf.vector_size)
    assert len(raw) == 13 + (bf.vector_size + 7) // 8


def test_old_unversioned_header_means_jenkins():
    bf = bloom.SimpleBloomFilter(200, 0.01, hash_type=bloom.JENKINS_HASH)
    bf.add_all(["alpha", "beta", "gamma"])
    raw = bf.to_bytes()
    old = struct.pack(">ii", bf.nb_hash, bf.vector_size) + raw[13:]
    back = bloom.deserialize(base64.b64encode(old).decode())
    assert back.hash_type == bloom.JENKINS_HASH
    assert back.might_contain_all(["alpha", "beta", "gamma"]).all()


def test_corrupt_strings_raise():
    with pytest.raises(CorruptFileError):
        bloom.deserialize("not base64!!", "DYNAMIC_V0")
    good = bloom.create().serialize()
    truncated = base64.b64encode(base64.b64decode(good)[:100]).decode()
    with pytest.raises(CorruptFileError):
        bloom.deserialize(truncated, "DYNAMIC_V0")
    with pytest.raises(bloom.BloomFilterError):
        bloom.deserialize(good, "DYNAMIC_V9")
    with pytest.raises(bloom.BloomFilterError):
        bloom.create("BOGUS")


# -- behaviour --------------------------------------------------------------------------------------


@pytest.mark.parametrize("type_code", [bloom.SIMPLE, bloom.DYNAMIC_V0])
def test_false_positive_rate(type_code):
    rng = np.random.default_rng(7)
    members = [f"member-{x}" for x in rng.integers(0, 2**62, 2000)]
    others = [f"other-{x}" for x in rng.integers(0, 2**62, 50000)]
    bf = bloom.create(type_code, num_entries=2000, fpp=0.01, max_entries=4000)
    bf.add_all(members)
    assert bf.might_contain_all(members).all()
    rate = bf.might_contain_all(others).mean()
    assert rate < 0.02, rate

    default = bloom.create(type_code)  # 60000 entries at 1e-9
    default.add_all(members)
    assert default.might_contain_all(others).sum() == 0


def test_add_one_million_keys_is_fast():
    numbers = pc.cast(pa.array(np.random.default_rng(1).integers(0, 2**62, 1_000_000)), pa.string())
    keys = pc.binary_join_element_wise("k-", numbers, "")
    bf = bloom.create()
    start = time.perf_counter()
    bf.add_all(keys)
    elapsed = time.perf_counter() - start
    assert elapsed < 20, f"adding 1M keys took {elapsed:.1f}s"
    assert len(bf.rows) == 2 and bf.current_nb_record == 1_000_000 - 60_000
    assert bf.might_contain_all(keys.slice(0, 5000)).all()
    assert bf.might_contain_all(keys.slice(999_000)).all()


def test_sliced_chunked_and_python_inputs_agree():
    keys = [f"key-{i}" for i in range(1000)]
    arr = pa.array(keys)
    sliced = arr.slice(100, 500)
    expected = bloom.hash_positions(keys[100:600], 30, 2587966)
    assert np.array_equal(bloom.hash_positions(sliced, 30, 2587966), expected)
    assert np.array_equal(bloom.hash_positions(pa.chunked_array([arr.slice(100, 200), arr.slice(300, 300)]),
                                               30, 2587966), expected)
    assert np.array_equal(bloom.hash_positions(pa.array(keys[100:600], pa.large_string()), 30, 2587966), expected)
    assert np.array_equal(bloom.hash_positions([k.encode() for k in keys[100:600]], 30, 2587966), expected)
    assert np.array_equal(bloom.hash_positions(sliced.dictionary_encode(), 30, 2587966), expected)
