"""Java's ``String``/``List`` hash codes, one string at a time and a batch at a time, and the
simple bucket index's buckets made of them."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_duck.core.index.bucket import bucket_id, bucket_ids, java_list_hash
from hudi_duck.core.metadata.java import string_hash, string_hashes


@pytest.mark.parametrize(
    "text, java_hash",
    [
        ("", 0),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("polygenelubricants", -2147483648),
        ("é", 233),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # a surrogate pair: two UTF-16 code units
    ],
)
def test_string_hash_is_javas(text, java_hash):
    assert string_hash(text) == java_hash
    assert string_hashes(pa.array(["x", text])).tolist() == [string_hash("x"), java_hash & 0xFFFFFFFF]


def test_list_hash_is_javas():
    assert java_list_hash(["hello"]) == 31 + 99162322
    assert java_list_hash([None, "Aa"]) == 31 * 31 + 2112


def test_a_batch_gets_the_buckets_of_its_keys_one_by_one():
    keys = ["id-1", "", "polygenelubricants", "id:7,name:x", "é-key", "a:b", "\U0001f600" * 3] + [f"uuid-{i:06d}" for i in range(50)]
    for buckets in (1, 7, 256):
        for fields in ([], ["id"], ["name", "id"]):
            got = bucket_ids(pa.array(keys), fields, buckets)
            assert got.type == pa.int32()
            assert got.to_pylist() == [bucket_id(k, fields, buckets) for k in keys]


def test_a_sliced_or_chunked_batch_hashes_its_own_keys():
    keys = pa.array(["aaaa", "b", "cc", "ddd", "eeeee"])
    expected = [bucket_id(k, [], 16) for k in keys.to_pylist()]
    assert bucket_ids(keys.slice(1, 3), [], 16).to_pylist() == expected[1:4]
    chunked = pa.chunked_array([keys.slice(0, 2), keys.slice(2)])
    assert bucket_ids(chunked, [], 16).to_pylist() == expected
    assert bucket_ids(pa.array([], pa.string()), [], 16).to_pylist() == []


def test_a_null_key_is_refused():
    with pytest.raises(ValueError, match="record key is null"):
        bucket_ids(pa.array(["a", None]), [], 4)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=40), max_size=40),
    buckets=st.integers(min_value=1, max_value=10_000),
)
def test_batch_and_single_key_rules_agree(keys, buckets):
    assert string_hashes(pa.array(keys, pa.string())).tolist() == [string_hash(k) & 0xFFFFFFFF for k in keys]
    assert bucket_ids(pa.array(keys, pa.string()), ["a", "b"], buckets).to_pylist() == [
        bucket_id(k, ["a", "b"], buckets) for k in keys
    ]
