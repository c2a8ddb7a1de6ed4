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
from hudi_duck.core.file_group.naming import is_partition_metafile
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.fs_view import StorageListing
from hudi_duck.core.table.table import HudiTable
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
    # a file whose size is not needed (a partition's metafile) is listed without a stat: size 0
    (root / "p=1" / ".hoodie_partition_metadata").write_bytes(b"#partition metadata\n")
    unsized = [(n, 0 if n == ".hoodie_partition_metadata" else size, d) for n, size, d in storage.list_entries("p=1")]
    assert unsized[1] == (".hoodie_partition_metadata", 0, False)
    assert storage.list_entries("p=1", unsized=is_partition_metafile) == unsized
    storage.protocol = "fsspec"
    try:
        assert storage.list_entries("p=1", unsized=is_partition_metafile) == unsized
    finally:
        storage.protocol = "file"
    listed = {info.name: info for info in storage.list("p=1")}
    assert listed["linked"].size == 1234 and not listed["linked"].is_dir
    assert not listed["linked-folder"].is_dir and listed["dangling"].size == 0
    assert listed["sub"].is_dir and listed["a.parquet"].size == 10
    assert [info.path for info in storage.list("p=1")][:3] == ["p=1/.a_1.log.1_0-1-2", "p=1/.hoodie_partition_metadata", "p=1/a.parquet"]


def test_storage_listing_files_are_data_files(fixture_tables):
    """A listed partition's files are its data files, as the metadata table's ``files``
    partition lists them: the partition metafile is not one of them."""
    table = HudiTable(fixture_tables[PARTITIONED[1]], metadata_enable=False)
    listing = StorageListing(table.storage, table.config)
    partitions = listing.partitions()
    assert partitions
    for partition in partitions:
        names = sorted(info.name for info in table.storage.list(partition) if not info.is_dir)
        assert any(is_partition_metafile(n) for n in names)
        files = listing.files(partition)
        assert sorted(n for n, _ in files) == [n for n in names if not is_partition_metafile(n)]
        assert all(size == table.storage.size(f"{partition}/{n}") for n, size in files)


def test_logs_of_a_slice_and_file_groups_of_logs_alone_come_in_hudis_log_order(fresh_fixture):
    """Log files are listed by name, but a slice holds its logs in Hudi's log order (version 10
    after version 2), and file groups of logs alone come in the order of their first log."""
    path = fresh_fixture("quickstart_trips_table/mor/avro/v6_trips_8i1u")
    table = HudiTable(path, metadata_enable=False)
    (merged,) = [s for s in table.file_system_view.latest_slices() if s.log_files]
    (log,) = merged.log_files
    folder = os.path.join(path, merged.partition_path)
    data = open(os.path.join(folder, log.file_name), "rb").read()
    first, second = (w.requested_time for w in table.timeline.completed_writes[:2])
    names = [
        f".{merged.file_id}_{first}.log.10_0-26-85",
        f".{merged.file_id}_{first}.log.2_0-26-85",
        f".{merged.file_id}_{first}.log.2_0-9-85",  # same version: the write token orders them
        f".aaaa-0_{second}.log.1_0-1-1",  # a file group of logs alone, of the later instant
        f".zzzz-0_{first}.log.1_0-1-1",  # ... and one of the earlier instant: it comes first
    ]

    def slices_of_folder() -> list[tuple[str, list[str]]]:
        slices = HudiTable(path, metadata_enable=False).file_system_view.latest_slices()
        return [(s.file_id, [l.file_name for l in s.log_files]) for s in slices if s.partition_path == merged.partition_path]

    for name in names[:3]:  # more logs of the slice
        open(os.path.join(folder, name), "wb").write(data)
    in_order = [log.file_name, names[2], names[1], names[0]]
    assert slices_of_folder() == [(merged.file_id, in_order)]
    for name in names[3:]:  # file groups of logs alone
        open(os.path.join(folder, name), "wb").write(data)
    assert slices_of_folder() == [(merged.file_id, in_order), ("zzzz-0", [names[4]]), ("aaaa-0", [names[3]])]


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
