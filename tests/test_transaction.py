"""The instant lifecycle (``core/timeline/transaction.py``) without Spark.

Writes here are made with the core's write handles on copies of Apache-written
fixture tables: requested → inflight → completed, commit participants called
before publication, and an exception in every phase leaving the table as it was
(committed rows, data files, timeline) with the next writer succeeding. Table
services (compaction, clean) fail half-way and run again; inline services never
undo a committed write.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hudi_duck
from hudi_duck.core.config.write_settings import FileSettings
from hudi_duck.core.errors import HudiError, TableServiceError
from hudi_duck.core.merge.rules import MergeMode
from hudi_duck.core.schema.meta_fields import META_FIELDS, RECORD_KEY
from hudi_duck.core.services import clean, compaction, inline
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline import transaction as txn_module
from hudi_duck.core.timeline.active import Timeline
from hudi_duck.core.timeline.commit_metadata import CommitMetadata
from hudi_duck.core.timeline.instant import Action, State
from hudi_duck.core.timeline.plans import CompactionOperation
from hudi_duck.core.timeline.transaction import Phase, Transaction
from hudi_duck.core.write.handles import TaskInfo, WriteContext, create_files
from hudi_duck.core.write.markers import list_markers

COW = "sample_table/cow/v6_nonpartitioned"
MOR = "sample_table/mor/parquet/v6_nonpartitioned"


def _context(table: HudiTable, instant_time: str) -> WriteContext:
    return WriteContext(
        base_uri=table.base_uri,
        instant_time=instant_time,
        avro_schema=table.avro_schema,
        merge_mode=MergeMode.COMMIT_TIME_ORDERING,
        ordering_field=None,
        is_mor=table.config.is_mor,
    )


def _new_rows(path: str, tag: str) -> pa.Table:
    """Rows shaped like the table's, under new record keys."""
    table = HudiTable(path)
    (latest,) = [s for s in table.file_system_view.latest_slices() if s.base_file is not None][:1]
    rows = pq.read_table(Path(path) / latest.base_file.path)
    keys = pc.binary_join_element_wise(pa.scalar(f"{tag}-"), rows.column(RECORD_KEY).cast(pa.string()), "")
    data = rows.drop_columns([c for c in META_FIELDS if c != RECORD_KEY])
    return data.set_column(data.schema.get_field_index(RECORD_KEY), RECORD_KEY, keys)


def _write(path: str, rows: pa.Table, participants=(), fail_in: str | None = None) -> Transaction:
    """A commit with the core's create handle; ``fail_in`` raises in that phase."""
    table = HudiTable(path)
    txn = Transaction.start(table.timeline, Action.COMMIT, participants=participants)
    with txn:
        if fail_in == "requested":
            raise RuntimeError("failed while requested")
        txn.begin(CommitMetadata(operation_type="INSERT"))
        if fail_in == "inflight":
            raise RuntimeError("failed before writing files")
        stats = create_files(_context(table, txn.requested_time), "", rows, TaskInfo())
        if fail_in == "files":
            raise RuntimeError("failed after writing files")
        txn.commit(CommitMetadata.of(stats, extra_metadata={"schema": table.avro_schema}, operation_type="INSERT"))
    return txn


def _snapshot_keys(path: str) -> list[str]:
    return hudi_duck.read_snapshot(path).read_all().column(RECORD_KEY).to_pylist()


def _state(path: str) -> dict:
    """What a reader and a writer see of a table."""
    root = Path(path)
    table = HudiTable(path)
    return {
        "rows": Counter(_snapshot_keys(path)),
        "completed": [i.requested_time for i in table.timeline.completed_writes],
        "pending": [str(i) for i in table.timeline.pending()],
        "data_files": sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.startswith(".hoodie")),
        "markers": sorted(str(p) for p in (root / ".hoodie" / ".temp").rglob("*") if p.is_file()),
    }


def _keys(path: str) -> set[str]:
    return set(_snapshot_keys(path))


# -- the lifecycle -----------------------------------------------------------------------------------


class Recorder:
    """A commit participant that notes what it saw (the metadata table's hook point)."""

    def __init__(self, fail: bool = False):
        self.calls: list[tuple[str, str, bool, int]] = []
        self.fail = fail

    def prepare_commit(self, transaction: Transaction, metadata) -> None:
        timeline = transaction.timeline
        published = timeline.reload().state_file(transaction.requested_time, State.COMPLETED) is not None
        self.calls.append((transaction.requested_time, transaction.phase.value, published, len(metadata.write_stats())))
        if self.fail:
            raise RuntimeError("the metadata table could not be updated")


def test_requested_inflight_completed(fresh_fixture):
    path = fresh_fixture(COW)
    before = _keys(path)
    rows = _new_rows(path, "new")
    recorder = Recorder()
    txn = _write(path, rows, participants=[recorder])
    hoodie = Path(path) / ".hoodie"
    t = txn.requested_time
    assert txn.committed and txn.phase is Phase.COMPLETED and txn.warnings == []
    assert (hoodie / f"{t}.commit.requested").read_bytes() == b""
    inflight = CommitMetadata.from_bytes((hoodie / f"{t}.inflight").read_bytes())
    assert inflight.operation_type == "INSERT"
    completed = CommitMetadata.from_bytes((hoodie / f"{t}.commit").read_bytes())
    assert len(completed.write_stats()) == 1 and completed.schema
    # the participant ran once, inflight, before the completed file existed, with the final metadata
    assert recorder.calls == [(t, "inflight", False, 1)]
    assert list_markers(HudiTable(path).storage, t) == []  # markers are gone once committed
    assert _keys(path) == before | set(rows.column(RECORD_KEY).to_pylist())
    # a transaction that completed cannot move again, and aborting it changes nothing
    with pytest.raises(HudiError, match="completed"):
        txn.begin()
    txn.abort()
    assert txn.committed


def test_retried_task_leftovers_are_deleted_at_commit(fresh_fixture):
    path = fresh_fixture(COW)
    table = HudiTable(path)
    txn = Transaction.start(table.timeline, Action.COMMIT)
    txn.begin()
    ctx = _context(table, txn.requested_time)
    rows = _new_rows(path, "n")
    kept = create_files(ctx, "", rows, TaskInfo(0, 1, 1))
    lost = create_files(ctx, "", rows, TaskInfo(0, 1, 2))  # a retried attempt: marked, in no stat
    txn.commit(CommitMetadata.of(kept, extra_metadata={"schema": table.avro_schema}, operation_type="INSERT"))
    assert (Path(path) / kept[0].path).exists()
    assert not (Path(path) / lost[0].path).exists()


@pytest.mark.parametrize("phase", ["requested", "inflight", "files", "participant", "publish"])
def test_a_failure_in_any_phase_leaves_the_table_as_before(fresh_fixture, monkeypatch, phase):
    path = fresh_fixture(COW)
    before = _state(path)
    rows = _new_rows(path, "doomed")
    participants = [Recorder(fail=phase == "participant")]
    if phase == "publish":
        original = Timeline.complete

        def refuse(self, inflight, content, completion_time=None):
            if inflight.action == Action.COMMIT:  # the write's completed file does not land
                raise OSError("disk full")
            return original(self, inflight, content, completion_time)

        monkeypatch.setattr(Timeline, "complete", refuse)
    with pytest.raises((RuntimeError, OSError)):
        _write(path, rows, participants, fail_in=phase if phase in ("requested", "inflight", "files") else None)
    monkeypatch.undo()
    after = _state(path)
    # committed rows, completed instants, data files and markers: as before; the failed
    # instant is gone, undone by a rollback instant (Hudi's eager rollback)
    assert after == before
    table = HudiTable(path)
    (rollback,) = table.timeline.completed([Action.ROLLBACK])
    assert table.timeline.payload(rollback).commits_rollback
    # the next writer succeeds
    done = _write(path, _new_rows(path, "next"))
    assert done.committed
    assert _keys(path) == set(before["rows"]) | {f"next-{k}" for k in before["rows"]}


def test_the_commit_stands_when_clean_up_after_it_fails(fresh_fixture, monkeypatch):
    path = fresh_fixture(COW)
    rows = _new_rows(path, "n")

    def broken(storage, instant_time):
        raise OSError("object store unavailable")

    monkeypatch.setattr(txn_module, "delete_markers", broken)
    txn = _write(path, rows)
    assert txn.committed
    assert txn.warnings and "committed" in txn.warnings[0] and "markers" in txn.warnings[0]
    assert txn.requested_time in [i.requested_time for i in HudiTable(path).timeline.completed_writes]
    assert set(rows.column(RECORD_KEY).to_pylist()) <= _keys(path)


def test_a_publish_that_landed_counts_as_committed(fresh_fixture, monkeypatch):
    """The completed file appears atomically; if writing it reports an error after it landed,
    the instant committed and must not be rolled back."""
    path = fresh_fixture(COW)
    original = Timeline.complete

    def lands_then_fails(self, inflight, content, completion_time=None):
        original(self, inflight, content, completion_time)
        raise OSError("connection reset after the upload")

    monkeypatch.setattr(Timeline, "complete", lands_then_fails)
    rows = _new_rows(path, "n")
    txn = _write(path, rows)
    monkeypatch.undo()
    assert txn.committed
    assert set(rows.column(RECORD_KEY).to_pylist()) <= _keys(path)
    assert HudiTable(path).timeline.completed([Action.ROLLBACK]) == []


def test_only_table_version_6_is_written(fixture_tables):
    from hudi_duck.core.errors import UnsupportedFeatureError

    table = HudiTable(fixture_tables["sample_table/cow/v8_nonpartitioned"])
    with pytest.raises(UnsupportedFeatureError, match="version 8"):
        Transaction.start(table.timeline, Action.COMMIT)
    assert table.timeline.reload().pending() == []


# -- table services ----------------------------------------------------------------------------------


def _run_ops(table: HudiTable, fail_after: int | None = None):
    def run(operations: list[CompactionOperation], ctx: WriteContext):
        stats = []
        for i, op in enumerate(operations):
            stats.append(compaction.compact_operation(table, ctx, op, TaskInfo(i, 1, 1), ctx.instant_time))
            if fail_after is not None and i + 1 >= fail_after:
                raise RuntimeError("executor lost")
        return stats

    return run


def test_a_failed_compaction_goes_back_to_requested_and_runs_again(fresh_fixture):
    path = fresh_fixture(MOR)
    before = _state(path)
    table = HudiTable(path)
    settings = compaction.CompactionSettings()
    scheduled = compaction.schedule_compaction(table, settings, table.timeline.next_instant_time())
    t = scheduled.requested_time
    table = HudiTable(path)
    with pytest.raises(RuntimeError, match="executor lost"):
        compaction.run_compaction(table, t, FileSettings(), _run_ops(table, fail_after=1))
    table = HudiTable(path)
    # the attempt is undone, its plan stays requested; readers see what they saw
    assert table.timeline.pending_compaction_times() == [t]
    assert table.timeline.state_file(t, State.INFLIGHT) is None
    after = _state(path)
    assert after["rows"] == before["rows"] and after["completed"] == before["completed"]
    assert after["data_files"] == before["data_files"] and after["markers"] == []
    # a run that dies without undoing (the process is killed) is undone by the next run
    table = HudiTable(path)
    txn = Transaction.resume(table.timeline, t)
    txn.begin()
    ctx = _context(table, t)
    op = compaction.read_plan(table, t).operations[0]
    compaction.compact_operation(table, ctx, op, TaskInfo(), t)  # a file and its marker, then death
    table = HudiTable(path)
    done = compaction.run_compaction(table, t, FileSettings(), _run_ops(table))
    assert done.is_completed and done.action == Action.COMMIT
    table = HudiTable(path)
    assert table.timeline.pending_compaction_times() == []
    assert _state(path)["rows"] == before["rows"]
    assert all(not s.log_files for s in table.file_system_view.latest_slices())


def test_a_failed_clean_stays_pending_and_the_next_clean_finishes_it(fresh_fixture, monkeypatch):
    path = fresh_fixture(COW)
    settings = clean.CleanSettings(policy=clean.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    table = HudiTable(path)
    requested = clean.schedule_clean(table, settings, table.timeline.next_instant_time())
    assert requested is not None
    doomed = clean.plan_clean(table, settings)

    def broken(*args, **kwargs):
        raise OSError("permission denied")

    monkeypatch.setattr(clean, "delete_planned_files", broken)
    with pytest.raises(OSError):
        clean.execute_clean(HudiTable(path), requested)
    monkeypatch.undo()
    table = HudiTable(path)
    assert [i.requested_time for i in table.timeline.pending([Action.CLEAN])] == [requested.requested_time]
    assert clean.run_clean(table, settings) is None  # finishes the pending clean; nothing new to plan
    table = HudiTable(path)
    (done,) = table.timeline.completed([Action.CLEAN])
    assert done.requested_time == requested.requested_time
    assert table.timeline.payload(done).total_files_deleted == sum(len(v) for v in doomed.planned_files().values())


class FailingEngine:
    def __init__(self):
        self.calls = []

    def compact(self, instant_time: str) -> None:
        self.calls.append(instant_time)
        raise RuntimeError("executors lost")

    def cluster(self, instant_time: str) -> None:
        raise AssertionError("not asked for")


@pytest.mark.parametrize("fail", [True, False])
def test_inline_service_failures_never_undo_the_write(fresh_fixture, fail):
    """``hoodie.fail.writes.on.inline.table.service.exception``: raised (Hudi's default) or
    reported; the committed write stands either way."""
    path = fresh_fixture(MOR)
    committed = HudiTable(path).timeline.latest_completed_write.requested_time
    settings = inline.ServiceSettings(
        compaction=compaction.CompactionSettings(max_delta_commits=1),
        compact_inline=True,
        clean_automatic=False,
        archive_automatic=False,
        fail_on_service_error=fail,
    )
    engine = FailingEngine()
    if fail:
        with pytest.raises(TableServiceError, match=f"instant {committed} committed.*compaction.*executors lost") as info:
            inline.run_inline_services(lambda: HudiTable(path), settings, engine, committed)
        assert info.value.committed == committed
    else:
        outcome = inline.run_inline_services(lambda: HudiTable(path), settings, engine, committed)
        assert outcome.errors and "executors lost" in outcome.errors[0]
        assert any(r.startswith("schedule compaction") for r in outcome.ran)
    assert len(engine.calls) == 1
    table = HudiTable(path)
    assert committed in [i.requested_time for i in table.timeline.completed_writes]
    assert table.timeline.pending_compaction_times() == engine.calls  # the plan waits for the next run
