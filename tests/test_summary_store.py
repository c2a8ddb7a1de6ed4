"""Commit summaries kept across processes: a plan in a new process takes what an earlier one
decoded of the commit files (known by their ``stat``), never a summary of other bytes, and a
damaged entry is ignored."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import hudi_duck
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.storage import kept as kept_store
from hudi_duck.core.table import checked_plans
from hudi_duck.core.timeline import active, summary_store
from hudi_duck.duck import cache, planner

COW = "sample_table/cow/v6_complexkeygen_hivestyle"  # several commits on the active timeline


@pytest.fixture()
def store_folder(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_DIR, str(folder))
    kept_store.use_store(cache.KeptFiles())
    yield folder
    kept_store.wait_for_saves()
    active.clear_summary_cache()
    checked_plans.forget()
    planner.clear_plan_cache()


def _new_process() -> None:
    """What a new process starts with: no plans and no summaries of its own."""
    kept_store.wait_for_saves()
    active.clear_summary_cache()
    checked_plans.forget()
    planner.clear_plan_cache()


def _without_checked_plans(store_folder: Path) -> None:
    """A process that finds no kept check of its plan (``core/table/checked_plans.py``): it checks
    every commit, so it asks for every commit's summary."""
    for entry in store_folder.glob("*.checked-plans"):
        entry.unlink()


def _count(con, path: str) -> int:
    return con.execute(f"SELECT count(*) FROM hudi_snapshot('{path}')").fetchone()[0]


def _commit_files(path: str) -> list[Path]:
    return sorted(p for p in (Path(path) / ".hoodie").iterdir() if p.suffix in (".commit", ".deltacommit", ".replacecommit"))


def test_a_new_process_reads_no_commit_file_an_earlier_one_decoded(fresh_fixture, store_folder, monkeypatch):
    path = fresh_fixture(COW)
    con = hudi_duck.connect()
    _new_process()
    expected = _count(con, path)
    decoded = {}
    for commit in _commit_files(path):
        decoded[commit.name] = active._summary_of(str(commit), commit.read_bytes())
    _new_process()
    assert list(store_folder.glob("*.commit-summaries")), "the first plan kept the summaries"

    def no_read(self, instant):
        raise AssertionError(f"{instant} read again")

    monkeypatch.setattr(active.Timeline, "read_details", no_read)
    assert _count(con, path) == expected
    timeline = HudiTable(path, {}).timeline
    for instant in timeline.completed_writes:
        kept = timeline.commit_summary(instant)
        fresh = decoded[timeline.file_of(instant).rpartition("/")[2]]
        assert kept == fresh and kept.data_files == fresh.data_files


def test_a_rewritten_commit_file_is_decoded_again(fresh_fixture, store_folder, monkeypatch):
    path = fresh_fixture(COW)
    con = hudi_duck.connect()
    _new_process()
    expected = _count(con, path)
    _new_process()
    commit = _commit_files(path)[-1]
    st = os.stat(commit)
    commit.write_bytes(commit.read_bytes())  # same bytes and size, a new write
    os.utime(commit, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with its modified time put back
    read = []
    real = active.Timeline.read_details

    def reading(self, instant):
        read.append(instant.requested_time)
        return real(self, instant)

    monkeypatch.setattr(active.Timeline, "read_details", reading)
    assert _count(con, path) == expected
    assert read == [commit.name.split(".")[0]]


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign"])
def test_a_damaged_entry_is_ignored_and_written_again(fresh_fixture, store_folder, monkeypatch, damage):
    path = fresh_fixture(COW)
    con = hudi_duck.connect()
    _new_process()
    expected = _count(con, path)
    _new_process()
    (entry,) = store_folder.glob("*.commit-summaries")
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    else:  # a sound blob whose payload is not an entry of summaries
        uri = next(iter({str(Path(path) / ".hoodie")}))
        cache.KeptFiles().save(summary_store.KIND, uri, b"\x93\x02\x90\x91\x01")
    read = []
    real = active.Timeline.read_details

    def reading(self, instant):
        read.append(instant)
        return real(self, instant)

    monkeypatch.setattr(active.Timeline, "read_details", reading)
    _without_checked_plans(store_folder)
    assert _count(con, path) == expected
    assert len(read) == len(_commit_files(path))  # every commit decoded from its file
    _new_process()
    _without_checked_plans(store_folder)
    read.clear()
    assert _count(con, path) == expected
    assert read == []  # the entry was written again


def test_an_entry_keeps_only_commits_on_the_timeline(fresh_fixture, store_folder):
    path = fresh_fixture(COW)
    con = hudi_duck.connect()
    _new_process()
    _count(con, path)
    _new_process()
    (entry,) = store_folder.glob("*.commit-summaries")
    uri = str(Path(path) / ".hoodie")
    kept = summary_store.decode(cache.KeptFiles().load(summary_store.KIND, uri))
    assert sorted(name for name, _ in kept) == sorted(p.name for p in _commit_files(path))
    gone = _commit_files(path)[0]
    gone.unlink()  # as archival moves a commit off the active timeline
    newest = _commit_files(path)[-1]
    newest.write_bytes(newest.read_bytes())  # a commit to decode again makes the entry be written
    timeline = HudiTable(path, {}).timeline  # what a plan's write-stat check does with the timeline
    for instant in timeline.completed_writes:
        timeline.commit_summary(instant)
    timeline.keep_summaries()
    kept_store.wait_for_saves()
    kept = summary_store.decode(cache.KeptFiles().load(summary_store.KIND, uri))
    assert gone.name not in {name for name, _ in kept}
    assert newest.name in {name for name, _ in kept}


def test_without_a_store_nothing_is_kept(fresh_fixture, store_folder):
    path = fresh_fixture(COW)
    kept_store.use_store(None)
    try:
        _new_process()
        _count(hudi_duck.connect(), path)
        kept_store.wait_for_saves()
        assert not list(store_folder.glob("*.commit-summaries"))
    finally:
        kept_store.use_store(cache.KeptFiles())


def test_a_store_that_fails_never_fails_a_plan(fresh_fixture, store_folder):
    class Broken:
        def load(self, kind, uri):
            raise RuntimeError("disk on fire")

        def save(self, kind, uri, data):
            raise RuntimeError("disk on fire")

    path = fresh_fixture(COW)
    con = hudi_duck.connect()
    _new_process()
    expected = _count(con, path)
    kept_store.use_store(Broken())
    try:
        _new_process()
        assert _count(con, path) == expected
        kept_store.wait_for_saves()
    finally:
        kept_store.use_store(cache.KeptFiles())


def test_a_long_lived_process_does_not_decode_its_own_entry_again(fresh_fixture, store_folder, monkeypatch):
    """After a new commit file, a process that kept the entry itself takes the other summaries from
    memory, decodes only the new file, and keeps the entry up to date for the next process."""
    path = fresh_fixture(COW)
    con = hudi_duck.connect()
    _new_process()
    expected = _count(con, path)
    kept_store.wait_for_saves()
    decoded = []
    real = summary_store.decode
    monkeypatch.setattr(summary_store, "decode", lambda data: decoded.append(1) or real(data))
    commit = _commit_files(path)[-1]
    commit.write_bytes(commit.read_bytes())  # a commit file the entry does not know
    planner.clear_plan_cache()
    assert _count(con, path) == expected
    kept_store.wait_for_saves()
    assert decoded == []
    st = os.stat(commit)
    kept = real(cache.KeptFiles().load(summary_store.KIND, str(Path(path) / ".hoodie")))
    assert (commit.name, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)) in kept


def test_a_new_process_skips_the_check_of_a_plan_checked_clean_before(fresh_fixture, store_folder, monkeypatch):
    """The same commit files and the same listing were checked clean by an earlier process
    (``core/table/checked_plans.py``): no commit's summary is decoded, only the schemas the
    plan needs are taken from the kept entry. Without the kept check, every commit is decoded."""
    path = fresh_fixture(COW)
    con = hudi_duck.connect()
    _new_process()
    expected = _count(con, path)
    _new_process()
    assert list(store_folder.glob("*.checked-plans")), "the first plan kept its check"
    decoded = []
    real = summary_store.KeptSummary.summary
    monkeypatch.setattr(summary_store.KeptSummary, "summary", lambda self: decoded.append(1) or real(self))

    def no_read(self, instant):
        raise AssertionError(f"{instant} read again")

    monkeypatch.setattr(active.Timeline, "read_details", no_read)
    assert _count(con, path) == expected
    assert decoded == []
    _new_process()
    _without_checked_plans(store_folder)
    assert _count(con, path) == expected
    assert len(decoded) == len(_commit_files(path))


def test_a_file_damaged_after_a_clean_check_still_fails_a_new_process(fresh_fixture, store_folder):
    """A kept check covers the listing it was made with: a base file cut short since (its size in
    the listing differs) is checked again in full and named."""
    from hudi_duck.core.errors import MissingFileError

    path = fresh_fixture("sample_table/cow/v6_simplekeygen_nonhivestyle")
    con = hudi_duck.connect()
    _new_process()
    _count(con, path)
    _new_process()
    assert list(store_folder.glob("*.checked-plans"))
    (latest,) = sorted(Path(path).glob("10/*.parquet"), key=lambda p: p.name.rsplit("_", 1)[1])[-1:]
    data = latest.read_bytes()
    latest.write_bytes(data[: len(data) // 2])
    with pytest.raises(MissingFileError, match="damaged"):
        hudi_duck.read_snapshot(path).read_all()
    with pytest.raises(Exception, match=str(latest)):
        _count(con, path)
