"""``hudi_duck_keep``'s vector helpers: which files a vector holds and which of its rows survive,
against the plain definitions (dictionary-encode the names; look every row up)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_duck.duck.lazy import _file_names, _kept


@settings(max_examples=300, deadline=None)
@given(dropped=st.lists(st.integers(0, 60), unique=True), start=st.integers(0, 40), length=st.integers(0, 30),
       gaps=st.lists(st.integers(0, 3), max_size=30))
def test_kept_rows_equal_a_lookup_of_every_row(dropped, start, length, gaps):
    """Consecutive runs (a plain scan) and runs with gaps (pushed-down filters) alike."""
    dropped_sorted = np.array(sorted(dropped), dtype=np.int64)
    consecutive = np.arange(start, start + length, dtype=np.int64)
    with_gaps = start + np.cumsum(np.array(gaps, dtype=np.int64) + 1) if gaps else np.empty(0, np.int64)
    for rows in (consecutive, with_gaps):
        want = np.array([r not in set(dropped) for r in rows.tolist()], dtype=bool)
        assert _kept(dropped_sorted, rows).tolist() == want.tolist()


@settings(max_examples=200, deadline=None)
@given(files=st.lists(st.sampled_from(["a/x.parquet", "b/y.parquet", "c/z.parquet"]), max_size=20),
       dictionary=st.booleans())
def test_file_names_of_a_vector(files, dictionary):
    array = pa.array(files, pa.string())
    if dictionary:
        array = pc.dictionary_encode(array)
    names, indices = _file_names(array)
    assert sorted(set(names)) == sorted(set(files)) and len(names) == len(set(names))
    if indices is None:
        assert len(set(files)) <= 1 and (not files or names == [files[0]])
    else:
        assert [names[i] for i in indices.tolist()] == files
