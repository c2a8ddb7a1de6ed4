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


def test_base_file_keys_go_to_spark_many_files_a_batch_each_with_its_location(tmp_path, monkeypatch):
    """The simple index's key reader hands Spark the keys of many small base files in one batch
    (a batch per file cost more than reading a ten-row file), each key with its own file's
    location, and only the keys the incoming keys' filter may hold."""
    import pyarrow.parquet as pq

    from spark_writer import index
    from spark_writer.key_filter import KeyFilterBuilder

    monkeypatch.setattr(index, "KEYS_PER_BATCH", 25)
    files = []
    for f in range(7):
        keys = [f"k{f}-{i}" for i in range(10)]
        pq.write_table(pa.table({"_hoodie_record_key": keys, "v": list(range(10))}), tmp_path / f"f{f}.parquet")
        files.append((f"p{f % 2}", f"id{f}", f"2024010100000{f}", f"f{f}.parquet"))
    refs = pa.RecordBatch.from_arrays([pa.array(list(c)) for c in zip(*files)], names=["partition", "file_id", "instant", "path"])
    out = list(index._read_keys_fn(str(tmp_path), {})([refs]))
    assert [b.num_rows for b in out] == [30, 30, 10]  # three files a batch, past 25 keys
    rows = pa.Table.from_batches(out).to_pylist()
    assert len(rows) == 70
    for row in rows:
        f = int(row["_loc_key"][1 : row["_loc_key"].index("-")])
        assert (row["_loc_partition"], row["_loc_file_id"], row["_loc_instant"]) == files[f][:3]
    wanted = ["k1-3", "k4-0", "k6-9"]
    builder = KeyFilterBuilder()
    builder.add(pa.array(wanted))
    kept = pa.Table.from_batches(list(index._read_keys_fn(str(tmp_path), {}, key_filter=builder.build())([refs])))
    located = {r["_loc_key"]: r["_loc_file_id"] for r in kept.to_pylist()}
    assert {k: located.get(k) for k in wanted} == {"k1-3": "id1", "k4-0": "id4", "k6-9": "id6"}
    assert kept.num_rows < 70
