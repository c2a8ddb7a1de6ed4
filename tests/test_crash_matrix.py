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


def run_case(case: Case, root: Path, every: bool = False) -> list[Outcome]:
    seed = root / "seed"
    seed.mkdir()
    prepared = prepare(case, seed)
    outcomes = []
    for i, kill_at in enumerate(kill_points(prepared, root / "dry", every)):
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
        root = tmp_path / str(i)
        root.mkdir()
        prepared = prepare(case, root)
        reached |= {name.split(":")[-1] for name in kill_points(prepared, root / "dry")}
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


#: Kill points of a Spark write: a Python worker writing a data file (the executor dies, the
#: driver sees the task fail), the driver just before publishing the commit (the matrix
#: above covers every phase with the same core code; each Spark job starts its own JVM)
SPARK_KILLS = [
    (faults.DATA_FILE_WRITTEN, "executor"),
    (f"{Action.DELTA_COMMIT}:{faults.BEFORE_COMPLETED}", "driver"),
]


@pytest.mark.spark
@pytest.mark.parametrize("kill_at, where", SPARK_KILLS, ids=[k for k, _ in SPARK_KILLS])
def test_spark_write_killed(kill_at: str, where: str, small_spark, tmp_path: Path):
    """The Spark writer killed on the driver or an executor: readers see the last committed
    state; the next Spark write rolls back what is left and succeeds."""
    prepared = prepare(Case("upsert", MOR, "upsert"), tmp_path / "seed")
    spec_file = tmp_path / "spark.json"
    spec_file.write_text(json.dumps(dict(prepared.spec, table_type=MOR)))
    env = dict(os.environ, HUDI_DUCK_KILL_AT=kill_at, HUDI_DUCK_SPARK_DRIVER_MEMORY="1g")
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(TESTS.parent), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(TESTS / "crash_job.py"), "--spark", str(spec_file)],
        env=env, capture_output=True, text=True, timeout=900,
    )
    if where == "driver":
        assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    else:
        # the worker died; the driver failed the write and rolled it back at once
        assert done.returncode == 1 and "nothing was committed" in done.stderr, done.stderr[-3000:]
    published = kill_at.endswith(faults.COMPLETED_WRITTEN)
    expected = prepared.after if published else prepared.before
    check_reads(prepared.path, expected, f"Spark upsert killed at {kill_at}")
    batch = prepared.model.batch("upsert")
    crash_job.spark_write(small_spark, prepared.path, "upsert", batch, MOR)
    check_reads(prepared.path, Model.apply(expected, "upsert", batch), f"Spark upsert killed at {kill_at}, after the next write")
    pending = HudiTable(prepared.path).timeline.pending()
    assert not pending, f"still pending after the next write: {pending}"


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
