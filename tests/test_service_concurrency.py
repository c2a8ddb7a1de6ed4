"""Table services run on their own beside other processes (``tests/concurrent_writer.py``).

A scheduled compaction or clustering is *resumed* by whichever job runs it. A run whose
heartbeat is alive is never rolled back by another: the second run stops with a clear
error and the first commits. A run that died (its heartbeat expired) is rolled back and
run again by the next. A compaction beside a live upsert commits, and so does the
upsert (single writer and optimistic concurrency control). Under optimistic concurrency
control a clustering and an upsert of the same file group conflict: exactly one commits.
Every outcome is read by hudi_duck and hudi-rs, which must agree with the model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hudi_duck
from hudi_duck.core.concurrency import heartbeat
from hudi_duck.core.concurrency.settings import FILESYSTEM_LOCK_PROVIDER
from hudi_duck.core.services import clustering, compaction
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.instant import Action, State

sys.path.insert(0, str(Path(__file__).parent))
import crash_job  # noqa: E402
from oracle import hudi_rs_read  # noqa: E402

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
MODES = {"single_writer": FAST_HEARTBEAT, "occ": OCC}


class Job:
    """A job process of ``concurrent_writer.py``: a write or a table service, held in flight
    once its data files are written until ``go()`` (unless ``hold=False``)."""

    def __init__(self, tmp: Path, name: str, spec: dict, hold: bool = True, start: Path | None = None):
        self.dir = tmp / name
        self.dir.mkdir()
        self.started, self.go_file, self.result = self.dir / "started", self.dir / "go", self.dir / "result.json"
        spec = {**spec, "started": str(self.started), "result": str(self.result)}
        if hold:
            spec["go"] = str(self.go_file)
        if start is not None:
            spec["start"] = str(start)
        (self.dir / "spec.json").write_text(json.dumps(spec))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, str(JOB), str(self.dir / "spec.json")], env=env)

    def wait_started(self, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while not self.started.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"job ended before holding its instant: {self.outcome()}")
            assert time.monotonic() < deadline, "job did not start"
            time.sleep(0.05)
        return self.started.read_text()

    def go(self) -> None:
        self.go_file.write_text("go")

    def outcome(self, timeout: float = 120) -> dict:
        self.proc.wait(timeout)
        return json.loads(self.result.read_text())


def _service(tmp: Path, name: str, path: str, service: str, instant: str, options: dict, **kw) -> Job:
    spec = {"table": path, "service": service, "instant": instant, "options": options, "tag": name}
    return Job(tmp, name, spec, **kw)


def _upsert(tmp: Path, name: str, path: str, options: dict) -> Job:
    """A writer rewriting the rows of the table's first file group (a log file on merge-on-read)."""
    return Job(tmp, name, {"table": path, "tag": name, "target": "update", "options": options})


# -- tables and reads -------------------------------------------------------------------------


def _table(tmp: Path, table_type: str) -> tuple[str, dict[str, tuple]]:
    """Three commits on a partitioned table: inserts into two file groups, then upserts of
    some keys of both (logs on merge-on-read); the model of its rows."""
    path = str(tmp / "table")
    crash_job.create_table(path, table_type)
    rows = [{"id": f"k{i}", "part": "p0", "ts": 1, "val": "first"} for i in range(12)]
    crash_job.write(path, "insert", rows[:6])
    crash_job.write(path, "insert", rows[6:])  # a second file group (clustering joins them)
    updates = [{**r, "ts": 2, "val": "second"} for r in rows[:8]]
    crash_job.write(path, "upsert", updates)
    model = {r["id"]: (r["id"], r["part"], r["ts"], r["val"]) for r in rows + updates}
    return path, model


def _schedule(path: str, service: str) -> str:
    table = HudiTable(path)
    time_ = table.timeline.next_instant_time()
    if service == "compaction":
        scheduled = compaction.schedule_compaction(table, crash_job.COMPACTION, time_)
    else:
        scheduled = clustering.schedule_clustering(table, crash_job.CLUSTERING, time_)
    assert scheduled is not None, f"nothing to {service}"
    return scheduled.requested_time


_CON = None


def _read_both(path: str) -> list[tuple]:
    """The rows as hudi_duck reads them, checked against hudi-rs."""
    global _CON
    if _CON is None:
        _CON = hudi_duck.connect()
    ours = sorted(_CON.sql(f"SELECT id, part, ts, val FROM hudi_snapshot('{path}')").fetchall())
    theirs = hudi_rs_read(path).select(list(crash_job.COLUMNS)).to_pylist()
    assert ours == sorted(tuple(r[c] for c in crash_job.COLUMNS) for r in theirs), "hudi_duck and hudi-rs disagree"
    return ours


def _completed(path: str, instant: str) -> bool:
    return HudiTable(path).timeline.state_file(instant, State.COMPLETED) is not None


def _rollbacks(path: str) -> list:
    return HudiTable(path).timeline.completed([Action.ROLLBACK])


# -- two runs of one plan ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
def test_a_second_run_of_a_live_compaction_stops_and_rolls_nothing_back(tmp_path, mode):
    """The fault probe: the second run used to roll back the first one's inflight compaction."""
    path, model = _table(tmp_path, "MERGE_ON_READ")
    instant = _schedule(path, "compaction")
    first = _service(tmp_path, "first", path, "compaction", instant, MODES[mode])
    assert first.wait_started() == instant
    hoodie = Path(path) / ".hoodie"
    assert (hoodie / f"{instant}.compaction.inflight").exists() and (hoodie / ".heartbeat" / instant).exists()
    second = _service(tmp_path, "second", path, "compaction", instant, MODES[mode], hold=False).outcome()
    assert not second["ok"] and second["error_type"] == "ConcurrentWriteError", second
    error = second["error"]
    assert f"compaction {instant} is being run by another process" in error
    assert str(hoodie / ".heartbeat" / instant) in error
    assert "hoodie.client.heartbeat.interval_in_ms" in error and "hoodie.client.heartbeat.tolerable.misses" in error
    assert "Wait for that run to finish" in error
    assert (hoodie / f"{instant}.compaction.inflight").exists()  # not rolled back
    assert _rollbacks(path) == []
    assert (hoodie / ".heartbeat" / instant).exists()  # the first run's heartbeat stays
    first.go()
    done = first.outcome()
    assert done["ok"], done
    assert _completed(path, instant) and _rollbacks(path) == []
    assert not (hoodie / ".heartbeat" / instant).exists()  # the heartbeat goes with the commit
    assert _read_both(path) == sorted(model.values())
    # every slice the plan named is compacted: base files at the compaction instant, no logs left over
    latest = HudiTable(path).file_system_view.latest_slices()
    assert all(s.base_instant_time == instant and not s.log_files for s in latest)


@pytest.mark.parametrize("mode", list(MODES))
def test_two_runs_of_one_compaction_started_together(tmp_path, mode):
    """Both jobs claim the plan at the same moment: exactly one commits, the other stops
    with ConcurrentWriteError (a live heartbeat, or the inflight file that appeared first)."""
    path, model = _table(tmp_path, "MERGE_ON_READ")
    instant = _schedule(path, "compaction")
    start = tmp_path / "start"
    jobs = [_service(tmp_path, f"run{i}", path, "compaction", instant, MODES[mode], start=start) for i in range(2)]
    start.write_text("go")
    deadline = time.monotonic() + 120
    while not (any(j.started.exists() for j in jobs) and any(j.proc.poll() is not None for j in jobs)):
        assert time.monotonic() < deadline, "neither run was refused"
        time.sleep(0.05)
    for job in jobs:
        job.go()
    outcomes = [j.outcome() for j in jobs]
    (committed,) = [o for o in outcomes if o["ok"]]
    (refused,) = [o for o in outcomes if not o["ok"]]
    assert refused["error_type"] == "ConcurrentWriteError" and instant in refused["error"], refused
    assert _completed(path, instant) and _rollbacks(path) == []
    assert HudiTable(path).timeline.pending() == []
    assert _read_both(path) == sorted(model.values())


def test_a_run_that_began_while_another_claimed_the_plan_is_not_rolled_back(tmp_path, monkeypatch):
    """The interleaving of two runs started together that once rolled back a live run: run B
    checks the heartbeat (none yet), then run A claims the plan and writes its inflight file,
    then B reads the timeline. B must take that inflight file for A's live run (every run
    beats the same heartbeat file, so B's own beat hides A's): B stops, nothing is rolled
    back, and A commits."""
    from hudi_duck.core.concurrency import control
    from hudi_duck.core.concurrency.control import WriteConcurrency
    from hudi_duck.core.concurrency.settings import ConcurrencySettings
    from hudi_duck.core.errors import ConcurrentWriteError
    from hudi_duck.core.timeline.transaction import Transaction

    path, model = _table(tmp_path, "MERGE_ON_READ")
    instant = _schedule(path, "compaction")
    settings = ConcurrencySettings.from_options(FAST_HEARTBEAT)
    storage = HudiTable(path).storage
    checked = control.refuse_live_run
    runs: list[Transaction] = []

    def check_then_let_the_other_run_begin(*args, **kwargs):
        checked(*args, **kwargs)
        if not runs:  # (B's check: A claims and begins right after it)
            runs.append(None)
            a = Transaction.resume(HudiTable(path).timeline, instant, concurrency=WriteConcurrency(storage, settings))
            a.begin()
            runs[0] = a

    monkeypatch.setattr(control, "refuse_live_run", check_then_let_the_other_run_begin)
    with pytest.raises(ConcurrentWriteError, match="started by another process at the same moment") as refused:
        Transaction.resume(HudiTable(path).timeline, instant, concurrency=WriteConcurrency(storage, settings))
    assert instant in str(refused.value)
    a = runs[0]
    hoodie = Path(path) / ".hoodie"
    assert (hoodie / f"{instant}.compaction.inflight").exists() and _rollbacks(path) == []
    assert heartbeat.is_alive(storage, instant, settings.heartbeat_expiry_seconds)  # A's beat, left alone
    a.concurrency.finished()  # (A's run ends here; the plan is still its to run)
    monkeypatch.undo()
    done = _service(tmp_path, "again", path, "compaction", instant, MODES["single_writer"], hold=False).outcome()
    assert done["ok"], done
    assert _completed(path, instant)
    assert _read_both(path) == sorted(model.values())


def test_a_killed_compaction_is_refused_while_its_heartbeat_lives_then_repaired(tmp_path):
    path, model = _table(tmp_path, "MERGE_ON_READ")
    instant = _schedule(path, "compaction")
    doomed = _service(tmp_path, "doomed", path, "compaction", instant, FAST_HEARTBEAT)
    doomed.wait_started()
    os.kill(doomed.proc.pid, signal.SIGKILL)
    doomed.proc.wait(30)
    beat = Path(path) / ".hoodie" / ".heartbeat" / instant
    assert beat.exists()
    # just killed: its heartbeat has not expired yet (expiry 1 s x 2 misses), so it counts as live
    os.utime(beat, None)
    early = _service(tmp_path, "early", path, "compaction", instant, FAST_HEARTBEAT, hold=False).outcome()
    assert not early["ok"] and early["error_type"] == "ConcurrentWriteError", early
    # the dead job beats no more: its last beat ages past the expiry
    last = time.time() - 2.5
    os.utime(beat, (last, last))
    again = _service(tmp_path, "again", path, "compaction", instant, FAST_HEARTBEAT, hold=False).outcome()
    assert again["ok"], again
    (rollback,) = _rollbacks(path)
    assert HudiTable(path).timeline.payload(rollback).commits_rollback == [instant]
    assert _completed(path, instant) and not beat.exists()
    assert not (Path(path) / ".hoodie" / ".temp" / instant).exists()
    assert _read_both(path) == sorted(model.values())


def test_a_stalled_run_taken_over_gives_up_without_undoing_the_other(tmp_path):
    """A run that stalls past its heartbeat's expiry (stopped with SIGSTOP) is taken for dead:
    the next run rolls its attempt back and commits. Woken up, the stalled run finds its
    attempt gone and fails without undoing anything of the run that took over."""
    path, model = _table(tmp_path, "MERGE_ON_READ")
    instant = _schedule(path, "compaction")
    stalled = _service(tmp_path, "stalled", path, "compaction", instant, FAST_HEARTBEAT)
    stalled.wait_started()
    os.kill(stalled.proc.pid, signal.SIGSTOP)
    try:
        beat = Path(path) / ".hoodie" / ".heartbeat" / instant
        last = time.time() - 2.5
        os.utime(beat, (last, last))
        taken = _service(tmp_path, "taken", path, "compaction", instant, FAST_HEARTBEAT, hold=False).outcome()
        assert taken["ok"], taken
    finally:
        os.kill(stalled.proc.pid, signal.SIGCONT)
    stalled.go()
    gave_up = stalled.outcome()
    assert not gave_up["ok"] and gave_up["error_type"] == "ConcurrentWriteError", gave_up
    assert "taken over by another run" in gave_up["error"] and instant in gave_up["error"]
    assert _completed(path, instant) and len(_rollbacks(path)) == 1
    assert HudiTable(path).timeline.pending() == []
    assert _read_both(path) == sorted(model.values())


# -- a service beside a live write ---------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
def test_a_compaction_beside_a_live_upsert_both_commit(tmp_path, mode):
    """As in Hudi (async compaction beside an ingestion writer): the compaction neither waits
    for nor rolls back the live upsert, whose log goes to the slice the compaction opens;
    both commit and every row is there."""
    path, model = _table(tmp_path, "MERGE_ON_READ")
    instant = _schedule(path, "compaction")
    writer = _upsert(tmp_path, "writer", path, MODES[mode])
    upsert = writer.wait_started()
    assert upsert > instant
    done = _service(tmp_path, "compactor", path, "compaction", instant, MODES[mode], hold=False).outcome()
    assert done["ok"], done
    hoodie = Path(path) / ".hoodie"
    assert (hoodie / ".heartbeat" / upsert).exists() and (hoodie / f"{upsert}.deltacommit.inflight").exists()
    writer.go()
    wrote = writer.outcome()
    assert wrote["ok"], wrote
    assert _completed(path, instant) and _completed(path, upsert) and _rollbacks(path) == []
    rows = _read_both(path)
    assert sorted(r[0] for r in rows) == sorted(model)  # no key lost, none twice
    # the upsert's log is in the slice the compaction opened, the latest one of its file group
    (log_file,) = [log for s in HudiTable(path).file_system_view.latest_slices() for log in s.log_files]
    assert log_file.instant_time == instant
    assert f"_{instant}.log." in log_file.file_name


@pytest.mark.parametrize("order", ["clustering_first", "upsert_first"])
def test_occ_clustering_and_an_upsert_of_the_same_file_group_conflict(tmp_path, order):
    """Under OCC the instant committing second loses: an upsert after the clustering fails
    with WriteConflictError and is rolled back; a clustering after the upsert (which it did
    not read) fails, is rolled back and its plan dropped. No row is lost either way."""
    path, model = _table(tmp_path, "COPY_ON_WRITE")
    instant = _schedule(path, "clustering")
    writer = _upsert(tmp_path, "writer", path, OCC)
    upsert = writer.wait_started()
    cluster = _service(tmp_path, "cluster", path, "clustering", instant, OCC)
    cluster.wait_started()
    first, second = (cluster, writer) if order == "clustering_first" else (writer, cluster)
    first.go()
    won = first.outcome()
    assert won["ok"], won
    second.go()
    lost = second.outcome()
    assert not lost["ok"] and lost["error_type"] == "WriteConflictError", lost
    assert instant in lost["error"] and upsert in lost["error"] and "file group" in lost["error"]
    timeline = HudiTable(path).timeline
    if order == "clustering_first":
        assert _completed(path, instant) and not _completed(path, upsert)
        assert timeline.group(upsert) is None
    else:
        assert _completed(path, upsert) and timeline.group(instant) is None  # plan dropped
        assert "plan dropped" in lost["error"]
    assert timeline.pending() == []
    assert sorted(r[0] for r in _read_both(path)) == sorted(model)
    assert not (Path(path) / ".hoodie" / "lock").exists()


# -- the Spark service jobs and cleans -------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
def test_spark_compaction_job_refuses_a_live_run_of_the_same_plan(small_spark, tmp_path, mode):
    """``spark_writer.services.compact`` takes the write options' concurrency: a run of the
    same plan in flight in another process is refused, not rolled back."""
    from hudi_duck.core.errors import ConcurrentWriteError
    from spark_writer import services

    path, model = _table(tmp_path, "MERGE_ON_READ")
    instant = _schedule(path, "compaction")
    other = _service(tmp_path, "other", path, "compaction", instant, MODES[mode])
    other.wait_started()
    options = {**crash_job.SPARK_OPTIONS, **MODES[mode]}
    with pytest.raises(ConcurrentWriteError, match=f"compaction {instant} is being run by another process"):
        services.compact(small_spark, path, options, instant_time=instant)
    assert (Path(path) / ".hoodie" / f"{instant}.compaction.inflight").exists() and _rollbacks(path) == []
    other.go()
    assert other.outcome()["ok"]
    assert _completed(path, instant) and _read_both(path) == sorted(model.values())


def test_a_pending_clean_run_elsewhere_is_left_alone(tmp_path):
    """A pending clean whose heartbeat is alive belongs to another run: a clean job stops
    before deleting anything; once that heartbeat is gone, the clean runs."""
    from hudi_duck.core.concurrency.settings import ConcurrencySettings
    from hudi_duck.core.errors import ConcurrentWriteError
    from hudi_duck.core.services import clean

    path, model = _table(tmp_path, "COPY_ON_WRITE")
    crash_job.write(path, "upsert", [{"id": "k0", "part": "p0", "ts": 3, "val": "third"}])
    model["k0"] = ("k0", "p0", 3, "third")
    table = HudiTable(path)
    pending = clean.schedule_clean(table, crash_job.CLEANING, table.timeline.next_instant_time())
    assert pending is not None
    settings = ConcurrencySettings.from_options(FAST_HEARTBEAT)
    other = heartbeat.Heartbeat(table.storage, pending.requested_time, 0.2).start()
    try:
        files = sorted(p.name for p in (Path(path) / "p0").iterdir())
        with pytest.raises(ConcurrentWriteError, match=f"clean {pending.requested_time} is being run by another process"):
            clean.run_clean(HudiTable(path), crash_job.CLEANING, settings)
        assert sorted(p.name for p in (Path(path) / "p0").iterdir()) == files  # nothing deleted
    finally:
        other.stop()
    assert clean.run_clean(HudiTable(path), crash_job.CLEANING, settings) is None  # the pending one ran
    assert _completed(path, pending.requested_time)
    assert not (Path(path) / ".hoodie" / ".heartbeat" / pending.requested_time).exists()
    assert _read_both(path) == sorted(model.values())
