"""The simple index's filter of incoming keys: never drops a key it was given, drops most others."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_writer.key_filter import BITS, KeyFilter


@settings(max_examples=100, deadline=None)
@given(
    first=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=30), max_size=60),
    second=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=30), max_size=60),
)
def test_no_key_it_was_given_is_dropped(first, second):
    union = KeyFilter.of_keys(pa.array(first, pa.string())).union(KeyFilter.of_keys(pa.array(second, pa.string())))
    kept = union.might_contain(pa.array(first + second, pa.string()))
    assert kept.dtype == bool and kept.all()
    assert KeyFilter.from_text(union.to_text()) == union


def test_most_other_keys_are_dropped():
    given_keys = pa.array([f"order-{i:08d}" for i in range(10_000)])  # similar keys spread too
    f = KeyFilter.of_keys(given_keys)
    assert 0.009 < f.fill < 0.0096  # 10,000 keys, 2^20 bits
    others = pa.array([f"order-{i:08d}" for i in range(10_000, 210_000)])
    assert f.might_contain(others).mean() < 0.012
    assert not KeyFilter.empty().might_contain(given_keys).any()
    assert "0.95% of 1048576 bits" in repr(f)


def test_a_damaged_filter_is_refused():
    with pytest.raises(ValueError, match=f"not {BITS // 8}"):
        KeyFilter.from_text(KeyFilter(b"\x00" * 10).to_text())
