"""Archived timelines.

* Layout 1 (v6): archive every instant of the v6 fixtures with our 0.14-style writer,
  read it back and compare with the active timeline (instants, states, commit and
  rollback metadata). Self-consistent only: no fixture has archived data.
* Layout 2 (v8+): a synthetic LSM history folder laid out like Java's
  ``LSMTimelineWriter`` (``_version_``, ``manifest_N``, ``<min>_<max>_<level>.parquet``)
  holding the v9 fixtures' real completed-instant files. Untested against real files.
"""

from __future__ import annotations

import datetime as _dt
import json
import os

import pyarrow.parquet as pq
import pytest

from hudi_duck.core.timeline import archived as at
from hudi_duck.core.avro import models as am
from hudi_duck.core.timeline.commit_metadata import CommitMetadata
from hudi_duck.core.errors import UnsupportedFeatureError
from hudi_duck.core.timeline.instant import Action, State, format_instant_time
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, read_log_file
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.config.table_config import TableConfig
from hudi_duck.core.timeline.active import Timeline

from conftest import FIXTURE_IDS

V6_IDS = [fid for fid in FIXTURE_IDS if fid.rsplit("/", 1)[-1].startswith("v6_")]
V9_IDS = [fid for fid in FIXTURE_IDS if fid.rsplit("/", 1)[-1].startswith("v9_")]


def _open(base: str):
    storage = Storage(base)
    config = TableConfig.load(storage)
    return storage, config, Timeline.load(storage, config)


def _stat_subset(stat) -> dict:
    record = stat.to_record()
    return {k: record.get(k) for k in at.AVRO_WRITE_STAT_FIELDS if k != "totalLogFiles"}


def _assert_commit_metadata_matches(archived: CommitMetadata, active: CommitMetadata) -> None:
    assert set(archived.partition_to_write_stats) == set(active.partition_to_write_stats)
    for partition, stats in active.partition_to_write_stats.items():
        got = archived.partition_to_write_stats[partition]
        assert [_stat_subset(s) for s in got] == [_stat_subset(s) for s in stats]
        assert all(s.total_log_files is None for s in got)  # no such JSON field in 0.14
    expected_extra = dict(active.extra_metadata, **{at.ROLLING_STAT_KEY: ""})
    assert archived.extra_metadata == expected_extra
    expected_op = "COMPACT" if active.compacted and not active.is_replace else (active.operation_type or "UNKNOWN")
    assert archived.operation_type == expected_op
    assert archived.compacted is False  # not in the 0.14 Avro model
    if active.is_replace:
        assert archived.partition_to_replace_file_ids == active.partition_to_replace_file_ids


@pytest.mark.parametrize("fid", V6_IDS)
def test_v6_archive_round_trip(fid, fresh_fixture):
    base = fresh_fixture(fid)
    storage, config, timeline = _open(base)
    assert config.timeline_layout_version == 1
    assert at.ArchivedTimelineV1.load(storage, config) == []  # fixtures have empty archives

    entries = at.meta_entries_for(storage, config, timeline)
    expected_keys = [
        (g.requested_time, g.by_state[s].action, s)
        for g in timeline.instant_groups()
        for s in (State.REQUESTED, State.INFLIGHT, State.COMPLETED)
        if s in g.by_state
    ]
    assert [(e["commitTime"], e["actionType"], State(e["actionState"])) for e in entries] == expected_keys
    if not entries:
        assert at.write_archive_file(storage, config, entries) is None
        return

    path = at.write_archive_file(storage, config, entries, batch_size=4)
    assert path == f"{config.archive_path}/.commits_.archive.1_1-0-1"

    # framing: Avro data blocks of <= 4 records, header SCHEMA only, the 0.14 entry schema
    blocks = read_log_file(storage.read(path), path)
    assert len(blocks) == (len(entries) + 3) // 4
    for block in blocks:
        assert block.block_type is BlockType.AVRO_DATA_BLOCK
        assert set(block.header) == {HeaderKey.SCHEMA}
        assert block.header[HeaderKey.SCHEMA] == am.java_schema("HoodieArchivedMetaEntry")
        assert block.footer == {}

    archived = at.ArchivedTimelineV1.load(storage, config)
    assert [(i.requested_time, i.action, i.state) for i in archived] == expected_keys
    mtimes = {info.name: info.mtime for info in storage.list(timeline.timeline_dir)}
    for instant in archived:
        active = timeline.state_file(instant.requested_time, instant.state)
        expected_time = format_instant_time(_dt.datetime.fromtimestamp(mtimes[active.file_name(1)]))
        assert instant.state_transition_time == expected_time
        assert instant.completion_time == (expected_time if instant.is_completed else None)
        assert instant.to_instant().requested_time == active.requested_time

    by_key = {(i.requested_time, i.state): i for i in archived}
    for instant in timeline.completed_writes:
        got = by_key[(instant.requested_time, State.COMPLETED)]
        _assert_commit_metadata_matches(got.commit_metadata(), timeline.commit_metadata(instant))
    for instant in timeline.completed([Action.ROLLBACK]):
        got = by_key[(instant.requested_time, State.COMPLETED)]
        assert got.payload_field == "hoodieRollbackMetadata"
        assert got.metadata == timeline.avro_details(instant.requested_time, State.COMPLETED)
        # 0.14 archives no payload for the rollback plan states
        assert by_key[(instant.requested_time, State.REQUESTED)].entry["hoodieRollbackMetadata"] is None

    # completed-only view == the active timeline's completed instants
    completed = at.ArchivedTimelineV1.load(storage, config, completed_only=True)
    assert [(i.requested_time, i.action) for i in completed] == [
        (i.requested_time, i.action) for i in timeline.completed()
    ]
    assert at.load_archived_timeline(storage, config) == archived

    # a second archival rolls over to the next version; the reader keeps one entry per state
    second = at.write_archive_file(storage, config, entries[:2])
    assert second == f"{config.archive_path}/.commits_.archive.2_1-0-1"
    assert [(i.requested_time, i.action, i.state) for i in at.ArchivedTimelineV1.load(storage, config)] == expected_keys
    appended = at.write_archive_file(storage, config, entries[-1:], append=True)
    assert appended == second
    assert len(read_log_file(storage.read(second))) == 2


def test_meta_entry_conversion_rules():
    json_cm = {
        "partitionToWriteStats": {
            "p": [
                {
                    "fileId": "f1",
                    "path": "p/f1.parquet",
                    "cdcStats": None,
                    "prevCommit": "null",
                    "numWrites": 3,
                    "tempPath": None,
                    "logVersion": 1,
                    "totalLogFilesCompacted": 2,
                }
            ]
        },
        "compacted": True,
        "extraMetadata": {"schema": "{}"},
        "operationType": "UPSERT",
    }
    entry = at.create_meta_entry(Action.COMMIT, State.COMPLETED, "1", json.dumps(json_cm).encode(), "2")
    avro = entry["hoodieCommitMetadata"]
    assert avro["operationType"] == "COMPACT"
    assert avro["version"] is None
    assert avro["extraMetadata"] == {"schema": "{}", "ROLLING_STAT": ""}
    assert list(avro["partitionToWriteStats"]["p"][0]) == list(at.AVRO_WRITE_STAT_FIELDS)
    assert avro["partitionToWriteStats"]["p"][0]["numWrites"] == 3
    # empty completed file: entry without payload; empty requested commit: empty metadata
    empty = at.create_meta_entry(Action.COMMIT, State.COMPLETED, "1", b"", None)
    assert set(empty) == {"commitTime", "actionState", "stateTransitionTime", "actionType"}
    requested = at.create_meta_entry(Action.DELTA_COMMIT, State.REQUESTED, "1", b"", None)
    assert requested["hoodieCommitMetadata"]["operationType"] == "UNKNOWN"
    # clustering-style replacecommit: requested plan, empty inflight, completed replace metadata
    plan = am.write_container("HoodieRequestedReplaceMetadata", {"operationType": "CLUSTER", "version": 1})
    req = at.create_meta_entry(Action.REPLACE_COMMIT, State.REQUESTED, "5", plan)
    assert req["hoodieRequestedReplaceMetadata"]["operationType"] == "CLUSTER"
    assert "HoodieInflightReplaceMetadata" not in at.create_meta_entry(Action.REPLACE_COMMIT, State.INFLIGHT, "5", b"")
    done = at.create_meta_entry(
        Action.REPLACE_COMMIT,
        State.COMPLETED,
        "5",
        json.dumps({"partitionToReplaceFileIds": {"p": ["f0"]}, "compacted": False, "operationType": "CLUSTER"}).encode(),
    )
    assert done["hoodieReplaceCommitMetadata"]["partitionToReplaceFileIds"] == {"p": ["f0"]}
    # compaction plan only on the requested state
    cplan = am.write_container("HoodieCompactionPlan", {"operations": [], "version": 2})
    assert at.create_meta_entry(Action.COMPACTION, State.REQUESTED, "7", cplan)["hoodieCompactionPlan"]["version"] == 2
    assert "hoodieCompactionPlan" not in at.create_meta_entry(Action.COMPACTION, State.INFLIGHT, "7", cplan)
    clean_plan = am.write_container("HoodieCleanerPlan", {"policy": "KEEP_LATEST_COMMITS", "version": 2})
    assert at.create_meta_entry(Action.CLEAN, State.REQUESTED, "8", clean_plan)["hoodieCleanerPlan"]["version"] == 2
    with pytest.raises(UnsupportedFeatureError):
        at.create_meta_entry(Action.INDEXING, State.COMPLETED, "9", b"x")

    # all of them encode with the archived-entry schema and decode to ArchivedInstants
    entries = [entry, empty, requested, req, done]
    content = at.encode_archive_blocks(entries, batch_size=2)
    blocks = read_log_file(content)
    assert len(blocks) == 3
    decoded = at.ArchivedTimelineV1.read_entries(content)
    instants = [at.instant_from_entry(e) for e in decoded]
    assert instants[0].commit_metadata().operation_type == "COMPACT"
    assert instants[0].completion_time == "2"
    assert instants[3].plan["operationType"] == "CLUSTER" and instants[3].metadata is None
    assert instants[4].commit_metadata().partition_to_replace_file_ids == {"p": ["f0"]}
    assert instants[1].metadata is None and instants[1].payload_field is None


# -- layout 2: synthetic LSM timeline ------------------------------------------------------------


def _lsm_rows(storage, timeline):
    """HoodieLSMTimelineInstant rows for the completed instants, as createLSMTimelineInstant builds them."""
    rows = []
    for group in timeline.instant_groups():
        done = group.by_state.get(State.COMPLETED)
        if done is None:
            continue
        plan = None
        pending = group.pending_action
        if pending in (Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING, Action.REPLACE_COMMIT, Action.CLEAN):
            requested = group.by_state.get(State.REQUESTED)
            if requested is not None:
                plan = timeline.read_details(requested) or None
        rows.append(
            {
                "instantTime": done.requested_time,
                "completionTime": done.completion_time,
                "action": done.action,
                "metadata": timeline.read_details(done) or None,
                "plan": plan,
                "version": 1,
            }
        )
    return rows


@pytest.mark.parametrize("fid", V9_IDS)
def test_lsm_timeline_synthetic(fid, fresh_fixture):
    base = fresh_fixture(fid)
    storage, config, timeline = _open(base)
    assert config.archive_path == ".hoodie/timeline/history"
    assert at.LSMTimeline.load(storage, config) == []

    rows = _lsm_rows(storage, timeline)
    assert len(rows) >= 4
    half = len(rows) // 2
    first = at.LSMTimeline.write_layer0_file(storage, config, rows[:half])
    second = at.LSMTimeline.write_layer0_file(storage, config, rows[half:])
    folder = config.archive_path
    assert first == f"{folder}/{rows[0]['instantTime']}_{rows[half - 1]['instantTime']}_0.parquet"
    assert storage.read(f"{folder}/_version_") == b"2"
    manifest = json.loads(storage.read(f"{folder}/manifest_2"))
    assert [f["fileName"] for f in manifest["files"]] == [os.path.basename(first), os.path.basename(second)]
    assert manifest["files"][0]["fileLen"] == storage.size(first)
    assert json.loads(storage.read(f"{folder}/manifest_1"))["files"] == manifest["files"][:1]
    # the parquet files look like parquet-avro output of HoodieLSMTimelineInstant
    meta = pq.read_schema(storage.open(first)).metadata
    assert json.loads(meta[b"parquet.avro.schema"])["name"] == "HoodieLSMTimelineInstant"

    # files not in the latest manifest and temp manifests are ignored
    storage.write(f"{folder}/00000000000000000_99999999999999999_1.parquet", b"not parquet")
    storage.write(f"{folder}/manifest_3.tmp", b"{")

    loaded = at.LSMTimeline.load(storage, config)
    expected = [(i.requested_time, i.action, i.completion_time) for i in timeline.completed()]
    assert [(i.requested_time, i.action, i.completion_time) for i in loaded] == expected
    assert all(i.state is State.COMPLETED for i in loaded)
    assert at.load_archived_timeline(storage, config) == loaded

    for instant in loaded:
        if instant.action in Action.WRITE_ACTIONS:
            active = timeline.commit_metadata(timeline.state_file(instant.requested_time, State.COMPLETED))
            assert instant.commit_metadata() == active
        elif instant.action == Action.INDEXING:
            assert instant.metadata == timeline.avro_details(instant.requested_time, State.COMPLETED)
    planned = {r["instantTime"] for r in rows if r["plan"]}
    assert planned  # both v9 fixtures have a clustering plan (and MOR a compaction plan)
    for instant in loaded:
        assert (instant.plan is not None) == (instant.requested_time in planned)
        if timeline.was_action(instant.requested_time, Action.COMPACTION):
            assert "operations" in instant.plan
        if timeline.was_action(instant.requested_time, Action.CLUSTERING):
            assert instant.plan["operationType"] == "CLUSTER"

    # time-range pruning by file name and by row
    cut = rows[half]["instantTime"]
    later = at.LSMTimeline.load(storage, config, start=cut)
    assert [i.requested_time for i in later] == [r["instantTime"] for r in rows[half:]]
    assert [i.requested_time for i in at.LSMTimeline.load(storage, config, end=rows[0]["instantTime"])] == [
        rows[0]["instantTime"]
    ]

    # _version_ missing or unreadable: fall back to the highest manifest
    storage.write(f"{folder}/_version_", b"garbage")
    assert at.LSMTimeline.latest_snapshot_version(storage, folder) == 2
    storage.delete(f"{folder}/_version_")
    assert at.LSMTimeline.load(storage, config) == loaded

    with pytest.raises(UnsupportedFeatureError):
        at.write_archive_file(storage, config, [{"commitTime": "1", "actionType": "commit"}])
