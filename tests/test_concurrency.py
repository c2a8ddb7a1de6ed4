"""Two writers on one table, in separate processes (``tests/concurrent_writer.py``).

Single writer (the default): a writer finding another's instant in flight with a live
heartbeat refuses with a clear error and rolls nothing back; an instant whose heartbeat
expired (its writer died) is rolled back. Optimistic concurrency control: writers of
different file groups both commit, writers of the same file group conflict and exactly
one commits, its rows complete. The lock providers and the option checks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import hudi_duck
from hudi_duck.core.concurrency import heartbeat
from hudi_duck.core.concurrency.control import WriteConcurrency
from hudi_duck.core.concurrency.lock import FileSystemLock, InProcessLock, table_lock
from hudi_duck.core.concurrency.settings import (
    FILESYSTEM_LOCK_PROVIDER,
    IN_PROCESS_LOCK_PROVIDER,
    ConcurrencySettings,
    FailedWritesPolicy,
)
from hudi_duck.core.errors import ConcurrentWriteError, LockError, WriteError
from hudi_duck.core.schema.meta_fields import RECORD_KEY
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.instant import Action

sys.path.insert(0, str(Path(__file__).parent))
import concurrent_writer  # noqa: E402

COW = "sample_table/cow/v6_nonpartitioned"
MOR = "sample_table/mor/parquet/v6_nonpartitioned"
JOB = Path(__file__).parent / "concurrent_writer.py"
ROOT = Path(__file__).parent.parent

FAST_HEARTBEAT = {"hoodie.client.heartbeat.interval_in_ms": "1000", "hoodie.client.heartbeat.tolerable.misses": "2"}
OCC = {
    **FAST_HEARTBEAT,
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": FILESYSTEM_LOCK_PROVIDER,
    "hoodie.write.lock.wait_time_ms": "30000",
    "hoodie.write.lock.wait_time_ms_between_retry": "50",
}


class Writer:
    """A writer process; ``go()`` lets it commit."""

    def __init__(self, tmp: Path, name: str, table: str, tag: str, target: str = "new", options=None, hold=True):
        self.dir = tmp / name
        self.dir.mkdir()
        self.started, self.go_file, self.result = self.dir / "started", self.dir / "go", self.dir / "result.json"
        spec = {
            "table": table,
            "tag": tag,
            "target": target,
            "options": options or FAST_HEARTBEAT,
            "started": str(self.started),
            "result": str(self.result),
        }
        if hold:
            spec["go"] = str(self.go_file)
        (self.dir / "spec.json").write_text(json.dumps(spec))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, str(JOB), str(self.dir / "spec.json")], env=env)

    def wait_started(self, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while not self.started.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"writer ended before starting: {self.outcome()}")
            assert time.monotonic() < deadline, "writer did not start"
            time.sleep(0.05)
        return self.started.read_text()

    def go(self) -> None:
        self.go_file.write_text("go")

    def outcome(self, timeout: float = 120) -> dict:
        self.proc.wait(timeout)
        return json.loads(self.result.read_text())


def _run(tmp: Path, name: str, table: str, tag: str, target: str = "new", options=None) -> dict:
    return Writer(tmp, name, table, tag, target, options, hold=False).outcome()


def _keys(path: str) -> Counter:
    return Counter(hudi_duck.read_snapshot(path).read_all().column(RECORD_KEY).to_pylist())


def _commits(path: str) -> list[str]:
    return [i.requested_time for i in HudiTable(path).timeline.completed_writes]


# -- single writer ------------------------------------------------------------------------------


@pytest.mark.parametrize("fid", [COW, MOR])
def test_a_single_writer_refuses_to_roll_back_a_live_writer(fresh_fixture, tmp_path, fid):
    """The fault probe: the second writer used to roll back the first one's in-flight instant."""
    path = fresh_fixture(fid)
    before = _keys(path)
    first = Writer(tmp_path, "first", path, "a")
    instant = first.wait_started()
    second = _run(tmp_path, "second", path, "b")
    assert not second["ok"] and second["error_type"] == "ConcurrentWriteError"
    error = second["error"]
    assert instant in error and str(Path(path) / ".hoodie" / ".heartbeat" / instant) in error
    assert "optimistic_concurrency_control" in error and "Wait" in error
    hoodie = Path(path) / ".hoodie"
    requested = ".deltacommit.requested" if fid == MOR else ".commit.requested"
    assert (hoodie / f"{instant}{requested}").exists()  # not rolled back
    assert not list(hoodie.glob("*.rollback*"))
    first.go()
    done = first.outcome()
    assert done["ok"], done
    keys = _keys(path)
    assert set(done["keys"]) <= set(keys) and set(before) <= set(keys)
    assert not any(k.startswith("b-") for k in keys)
    assert not (hoodie / ".heartbeat" / instant).exists()  # the heartbeat goes with the commit
    # once the first writer is done, the second runs
    again = _run(tmp_path, "again", path, "b")
    assert again["ok"] and again["rolled_back"] == []
    assert set(again["keys"]) <= set(_keys(path))


def test_an_expired_heartbeat_means_a_dead_writer_rolled_back(fresh_fixture, tmp_path):
    path = fresh_fixture(MOR)
    before = _keys(path)
    doomed = Writer(tmp_path, "doomed", path, "dead")
    instant = doomed.wait_started()
    os.kill(doomed.proc.pid, signal.SIGKILL)
    doomed.proc.wait(30)
    beat = Path(path) / ".hoodie" / ".heartbeat" / instant
    assert beat.exists()
    # the dead writer beats no more: its last beat ages past interval 1 s x 2 tolerable misses
    last = beat.stat().st_mtime - 2.5
    os.utime(beat, (last, last))
    done = _run(tmp_path, "next", path, "n")
    assert done["ok"] and done["rolled_back"] == [instant]
    assert not (Path(path) / ".hoodie" / ".heartbeat" / instant).exists()
    assert not (Path(path) / ".hoodie" / ".temp" / instant).exists()
    assert set(_keys(path)) == set(before) | set(done["keys"])


def test_two_single_writers_starting_together_never_both_proceed(fresh_fixture, tmp_path):
    """Launched at once, each holding its instant in flight once its files are written:
    whoever looks second sees the other's live heartbeat (before or right after its own
    requested file), so the two never both proceed. When each looks while the other's
    requested file is there, both are refused (a single writer has no lock to pick one):
    nothing is written and nothing left pending. Else exactly one commits, nothing lost."""
    path = fresh_fixture(MOR)
    before = _keys(path)
    # a heartbeat that outlives the test: with FAST_HEARTBEAT's 2 s, a writer starved of CPU for
    # 2 s on a loaded machine is rightly taken for dead by the other, which then proceeds too
    lasting = {"hoodie.client.heartbeat.interval_in_ms": "1000", "hoodie.client.heartbeat.tolerable.misses": "300"}
    writers = [Writer(tmp_path, f"w{i}", path, f"t{i}", options=lasting) for i in range(2)]
    deadline = time.monotonic() + 120

    def settled() -> bool:
        ended = [w.proc.poll() is not None for w in writers]
        return all(ended) or (any(ended) and any(w.started.exists() for w in writers))

    while not settled():
        assert time.monotonic() < deadline, "no writer was refused and both still run"
        time.sleep(0.05)
    for w in writers:
        w.go()
    outcomes = [w.outcome() for w in writers]
    committed = [o for o in outcomes if o["ok"]]
    refused = [o for o in outcomes if not o["ok"]]
    assert len(committed) <= 1 and refused, outcomes  # never both
    assert all(r["error_type"] == "ConcurrentWriteError" for r in refused), refused
    if committed:
        assert committed[0]["instant"] in refused[0]["error"]
    keys = _keys(path)
    assert set(keys) == set(before) | set(committed[0]["keys"] if committed else ())
    assert max(keys.values()) == 1
    assert HudiTable(path).timeline.pending() == []


def test_lazy_policy_leaves_live_writers_alone(fresh_fixture, tmp_path):
    path = fresh_fixture(COW)
    first = Writer(tmp_path, "first", path, "a", options={**FAST_HEARTBEAT, "hoodie.cleaner.policy.failed.writes": "LAZY"})
    instant = first.wait_started()
    settings = ConcurrencySettings.from_options({**FAST_HEARTBEAT, "hoodie.cleaner.policy.failed.writes": "LAZY"})
    table = HudiTable(path)
    from hudi_duck.core.concurrency import recovery

    outcome = recovery.recover(table.storage, table.config, table.timeline, settings)
    assert outcome.rolled_back == []
    assert instant in [i.requested_time for i in HudiTable(path).timeline.pending()]
    first.go()
    assert first.outcome()["ok"]
    assert instant in _commits(path)


# -- optimistic concurrency control ---------------------------------------------------------------


@pytest.mark.parametrize("fid", [COW, MOR])
def test_occ_writers_of_different_file_groups_both_commit(fresh_fixture, tmp_path, fid):
    """The fault probe under OCC: disjoint inserts into new file groups, both in flight at
    once, commit side by side with every row."""
    path = fresh_fixture(fid)
    before = _keys(path)
    a = Writer(tmp_path, "a", path, "a", options=OCC)
    b = Writer(tmp_path, "b", path, "b", options=OCC)
    ta, tb = a.wait_started(), b.wait_started()
    b.go()
    a.go()
    oa, ob = a.outcome(), b.outcome()
    assert oa["ok"] and ob["ok"], (oa, ob)
    assert {ta, tb} <= set(_commits(path))
    keys = _keys(path)
    assert set(keys) == set(before) | set(oa["keys"]) | set(ob["keys"])
    assert max(keys.values()) == 1
    assert not (Path(path) / ".hoodie" / "lock").exists()


@pytest.mark.parametrize("fid", [COW, MOR])
def test_occ_writers_of_the_same_file_group_conflict(fresh_fixture, tmp_path, fid):
    path = fresh_fixture(fid)
    before = _keys(path)
    a = Writer(tmp_path, "a", path, "a", target="update", options=OCC)
    b = Writer(tmp_path, "b", path, "b", target="update", options=OCC)
    ta, tb = a.wait_started(), b.wait_started()
    a.go()
    oa = a.outcome()
    b.go()
    ob = b.outcome()
    assert oa["ok"], oa
    assert not ob["ok"] and ob["error_type"] == "WriteConflictError", ob
    assert tb in ob["error"] and ta in ob["error"] and "file group" in ob["error"]
    table = HudiTable(path)
    assert ta in _commits(path) and tb not in _commits(path)
    assert table.timeline.pending([Action.COMMIT, Action.DELTA_COMMIT]) == []
    (rollback,) = table.timeline.completed([Action.ROLLBACK])
    assert table.timeline.payload(rollback).commits_rollback == [tb]
    assert not [p for p in Path(path).iterdir() if tb in p.name]  # its files are gone
    assert _keys(path) == before  # the updates rewrote the same keys: every row still there once


def test_occ_a_loser_does_not_block_the_next_writer(fresh_fixture, tmp_path):
    path = fresh_fixture(COW)
    a = Writer(tmp_path, "a", path, "a", target="update", options=OCC)
    b = Writer(tmp_path, "b", path, "b", target="update", options=OCC)
    a.wait_started(), b.wait_started()
    b.go()
    assert b.outcome()["ok"]
    a.go()
    assert a.outcome()["error_type"] == "WriteConflictError"
    again = _run(tmp_path, "again", path, "a", target="update", options=OCC)
    assert again["ok"] and again["rolled_back"] == []


def test_in_process_lock_provider_serialises_threads(fresh_fixture, tmp_path):
    """Two writers on threads of one process, with InProcessLockProvider."""
    path = fresh_fixture(COW)
    before = _keys(path)
    options = {**OCC, "hoodie.write.lock.provider": IN_PROCESS_LOCK_PROVIDER}
    outcomes: dict[str, dict] = {}
    barrier = tmp_path / "go"

    def run(tag: str) -> None:
        spec = {"table": path, "tag": tag, "target": "new", "options": options, "go": str(barrier)}
        outcomes[tag] = concurrent_writer.write(spec)

    threads = [threading.Thread(target=run, args=(t,)) for t in ("x", "y")]
    for t in threads:
        t.start()
    time.sleep(1.0)
    barrier.write_text("go")
    for t in threads:
        t.join(60)
    assert outcomes["x"]["ok"] and outcomes["y"]["ok"]
    assert set(_keys(path)) == set(before) | set(outcomes["x"]["keys"]) | set(outcomes["y"]["keys"])


def test_a_held_file_lock_times_out_with_a_clear_error(fresh_fixture):
    path = fresh_fixture(COW)
    table = HudiTable(path)
    settings = ConcurrencySettings.from_options({**OCC, "hoodie.write.lock.wait_time_ms": "300"})
    holder = FileSystemLock(table.storage, None, 0)
    assert holder.try_lock()
    try:
        with pytest.raises(LockError, match=r"lock file .*\.hoodie/lock .*held by.*hoodie.write.lock.wait_time_ms"):
            with table_lock(FileSystemLock(table.storage, None, 0), settings, "a commit"):
                pass
    finally:
        holder.unlock()
    # an abandoned lock expires with hoodie.write.lock.filesystem.expire
    stale = FileSystemLock(table.storage, None, 1)
    assert stale.try_lock()
    old = time.time() - 120
    os.utime(Path(path) / ".hoodie" / "lock", (old, old))
    assert FileSystemLock(table.storage, None, 1).try_lock()


def test_in_process_lock_is_per_table(fresh_fixture, tmp_path):
    path = fresh_fixture(COW)
    storage = HudiTable(path).storage
    one, two = InProcessLock(storage), InProcessLock(storage)
    assert one.try_lock() and not two.try_lock()
    one.unlock()
    assert two.try_lock()
    two.unlock()


def test_concurrency_options_are_checked():
    with pytest.raises(WriteError, match="needs hoodie.write.lock.provider"):
        ConcurrencySettings.from_options({"hoodie.write.concurrency.mode": "optimistic_concurrency_control"})
    with pytest.raises(WriteError, match="not supported.*FileSystemBasedLockProvider"):
        ConcurrencySettings.from_options(
            {**OCC, "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"}
        )
    with pytest.raises(WriteError, match="EAGER.*LAZY"):
        ConcurrencySettings.from_options({**OCC, "hoodie.cleaner.policy.failed.writes": "EAGER"})
    with pytest.raises(WriteError, match="interval_in_ms"):
        ConcurrencySettings.from_options({"hoodie.client.heartbeat.interval_in_ms": "10"})
    settings = ConcurrencySettings.from_options(OCC)
    assert settings.failed_writes is FailedWritesPolicy.LAZY and settings.heartbeat_expiry_seconds == 2.0
    assert ConcurrencySettings().failed_writes is FailedWritesPolicy.EAGER
    assert ConcurrencySettings().heartbeat_expiry_seconds == 120.0


def test_heartbeat_beats_while_in_flight(fresh_fixture):
    path = fresh_fixture(COW)
    storage = HudiTable(path).storage
    beat = heartbeat.Heartbeat(storage, "20990101000000000", 0.2).start()
    try:
        first = heartbeat.last_heartbeat(storage, "20990101000000000")
        deadline = time.monotonic() + 30
        while heartbeat.last_heartbeat(storage, "20990101000000000") <= first:  # the next beat
            assert time.monotonic() < deadline, "the heartbeat did not beat again"
            time.sleep(0.05)
        assert heartbeat.is_alive(storage, "20990101000000000", 1.0)
        assert not heartbeat.is_alive(storage, "20990101000000000", 1.0, now=time.time() + 5)
    finally:
        beat.stop()
    assert heartbeat.last_heartbeat(storage, "20990101000000000") is None
    assert not heartbeat.is_alive(storage, "20990101000000000", 1.0)


def test_a_refused_start_leaves_nothing(fresh_fixture, tmp_path):
    """The single-writer check after the requested file: the refused instant and its
    heartbeat disappear."""
    path = fresh_fixture(COW)
    first = Writer(tmp_path, "first", path, "a")
    instant = first.wait_started()
    table = HudiTable(path)
    from hudi_duck.core.timeline.transaction import Transaction

    concurrency = WriteConcurrency(table.storage, ConcurrencySettings.from_options(FAST_HEARTBEAT))
    with pytest.raises(ConcurrentWriteError, match=instant):
        Transaction.start(table.timeline, Action.COMMIT, concurrency=concurrency)
    pending = [i.requested_time for i in HudiTable(path).timeline.pending()]
    assert pending == [instant]
    assert [p.name for p in (Path(path) / ".hoodie" / ".heartbeat").iterdir()] == [instant]
    first.go()
    assert first.outcome()["ok"]


def test_a_writer_that_lost_an_instant_time_leaves_the_owner_its_heartbeat(fresh_fixture, monkeypatch):
    """Two writers started in the same millisecond pick the same instant time: the one whose
    requested file lost the race takes the next time, and must not delete the heartbeat it
    shared with the winner (the winner's live instant would look dead, and the loser would
    proceed beside it)."""
    from hudi_duck.core.timeline import active
    from hudi_duck.core.timeline.transaction import Transaction

    path = fresh_fixture(COW)
    settings = ConcurrencySettings.from_options(FAST_HEARTBEAT)
    loser_view = HudiTable(path).timeline  # read before the winner's requested file
    winner_view = HudiTable(path).timeline
    same = winner_view.next_instant_time()
    monkeypatch.setattr(active.Timeline, "next_instant_time", lambda self: same)
    winner = Transaction.start(winner_view, Action.COMMIT, concurrency=WriteConcurrency(winner_view.storage, settings))
    assert winner.requested_time == same
    try:
        with pytest.raises(ConcurrentWriteError, match=same):
            Transaction.start(loser_view, Action.COMMIT, concurrency=WriteConcurrency(loser_view.storage, settings))
        assert heartbeat.is_alive(winner_view.storage, same, settings.heartbeat_expiry_seconds)
        assert [i.requested_time for i in HudiTable(path).timeline.pending()] == [same]
    finally:
        winner.abort()
    assert HudiTable(path).timeline.pending() == []
    assert not (Path(path) / ".hoodie" / ".heartbeat").exists()


# -- the Spark writer beside another writer process -----------------------------------------------


def _spark_table(spark, tmp_path: Path, table_type: str) -> tuple[str, dict]:
    import spark_writer

    path = str(tmp_path / "spark_table")
    options = {
        "hoodie.table.name": "races",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.parquet.small.file.limit": "0",  # inserts go to new file groups
        **FAST_HEARTBEAT,
    }
    frame = spark.createDataFrame([(f"k{i}", i, f"v{i}") for i in range(20)], "id string, ts long, v string")
    spark_writer.write(frame, path, options)
    return path, options


@pytest.mark.parametrize("mode", ["single_writer", "optimistic_concurrency_control"])
def test_spark_write_beside_a_writer_in_flight(small_spark, tmp_path, mode):
    """End to end: a Spark job writes while another process holds an instant in flight.
    A single writer refuses (naming the instant and heartbeat); under OCC both commit."""
    import spark_writer

    path, options = _spark_table(small_spark, tmp_path, "MERGE_ON_READ")
    if mode != "single_writer":
        options = {**options, **OCC}
    other = Writer(tmp_path, "other", path, "other", options=options if mode != "single_writer" else FAST_HEARTBEAT)
    instant = other.wait_started()
    frame = small_spark.createDataFrame([(f"s{i}", i, "spark") for i in range(30)], "id string, ts long, v string")
    if mode == "single_writer":
        with pytest.raises(ConcurrentWriteError, match=f"{instant}.*heartbeat"):
            spark_writer.write(frame, path, options)
        other.go()
        assert other.outcome()["ok"]
        assert not any(k.startswith("s") for k in _keys(path))
        result = spark_writer.write(frame, path, options)  # the other writer is done: now it runs
    else:
        result = spark_writer.write(frame, path, options)
        other.go()
        assert other.outcome()["ok"]
    keys = _keys(path)
    assert {f"s{i}" for i in range(30)} <= set(keys) and {f"k{i}" for i in range(20)} <= set(keys)
    assert {k for k in keys if k.startswith("other-")} and max(keys.values()) == 1
    assert {instant, result.instant_time} <= set(_commits(path))


def test_a_write_rolled_back_under_it_does_not_commit(fresh_fixture, tmp_path):
    """If another writer (one that ignores heartbeats) rolled the instant back while it
    was in flight, the write fails at commit instead of publishing over nothing."""
    path = fresh_fixture(MOR)
    before = _keys(path)
    victim = Writer(tmp_path, "victim", path, "v")
    instant = victim.wait_started()
    from hudi_duck.core.services import rollback

    table = HudiTable(path)
    rollback.rollback(table.storage, table.config, table.timeline, table.timeline.group(instant).latest)
    victim.go()
    outcome = victim.outcome()
    assert not outcome["ok"] and outcome["error_type"] == "ConcurrentWriteError"
    assert "rolled back by another writer" in outcome["error"]
    assert instant not in _commits(path)
    assert _keys(path) == before


#: a process creating each table of a list as soon as a go file appears; it reports per table
#: "created" or the error it got
_CREATOR = """
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import crash_job
from hudi_duck.core.errors import HudiError
go, result, paths = sys.argv[2], sys.argv[3], sys.argv[4:]
open(result + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
out = {}
for path in paths:
    try:
        crash_job.create_table(path, "MERGE_ON_READ")
        out[path] = "created"
    except HudiError as exc:
        out[path] = f"{type(exc).__name__}: {exc}"
open(result, "w").write(json.dumps(out))
"""


def test_two_writers_creating_a_new_table_at_once(tmp_path):
    """Two processes create the same brand-new tables at the same moment: of each table
    exactly one is the creator; the other is told another writer created it, nothing else."""
    from hudi_duck.core.config.table_config import TableConfig
    from hudi_duck.core.storage.storage import Storage

    paths = [str(tmp_path / f"t{i}") for i in range(20)]
    go = tmp_path / "go"
    results = [tmp_path / f"creator{i}.json" for i in range(2)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    creators = [
        subprocess.Popen([sys.executable, "-c", _CREATOR, str(Path(__file__).parent), str(go), str(r), *paths], env=env)
        for r in results
    ]
    deadline = time.monotonic() + 120
    while not all(Path(f"{r}.ready").exists() for r in results):  # both wait for the go file
        assert all(c.poll() is None for c in creators) and time.monotonic() < deadline, "a creator did not start"
        time.sleep(0.02)
    go.write_text("go")
    for creator in creators:
        assert creator.wait(120) == 0
    outcomes = [json.loads(r.read_text()) for r in results]
    for path in paths:
        got = [o[path] for o in outcomes]
        assert got.count("created") == 1, f"{path}: not exactly one creator: {got}"
        (lost,) = [g for g in got if g != "created"]
        # seen too late: an existing table; seen in time, but beaten to hoodie.properties: a concurrent writer
        assert lost.startswith(("InvalidTableConfigError: ", "ConcurrentWriteError: ")), lost
        assert "is already a Hudi table" in lost or "another writer created this table at the same moment" in lost, lost
        assert TableConfig.load(Storage(path)).name == "crash"
