"""Damaged timeline files and leftovers never block a table.

Plan files of pending instants (rollback, compaction, clean, clustering, requested
writes) half-written, empty or garbage: the next write succeeds, the plan is dropped
or its instant rolled back, with a warning naming the file. Timeline files appear
whole (temporary file + link); stale temporary files, markers and heartbeats of
finished instants are removed, those of live writers are not.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import hudi_duck
from hudi_duck.core.concurrency import recovery
from hudi_duck.core.concurrency.settings import ConcurrencySettings
from hudi_duck.core.schema.meta_fields import RECORD_KEY
from hudi_duck.core.services import clean, clustering, compaction, rollback
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.commit_metadata import CommitMetadata
from hudi_duck.core.timeline.instant import Action
from hudi_duck.core.timeline.transaction import Transaction
from hudi_duck.core.write.handles import TaskInfo, create_files

sys.path.insert(0, str(Path(__file__).parent))
import concurrent_writer  # noqa: E402
from test_concurrency import FAST_HEARTBEAT, OCC, Writer  # noqa: E402

COW = "sample_table/cow/v6_nonpartitioned"
MOR = "sample_table/mor/parquet/v6_nonpartitioned"
DAMAGE = ["half", "empty", "garbage"]


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes({"half": data[: len(data) // 2], "empty": b"", "garbage": b"\x00\x17 not a plan"}[how])


def _keys(path: str) -> Counter:
    return Counter(hudi_duck.read_snapshot(path).read_all().column(RECORD_KEY).to_pylist())


def _next_write(path: str, tag: str = "next", options=None) -> dict:
    """The next writer: recovery, then a write of new rows (the client's path)."""
    outcome = concurrent_writer.write({"table": path, "tag": tag, "target": "new", "options": options or FAST_HEARTBEAT})
    assert outcome["ok"]
    assert set(outcome["keys"]) <= set(_keys(path))
    return outcome


def _failed_write(path: str) -> str:
    """A write whose process died after writing its files (no heartbeat left)."""
    table = HudiTable(path)
    txn = Transaction.start(table.timeline, Action.COMMIT)
    txn.begin(CommitMetadata(operation_type="INSERT"))
    rows = concurrent_writer._rows(table, "doomed", "new")[1]
    ctx = concurrent_writer_context(table, txn.requested_time)
    create_files(ctx, "", rows, TaskInfo())
    return txn.requested_time


def concurrent_writer_context(table: HudiTable, instant_time: str):
    from hudi_duck.core.merge.rules import MergeMode
    from hudi_duck.core.write.handles import WriteContext

    return WriteContext(
        base_uri=table.base_uri,
        instant_time=instant_time,
        avro_schema=table.avro_schema,
        merge_mode=MergeMode.COMMIT_TIME_ORDERING,
        ordering_field=None,
        is_mor=table.config.is_mor,
    )


# -- atomic timeline files ------------------------------------------------------------------------


def test_timeline_files_are_created_whole_and_never_overwritten(tmp_path):
    storage = Storage(str(tmp_path))
    assert storage.create_atomic(".hoodie/1.commit", b"first")
    assert not storage.create_atomic(".hoodie/1.commit", b"second")
    assert (tmp_path / ".hoodie" / "1.commit").read_bytes() == b"first"
    storage.write_atomic(".hoodie/hoodie.properties", b"a=1")
    storage.write_atomic(".hoodie/hoodie.properties", b"a=2")
    assert (tmp_path / ".hoodie" / "hoodie.properties").read_bytes() == b"a=2"
    assert sorted(p.name for p in (tmp_path / ".hoodie").iterdir()) == ["1.commit", "hoodie.properties"]


def test_a_writer_dying_mid_write_leaves_only_a_temporary_file(tmp_path, monkeypatch):
    """The bytes go to ``.<name>.<uuid>.tmp`` first: a crash before the link leaves no
    half-written timeline file, only a temporary file the next writer removes."""
    storage = Storage(str(tmp_path))

    def crash(src, dst):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(os, "link", crash)
    with pytest.raises(KeyboardInterrupt):
        storage.create_atomic(".hoodie/2.commit.requested", b"plan")
    monkeypatch.undo()
    assert not (tmp_path / ".hoodie" / "2.commit.requested").exists()


# -- damaged plans ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_rollback_plan(fresh_fixture, how):
    path = fresh_fixture(COW)
    before = _keys(path)
    doomed = _failed_write(path)
    table = HudiTable(path)
    requested, _ = rollback.schedule_rollback(table.storage, table.config, table.timeline, table.timeline.group(doomed).latest)
    plan_file = Path(path) / ".hoodie" / f"{requested.requested_time}.rollback.requested"
    _damage(plan_file, how)
    done = _next_write(path)
    assert any(str(plan_file) in w and "rollback" in w for w in done["warnings"]), done["warnings"]
    assert done["rolled_back"] == [doomed]  # the failed write is rolled back afresh
    assert not plan_file.exists()
    assert set(_keys(path)) == set(before) | set(done["keys"])
    assert not [p for p in Path(path).iterdir() if doomed in p.name]
    assert HudiTable(path).timeline.pending() == []


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("with_inflight", [False, True])
def test_damaged_compaction_plan(fresh_fixture, how, with_inflight):
    path = fresh_fixture(MOR)
    before = _keys(path)
    table = HudiTable(path)
    settings = compaction.CompactionSettings()
    scheduled = compaction.schedule_compaction(table, settings, table.timeline.next_instant_time())
    assert scheduled is not None
    t = scheduled.requested_time
    hoodie = Path(path) / ".hoodie"
    if with_inflight:  # an attempt died after starting
        (hoodie / f"{t}.compaction.inflight").write_bytes(b"")
    plan_file = hoodie / f"{t}.compaction.requested"
    _damage(plan_file, how)
    done = _next_write(path)
    assert any(str(plan_file) in w and "compaction" in w for w in done["warnings"]), done["warnings"]
    assert not list(hoodie.glob(f"{t}.*"))
    assert set(_keys(path)) == set(before) | set(done["keys"])
    # compaction is not blocked: a new plan is made and runs
    table = HudiTable(path)
    again = compaction.schedule_compaction(table, settings, table.timeline.next_instant_time())
    assert again is not None and table.timeline.pending_compaction_times() == [again.requested_time]


def test_a_damaged_compaction_plan_with_logs_based_on_it_is_kept(fresh_fixture):
    """Logs written beside a pending compaction belong to the slice it opens: dropping
    the plan would orphan them, so it stays (with a warning) and writes go on."""
    path = fresh_fixture(MOR)
    table = HudiTable(path)
    scheduled = compaction.schedule_compaction(table, compaction.CompactionSettings(), table.timeline.next_instant_time())
    t = scheduled.requested_time
    plan = table.timeline.plan(t)
    op = plan.operations[0]
    log_name = f".{op.file_id}_{t}.log.1_0-1-0"
    (Path(path) / op.partition / log_name if op.partition else Path(path) / log_name).write_bytes(b"#HUDI#")
    plan_file = Path(path) / ".hoodie" / f"{t}.compaction.requested"
    _damage(plan_file, "half")
    table = HudiTable(path)
    outcome = recovery.recover(table.storage, table.config, table.timeline, ConcurrencySettings())
    assert any(str(plan_file) in w and "kept" in w and log_name in w for w in outcome.warnings)
    assert plan_file.exists()


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_clean_plan(fresh_fixture, how):
    path = fresh_fixture(COW)
    before = _keys(path)
    table = HudiTable(path)
    t = table.timeline.next_instant_time()
    hoodie = Path(path) / ".hoodie"
    (hoodie / f"{t}.clean.requested").write_bytes(b"\x4f\x62\x6a\x01" + b"\x00" * 40)  # a cut-off Avro container
    plan_file = hoodie / f"{t}.clean.requested"
    _damage(plan_file, how)
    (hoodie / f"{t}.clean.inflight").write_bytes(plan_file.read_bytes())
    done = _next_write(path)
    assert any(str(plan_file) in w and "clean" in w for w in done["warnings"]), done["warnings"]
    assert not list(hoodie.glob(f"{t}.*"))
    assert set(_keys(path)) == set(before) | set(done["keys"])
    # cleaning works again
    table = HudiTable(path)
    clean.run_clean(table, clean.CleanSettings(commits_retained=1))
    assert HudiTable(path).timeline.pending([Action.CLEAN]) == []


@pytest.mark.parametrize("how", ["half", "garbage"])
def test_damaged_clustering_plan(fresh_fixture, how):
    """A pending replacecommit whose requested file cannot be read is no clustering plan
    anyone can run: a failed write, rolled back once no heartbeat is alive."""
    path = fresh_fixture(COW)
    _next_write(path, "second")  # a second small file group to cluster
    before = _keys(path)
    table = HudiTable(path)
    scheduled = clustering.schedule_clustering(
        table, clustering.ClusteringSettings(), table.timeline.next_instant_time()
    )
    assert scheduled is not None
    t = scheduled.requested_time
    plan_file = Path(path) / ".hoodie" / f"{t}.replacecommit.requested"
    _damage(plan_file, how)
    done = _next_write(path)
    assert t in done["rolled_back"]
    assert any(str(plan_file) in w for w in done["warnings"]), done["warnings"]
    assert not list((Path(path) / ".hoodie").glob(f"{t}.*"))
    assert set(_keys(path)) == set(before) | set(done["keys"])


@pytest.mark.parametrize("action", [Action.COMMIT, Action.DELTA_COMMIT])
@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_requested_write(fresh_fixture, action, how):
    path = fresh_fixture(COW if action == Action.COMMIT else MOR)
    before = _keys(path)
    table = HudiTable(path)
    t = table.timeline.next_instant_time()
    requested = Path(path) / ".hoodie" / f"{t}.{action}.requested"
    requested.write_bytes(b"{\n  \"partitionToWriteStats\" : { }\n}")
    _damage(requested, how)
    done = _next_write(path)
    assert done["rolled_back"] == [t]
    assert not requested.exists()
    assert set(_keys(path)) == set(before) | set(done["keys"])


# -- leftovers ------------------------------------------------------------------------------------


def test_leftovers_are_removed_but_not_those_of_live_writers(fresh_fixture, tmp_path):
    path = fresh_fixture(MOR)
    hoodie = Path(path) / ".hoodie"
    completed = HudiTable(path).timeline.latest_completed_write.requested_time
    old = time.time() - 3600
    stale_tmp = hoodie / f".{completed}.deltacommit.0123456789abcdef.tmp"
    stale_tmp.write_bytes(b"{ half")
    os.utime(stale_tmp, (old, old))
    done_markers = hoodie / ".temp" / completed
    (done_markers / "").mkdir(parents=True)
    (done_markers / "x.parquet.marker.CREATE").write_bytes(b"")
    gone_markers = hoodie / ".temp" / "20000101000000000"  # an instant no longer on the timeline
    gone_markers.mkdir()
    stale_beat = hoodie / ".heartbeat" / completed
    stale_beat.parent.mkdir(exist_ok=True)
    stale_beat.write_bytes(b"")
    live = Writer(tmp_path, "live", path, "live", options=OCC)
    live_instant = live.wait_started()
    live_markers = hoodie / ".temp" / live_instant
    assert live_markers.exists()
    fresh_tmp = hoodie / ".20991231000000000.deltacommit.fedcba9876543210.tmp"
    fresh_tmp.write_bytes(b"{ being written")
    done = _next_write(path, options=OCC)
    assert not stale_tmp.exists() and not done_markers.exists() and not gone_markers.exists()
    assert not stale_beat.exists()
    assert fresh_tmp.exists()  # could belong to a writer at work
    assert live_markers.exists() and (hoodie / ".heartbeat" / live_instant).exists()
    # the finished writer's own markers and heartbeat went with its commit
    assert not (hoodie / ".temp" / done["instant"]).exists()
    assert not (hoodie / ".heartbeat" / done["instant"]).exists()
    live.go()
    assert live.outcome()["ok"]
    assert not live_markers.exists()
    # no heartbeat is left (the folder goes with the last one, as Hudi's single writer leaves none)
    beats = hoodie / ".heartbeat"
    assert not beats.exists() or sorted(p.name for p in beats.iterdir()) == []


@pytest.mark.parametrize("how", ["half", "empty"])
def test_spark_write_after_a_damaged_clean_plan(small_spark, tmp_path, how):
    """End to end: a damaged pending clean used to make every write publish its commit and
    then raise. Now the write succeeds and its result names the dropped plan."""
    import spark_writer
    from test_concurrency import _spark_table

    path, options = _spark_table(small_spark, tmp_path, "COPY_ON_WRITE")
    hoodie = Path(path) / ".hoodie"
    t = HudiTable(path).timeline.next_instant_time()
    plan_file = hoodie / f"{t}.clean.requested"
    plan_file.write_bytes(b"Obj\x01" + b"\x00" * 64)
    _damage(plan_file, how)
    frame = small_spark.createDataFrame([(f"n{i}", i, "new") for i in range(5)], "id string, ts long, v string")
    result = spark_writer.write(frame, path, {**options, "hoodie.clean.max.commits": "1", "hoodie.cleaner.commits.retained": "1"})
    assert any(str(plan_file) in w for w in result.warnings), result.warnings
    assert result.instant_time in [i.requested_time for i in HudiTable(path).timeline.completed_writes]
    assert {f"n{i}" for i in range(5)} <= set(_keys(path))
    assert HudiTable(path).timeline.pending() == []


def test_a_failing_clean_after_a_write_is_reported_when_asked(fresh_fixture, monkeypatch):
    """``hoodie.fail.writes.on.inline.table.service.exception=false``: nothing that fails
    after the commit is raised, a clean included."""
    from hudi_duck.core.services import inline

    path = fresh_fixture(COW)
    committed = HudiTable(path).timeline.latest_completed_write.requested_time

    def broken(table, settings):
        raise OSError("object store unavailable")

    monkeypatch.setattr(clean, "run_clean", broken)
    monkeypatch.setattr(clean, "needs_clean", lambda table, settings: True)
    settings = inline.ServiceSettings(archive_automatic=False, fail_on_service_error=False)
    outcome = inline.run_inline_services(lambda: HudiTable(path), settings, None, committed)
    assert outcome.errors and "clean" in outcome.errors[0] and "object store unavailable" in outcome.errors[0]
    with pytest.raises(Exception, match="clean"):
        inline.run_inline_services(
            lambda: HudiTable(path), inline.ServiceSettings(archive_automatic=False), None, committed
        )
