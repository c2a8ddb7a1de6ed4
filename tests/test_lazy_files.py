"""Merged slice files served to DuckDB: per-thread positions (DuckDB's scan threads share one handle)."""

from __future__ import annotations

import threading

from hudi_duck.duck.lazy import PositionalReader


def test_threads_keep_their_own_position(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 4)
    reader = PositionalReader(str(path))
    reader.seek(10)
    other: dict[str, bytes] = {}

    def elsewhere():  # another thread moves its own position and reads
        reader.seek(1000)
        other["data"] = reader.read(100)

    t = threading.Thread(target=elsewhere)
    t.start()
    t.join()
    assert other["data"] == (bytes(range(256)) * 4)[1000:1024]  # short read at the end of the file
    assert reader.tell() == 10
    assert reader.read(5) == bytes([10, 11, 12, 13, 14])
    buf = bytearray(3)
    assert reader.readinto(buf) == 3 and bytes(buf) == bytes([15, 16, 17])
    assert reader.seek(-4, 2) == 1020 and reader.read() == bytes([252, 253, 254, 255])
    reader.close()
    assert reader.closed


def _open_descriptors() -> int:
    import os

    return len(os.listdir("/proc/self/fd"))


def test_merged_slice_files_do_not_hold_descriptors_after_queries(fixture_tables):
    """DuckDB drops the merged-slice files it opened without always closing them; their
    descriptors must go with them, or a long session runs out of descriptors."""
    import gc

    import hudi_duck

    path = fixture_tables["quickstart_trips_table/mor/avro/v6_trips_8i1u"]
    con = hudi_duck.connect()
    query = f"SELECT count(*) FROM hudi_snapshot('{path}')"
    expected = con.sql(query).fetchall()
    gc.collect()
    before = _open_descriptors()
    for _ in range(40):
        assert con.sql(query).fetchall() == expected
    gc.collect()
    assert _open_descriptors() - before < 10
    con.close()


def test_a_dropped_reader_closes_its_descriptor(tmp_path):
    import gc

    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10)
    gc.collect()
    before = _open_descriptors()
    readers = [PositionalReader(str(path)) for _ in range(20)]
    assert _open_descriptors() == before + 20
    del readers
    gc.collect()
    assert _open_descriptors() == before
