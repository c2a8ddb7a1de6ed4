"""Crash safety as a matrix: every action killed at every phase it reaches.

For each action — the writes (insert, upsert, delete, bulk_insert, insert_overwrite on
copy-on-write and merge-on-read tables), compaction, clustering, clean, rollback,
restore and archival — a dry run in this process records the named phases
(``hudi_duck.core.faults``) the action reaches, in order. Then, for each phase, on a
fresh copy of the prepared table, the action runs in its own process
(``crash_job.py``) with ``HUDI_DUCK_KILL_AT`` naming the phase, and:

* the process must die by SIGKILL (only :func:`faults.reach` at that phase sends it);
* fresh readers — our DuckDB table function and hudi-rs — must see exactly the last
  committed state of an independent model (the state before the action, or after it
  once the action's outcome is published; a restore cut between two of its rollbacks
  shows the state of the newest instant it has not undone yet);
* the next service run repairs what the crash left (the same service again: pending
  compactions, clusterings, cleans, rollbacks and restores are finished), readers see
  the action's outcome, then the next writer (an upsert, which first rolls back writes
  left pending) succeeds and readers see the model with it; no instant stays pending.

The Spark writer is killed the same way at every phase its write reaches, on both table
types, the operations taking the kill points in turn; after each kill the metadata table
the next Spark write leaves must list what the storage holds.

``python tests/test_crash_matrix.py`` prints the matrix (action × phase) with the kills
survived and the rows lost; with ``--every`` it also kills each later time an action
reaches a phase (its second data file, a restore's second rollback ...).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

import hudi_duck
from hudi_duck.core import faults
from hudi_duck.core.services import savepoint as core_savepoint
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.instant import Action

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

import crash_job  # noqa: E402
from oracle import hudi_rs_read  # noqa: E402

COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
WRITE_OPERATIONS = tuple(crash_job.OPERATIONS)
Rows = frozenset  # of (id, part, ts, val)


# -- the model ------------------------------------------------------------------------------


@dataclass
class Model:
    """Committed states, oldest first, each with the instant that made it (rows by key)."""

    history: list[tuple[str, dict[str, tuple]]] = field(default_factory=list)
    rounds: int = 0

    @property
    def rows(self) -> dict[str, tuple]:
        return dict(self.history[-1][1]) if self.history else {}

    def state_at(self, instant_time: str) -> dict[str, tuple]:
        for time_, rows in reversed(self.history):
            if time_ <= instant_time:
                return dict(rows)
        return {}

    def batch(self, op: str) -> list[dict[str, Any]]:
        """The next write's records (deterministic from the model): existing keys updated or
        deleted, new keys inserted, in both partitions."""
        self.rounds += 1
        r, ts = self.rounds, 100 + self.rounds
        current = sorted(self.rows.values())
        by_part = {p: [row for row in current if row[1] == p] for p in ("p0", "p1")}
        new = [dict(id=f"r{r}-{i}", part=f"p{i % 2}", ts=ts, val=f"new{r}") for i in range(4)]
        if op in ("insert", "bulk_insert"):
            return new
        if op == "delete":
            return [dict(id=row[0], part=row[1], ts=ts, val="") for p in by_part for row in by_part[p][:2]]
        if op == "insert_overwrite":
            kept = [dict(id=row[0], part="p0", ts=ts, val=f"over{r}") for row in by_part["p0"][:1]]
            return kept + [row for row in new if row["part"] == "p0"]
        updates = [dict(id=row[0], part=row[1], ts=ts, val=f"upd{r}") for p in by_part for row in by_part[p][-2:]]
        return updates + new[:2]

    @staticmethod
    def apply(rows: dict[str, tuple], op: str, batch: list[dict[str, Any]]) -> dict[str, tuple]:
        out = dict(rows)
        if op == "insert_overwrite":
            parts = {r["part"] for r in batch}
            out = {k: v for k, v in out.items() if v[1] not in parts}
        for r in batch:
            if op == "delete":
                out.pop(r["id"], None)
            else:
                out[r["id"]] = (r["id"], r["part"], r["ts"], r["val"])
        return out

    def commit(self, instant_time: str, rows: dict[str, tuple]) -> None:
        self.history.append((instant_time, dict(rows)))

    def copy(self) -> "Model":
        return Model(list(self.history), self.rounds)


def write(path: str, model: Model, op: str = "upsert") -> str:
    batch = model.batch(op)
    time_ = crash_job.write(path, op, batch)
    model.commit(time_, Model.apply(model.rows, op, batch))
    return time_


# -- reading ----------------------------------------------------------------------------------

_CON = None


def _duck():
    global _CON
    if _CON is None:
        _CON = hudi_duck.connect()
    return _CON


def read_ours(path: str) -> list[tuple]:
    return sorted(_duck().sql(f"SELECT id, part, ts, val FROM hudi_snapshot('{path}')").fetchall())


def read_hudi_rs(path: str) -> list[tuple]:
    table = hudi_rs_read(path)
    return sorted(tuple(r[c] for c in crash_job.COLUMNS) for r in table.select(list(crash_job.COLUMNS)).to_pylist())


def check_reads(path: str, expected: dict[str, tuple], what: str) -> int:
    """Both readers see exactly ``expected``; returns the number of reads."""
    want = sorted(expected.values())
    ours = read_ours(path)
    assert ours == want, f"{what}: hudi_snapshot read {_diff(ours, want)}"
    theirs = read_hudi_rs(path)
    assert theirs == want, f"{what}: hudi-rs read {_diff(theirs, want)}"
    return 2


def _diff(got: list[tuple], want: list[tuple]) -> str:
    extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    dups = len(got) - len(set(got))
    return f"{len(got)} rows, expected {len(want)}: unexpected {extra[:4]}, missing {missing[:4]}, duplicates {dups}"


# -- the actions ------------------------------------------------------------------------------------


@dataclass
class Case:
    """One action on one table type: how its table is prepared, what it does to the data."""

    name: str
    table_type: str
    action: str
    #: extra preparation of the seed table: (path, model) -> spec extras
    prepare: Callable[[str, Model], dict[str, Any]] = lambda path, model: {}

    @property
    def id(self) -> str:
        return f"{self.name}-{'cow' if self.table_type == COW else 'mor'}"


def _prepare_clean(path: str, model: Model) -> dict[str, Any]:
    if HudiTable(path).config.is_mor:
        crash_job.compact(path)
    write(path, model)
    write(path, model)
    return {}


def _prepare_restore(path: str, model: Model) -> dict[str, Any]:
    saved = model.history[-1][0]
    core_savepoint.create_savepoint(HudiTable(path), saved)
    write(path, model)
    if HudiTable(path).config.is_mor:
        crash_job.compact(path)
    write(path, model)
    return {"savepoint": saved}


def _prepare_archival(path: str, model: Model) -> dict[str, Any]:
    for _ in range(3):
        write(path, model)
    return {}


CASES = [
    *(Case(op, t, op) for t in (COW, MOR) for op in WRITE_OPERATIONS),
    Case("compaction", MOR, "compaction"),
    *(Case("clustering", t, "clustering") for t in (COW, MOR)),
    *(Case("clean", t, "clean", _prepare_clean) for t in (COW, MOR)),
    *(Case("rollback", t, "rollback") for t in (COW, MOR)),
    *(Case("restore", t, "restore", _prepare_restore) for t in (COW, MOR)),
    *(Case("archival", t, "archival", _prepare_archival) for t in (COW, MOR)),
]


@dataclass
class Prepared:
    """A table ready for one action, with its model and the action's spec."""

    path: str
    model: Model
    spec: dict[str, Any]
    before: dict[str, tuple]
    after: dict[str, tuple]


def prepare(case: Case, root: Path) -> Prepared:
    """Seed (an insert and an upsert), the case's preparation, the action's spec."""
    path = str(root / "table")
    crash_job.create_table(path, case.table_type)
    model = Model()
    write(path, model, "insert")
    write(path, model, "upsert")
    extras = case.prepare(path, model)
    before = model.rows
    spec = {"path": path, "action": case.action, **extras}
    if case.action in WRITE_OPERATIONS:
        spec["rows"] = model.batch(case.action)
        after = Model.apply(before, case.action, spec["rows"])
    elif case.action == "rollback":
        after = dict(model.history[-2][1])
    elif case.action == "restore":
        after = model.state_at(extras["savepoint"])
    else:
        after = before
    return Prepared(path, model, spec, before, after)


def copy_prepared(prepared: Prepared, root: Path) -> Prepared:
    path = str(root / "table")
    shutil.copytree(prepared.path, path)
    spec = dict(prepared.spec, path=path)
    return Prepared(path, prepared.model.copy(), spec, prepared.before, prepared.after)


def kill_points(prepared: Prepared, root: Path, every: bool = False) -> list[str]:
    """The phases the action reaches, in order, as ``HUDI_DUCK_KILL_AT`` values: a phase
    reached again by another action of the run (a restore's rollbacks) is named with
    its action; each value kills at the first point it names. ``every``: also each later
    time a phase is reached (``data_file_written#2``: the second data file ...)."""
    dry = copy_prepared(prepared, root)
    seen: list[tuple[str, str | None]] = []
    reached: list[tuple[str, str | None]] = []
    original = faults.reach

    def record(phase: str, action: str | None = None) -> None:
        reached.append((phase, action))
        if (phase, action) not in seen:
            seen.append((phase, action))

    faults.reach = record
    try:
        crash_job.run(dry.spec)
    finally:
        faults.reach = original
    names: list[str] = []
    for phase, action in seen:
        name = phase if all(p != phase for p, _ in seen[: seen.index((phase, action))]) else f"{action}:{phase}"
        if name not in names and ":None:" not in f":{name}":
            names.append(name)
    if every:
        for name in list(names):
            times = sum(1 for phase, action in reached if name in (phase, f"{action}:{phase}"))
            names += [f"{name}#{n}" for n in range(2, times + 1)]
    return names


class Jobs:
    """A process that has imported the core and forks one job per kill (``crash_job.py --serve``)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env.pop(faults.KILL_AT_VARIABLE, None)
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(TESTS.parent), env.get("PYTHONPATH", "")])
        self.process = subprocess.Popen(
            [sys.executable, str(TESTS / "crash_job.py"), "--serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )

    def run(self, spec: dict[str, Any], kill_at: str) -> dict[str, int]:
        self.process.stdin.write(json.dumps({"spec": spec, "kill_at": kill_at}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the job server ended (exit {self.process.poll()})"
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


_JOBS: Jobs | None = None


def jobs() -> Jobs:
    global _JOBS
    if _JOBS is None:
        _JOBS = Jobs()
        atexit.register(_JOBS.close)
    return _JOBS


def run_fresh(spec: dict[str, Any], kill_at: str | None, root: Path) -> subprocess.CompletedProcess:
    """The job in a fresh interpreter, ``HUDI_DUCK_KILL_AT`` set (or unset) in its environment."""
    spec_file = root / "spec.json"
    spec_file.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k != faults.KILL_AT_VARIABLE}
    if kill_at is not None:
        env[faults.KILL_AT_VARIABLE] = kill_at
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(TESTS.parent), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, str(TESTS / "crash_job.py"), str(spec_file)], env=env, capture_output=True, text=True, timeout=300
    )


# -- what readers must see after a kill -----------------------------------------------------------


def expected_after_kill(case: Case, kill_at: str, prepared: Prepared) -> dict[str, tuple]:
    phase = kill_at.split("#")[0].split(":")[-1]
    if case.action in WRITE_OPERATIONS:
        published = phase in (faults.COMPLETED_WRITTEN, faults.CLEANED_UP)
        return prepared.after if published else prepared.before
    if case.action == "rollback":
        # the rolled-back commit is unpublished before any of its files go
        return prepared.before if phase in (faults.REQUESTED_WRITTEN, faults.INFLIGHT_WRITTEN) else prepared.after
    if case.action == "restore":
        # undone newest first: the newest write not undone yet is what readers see
        latest = HudiTable(prepared.path).timeline.latest_completed_write
        state = prepared.model.state_at(latest.requested_time) if latest else {}
        assert latest is None or latest.requested_time >= prepared.spec["savepoint"], f"{kill_at}: restored too far"
        return state
    return prepared.before


def repair(case: Case, prepared: Prepared) -> None:
    """The next run of the service the crash cut (a write has no service run: the next
    writer repairs it)."""
    path = prepared.path
    if case.action == "compaction":
        crash_job.compact(path)
    elif case.action == "clustering":
        crash_job.cluster(path)
    elif case.action == "clean":
        crash_job.run_clean(path)
    elif case.action == "rollback":
        crash_job.finish_rollbacks(path)
    elif case.action == "restore":
        if HudiTable(path).timeline.pending([Action.RESTORE]):
            crash_job.restore(path, prepared.spec["savepoint"])
    elif case.action == "archival":
        crash_job.archive(path)


@dataclass
class Outcome:
    kill_at: str
    survived: bool
    rows_lost: int
    reads: int
    error: str = ""


def crash_and_repair(case: Case, prepared: Prepared, kill_at: str, root: Path) -> Outcome:
    run = copy_prepared(prepared, root)
    end = jobs().run(run.spec, kill_at)
    if end.get("signal") != signal.SIGKILL:
        return Outcome(kill_at, False, 0, 0, f"the job ended with {end}, not by SIGKILL at {kill_at}")
    reads = 0
    try:
        expected = expected_after_kill(case, kill_at, run)
        reads += check_reads(run.path, expected, f"{case.id} killed at {kill_at}")
        repair(case, run)
        outcome = run.after if case.action not in WRITE_OPERATIONS else expected
        reads += check_reads(run.path, outcome, f"{case.id} killed at {kill_at}, after the service ran again")
        model = run.model
        model.commit("0", outcome)  # the state the next write starts from
        write(run.path, model)
        reads += check_reads(run.path, model.rows, f"{case.id} killed at {kill_at}, after the next write")
        pending = [i for i in HudiTable(run.path).timeline.pending() if i.action != Action.SAVEPOINT]
        assert not pending, f"{case.id} killed at {kill_at}: still pending after repair: {pending}"
    except AssertionError as exc:
        lost = _rows_lost(run.path, run.model.rows)
        return Outcome(kill_at, False, lost, reads, str(exc))
    return Outcome(kill_at, True, 0, reads)


def _rows_lost(path: str, expected: dict[str, tuple]) -> int:
    try:
        return len(set(expected.values()) - set(read_ours(path)))
    except Exception:  # noqa: BLE001 - unreadable: every row is lost
        return len(expected)


#: case id -> the kill points its dry run found (each case's run records them for the coverage test)
KILL_POINTS: dict[str, list[str]] = {}


def run_case(case: Case, root: Path, every: bool = False) -> list[Outcome]:
    seed = root / "seed"
    seed.mkdir()
    prepared = prepare(case, seed)
    outcomes = []
    names = kill_points(prepared, root / "dry", every)
    KILL_POINTS[case.id] = [n for n in names if "#" not in n]
    for i, kill_at in enumerate(names):
        outcomes.append(crash_and_repair(case, prepared, kill_at, root / f"kill{i}"))
    return outcomes


# -- the tests --------------------------------------------------------------------------------------

#: (case id, kill point) -> outcome, for the summary
RESULTS: dict[tuple[str, str], Outcome] = {}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_killed_at_every_phase(case: Case, tmp_path: Path):
    outcomes = run_case(case, tmp_path)
    for outcome in outcomes:
        RESULTS[(case.id, outcome.kill_at)] = outcome
    assert outcomes, f"{case.id}: the action reached no phase"
    failed = [f"{o.kill_at}: {o.error}" for o in outcomes if not o.survived]
    assert not failed, f"{case.id}: {len(failed)} of {len(outcomes)} kills not survived:\n" + "\n".join(failed)
    assert sum(o.rows_lost for o in outcomes) == 0


def test_every_phase_is_in_the_matrix(tmp_path: Path):
    """Each named phase is reached by some action, so the matrix kills at every one."""
    reached: set[str] = set()
    for i, case in enumerate(CASES):
        if case.id not in KILL_POINTS:  # (the matrix above did not run it)
            root = tmp_path / str(i)
            root.mkdir()
            KILL_POINTS[case.id] = kill_points(prepare(case, root), root / "dry")
        reached |= {name.split(":")[-1] for name in KILL_POINTS[case.id]}
    assert reached == set(faults.PHASES), f"never reached: {sorted(set(faults.PHASES) - reached)}"


def test_kill_point_in_a_fresh_process(tmp_path: Path):
    """``HUDI_DUCK_KILL_AT`` in a process's environment kills it at that phase; unset,
    the same job runs to the end and exits normally."""
    case = Case("upsert", MOR, "upsert")
    prepared = prepare(case, tmp_path / "seed")
    killed = copy_prepared(prepared, tmp_path / "killed")
    done = run_fresh(killed.spec, faults.BEFORE_COMPLETED, tmp_path / "killed")
    assert done.returncode == -signal.SIGKILL, done.stderr
    check_reads(killed.path, prepared.before, "upsert killed before completed")
    second = copy_prepared(prepared, tmp_path / "second")
    done = run_fresh(second.spec, f"{faults.DATA_FILE_WRITTEN}#2", tmp_path / "second")
    assert done.returncode == -signal.SIGKILL, done.stderr
    check_reads(second.path, prepared.before, "upsert killed after its second data file")
    markers = list(Path(second.path, ".hoodie", ".temp").rglob("*.marker.*"))
    assert len(markers) == 2, f"killed after the second data file, yet {len(markers)} markers: {markers}"
    done = run_fresh(prepared.spec, None, tmp_path / "seed")
    assert done.returncode == 0, done.stderr
    check_reads(prepared.path, prepared.after, "upsert without a kill point")


# -- the Spark writer killed at every phase ----------------------------------------------------------
#
# One driver process per kill point would start a JVM per kill. Instead one job server
# (``crash_job.py --spark-serve``) holds a local[1] session and forks a Spark driver per
# kill point: the fork talks to the same JVM over gateway connections of its own, and a
# SIGKILL of it is the crash of the driver's Python, where every step of the commit runs.
# Executor kill points are armed in the Python workers (the write fails; its driver rolls
# it back at once). The write killed is an upsert on copy-on-write and merge-on-read, at
# every phase it reaches: its instant, the metadata table's delta commit inside its
# commit, and the inline services after it (clean, archival, the metadata table's
# compaction and clean when due). The other operations share that driver path (the same
# Transaction, metadata participant and executors); each is killed where it differs:
# on the executors writing its files and after the metadata table took its delta commit.


@dataclass(frozen=True)
class Reached:
    """One phase a dry run of a Spark write reached, with the instant reaching it."""

    phase: str
    action: str | None
    metadata_table: bool
    instant: str | None


class SparkJobs:
    """The Spark job server: one JVM for every kill of the run."""

    def __init__(self, log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != faults.KILL_AT_VARIABLE}
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(TESTS.parent), env.get("PYTHONPATH", "")])
        self.log = log
        with open(log, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(TESTS / "crash_job.py"), "--spark-serve"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
            )
        self.ready = False  # (it starts its JVM while the test prepares its tables)

    def _reply(self) -> str:
        line = self.process.stdout.readline()
        assert line, f"the Spark job server ended (exit {self.process.poll()}):\n{self.tail()}"
        return line

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def run(self, job: dict[str, Any]) -> dict[str, int]:
        if not self.ready:
            assert json.loads(self._reply()) == {"ready": True}
            self.ready = True
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        return json.loads(self._reply())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=120)


@pytest.fixture(scope="module")
def spark_jobs(tmp_path_factory):
    jobs_ = SparkJobs(tmp_path_factory.mktemp("spark-jobs") / "server.log")
    yield jobs_
    jobs_.close()


def spark_commit(spark, path: str, model: Model, op: str, table_type: str) -> str:
    """A Spark write of the model's next batch (in this process), recorded in the model."""
    batch = model.batch(op)
    result = crash_job.spark_write(spark, path, op, batch, table_type)
    model.commit(result.instant_time, Model.apply(model.rows, op, batch))
    return result.instant_time


def seed_spark(spark, table_type: str, root: Path) -> tuple[str, Model]:
    """A table written by Spark: an insert, an upsert (its metadata table holds both)."""
    path = str(root / "table")
    model = Model()
    spark_commit(spark, path, model, "insert", table_type)
    spark_commit(spark, path, model, "upsert", table_type)
    return path, model


def prepare_spark(seed: tuple[str, Model], table_type: str, op: str, root: Path) -> Prepared:
    """A copy of the seed table and the spec of the write to kill."""
    path = str(root / "table")
    shutil.copytree(seed[0], path)
    model = seed[1].copy()
    rows = model.batch(op)
    before = model.rows
    spec = {"path": path, "action": op, "rows": rows, "table_type": table_type}
    return Prepared(path, model, spec, before, Model.apply(before, op, rows))


def _instant_of(frame) -> tuple[bool, str | None]:
    """(on the metadata table?, the instant) of the transaction reaching a phase."""
    from hudi_duck.core.metadata import layout
    from hudi_duck.core.timeline.transaction import Transaction

    for _ in range(6):
        if frame is None:
            break
        for name in ("self", "txn"):
            txn = frame.f_locals.get(name)
            if isinstance(txn, Transaction):
                uri = txn.timeline.storage.uri().rstrip("/")
                return uri.endswith(layout.METADATA_FOLDER), txn.requested_time
        frame = frame.f_back
    return False, None


def spark_dry_run(spark, prepared: Prepared, root: Path) -> tuple[list[Reached], str]:
    """The phases the driver reaches in the write, in order, and the write's instant."""
    dry = copy_prepared(prepared, root)
    reached: list[Reached] = []
    original = faults.reach

    def record(phase: str, action: str | None = None) -> None:
        reached.append(Reached(phase, action, *_instant_of(sys._getframe(1))))

    faults.reach = record
    try:
        result = crash_job.spark_write(spark, dry.path, dry.spec["action"], dry.spec["rows"], dry.spec["table_type"])
    finally:
        faults.reach = original
    return reached, result.instant_time


@dataclass
class SparkKill:
    """Where to kill: ``kill_at`` on the driver or on the executors, and whether the write's
    commit is published by then."""

    kill_at: str
    on_executor: bool
    published: bool
    what: str


def spark_kill_points(reached: list[Reached], instant: str) -> list[SparkKill]:
    """Each phase the driver reaches (a repeat by the same instant once: its later data
    files), named ``phase#n`` (the n-th time the run reaches it), then the executors'."""
    published_at = next(
        i for i, r in enumerate(reached)
        if r.phase == faults.COMPLETED_WRITTEN and r.instant == instant and not r.metadata_table
    )
    kills, counts, previous = [], Counter(), None
    for i, r in enumerate(reached):
        counts[r.phase] += 1
        if (r.phase, r.action, r.metadata_table, r.instant) == previous:
            continue
        previous = (r.phase, r.action, r.metadata_table, r.instant)
        where = f"{r.action or '-'}{' (metadata table)' if r.metadata_table else ''} {r.instant or ''}"
        kills.append(SparkKill(f"{r.phase}#{counts[r.phase]}", False, i >= published_at, f"{r.phase} of {where}"))
    return kills + [
        SparkKill(faults.MARKER_WRITTEN, True, False, "an executor wrote its first marker"),
        SparkKill(faults.DATA_FILE_WRITTEN, True, False, "an executor wrote its first data file"),
    ]


def check_metadata_table(path: str, what: str) -> None:
    """The metadata table's files partition lists what the storage holds."""
    from hudi_duck.core.metadata.files_reader import files_listing
    from hudi_duck.core.storage.storage import Storage
    from test_mdt_write import _disk_listing

    listing = files_listing(Storage(path)).partitions
    disk = _disk_listing(path)
    assert {p: f for p, f in listing.items() if f or p in disk} == disk, f"{what}: the metadata table lists other files"


def no_pending(path: str, what: str) -> None:
    from test_mdt_write import _mdt_timeline

    pending = [i for i in HudiTable(path).timeline.pending() if i.action != Action.SAVEPOINT]
    pending += _mdt_timeline(path).pending()
    assert not pending, f"{what}: still pending after the next write: {pending}"


def expire_heartbeats(path: str) -> None:
    """A dead driver's heartbeat stops: the next writer finds it expired (as it does
    ``hoodie.client.heartbeat.interval_in_ms`` x tolerable misses after the death)."""
    long_ago = time.time() - 3600
    for beat in Path(path, ".hoodie", ".heartbeat").glob("*"):
        os.utime(beat, (long_ago, long_ago))


def spark_crash_and_repair(spark, jobs_: SparkJobs, run: Prepared, kill: SparkKill, root: Path) -> None:
    """Kill the write at ``kill``; readers see the last committed state; the next Spark write
    repairs and succeeds; readers see the model; the metadata table agrees with the storage."""
    result = root / "result.json"
    job = {"spec": run.spec, "result": str(result), ("executor_kill_at" if kill.on_executor else "kill_at"): kill.kill_at}
    end = jobs_.run(job)
    what = f"Spark {run.spec['action']} ({run.spec['table_type']}) killed at {kill.kill_at}: {kill.what}"
    if kill.on_executor:
        # the worker died; the driver failed the write and rolled it back at once
        outcome = json.loads(result.read_text()) if result.exists() else {}
        assert end == {"exit": 1} and "nothing was committed" in outcome.get("error", ""), (what, end, outcome, jobs_.tail())
    else:
        assert end == {"signal": signal.SIGKILL}, (what, end, jobs_.tail())
        expire_heartbeats(run.path)
    expected = run.after if kill.published else run.before
    check_reads(run.path, expected, what)
    model = run.model
    model.commit("0", expected)
    spark_commit(spark, run.path, model, "upsert", run.spec["table_type"])
    check_reads(run.path, model.rows, f"{what}, after the next write")
    check_metadata_table(run.path, f"{what}, after the next write")
    no_pending(run.path, what)


#: the operations of the killed writes, in turn (each kill point of a table type takes the next)
SPARK_OPERATIONS = ("upsert", "insert", "delete", "bulk_insert", "insert_overwrite")


@pytest.mark.spark
@pytest.mark.parametrize("table_type", [COW, MOR], ids=["cow", "mor"])
def test_spark_write_killed_at_every_phase(table_type: str, small_spark, spark_jobs, tmp_path: Path):
    """The Spark writer's driver killed at each phase a write reaches (its instant, and under
    merge-on-read the metadata table's delta commit inside its commit), its executors at theirs. Every
    operation reaches the same phases in the same order (the kill points name them by
    order, not by action), so the operations take the kill points in turn: each kind is
    killed before, during and after the metadata table's update."""
    seed = seed_spark(small_spark, table_type, tmp_path / "seed")
    reached, instant = spark_dry_run(small_spark, prepare_spark(seed, table_type, "upsert", tmp_path / "dry"), tmp_path / "dry2")
    assert any(r.metadata_table for r in reached), "the write did not reach the metadata table's delta commit"
    kills = spark_kill_points(reached, instant)
    if table_type == COW:
        # the metadata table's own delta commit (a merge-on-read table of its own, the same
        # steps under either data table) is killed under merge-on-read, where its action
        # and the write's are both deltacommit
        kills = [k for k in kills if "(metadata table)" not in k.what]
    for i, kill in enumerate(kills):
        root = tmp_path / f"kill{i}"
        run = prepare_spark(seed, table_type, SPARK_OPERATIONS[i % len(SPARK_OPERATIONS)], root)
        spark_crash_and_repair(small_spark, spark_jobs, run, kill, root)
    assert {SPARK_OPERATIONS[i % len(SPARK_OPERATIONS)] for i in range(len(kills))} == set(SPARK_OPERATIONS)


def main() -> None:
    """Print the matrix: per action the phases killed at and what came of them
    (``--every``: also each later time an action reaches a phase)."""
    import tempfile
    import time

    every = "--every" in sys.argv[1:]
    started = time.perf_counter()
    total = lost = reads = 0
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            outcomes = run_case(case, Path(tmp), every)
        total += sum(o.survived for o in outcomes)
        lost += sum(o.rows_lost for o in outcomes)
        reads += sum(o.reads for o in outcomes)
        marks = ", ".join(f"{o.kill_at}{'' if o.survived else ' FAILED'}" for o in outcomes)
        print(f"{case.id:24} {sum(o.survived for o in outcomes)}/{len(outcomes)}: {marks}", flush=True)
        for o in outcomes:
            if not o.survived:
                print(f"    {o.kill_at}: {o.error[:600]}")
    print(f"kills survived: {total}; rows lost: {lost}; reads checked: {reads}; {time.perf_counter() - started:.0f}s")


if __name__ == "__main__":
    main()
