"""The merge cache on disk heals and stays bounded; the plan registry in memory is bounded
and a plan is never lost while its query can still scan."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import hudi_duck
from hudi_duck.api import arrow_table
from hudi_duck.core.table.table import HudiTable
from hudi_duck.duck import cache, lazy, planner
from oracle import diff_rows, hudi_rs_read

TRIPS_V8 = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
#: a v8 trips instant at which three file slices have logs to merge
THREE_MERGES_AS_OF = "20251220210128625"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def cache_folder(tmp_path, monkeypatch):
    """A private cache folder and an empty registry; bounds back to their defaults afterwards."""
    lazy.REGISTRY.clear()
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_DIR, str(folder))
    yield folder
    lazy.REGISTRY.clear()
    hudi_duck.set_cache_limits(max_bytes=None, max_plans=None, max_memory=None)


def rows(con, sql: str):
    return arrow_table(con.sql(sql))


def snapshot_sql(path: str, as_of: str | None = None) -> str:
    args = f"'{path}'" + (f", as_of := '{as_of}'" if as_of else "")
    return f"SELECT * FROM hudi_snapshot({args})"


def entries(folder: Path, kind: str = "*") -> list[Path]:
    return sorted(folder.glob(f"*.{kind}.parquet"))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def damage(target: Path, how: str, other: Path) -> None:
    data = target.read_bytes()
    if how == "truncate":
        target.write_bytes(data[: len(data) // 2])
    elif how == "zero":
        target.write_bytes(b"\0" * len(data))
    elif how == "flip":  # in the data pages
        flipped = bytearray(data)
        for at in range(len(data) // 3, len(data) // 3 + 4):
            flipped[at] ^= 0xFF
        target.write_bytes(bytes(flipped))
    elif how == "flip_footer":  # in the footer's statistics and metadata
        flipped = bytearray(data)
        flipped[len(data) - 60] ^= 0x01
        target.write_bytes(bytes(flipped))
    elif how == "swap":  # another sound entry copied over this one
        shutil.copy2(other, target)
    else:
        raise AssertionError(how)
    assert target.read_bytes() != data


DAMAGE = ["truncate", "zero", "flip", "flip_footer", "swap"]


@pytest.mark.parametrize("which", ["logrows", "dropped"])
@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_merge_entry_is_rebuilt_never_read(con, fixture_tables, cache_folder, caplog, which, how):
    caplog.set_level(logging.INFO, logger="hudi_duck")
    path = fixture_tables[TRIPS_V8]
    query = snapshot_sql(path, THREE_MERGES_AS_OF)
    expected = hudi_rs_read(path, as_of=THREE_MERGES_AS_OF)
    assert not diff_rows(rows(con, query), expected)
    files = entries(cache_folder, which)
    assert len(files) == 3
    target, other = files[0], files[1]
    damage(target, how, other)
    damaged = target.read_bytes()
    lazy.REGISTRY.clear()  # as in another process, or once the plan left memory: the cache is all there is
    assert not diff_rows(rows(con, query), expected)
    assert cache.check(target, cache.entry_key(target)) and target.read_bytes() != damaged
    assert any("damaged" in r.getMessage() and str(target) in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("how", DAMAGE)
def test_merged_rows_damaged_under_a_running_process_are_rebuilt(con, fixture_tables, cache_folder, how):
    """The merged log rows are checked each time DuckDB opens them, also by the process that wrote them."""
    path = fixture_tables[TRIPS_V8]
    query = snapshot_sql(path, THREE_MERGES_AS_OF)
    expected = hudi_rs_read(path, as_of=THREE_MERGES_AS_OF)
    assert not diff_rows(rows(con, query), expected)
    files = entries(cache_folder, "logrows")
    for target, other in zip(files, files[1:] + files[:1]):
        damage(target, how, other)
    assert not diff_rows(rows(con, query), expected)
    assert all(cache.check(f, cache.entry_key(f)) for f in files)


READ_COUNT_SCRIPT = textwrap.dedent(
    """
    import sys
    import hudi_duck
    con = hudi_duck.connect()
    print(con.sql(f"SELECT count(*), count(DISTINCT _hoodie_record_key) FROM hudi_snapshot('{sys.argv[1]}')").fetchall())
    """
)


def test_one_damaged_entry_fails_no_later_query_in_any_process(fixture_tables, cache_folder, tmp_path):
    """Once 'No magic bytes found' for every query on the table, in every process, until the file was deleted."""
    path = fixture_tables[TRIPS_V8]
    env = dict(os.environ, **{cache.ENV_DIR: str(cache_folder)})
    expected = hudi_rs_read(path)
    count = f"[({expected.num_rows}, {expected.num_rows})]"
    first = subprocess.run([sys.executable, "-c", READ_COUNT_SCRIPT, path], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert first.stdout.strip() == count, first.stderr
    (logrows,) = entries(cache_folder, "logrows")
    logrows.write_bytes(b"\0" * logrows.stat().st_size)
    for _ in range(2):
        again = subprocess.run([sys.executable, "-c", READ_COUNT_SCRIPT, path], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        assert again.stdout.strip() == count, again.stderr
    assert cache.check(logrows, cache.entry_key(logrows))


def test_schema_and_inspection_files_heal_too(con, fixture_tables, cache_folder):
    path = fixture_tables[TRIPS_V8]
    expected = hudi_rs_read(path)
    assert not diff_rows(rows(con, snapshot_sql(path)), expected)
    commits = rows(con, f"SELECT * FROM hudi_commits('{path}')")
    (schema_file,) = entries(cache_folder, "schema")
    (view_file,) = entries(cache_folder, "inspect")
    schema_file.write_bytes(b"\0" * schema_file.stat().st_size)
    view_file.write_bytes(view_file.read_bytes()[:-100])
    assert not diff_rows(rows(con, snapshot_sql(path)), expected)
    assert rows(con, f"SELECT * FROM hudi_commits('{path}')").equals(commits)
    assert cache.check(schema_file, cache.entry_key(schema_file)) and cache.check(view_file, cache.entry_key(view_file))


RACE_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import pyarrow.parquet as pq
    import hudi_duck
    from hudi_duck.api import arrow_table
    path, start, out = sys.argv[1], sys.argv[2], sys.argv[3]
    times = sys.argv[4:]
    con = hudi_duck.connect()
    while not os.path.exists(start):
        time.sleep(0.002)
    for i, as_of in enumerate(times):
        arg = f", as_of := '{as_of}'" if as_of != "latest" else ""
        pq.write_table(arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{path}'{arg})")), f"{out}-{i}.parquet")
    """
)


def test_processes_racing_to_build_the_same_entries(fixture_tables, cache_folder, tmp_path):
    path = fixture_tables[TRIPS_V8]
    times = [i.requested_time for i in HudiTable(path).timeline.completed_writes][1:] + ["latest"]
    env = dict(os.environ, **{cache.ENV_DIR: str(cache_folder)})
    start = tmp_path / "start"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE_SCRIPT, path, str(start), str(tmp_path / f"out{n}"), *times],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n in range(3)
    ]
    time.sleep(2)  # all of them started and waiting
    start.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    for i, as_of in enumerate(times):
        expected = hudi_rs_read(path) if as_of == "latest" else hudi_rs_read(path, as_of=as_of)
        for n in range(3):
            assert not diff_rows(pq.read_table(tmp_path / f"out{n}-{i}.parquet"), expected), (n, as_of)
    assert not [p for p in cache_folder.iterdir() if p.name.endswith(".tmp")]
    merged = entries(cache_folder)
    assert len(merged) > 3 and all(cache.check(p, cache.entry_key(p)) for p in merged)


def age(folder: Path, seconds: float) -> None:
    """Let time pass: every entry was last used ``seconds`` ago."""
    then = time.time() - seconds
    for f in folder.iterdir():
        if f.is_file():
            os.utime(f, (then, f.stat().st_mtime))


def bytes_not_in_use(folder: Path) -> int:
    """Entries not used within the grace period (which eviction never touches)."""
    cutoff = time.time() - cache.EVICTION_GRACE_SECONDS
    return sum(p.stat().st_size for p in entries(folder) if p.stat().st_atime < cutoff)


def test_the_cache_folder_stays_under_its_bound_least_recently_used_first(con, fixture_tables, cache_folder):
    path = fixture_tables[TRIPS_V8]
    times = [i.requested_time for i in HudiTable(path).timeline.completed_writes]
    for as_of in times:
        rows(con, snapshot_sql(path, as_of))
    files = entries(cache_folder)
    total = folder_bytes(cache_folder)
    assert len(files) > 6
    # last use: files[1] longest ago ... files[-1] most recently, and files[0] just now
    now = time.time()
    for n, f in enumerate(reversed(files)):
        os.utime(f, (now - 1000 - n, now - 1000 - n))
    os.utime(files[0], (now, now - 2000))
    bound = total // 3
    hudi_duck.set_cache_limits(max_bytes=bound)
    assert folder_bytes(cache_folder) <= bound
    gone = [f for f in files if not f.exists()]
    assert gone and gone == files[1 : 1 + len(gone)]  # the least recently used went first
    assert files[0].exists() and files[-1].exists()
    # with the bound in force, reads stay right (evicted merges are built again) and what is not in use fits
    lazy.REGISTRY.clear()
    for as_of in times:
        age(cache_folder, 2 * cache.EVICTION_GRACE_SECONDS)
        assert not diff_rows(rows(con, snapshot_sql(path, as_of)), hudi_rs_read(path, as_of=as_of))
        assert bytes_not_in_use(cache_folder) <= bound


def test_bounds_come_from_the_environment_or_the_setter(monkeypatch, caplog):
    monkeypatch.setattr(cache, "_max_bytes_setting", None)
    monkeypatch.delenv(cache.ENV_MAX_BYTES, raising=False)
    assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES == 2 * 1024**3
    monkeypatch.setenv(cache.ENV_MAX_BYTES, "1MiB")
    assert cache.max_bytes() == 1024**2
    monkeypatch.setenv(cache.ENV_MAX_BYTES, "5 GB")
    assert cache.max_bytes() == 5 * 1000**3
    cache.set_max_bytes("300k")
    assert cache.max_bytes() == 300_000
    cache.set_max_bytes(None)
    monkeypatch.setenv(cache.ENV_MAX_BYTES, "lots")
    assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES
    assert any(cache.ENV_MAX_BYTES in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="not a size"):
        hudi_duck.set_cache_limits(max_bytes="a lot")


def test_stale_temporary_files_go_and_a_busy_eviction_is_not_repeated(cache_folder):
    cache_folder.mkdir(parents=True, exist_ok=True)
    stale = cache_folder / ".k.logrows.parquet.0a1b.tmp"
    fresh = cache_folder / ".k.logrows.parquet.2c3d.tmp"
    for f in (stale, fresh):
        f.write_bytes(b"half written")
    hours_ago = time.time() - 2 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    import fcntl

    held = os.open(cache_folder / ".evict.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process is evicting
        assert cache.evict(cache_folder, 0) == 0 and stale.exists()
    finally:
        os.close(held)
    cache.evict(cache_folder, 0)
    assert not stale.exists() and fresh.exists()


def test_sealed_blobs_only_open_with_their_key_and_secret(tmp_path):
    blob = tmp_path / "p.plan"
    cache.write_blob(blob, "token", b"payload", b"s" * 32)
    assert cache.read_blob(blob, "token", b"s" * 32) == b"payload"
    assert cache.read_blob(blob, "token", b"t" * 32) is None  # another process's secret
    assert cache.read_blob(blob, "other", b"s" * 32) is None
    blob.write_bytes(blob.read_bytes()[:-1] + b"P")
    assert cache.read_blob(blob, "token", b"s" * 32) is None


# -- the plan registry --------------------------------------------------------------------------------------------


def test_more_distinct_plans_than_the_bound_all_read_right(con, fixture_tables, cache_folder):
    hudi_duck.set_cache_limits(max_plans=2)
    path = fixture_tables[TRIPS_V8]
    times = [i.requested_time for i in HudiTable(path).timeline.completed_writes]
    for as_of in times + [None]:
        expected = hudi_rs_read(path) if as_of is None else hudi_rs_read(path, as_of=as_of)
        assert not diff_rows(rows(con, snapshot_sql(path, as_of)), expected)
        assert len(lazy.REGISTRY.plans) <= 2
    assert not diff_rows(rows(con, f"SELECT * FROM hudi_incremental('{path}')"), hudi_rs_read(path, incremental=True))
    assert len(lazy.REGISTRY.plans) <= 2 and lazy.REGISTRY.evicted_plans >= len(times) - 1


def test_a_plan_evicted_between_planning_and_scanning_still_reads_right(con, fixture_tables, cache_folder):
    path = fixture_tables[TRIPS_V8]
    hudi_duck.set_cache_limits(max_plans=1, max_memory=1)  # every slice job is pushed out as soon as it is used
    planned = planner.plan_sql("snapshot", path, THREE_MERGES_AS_OF, None, {})  # the SQL DuckDB gets at bind time
    other = planner.plan_sql("snapshot", path, None, None, {})  # pushes the first plan out
    assert len(lazy.REGISTRY.plans) <= 1 and lazy.REGISTRY.evicted_plans >= 1
    recovered = lazy.REGISTRY.recovered_plans
    assert not diff_rows(rows(con, planned), hudi_rs_read(path, as_of=THREE_MERGES_AS_OF))
    assert lazy.REGISTRY.recovered_plans > recovered
    assert not diff_rows(rows(con, other), hudi_rs_read(path))


def test_evicted_plans_keep_no_storage_options_on_disk(fixture_tables, cache_folder):
    path = fixture_tables[TRIPS_V8]
    options = {"hudi_duck_test_secret": "s3cr3t-token-value"}
    hudi_duck.set_cache_limits(max_plans=1)
    con = hudi_duck.connect(storage_options=options)
    planned = planner.plan_sql("snapshot", path, THREE_MERGES_AS_OF, None, options)
    planner.plan_sql("snapshot", path, None, None, {})
    (kept,) = cache_folder.glob("*.plan")
    assert b"s3cr3t-token-value" not in kept.read_bytes()
    assert not diff_rows(rows(con, planned), hudi_rs_read(path, as_of=THREE_MERGES_AS_OF))
    (state,) = lazy.REGISTRY.plans.values()
    assert dict(state.plan.location.storage_options) == options


def test_a_plan_whose_copy_was_deleted_fails_with_a_clear_message(con, fixture_tables, cache_folder):
    path = fixture_tables[TRIPS_V8]
    planned = planner.plan_sql("snapshot", path, THREE_MERGES_AS_OF, None, {})
    lazy.REGISTRY.clear()
    for kept in cache_folder.glob("*.plan"):
        kept.unlink()
    with pytest.raises(Exception) as info:
        rows(con, planned)
    message = str(info.value)
    assert "is no longer known" in message and "run the query again" in message and "Traceback" not in message


# -- the base-row filter of slices with logs -------------------------------------------------------


def test_base_rows_are_filtered_by_the_hash_of_their_file_name(con, fixture_tables, cache_folder):
    """A slice's base rows are kept or dropped by ``hudi_duck_keep_at``, which gets DuckDB's hash
    of a row's file name (an integer) instead of the name; the rows are hudi-rs's."""
    path = fixture_tables[TRIPS_V8]
    sql = planner.plan_sql("snapshot", path, THREE_MERGES_AS_OF, None, {})
    assert f'{lazy.KEEP_AT_FUNCTION}(' in sql and 'hash("_hd_filename")' in sql
    assert not diff_rows(rows(con, snapshot_sql(path, THREE_MERGES_AS_OF)), hudi_rs_read(path, as_of=THREE_MERGES_AS_OF))


def test_base_files_whose_names_share_a_hash_are_filtered_by_name(con, fixture_tables, cache_folder, monkeypatch):
    """Should two base files of a plan share a hash, their rows are told apart by file name."""
    path = fixture_tables[TRIPS_V8]
    monkeypatch.setattr(lazy, "duckdb_hashes", lambda names: [7] * len(names))
    planner.clear_plan_cache()
    sql = planner.plan_sql("snapshot", path, THREE_MERGES_AS_OF, None, {})
    assert f"{lazy.KEEP_FUNCTION}(" in sql and lazy.KEEP_AT_FUNCTION not in sql
    assert not diff_rows(rows(con, snapshot_sql(path, THREE_MERGES_AS_OF)), hudi_rs_read(path, as_of=THREE_MERGES_AS_OF))
    planner.clear_plan_cache()


def test_a_vector_of_several_files_is_filtered_file_by_file(fixture_tables, cache_folder):
    """A vector whose rows come from several base files (interleaved) gets the same mask by hash
    as by file name, and the hashes are DuckDB's own of the names."""
    import duckdb
    import numpy as np
    import pyarrow as pa

    path = fixture_tables[TRIPS_V8]
    planner.plan_sql("snapshot", path, THREE_MERGES_AS_OF, None, {})
    plan = next(p.plan for p in planner._PLANS.values() if p.plan.slices_with_logs)
    token, state = lazy.REGISTRY.register_read(plan)
    names = [uri for uri, key in state.base_files.items() if state.slices[key].log_files]
    assert len(names) >= 2
    assert lazy.duckdb_hashes(names) == [duckdb.sql(f"SELECT hash('{n}')").fetchall()[0][0] for n in names]
    files = [names[i % 2] for i in range(40)]
    row_numbers = np.array([i // 2 for i in range(40)], dtype=np.int64)
    by_name = lazy.REGISTRY.keep(token, pa.array(files), pa.array(row_numbers)).to_numpy(zero_copy_only=False)
    hashes = np.array(lazy.duckdb_hashes(files), dtype=np.uint64)
    by_hash = lazy.REGISTRY.keep_by_id(token, hashes, row_numbers)
    assert not by_name.all(), "the slices drop some of these rows"
    assert (by_hash == by_name).all()
    one = lazy.REGISTRY.keep_by_id(token, hashes[::2], row_numbers[::2])  # a vector of one file
    assert (one == by_name[::2]).all()
    # a run of consecutive rows of one file (an unfiltered vector) around and past its dropped rows
    key = state.base_files[names[0]]
    dropped = lazy.REGISTRY.ensure(state.job_of.get(key, key), token).dropped_of(key)
    assert dropped is not None and len(dropped)
    for start in {0, max(0, int(dropped[0]) - 2), int(dropped[-1]), int(dropped[-1]) + 1}:
        run = np.arange(start, start + 7, dtype=np.int64)
        mask = lazy.REGISTRY.keep_by_id(token, np.full(7, hashes[0], dtype=np.uint64), run)
        assert (mask == ~np.isin(run, dropped)).all(), (start, list(dropped))


def test_a_blob_is_read_once_per_version_of_its_file(tmp_path, monkeypatch):
    """A settled blob is read and checked once; a new version of it (written again) is read again,
    and one written moments ago is not trusted by its times alone."""
    import builtins

    blob = tmp_path / "k.entry"
    cache.write_blob(blob, "key", b"first")
    settled = time.time() - 10
    os.utime(blob, (settled, settled))
    assert cache.read_blob(blob, "key") == b"first"
    real_open = builtins.open
    opened = []
    monkeypatch.setattr(builtins, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    assert cache.read_blob(blob, "key") == b"first" and opened == []  # (settled: not read again)
    cache.write_blob(blob, "key", b"second")
    assert cache.read_blob(blob, "key") == b"second" and len(opened) == 1
    blob.write_bytes(blob.read_bytes()[:-1] + b"D")  # damaged in place at once: same size
    assert cache.read_blob(blob, "key") is None
