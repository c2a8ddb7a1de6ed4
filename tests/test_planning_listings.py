"""What planning reads from storage: a listed table lists each partition folder once, a
timeline folder is read for its instant file names, Java's string hash as the metadata
table's map order needs it."""

from __future__ import annotations

import os
import random

import pytest
from fsspec.implementations.local import LocalFileSystem

from hudi_duck import open_table
from hudi_duck.core.metadata.java import string_hash
from hudi_duck.core.storage.storage import Storage
from test_mdt_read import counting_listings

PARTITIONED = [
    "sample_table/cow/v6_simplekeygen_nonhivestyle",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
    "sample_table/cow/v9_txns_simple_meta",
]


@pytest.mark.parametrize("fid", PARTITIONED)
def test_listing_lists_each_partition_folder_once(monkeypatch, fixture_tables, fid):
    path = fixture_tables[fid]
    with counting_listings(monkeypatch, path) as listed:
        plan = open_table(path, metadata_enable=False).plan()
    folders = {s.partition_path for s in plan.slices}
    assert plan.listing == "storage" and folders
    listings = {folder: n for (call, folder), n in listed.calls.items() if call == "ls"}
    for folder in folders:
        assert listings.get(folder) == 1, (folder, dict(listed.calls))


def test_file_names_of_a_folder(tmp_path):
    (tmp_path / "t" / ".hoodie" / "archived").mkdir(parents=True)
    for name in ("001.commit", "001.commit.requested", "hoodie.properties"):
        (tmp_path / "t" / ".hoodie" / name).write_bytes(b"")
    storage = Storage(str(tmp_path / "t"))
    assert storage.file_names(".hoodie") == ["001.commit", "001.commit.requested", "hoodie.properties"]
    assert storage.file_names("absent") == []
    assert storage.file_names(".hoodie/hoodie.properties") == []  # a file, not a folder


def _fsspec_list(storage: Storage, rel: str) -> list:
    """``Storage.list`` the way fsspec's local filesystem answers (the non-local path)."""
    storage.protocol = "fsspec"
    try:
        return storage.list(rel)
    finally:
        storage.protocol = "file"


def test_local_listing_is_fsspecs(tmp_path):
    """A local folder read with one scandir lists what fsspec's ``ls`` does: names, sizes,
    folders, times, links (a link is not a folder, its size is its target's), absent folders."""
    root = tmp_path / "t"
    (root / "p=1" / "sub").mkdir(parents=True)
    (root / "p=1" / "a.parquet").write_bytes(b"x" * 10)
    (root / "p=1" / ".a_1.log.1_0-1-2").write_bytes(b"y" * 3)
    (root / "p=1" / "empty").write_bytes(b"")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"z" * 1234)
    os.symlink(outside / "big", root / "p=1" / "linked")
    os.symlink(outside, root / "p=1" / "linked-folder")
    os.symlink(tmp_path / "nowhere", root / "p=1" / "dangling")
    storage = Storage(str(root))
    assert isinstance(storage.fs, LocalFileSystem) and storage.is_local
    for rel in ("", "p=1", "p=1/sub", "absent", "p=1/a.parquet"):
        fsspecs = _fsspec_list(storage, rel)
        assert storage.list(rel) == fsspecs, rel
        # what a search for partitions reads: names, sizes of files, folders (without a stat of their own)
        entries = [(info.name, 0 if info.is_dir else info.size, info.is_dir) for info in fsspecs]
        assert storage.list_entries(rel) == entries, rel
        storage.protocol = "fsspec"
        try:
            assert storage.list_entries(rel) == entries, rel
        finally:
            storage.protocol = "file"
    listed = {info.name: info for info in storage.list("p=1")}
    assert listed["linked"].size == 1234 and not listed["linked"].is_dir
    assert not listed["linked-folder"].is_dir and listed["dangling"].size == 0
    assert listed["sub"].is_dir and listed["a.parquet"].size == 10
    assert [info.path for info in storage.list("p=1")][:2] == ["p=1/.a_1.log.1_0-1-2", "p=1/a.parquet"]


def _java_hash(text: str) -> int:
    """String.hashCode the way Java computes it: h = 31 * h + c over the UTF-16 code units."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def test_string_hash_is_javas():
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert string_hash("Aa") == string_hash("BB") == 2112
    rng = random.Random(7)
    alphabet = "abcXYZ019-_.=/é漢😀\u0000"
    for n in range(0, 200):
        text = "".join(rng.choice(alphabet) for _ in range(n))
        assert string_hash(text) == _java_hash(text), text
