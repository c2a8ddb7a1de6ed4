"""The typed timeline models against the timeline files Apache Hudi wrote.

Every plan and metadata file of the fixtures decodes into its dataclass and encodes
back to the same bytes: v6 commit metadata as Jackson JSON (so our field order is
Hudi's), v8/v9 commit metadata, compaction and clustering plans and the v6 rollback
plan / metadata as Avro containers (with the file's sync marker, byte for byte).
Models no fixture holds (cleaner plan, clean, savepoint, restore) round-trip through
Java-identical containers of the 0.14 schemas.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hudi_duck.core.avro import models as am
from hudi_duck.core.config.table_config import TableConfig
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.timeline import codec
from hudi_duck.core.timeline.active import Timeline, payload_class
from hudi_duck.core.timeline.commit_metadata import CommitMetadata, CommitSummary, WriteStat
from hudi_duck.core.timeline.instant import Action, Instant, State
from hudi_duck.core.timeline.plans import (
    CleanerPlan,
    CompactionPlan,
    RequestedReplaceMetadata,
    RestorePlan,
    RollbackPlan,
)
from hudi_duck.core.timeline.service_metadata import (
    CleanMetadata,
    RestoreMetadata,
    RollbackMetadata,
    SavepointMetadata,
)

from test_avro_models import SAMPLES

MODELS = {
    "HoodieCompactionPlan": CompactionPlan,
    "HoodieRequestedReplaceMetadata": RequestedReplaceMetadata,
    "HoodieCleanerPlan": CleanerPlan,
    "HoodieRollbackPlan": RollbackPlan,
    "HoodieRestorePlan": RestorePlan,
    "HoodieCleanMetadata": CleanMetadata,
    "HoodieRollbackMetadata": RollbackMetadata,
    "HoodieSavepointMetadata": SavepointMetadata,
    "HoodieRestoreMetadata": RestoreMetadata,
    "HoodieCommitMetadata": CommitMetadata,
    "HoodieReplaceCommitMetadata": CommitMetadata,
}


def _timelines(fixture_tables) -> list[tuple[str, Path]]:
    """Every timeline folder of the fixtures (their metadata tables' too)."""
    out = []
    for fid, base in sorted(fixture_tables.items()):
        for folder in sorted(Path(base).rglob("*")):
            if folder.is_dir() and (folder.name == "timeline" or (folder.name == ".hoodie" and not (folder / "timeline").is_dir())):
                if any(Instant.parse_file_name(p.name) for p in folder.iterdir()):
                    out.append((fid, folder))
    return out


def _timeline_files(fixture_tables) -> list[tuple[str, Path, Instant]]:
    out = []
    for fid, folder in _timelines(fixture_tables):
        for path in sorted(folder.iterdir()):
            instant = Instant.parse_file_name(path.name)
            if instant is not None and path.is_file() and path.stat().st_size:
                out.append((fid, path, instant))
    return out


def _encode_like(model, data: bytes) -> bytes:
    if isinstance(model, CommitMetadata):
        if data.startswith(codec.AVRO_MAGIC):
            return model.to_bytes(8, am.container_sync_marker(data))
        return model.to_bytes(6)
    return model.to_bytes(am.container_sync_marker(data))


def test_every_fixture_timeline_file_round_trips_byte_for_byte(fixture_tables):
    seen: dict[str, int] = {}
    for fid, path, instant in _timeline_files(fixture_tables):
        data = path.read_bytes()
        cls = payload_class(instant)
        if cls is None:
            # indexing plans / metadata: not a payload of the write path
            assert instant.action == Action.INDEXING, path
            continue
        model = cls.from_bytes(data, str(path))
        assert model is not None, path
        name = model.MODEL if data.startswith(codec.AVRO_MAGIC) else "json:" + model.MODEL
        seen[name] = seen.get(name, 0) + 1
        assert _encode_like(model, data) == data, f"{fid}: {path.name} does not encode back to its bytes"
        # decoding the encoded file gives the same model
        assert cls.from_bytes(_encode_like(model, data)) == model
    assert {
        "json:HoodieCommitMetadata",  # v6 commits, delta commits and their .inflight profiles
        "HoodieCommitMetadata",  # v8/v9
        "HoodieReplaceCommitMetadata",
        "HoodieRequestedReplaceMetadata",
        "HoodieCompactionPlan",
        "HoodieRollbackPlan",
        "HoodieRollbackMetadata",
    } <= set(seen), seen


def test_commit_summaries_say_what_the_typed_metadata_says(fixture_tables):
    """What planning reads of a commit (v6 JSON, v8/v9 Avro) equals the typed record's answer."""
    kinds = set()
    for _, path, instant in _timeline_files(fixture_tables):
        if payload_class(instant) is not CommitMetadata:
            continue
        data = path.read_bytes()
        metadata = CommitMetadata.from_bytes(data)
        summary = CommitSummary.of_bytes(data, str(path))
        assert summary == CommitSummary.of_record(codec.decode_record(data, str(path))), path
        expected = [
            (partition, s.file_id, s.path, max(int(s.file_size_in_bytes or 0), 0), max(int(s.log_offset or 0), 0))
            for partition, s in metadata.iter_stats()
        ]
        got = [(f.partition_path, f.file_id, f.path, f.size, f.log_offset) for f in summary.files]
        assert got == expected, path
        assert summary.schema == metadata.schema
        assert summary.operation_type == metadata.operation_type
        assert summary.replaced_file_ids() == metadata.replaced_file_ids()
        assert summary.file_ids() == metadata.file_ids()
        is_log = [(f.path or "").rsplit("/", 1)[-1].startswith(".") for f in summary.files]
        kinds.add((data.startswith(codec.AVRO_MAGIC), metadata.is_replace, any(is_log)))
    assert {k[0] for k in kinds} == {True, False} and any(k[1] for k in kinds) and any(k[2] for k in kinds), kinds


def test_commit_json_the_typed_decoder_refuses_is_read_as_the_codec_reads_it(tmp_path):
    """Values of unexpected types take the codec's path (same answer as the full record);
    damaged JSON fails as the codec fails, naming the file."""
    from hudi_duck.core.errors import CorruptFileError

    record = {
        "partitionToWriteStats": {"p": [{"fileId": "f1", "path": "p/f1_0-1-0_20240101000000000.parquet",
                                         "fileSizeInBytes": "1234", "logOffset": None}, None]},
        "compacted": False, "extraMetadata": {"schema": ""}, "operationType": "INSERT",
    }
    summary = CommitSummary.of_bytes(json.dumps(record).encode(), "x.commit")
    assert summary == CommitSummary.of_record(record)
    assert [(f.partition_path, f.file_id, f.size, f.log_offset) for f in summary.files] == [("p", "f1", 1234, 0)]
    assert summary.schema is None and summary.operation_type == "INSERT"
    assert CommitSummary.of_bytes(b"", "x.commit") == CommitSummary()
    with pytest.raises(CorruptFileError, match="x.commit"):
        CommitSummary.of_bytes(b'{"partitionToWriteStats": {', "x.commit")


def test_data_files_of_a_commit_summary():
    """The base and log files a commit wrote, paths split and names parsed (once per summary);
    stats without a path or with another name are left out; a summary still equals its twin."""
    base = "p/q/f1-0_1-2-3_20240101000000000.parquet"
    log = "/p/q/.f2-0_20240101000000000.log.2_0-1-1"
    record = {
        "partitionToWriteStats": {"p/q": [
            {"fileId": "f1-0", "path": base, "fileSizeInBytes": 10},
            {"fileId": "f2-0", "path": log, "fileSizeInBytes": 5, "logOffset": 7},
            {"fileId": "f3-0", "path": "p/q/notes.txt", "fileSizeInBytes": 1},
            {"fileId": "f4-0", "path": "", "fileSizeInBytes": 1},
            {"fileId": "f5-0", "path": "top_1-2-3_20240101000000001.parquet", "fileSizeInBytes": 2},
        ]},
    }
    summary = CommitSummary.of_bytes(json.dumps(record).encode(), "x.commit")
    files = summary.files
    assert summary.data_files == (
        ("p/q", "f1-0_1-2-3_20240101000000000.parquet", base, "f1-0", "20240101000000000", files[0]),
        ("p/q", ".f2-0_20240101000000000.log.2_0-1-1", log.strip("/"), "f2-0", "20240101000000000", files[1]),
        ("", "top_1-2-3_20240101000000001.parquet", files[4].path, "top", "20240101000000001", files[4]),
    )
    assert summary.data_files is summary.data_files
    assert summary == CommitSummary.of_record(record)


def test_commit_summaries_without_msgspec_are_the_same(fixture_tables, monkeypatch):
    """A Python without msgspec (executors need only the core's own modules) reads the codec's record."""
    from hudi_duck.core.timeline import commit_metadata

    files = [(path, path.read_bytes()) for _, path, i in _timeline_files(fixture_tables) if payload_class(i) is CommitMetadata]
    fast = [CommitSummary.of_bytes(data, str(path)) for path, data in files]
    monkeypatch.setattr(commit_metadata, "_JSON_DECODER", False)
    assert [CommitSummary.of_bytes(data, str(path)) for path, data in files] == fast


def test_a_commit_summary_is_decoded_once_per_process_and_never_from_other_bytes(tmp_path):
    """Tables opened again share summaries of identical commit files; a file whose bytes changed
    (same name, same size) is decoded afresh."""
    from hudi_duck.core.timeline import active

    def commit_bytes(size: int) -> bytes:
        stat = WriteStat(file_id="f1", path=f"p/f1_0-1-0_20240101000000000.parquet", partition_path="p", file_size_in_bytes=size)
        return CommitMetadata.of([stat], operation_type="INSERT").to_bytes(6)

    first, second = commit_bytes(1000), commit_bytes(2000)
    assert len(first) == len(second) and first != second
    active.clear_summary_cache()
    uri = str(tmp_path / "20240101000000000.commit")
    a = active._summary_of(uri, first)
    assert active._summary_of(uri, bytes(first)) is a
    b = active._summary_of(uri, second)
    assert b is not a and b.files[0].size == 2000 and a.files[0].size == 1000


def test_a_local_commit_file_known_by_its_stat_is_not_read_again_unless_rewritten(tmp_path, monkeypatch):
    """A local commit file's summary is kept by its ``stat`` (device, inode, size, modified and
    changed times): a table opened again does not read it, and the same file rewritten with
    bytes of the same size, even with its modified time put back, is read and decoded afresh."""
    import os

    from hudi_duck.core.config.table_config import TableConfig
    from hudi_duck.core.storage.storage import Storage
    from hudi_duck.core.timeline import active

    def commit_bytes(size: int) -> bytes:
        stat = WriteStat(file_id="f1", path=f"p/f1_0-1-0_20240101000000000.parquet", partition_path="p", file_size_in_bytes=size)
        return CommitMetadata.of([stat], operation_type="INSERT").to_bytes(6)

    first, second = commit_bytes(1000), commit_bytes(2000)
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    commit = hoodie / "20240101000000000.commit"
    commit.write_bytes(first)
    storage = Storage(str(tmp_path))
    config = TableConfig({"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6"})
    active.clear_summary_cache()

    def summary():
        timeline = active.Timeline.load(storage, config)
        return timeline.commit_summary(timeline.completed_writes[0])

    assert summary().files[0].size == 1000
    reads = []
    real = active.Timeline.read_details
    monkeypatch.setattr(active.Timeline, "read_details", lambda self, i: reads.append(i) or real(self, i))
    assert summary().files[0].size == 1000 and reads == []  # known: not read again
    before = os.stat(commit)
    commit.write_bytes(second)
    os.utime(commit, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(commit).st_size == before.st_size and os.stat(commit).st_mtime_ns == before.st_mtime_ns
    assert summary().files[0].size == 2000 and len(reads) == 1


def test_v6_write_stats_are_hudis_fields_in_hudis_order(fixture_tables):
    """Stats of v6 commits: Jackson's HoodieWriteStat order, log writes with the delta fields after."""
    kinds = set()
    for _, path, instant in _timeline_files(fixture_tables):
        data = path.read_bytes()
        if data.startswith(codec.AVRO_MAGIC) or instant.action not in Action.WRITE_ACTIONS:
            continue
        raw = json.loads(data)
        metadata = CommitMetadata.from_bytes(data)
        for partition, stats in raw["partitionToWriteStats"].items():
            for raw_stat, stat in zip(stats, metadata.partition_to_write_stats[partition]):
                expected = WriteStat.JSON_KEYS + (WriteStat.DELTA_JSON_KEYS if "logVersion" in raw_stat else ())
                assert tuple(raw_stat) == expected
                assert stat.is_delta == ("logVersion" in raw_stat)
                assert stat.extra == {}
                kinds.add(stat.is_delta)
    assert kinds == {True, False}


def test_v9_write_stats_keep_the_1x_fields(fixture_tables):
    fid = "sample_table/mor/avro/v9_txns_simple_meta"
    folder = Path(fixture_tables[fid]) / ".hoodie" / "timeline"
    (compaction,) = [p for p in folder.iterdir() if p.name.endswith(".commit")]
    metadata = CommitMetadata.from_bytes(compaction.read_bytes())
    assert metadata.compacted is True and metadata.operation_type == "COMPACT"
    stats = metadata.write_stats()
    assert stats and all(s.prev_base_file and s.prev_base_file.endswith(".parquet") for s in stats)
    assert all(s.total_log_read_time_ms is not None and s.num_updates is not None for s in stats)
    assert metadata.version is None  # as Hudi 1.x wrote it


def test_unknown_fields_round_trip():
    """Fields of another Hudi version stay in ``extra`` and are written back."""
    stat = {**WriteStat(file_id="f", path="p/f.parquet", partition_path="p").to_json_record(), "futureField": 7}
    raw = {
        "partitionToWriteStats": {"p": [stat]},
        "compacted": False,
        "extraMetadata": {},
        "operationType": "UPSERT",
        "futureTopLevel": {"a": 1},
    }
    data = codec.encode_json(raw)
    metadata = CommitMetadata.from_bytes(data)
    assert metadata.extra == {"futureTopLevel": {"a": 1}}
    assert metadata.write_stats()[0].extra == {"futureField": 7}
    assert metadata.to_bytes(6) == data
    plan = {**SAMPLES["HoodieCompactionPlan"], "missingSchedulePartitions": ["x"]}
    typed = CompactionPlan.from_record(plan)
    assert typed.extra == {"missingSchedulePartitions": ["x"]}
    assert typed.to_record() == plan


@pytest.mark.parametrize("name", sorted(n for n in SAMPLES if n in MODELS))
def test_models_without_fixture_files_round_trip(name):
    """0.14 containers of every model (Java's schema text, header and block layout)."""
    data = am.write_container(name, SAMPLES[name])
    model = MODELS[name].from_bytes(data)
    assert model.to_record() == SAMPLES[name]
    assert model.to_bytes(am.container_sync_marker(data)) == data
    # built from the dataclasses alone (no writer schema kept): the same bytes
    fresh = MODELS[name].from_record(SAMPLES[name])
    assert fresh.writer_schema is None
    assert fresh.to_bytes(am.container_sync_marker(data)) == data


def test_commit_metadata_of_a_v8_table_needs_hudis_1x_schema():
    from hudi_duck.core.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError, match="1.x"):
        CommitMetadata(operation_type="UPSERT").to_bytes(8)


def test_empty_and_corrupt_files():
    from hudi_duck.core.errors import CorruptFileError

    assert codec.decode(b"") is None
    assert CommitMetadata.from_bytes(b"") == CommitMetadata()
    assert CompactionPlan.from_bytes(b"") is None
    with pytest.raises(CorruptFileError, match="x.compaction.requested"):
        CompactionPlan.from_bytes(b"\x00garbage", "x.compaction.requested")
    with pytest.raises(CorruptFileError, match="neither"):
        codec.decode(b"{not json", "x.commit")


# -- the timeline answers once: plans and savepoints ------------------------------------------------


def _timeline(base: str) -> Timeline:
    storage = Storage(base)
    return Timeline.load(storage, TableConfig.load(storage))


def test_compaction_and_clustering_plans_of_v9_fixtures(fixture_tables):
    for fid in ("sample_table/mor/avro/v9_txns_simple_meta", "sample_table/cow/v9_txns_simple_meta"):
        timeline = _timeline(fixture_tables[fid])
        assert timeline.compaction_plans() == [] and timeline.clustering_plans() == []  # all completed
        clustering = timeline.clustering_plans(pending_only=False)
        assert [c.action for c in clustering] == [Action.CLUSTERING]
        (entry,) = clustering
        assert entry.state is State.COMPLETED and entry.completion_time
        assert entry.plan.file_groups and all(fg[1] for fg in entry.plan.file_groups)
        done = timeline.commit_metadata(timeline.state_file(entry.requested_time, State.COMPLETED))
        replaced = {(p, f) for p, ids in done.replaced_file_ids().items() for f in ids}
        assert replaced == set(entry.plan.file_groups)
        # the insert overwrite's requested replace commit holds no clustering plan
        others = [g.requested_time for g in timeline.instant_groups() if g.pending_action == Action.REPLACE_COMMIT]
        assert all(not timeline.plan(t).is_clustering for t in others)
    mor = _timeline(fixture_tables["sample_table/mor/avro/v9_txns_simple_meta"])
    (compaction,) = mor.compaction_plans(pending_only=False)
    ops = compaction.plan.operations
    assert ops and all(op.base_file_name and op.log_file_names for op in ops)
    done = mor.commit_metadata(mor.state_file(compaction.requested_time, State.COMPLETED))
    assert {(p, s.file_id) for p, s in done.iter_stats()} == set(compaction.plan.file_groups)
    assert mor.compaction_times() == frozenset({compaction.requested_time})


def test_json_scalars_are_written_as_jackson_writes_them():
    """Strings keep non-ASCII text and escape quotes, backslashes and control characters (in
    upper-case hex, as Jackson's ``CharTypes``; a literal backslash-u00 stays as it is); ints,
    floats, booleans and null as JSON has them; keys are quoted the same way."""
    assert codec.encode_json(["\x1f\x0b", "\\u001f"]).decode() == '[ "\\u001F\\u000B", "\\\\u001f" ]'
    value = {"s": 'é\u2028 "q" \\ \n\t\x01', "i": -5, "big": 2**40, "f": 0.5, "t": True, "n": None, "k\u00e9": [1, "a"], "e": {}}
    assert codec.encode_json(value).decode("utf-8") == (
        '{\n  "s" : "é\u2028 \\"q\\" \\\\ \\n\\t\\u0001",\n  "i" : -5,\n  "big" : 1099511627776,\n  "f" : 0.5,\n'
        '  "t" : true,\n  "n" : null,\n  "k\u00e9" : [ 1, "a" ],\n  "e" : { }\n}'
    )


def test_parsed_instants_are_the_values_the_constructor_makes():
    """``Instant.parse_file_name`` skips the dataclass's generated ``__init__`` for speed: what
    it makes must be equal, hash equal, print equal and stay frozen."""
    import dataclasses

    from hudi_duck.core.timeline.instant import Instant, State

    cases = {
        "20240418173235694.commit": Instant("20240418173235694", "commit", State.COMPLETED),
        "20240418173235694.inflight": Instant("20240418173235694", "commit", State.INFLIGHT),
        "20240418173235694.deltacommit.requested": Instant("20240418173235694", "deltacommit", State.REQUESTED),
        "20240418173235694_20240418173236001.replacecommit": Instant(
            "20240418173235694", "replacecommit", State.COMPLETED, "20240418173236001"
        ),
    }
    for name, made in cases.items():
        parsed = Instant.parse_file_name(name)
        assert parsed == made and hash(parsed) == hash(made) and repr(parsed) == repr(made), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            parsed.action = "clean"
