"""A data file a completed commit wrote but storage lacks (or holds cut short) fails the read,
naming the file and the commit; the DuckDB functions and the Python API alike."""

from __future__ import annotations

import glob
import logging
import os
from pathlib import Path

import pytest

import hudi_duck
from hudi_duck.api import arrow_table
from hudi_duck.core.errors import CorruptFileError, MissingFileError

COW_V6 = "sample_table/cow/v6_simplekeygen_nonhivestyle"
COW_LATEST_COMMIT = "20240418172804498"
MOR_V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
MOR_UPDATE_COMMIT = "20250331030645735"
MOR_INSERT_COMMIT = "20250331030642808"


def _one(pattern: str) -> Path:
    (found,) = glob.glob(pattern)
    return Path(found)


def _sql(con, path: str, function: str = "hudi_snapshot", extra: str = "") -> int:
    return arrow_table(con.sql(f"SELECT * FROM {function}('{path}'{extra})")).num_rows


def _python(path: str, kind: str = "snapshot") -> int:
    reader = {
        "snapshot": hudi_duck.read_snapshot,
        "read_optimized": hudi_duck.read_read_optimized,
        "incremental": hudi_duck.read_incremental,
    }[kind](path)
    return reader.read_all().num_rows


def _assert_fails(con, path: str, file: Path, commit: str, words: str, kinds=("snapshot",)) -> None:
    functions = {"snapshot": "hudi_snapshot", "read_optimized": "hudi_read_optimized", "incremental": "hudi_incremental"}
    for kind in kinds:
        with pytest.raises(MissingFileError) as info:
            _python(path, kind)
        text = str(info.value)
        assert str(file) in text and commit in text and words in text, text
        with pytest.raises(Exception) as info:
            _sql(con, path, functions[kind])
        text = str(info.value)
        assert str(file) in text and commit in text and words in text, text


def test_intact_tables_read(con, fresh_fixture):
    for fid, rows in ((COW_V6, None), (MOR_V6, 8)):
        path = fresh_fixture(fid)
        count = _python(path)
        assert count > 0 and (rows is None or count == rows)
        assert _sql(con, path) == count


def test_cow_missing_latest_base_file_is_an_error_not_the_previous_version(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    latest = _one(f"{path}/10/*_{COW_LATEST_COMMIT}.parquet")
    assert len(glob.glob(f"{path}/10/*.parquet")) == 2  # the previous version is still there
    latest.unlink()
    _assert_fails(con, path, latest, COW_LATEST_COMMIT, "is missing", kinds=("snapshot", "read_optimized", "incremental"))


def test_cow_missing_only_base_file_of_a_file_group(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    only = _one(f"{path}/30/*.parquet")
    only.unlink()
    _assert_fails(con, path, only, COW_LATEST_COMMIT, "is missing")


def test_cow_truncated_base_file(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    latest = _one(f"{path}/10/*_{COW_LATEST_COMMIT}.parquet")
    data = latest.read_bytes()
    latest.write_bytes(data[: len(data) // 2])
    _assert_fails(con, path, latest, COW_LATEST_COMMIT, "damaged")


def test_of_several_damaged_base_files_the_first_by_partition_is_named(con, fresh_fixture):
    """A truncated file and a missing one in two file groups: the read fails naming the file of the
    first partition, whichever way round the damage is (the same error on every plan)."""
    for cut, gone in (("10", "30"), ("30", "10")):
        path = fresh_fixture(COW_V6)
        truncated = _one(f"{path}/{cut}/*_{COW_LATEST_COMMIT}.parquet")
        truncated.write_bytes(truncated.read_bytes()[:100])
        missing = _one(f"{path}/{gone}/*_{COW_LATEST_COMMIT}.parquet")
        missing.unlink()
        first, words = (truncated, "damaged") if cut == "10" else (missing, "is missing")
        with pytest.raises(MissingFileError) as info:
            _python(path)
        assert str(first) in str(info.value) and words in str(info.value)


def test_time_travel_before_a_missing_file_still_reads(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    _one(f"{path}/10/*_{COW_LATEST_COMMIT}.parquet").unlink()
    first = "20240418172802262"
    assert hudi_duck.read_snapshot(path, as_of=first).read_all().num_rows > 0
    assert _sql(con, path, extra=f", as_of := '{first}'") > 0


def test_mor_missing_base_file_of_a_slice_with_logs(con, fresh_fixture):
    path = fresh_fixture(MOR_V6)
    base = _one(f"{path}/city=san_francisco/*.parquet")
    base.unlink()
    _assert_fails(con, path, base, MOR_INSERT_COMMIT, "is missing", kinds=("snapshot", "read_optimized", "incremental"))


def test_mor_deleted_log_file(con, fresh_fixture):
    path = fresh_fixture(MOR_V6)
    log = _one(f"{path}/city=san_francisco/.*.log.*")
    log.unlink()
    _assert_fails(con, path, log, MOR_UPDATE_COMMIT, "is missing", kinds=("snapshot", "incremental"))
    assert _python(path, "read_optimized") == 8  # read-optimized queries read no log file


@pytest.mark.parametrize("keep", [0, 3])
def test_mor_log_file_cut_at_a_block_boundary(con, fresh_fixture, keep):
    """Whole blocks gone leave no corrupt block behind: the size the commit recorded tells."""
    path = fresh_fixture(MOR_V6)
    log = _one(f"{path}/city=san_francisco/.*.log.*")
    data = log.read_bytes()
    log.write_bytes(data[:keep])
    _assert_fails(con, path, log, MOR_UPDATE_COMMIT, "truncated")


def test_mor_log_file_cut_mid_block_warns(con, fresh_fixture, caplog):
    """A block cut short is a corrupt block: skipped with a warning as Hudi does (strict: an error)."""
    path = fresh_fixture(MOR_V6)
    log = _one(f"{path}/city=san_francisco/.*.log.*")
    log.write_bytes(log.read_bytes()[:600])
    with caplog.at_level(logging.WARNING, logger="hudi_duck"):
        assert _python(path) == 8
    assert any(str(log) in r.getMessage() for r in caplog.records)
    with pytest.raises(CorruptFileError) as info:
        hudi_duck.read_snapshot(path, strict=True).read_all()
    assert str(log) in str(info.value)


def test_corrupt_block_inside_a_whole_log_file_still_warns(con, fresh_fixture, caplog):
    """Hudi skips a corrupt block of a log file that has all its bytes: a warning (or strict: an error)."""
    path = fresh_fixture(MOR_V6)
    log = _one(f"{path}/city=san_francisco/.*.log.*")
    data = bytearray(log.read_bytes())
    data[20:28] = b"\xff" * 8  # the block's header, same length
    log.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="hudi_duck"):
        assert _python(path) == 8
    assert any(str(log) in r.getMessage() and "corrupt log block" in r.getMessage() for r in caplog.records)
    with pytest.raises(CorruptFileError) as info:
        hudi_duck.read_snapshot(path, strict=True).read_all()
    assert str(log) in str(info.value) and not isinstance(info.value, MissingFileError)


def test_missing_partition_folder(con, fresh_fixture):
    path = fresh_fixture(MOR_V6)
    folder = Path(path) / "city=chennai"
    (base,) = [folder / n for n in os.listdir(folder) if n.endswith(".parquet")]
    for name in os.listdir(folder):
        (folder / name).unlink()
    folder.rmdir()
    _assert_fails(con, path, base, MOR_INSERT_COMMIT, "is missing")
