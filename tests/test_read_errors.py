"""Bad input gives clear errors (or Hudi's documented skip behaviour), never wrong rows."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hudi_duck.api import arrow_table
from hudi_duck.core.config.table_config import parse_properties, format_properties
from oracle import diff_rows, hudi_rs_read

TRIPS_V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
COW_V6 = "sample_table/cow/v6_nonpartitioned"


def snapshot(con, path: str, function: str = "hudi_snapshot"):
    return arrow_table(con.sql(f"SELECT * FROM {function}('{path}')"))


def error_of(con, path: str, function: str = "hudi_snapshot") -> str:
    with pytest.raises(Exception) as info:
        snapshot(con, path, function)
    return str(info.value)


def edit_properties(path: str, **changes: str | None) -> None:
    props_file = Path(path) / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_file.read_text())
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value
    props_file.write_text(format_properties(props))


def test_missing_path_names_the_path(con, tmp_path):
    missing = tmp_path / "nope"
    message = error_of(con, str(missing))
    assert "TableNotFoundError" in message and str(missing) in message


def test_folder_without_hoodie_is_not_a_table(con, tmp_path):
    (tmp_path / "data").mkdir()
    message = error_of(con, str(tmp_path / "data"))
    assert "not a Hudi table" in message and ".hoodie/hoodie.properties" in message


def test_checksum_mismatch_without_backup_is_reported(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    props_file = Path(path) / ".hoodie" / "hoodie.properties"
    text = props_file.read_text().replace("hoodie.table.name=v6_nonpartitioned", "hoodie.table.name=renamed")
    props_file.write_text(text)
    message = error_of(con, path)
    assert "InvalidTableConfigError" in message and "hoodie.table.checksum" in message


def test_checksum_mismatch_falls_back_to_backup(con, fresh_fixture, fixture_tables):
    path = fresh_fixture(COW_V6)
    hoodie = Path(path) / ".hoodie"
    shutil.copy(hoodie / "hoodie.properties", hoodie / "hoodie.properties.backup")
    text = (hoodie / "hoodie.properties").read_text()
    (hoodie / "hoodie.properties").write_text(text[: len(text) // 2])  # a torn update
    pristine = hudi_rs_read(fixture_tables[COW_V6])
    ours = snapshot(con, path)
    assert ours.num_rows == 4
    assert not diff_rows(ours.drop_columns(["_hoodie_file_name"]), pristine.drop_columns(["_hoodie_file_name"]))


def test_missing_table_name_is_reported(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    edit_properties(path, **{"hoodie__table__name": None, "hoodie__table__checksum": None})
    message = error_of(con, path)
    assert "missing required key hoodie.table.name" in message


def test_non_numeric_version_is_reported(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    edit_properties(path, **{"hoodie__table__version": "six"})
    assert "hoodie.table.version='six' is not a number" in error_of(con, path)


@pytest.mark.parametrize(
    "changes, feature",
    [
        ({"hoodie__table__version": "5"}, "table version 5 is not supported"),
        ({"hoodie__table__version": "7"}, "table version 7 is not supported"),
        ({"hoodie__table__base__file__format": "LANCE"}, "base file format LANCE is not supported"),
        ({"hoodie__table__base__file__format": "ORC"}, "base file format ORC is not supported"),
        ({"hoodie__bootstrap__base__path": "/somewhere"}, "bootstrap tables"),
    ],
)
@pytest.mark.parametrize("function", ["hudi_snapshot", "hudi_read_optimized", "hudi_incremental"])
def test_unsupported_features_are_named(con, fresh_fixture, changes, feature, function):
    path = fresh_fixture(COW_V6)
    edit_properties(path, **changes)
    message = error_of(con, path, function)
    assert "UnsupportedFeatureError" in message and feature in message


def test_custom_merger_is_refused_only_when_logs_must_merge(con, fresh_fixture):
    path = fresh_fixture(TRIPS_V6)
    edit_properties(path, **{"hoodie__compaction__payload__class": "com.example.MyPayload"})
    message = error_of(con, path)
    assert "UnsupportedFeatureError" in message and "com.example.MyPayload" in message
    # base files alone need no merge
    assert snapshot(con, path, "hudi_read_optimized").num_rows == 8


def _log_files(path: str) -> list[Path]:
    return sorted(p for p in Path(path).rglob(".*.log.*") if ".hoodie" not in p.parts)


def test_truncated_log_block_is_skipped_like_hudi(con, fresh_fixture):
    path = fresh_fixture(TRIPS_V6)
    (log,) = _log_files(path)
    data = log.read_bytes()
    log.write_bytes(data[: len(data) - 40])  # a crash mid-block
    ours = snapshot(con, path)
    # the corrupt (only) block is ignored: the table reads as its base files
    expected = snapshot(con, path, "hudi_read_optimized")
    assert not diff_rows(ours, expected)
    rider_d = [r for r in ours.to_pylist() if r["rider"] == "rider-D"]
    assert rider_d[0]["fare"] == 33.9


def test_garbage_after_a_block_makes_it_corrupt_and_skipped(con, fresh_fixture):
    path = fresh_fixture(TRIPS_V6)
    (log,) = _log_files(path)
    log.write_bytes(log.read_bytes() + b"garbage!")
    assert not diff_rows(snapshot(con, path), snapshot(con, path, "hudi_read_optimized"))


def test_file_that_is_not_a_log_file_is_reported(con, fresh_fixture):
    path = fresh_fixture(TRIPS_V6)
    (log,) = _log_files(path)
    log.write_bytes(b"PAR1 this is not a hudi log")
    message = error_of(con, path)
    assert "CorruptFileError" in message and log.name in message


def test_blocks_of_uncommitted_instants_are_skipped(con, fresh_fixture):
    path = fresh_fixture(TRIPS_V6)
    hoodie = Path(path) / ".hoodie"
    (hoodie / "20250331030645735.deltacommit").unlink()  # the update is now inflight (failed)
    ours = snapshot(con, path)
    assert not diff_rows(ours, hudi_rs_read(path))
    rider_d = [r for r in ours.to_pylist() if r["rider"] == "rider-D"]
    assert rider_d[0]["fare"] == 33.9 and rider_d[0]["_hoodie_commit_time"] == "20250331030642808"


def test_files_of_failed_commits_are_never_read(con, fresh_fixture):
    path = fresh_fixture(COW_V6)
    hoodie = Path(path) / ".hoodie"
    (hoodie / "20240418173551906.commit").unlink()  # second commit failed mid-way
    ours = snapshot(con, path)
    assert not diff_rows(ours, hudi_rs_read(path))
    assert {r["_hoodie_commit_time"] for r in ours.to_pylist()} == {"20240418173550988"}


def test_bad_as_of_is_reported(con, fixture_tables):
    path = fixture_tables[COW_V6]
    with pytest.raises(Exception, match="not an instant time"):
        arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{path}', as_of := 'yesterday')"))


def test_plan_again_when_a_listed_timeline_file_vanishes(tmp_path, monkeypatch):
    """Archival deletes instant files while readers plan: a listing that names a file gone a
    moment later is listed again (as Hudi's readers reload the timeline), not an error."""
    import shutil

    import hudi_duck
    from hudi_duck.core.errors import TimelineChangedError
    from hudi_duck.core.storage import kept
    from hudi_duck.core.table import checked_plans
    from hudi_duck.core.timeline import active
    from hudi_duck.duck.planner import clear_plan_cache

    from fixtures import fixture_zips, fixture_id, unzip_fixture

    # (a process with no summaries kept by an earlier one: it reads the commit files)
    monkeypatch.setattr(kept, "_store", None)
    zip_path = next(z for z in fixture_zips() if fixture_id(z).endswith("cow/v6_nonpartitioned"))
    path = unzip_fixture(zip_path, tmp_path)
    expected = hudi_duck.connect().execute(f"SELECT count(*) FROM hudi_snapshot('{path}')").fetchone()
    real = active.Timeline.read_details
    calls = {"n": 0}

    def vanishing_once(self, instant):
        calls["n"] += 1
        if calls["n"] == 1:  # the first read of a listed file finds it gone
            raise TimelineChangedError(f"{instant} was listed but is gone")
        return real(self, instant)

    monkeypatch.setattr(active.Timeline, "read_details", vanishing_once)
    clear_plan_cache()
    active.clear_summary_cache()  # (a commit file this process knows is not read again)
    checked_plans.forget()  # (nor is one whose plan this process checked)
    assert hudi_duck.connect().execute(f"SELECT count(*) FROM hudi_snapshot('{path}')").fetchone() == expected
    calls["n"] = 0
    active.clear_summary_cache()
    checked_plans.forget()
    assert hudi_duck.open_table(path).snapshot().read_all().num_rows == expected[0]
    monkeypatch.setattr(active.Timeline, "read_details", real)

    # a commit file the process knows (by its stat) that is gone when looked at
    real_stat = os.stat
    commit_files = {str(p) for p in (Path(path) / ".hoodie").glob("*.commit")}
    looked = {"n": 0}

    def stat_vanishing_once(name, *args, **kwargs):
        if str(name) in commit_files:
            looked["n"] += 1
            if looked["n"] == 1:
                raise FileNotFoundError(name)
        return real_stat(name, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat_vanishing_once)
    clear_plan_cache()
    assert hudi_duck.connect().execute(f"SELECT count(*) FROM hudi_snapshot('{path}')").fetchone() == expected
    assert looked["n"] > 1  # looked at again in a plan made again
    monkeypatch.setattr(os, "stat", real_stat)

    def always_gone(self, instant):
        raise TimelineChangedError(f"{instant} was listed but is gone")

    monkeypatch.setattr(active.Timeline, "read_details", always_gone)
    clear_plan_cache()
    active.clear_summary_cache()
    with pytest.raises(Exception, match="was listed but is gone"):
        hudi_duck.connect().execute(f"SELECT count(*) FROM hudi_snapshot('{path}')").fetchone()
    shutil.rmtree(path)


def test_a_vanished_timeline_file_is_a_changed_timeline(tmp_path):
    from hudi_duck.core.errors import TimelineChangedError
    from hudi_duck.core.table.table import HudiTable

    from fixtures import fixture_zips, fixture_id, unzip_fixture

    zip_path = next(z for z in fixture_zips() if fixture_id(z).endswith("cow/v6_nonpartitioned"))
    table = HudiTable(unzip_fixture(zip_path, tmp_path))
    instant = table.timeline.completed_writes[-1]
    Path(table.storage.abs(table.timeline.file_of(instant))).unlink()
    with pytest.raises(TimelineChangedError, match="listed but is gone"):
        table.timeline.read_details(instant)
