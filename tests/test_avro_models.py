"""Hudi's Avro models against the Avro timeline files the fixtures hold.

* v6 rollback plan / metadata (written by Hudi 0.14/0.15): our schema text is
  identical to the embedded one, and re-encoding reproduces the files byte for byte.
* v8/v9 plans and metadata (Hudi 1.x schemas): decoding with our 0.14 schema as the
  reader schema equals decoding with the writer schema on every shared field, and
  the field differences are exactly the documented 1.x additions.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pytest

from hudi_duck.core.avro import models as am


def _timeline_avro_files(fixture_tables: dict[str, str]) -> list[tuple[str, Path]]:
    out = []
    for fid, base in sorted(fixture_tables.items()):
        for path in sorted(Path(base).rglob("*")):
            if not path.is_file() or ".hoodie" not in path.parts:
                continue
            parent = path.parent
            # timeline folders: .hoodie, .hoodie/timeline (also the metadata table's)
            if parent.name not in (".hoodie", "timeline"):
                continue
            with open(path, "rb") as handle:
                if handle.read(4) != am.AVRO_MAGIC:
                    continue
            out.append((fid, path))
    return out


@pytest.fixture(scope="module")
def avro_files(fixture_tables):
    files = _timeline_avro_files(fixture_tables)
    assert files, "the fixtures should hold Avro timeline files"
    return files


def _writer_name(data: bytes) -> str:
    return json.loads(am.container_schema(data))["name"]


def _common_equal(ours, theirs, path="$"):
    """Values agree wherever both sides have a field (recursively)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in set(ours) & set(theirs):
            _common_equal(ours[key], theirs[key], f"{path}.{key}")
        return
    if isinstance(ours, list) and isinstance(theirs, list):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _common_equal(a, b, f"{path}[{i}]")
        return
    assert ours == theirs, path


def _record_fields(node, out):
    if isinstance(node, list):
        for branch in node:
            _record_fields(branch, out)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind == "record":
            out.setdefault(node["name"], [f["name"] for f in node["fields"]])
            for f in node["fields"]:
                _record_fields(f["type"], out)
        elif kind == "array":
            _record_fields(node["items"], out)
        elif kind == "map":
            _record_fields(node["values"], out)
        elif isinstance(kind, (dict, list)):
            _record_fields(kind, out)
    return out


#: Fields Hudi 1.x added to the 0.14 records (what the v8/v9 fixtures carry in addition).
EXPECTED_1X_ADDITIONS = {
    "HoodieCommitMetadata": ["compacted"],
    "HoodieReplaceCommitMetadata": ["compacted"],
    "HoodieWriteStat": [
        "logVersion",
        "logOffset",
        "baseFile",
        "logFiles",
        "cdcStats",
        "prevBaseFile",
        "minEventTime",
        "maxEventTime",
        "runtimeStats",
        "totalLogFilesCompacted",
        "totalLogReadTimeMs",
        "totalLogSizeCompacted",
        "tempPath",
        "numUpdates",
    ],
    "HoodieRuntimeStats": ["totalScanTime", "totalCreateTime", "totalUpsertTime"],  # new record in 1.x
    "HoodieCompactionPlan": ["missingSchedulePartitions"],
    "HoodieClusteringPlan": ["missingSchedulePartitions"],
    "HoodieIndexPartitionInfo": ["extraMetadata"],
}


# -- v6: exact identity with Hudi 0.14/0.15 output ---------------------------------------------

V6_ROLLBACK = "sample_table/mor/parquet/v6_nonpartitioned_rollback"


def _v6_rollback_files(fixture_tables):
    hoodie = Path(fixture_tables[V6_ROLLBACK]) / ".hoodie"
    return [
        (hoodie / "20250126040936578.rollback.requested", "HoodieRollbackPlan"),
        (hoodie / "20250126040936578.rollback", "HoodieRollbackMetadata"),
    ]


def test_v6_schema_text_identical(fixture_tables):
    for path, name in _v6_rollback_files(fixture_tables):
        data = path.read_bytes()
        embedded = am.container_schema(data)
        assert _writer_name(data) == name
        assert am.java_schema(name) == embedded, path.name
        assert am.canonical_form(am.schema(name)) == am.canonical_form(embedded)


def test_v6_container_round_trip_byte_identical(fixture_tables):
    for path, name in _v6_rollback_files(fixture_tables):
        data = path.read_bytes()
        record = am.read_container(data)
        # with the file's own sync marker the bytes are identical
        assert am.write_container(name, record, am.container_sync_marker(data)) == data
        # with a random marker the content still round-trips
        again = am.write_container(name, record)
        assert again != data
        assert am.read_container(again) == record
        assert am.read_container(again, name) == record
        with pytest.raises(ValueError):
            am.write_container(name, record, b"short")


def test_v6_rollback_content(fixture_tables):
    (plan_path, _), (meta_path, _) = _v6_rollback_files(fixture_tables)
    plan = am.read_container(plan_path.read_bytes(), "HoodieRollbackPlan")
    assert plan["instantToRollback"] == {"commitTime": "20250126040826878", "action": "deltacommit"}
    assert plan["version"] == 1
    meta = am.read_container(meta_path.read_bytes(), "HoodieRollbackMetadata")
    assert meta["commitsRollback"] == ["20250126040826878"]
    assert meta["instantsRollback"] == [{"commitTime": "20250126040826878", "action": "deltacommit"}]


def test_container_header_matches_java(avro_files):
    """Hudi's files carry only avro.schema (no avro.codec: the null codec) and one block."""
    for _, path in avro_files:
        data = path.read_bytes()
        reader = fastavro.reader(io.BytesIO(data))
        assert set(reader.metadata) == {"avro.schema"}, path
        assert reader.codec == "null"
        assert len(list(reader)) == 1
    ours = am.write_container("HoodieCleanerPlan", {"policy": "KEEP_LATEST_COMMITS"})
    reader = fastavro.reader(io.BytesIO(ours))
    assert set(reader.metadata) == {"avro.schema"}
    assert ours.endswith(am.container_sync_marker(ours))


# -- all fixture files: decode with our schemas as reader schemas --------------------------------


def test_every_timeline_avro_file_decodes_with_our_schema(avro_files):
    names = set()
    for fid, path in avro_files:
        data = path.read_bytes()
        name = _writer_name(data)
        names.add(name)
        assert name in am.SCHEMA_NAMES, f"{fid}: no model for {name}"
        theirs = am.read_container(data)
        ours = am.read_container(data, name, str(path))
        assert set(ours) == {f["name"] for f in am.schema(name)["fields"]}
        _common_equal(ours, theirs)
        # what we decoded re-encodes with our schema and decodes unchanged
        assert am.read_container(am.write_container(name, ours), name) == ours
    # the fixtures cover these models
    assert {
        "HoodieRollbackPlan",
        "HoodieRollbackMetadata",
        "HoodieCommitMetadata",
        "HoodieReplaceCommitMetadata",
        "HoodieRequestedReplaceMetadata",
        "HoodieCompactionPlan",
        "HoodieIndexPlan",
        "HoodieIndexCommitMetadata",
    } <= names


def test_1x_differences_are_the_documented_ones(avro_files):
    seen: dict[str, set[str]] = {}
    for _, path in avro_files:
        data = path.read_bytes()
        name = _writer_name(data)
        theirs = _record_fields(json.loads(am.container_schema(data)), {})
        ours = _record_fields(am.schema(name), {})
        for record, fields in theirs.items():
            mine = ours.get(record, [])
            extra = [f for f in fields if f not in mine]
            missing = [f for f in mine if f not in fields]
            assert not missing, f"{record}: 0.14 fields missing in 1.x: {missing}"
            # 0.14 fields keep their relative order in 1.x
            assert [f for f in fields if f in mine] == mine, record
            if extra:
                seen.setdefault(record, set()).update(extra)
    assert {k: sorted(v) for k, v in seen.items()} == {k: sorted(v) for k, v in EXPECTED_1X_ADDITIONS.items()}
    for record in EXPECTED_1X_ADDITIONS:
        if record != "HoodieRuntimeStats":
            assert record in am.SCHEMA_NOTES or record in ("HoodieWriteStat",)


def test_java_rendering_reproduces_every_embedded_schema(avro_files):
    """Strip the compiler's avro.java.string props and render again: same text as Java."""

    def strip(node):
        if isinstance(node, list):
            return [strip(x) for x in node]
        if isinstance(node, dict):
            out = {k: strip(v) for k, v in node.items() if k != "avro.java.string"}
            if out.get("type") == "string" and len(out) == 1:
                return "string"
            if "fields" in node:
                out["fields"] = [dict(f, type=strip(f["type"])) for f in node["fields"]]
            return out
        return node

    texts = {am.container_schema(path.read_bytes()) for _, path in avro_files}
    for text in texts:
        assert am.java_schema_json(strip(json.loads(text))) == text


# -- the models themselves ---------------------------------------------------------------------


def test_all_models_parse_and_render():
    for name in am.SCHEMA_NAMES:
        parsed = am.parsed(name)
        assert parsed["name"].endswith(name)
        text = am.java_schema(name)
        assert json.loads(text)["name"] == name
        fastavro.parse_schema(json.loads(text))
        assert am.canonical_form(text) == am.canonical_form(am.schema(name))
    with pytest.raises(KeyError):
        am.schema("NoSuchModel")


def test_existing_delete_block_api_kept():
    assert am.VALUE_WRAPPERS[1]["name"] == "IntWrapper"
    assert am.parsed("HoodieDeleteRecordList")["name"] == f"{am.NAMESPACE}.HoodieDeleteRecordList"
    assert am.DELETE_RECORD_LIST["name"] == "HoodieDeleteRecordList"


def test_archived_entry_field_order_014():
    fields = [f["name"] for f in am.schema("HoodieArchivedMetaEntry")["fields"]]
    assert fields == [
        "hoodieCommitMetadata",
        "hoodieCleanMetadata",
        "hoodieCompactionMetadata",
        "hoodieRollbackMetadata",
        "hoodieSavePointMetadata",
        "commitTime",
        "actionType",
        "version",
        "hoodieCompactionPlan",
        "hoodieCleanerPlan",
        "actionState",
        "hoodieReplaceCommitMetadata",
        "hoodieRequestedReplaceMetadata",
        "HoodieInflightReplaceMetadata",
        "hoodieIndexCommitMetadata",
        "stateTransitionTime",
    ]
    text = am.java_schema("HoodieArchivedMetaEntry")
    # nested types are defined once, then referenced by name
    assert text.count('"name":"HoodieWriteStat","fields"') == 1
    assert '"items":["null","HoodieWriteStat"]' not in text
    assert '["null","HoodieCommitMetadata"]' in text  # HoodieInflightReplaceMetadata


SAMPLES = {
    "HoodieCleanerPlan": {
        "earliestInstantToRetain": {"timestamp": "20240101000000000", "action": "commit", "state": "COMPLETED"},
        "lastCompletedCommitTimestamp": "20240102000000000",
        "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {},
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            "p=1": [{"filePath": "file:/t/p=1/a.parquet", "isBootstrapBaseFile": False}]
        },
        "partitionsToBeDeleted": [],
    },
    "HoodieCleanMetadata": {
        "startCleanTime": "20240103000000000",
        "timeTakenInMillis": 12,
        "totalFilesDeleted": 1,
        "earliestCommitToRetain": "20240101000000000",
        "lastCompletedCommitTimestamp": "20240102000000000",
        "partitionMetadata": {
            "p=1": {
                "partitionPath": "p=1",
                "policy": "KEEP_LATEST_COMMITS",
                "deletePathPatterns": ["a.parquet"],
                "successDeleteFiles": ["a.parquet"],
                "failedDeleteFiles": [],
                "isPartitionDeleted": False,
            }
        },
        "version": 2,
        "bootstrapPartitionMetadata": {},
    },
    "HoodieCompactionPlan": {
        "operations": [
            {
                "baseInstantTime": "20240101000000000",
                "deltaFilePaths": [".f1_20240101000000000.log.1_0-1-1"],
                "dataFilePath": "f1_0-1-1_20240101000000000.parquet",
                "fileId": "f1",
                "partitionPath": "p=1",
                "metrics": {"TOTAL_LOG_FILES": 1.0},
                "bootstrapFilePath": None,
            }
        ],
        "extraMetadata": None,
        "version": 2,
        "strategy": {"compactorClassName": None, "strategyParams": {}, "version": 1},
        "preserveHoodieMetadata": True,
    },
    "HoodieRequestedReplaceMetadata": {
        "operationType": "CLUSTER",
        "clusteringPlan": {
            "inputGroups": [
                {
                    "slices": [
                        {
                            "dataFilePath": "p=1/f1_0-1-1_1.parquet",
                            "deltaFilePaths": [],
                            "fileId": "f1",
                            "partitionPath": "p=1",
                            "bootstrapFilePath": "",
                            "version": 1,
                        }
                    ],
                    "metrics": {"TOTAL_FILE_SIZE": 10.0},
                    "numOutputFileGroups": 1,
                    "extraMetadata": None,
                    "version": 1,
                }
            ],
            "strategy": {"strategyClassName": "x.Strategy", "strategyParams": {}, "version": 1},
            "extraMetadata": {},
            "version": 1,
            "preserveHoodieMetadata": True,
        },
        "extraMetadata": {},
        "version": 1,
    },
    "HoodieSavepointMetadata": {
        "savepointedBy": "user",
        "savepointedAt": 1700000000,
        "comments": "",
        "partitionMetadata": {"p=1": {"partitionPath": "p=1", "savepointDataFile": ["a.parquet"]}},
        "version": 1,
    },
    "HoodieRestorePlan": {
        "instantsToRollback": [{"commitTime": "20240102000000000", "action": "commit"}],
        "version": 1,
    },
    "HoodieRestoreMetadata": {
        "startRestoreTime": "20240104000000000",
        "timeTakenInMillis": 5,
        "instantsToRollback": ["20240102000000000"],
        "hoodieRestoreMetadata": {
            "20240102000000000": [
                {
                    "startRollbackTime": "20240104000000001",
                    "timeTakenInMillis": 3,
                    "totalFilesDeleted": 0,
                    "commitsRollback": ["20240102000000000"],
                    "partitionMetadata": {},
                    "version": 1,
                    "instantsRollback": [{"commitTime": "20240102000000000", "action": "commit"}],
                }
            ]
        },
        "version": 1,
        "restoreInstantInfo": [{"commitTime": "20240102000000000", "action": "commit"}],
    },
    "HoodieIndexPlan": {
        "version": 1,
        "indexPartitionInfos": [{"version": 1, "metadataPartitionPath": "column_stats", "indexUptoInstant": "1"}],
    },
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_model_round_trip(name):
    record = SAMPLES[name]
    data = am.write_container(name, record)
    assert am.read_container(data) == record
    assert am.read_container(data, name) == record
    assert json.loads(am.container_schema(data))["name"] == name


def test_defaults_fill_missing_fields():
    data = am.write_container("HoodieCleanerPlan", {"policy": "KEEP_LATEST_FILE_VERSIONS"})
    plan = am.read_container(data)
    assert plan["earliestInstantToRetain"] is None
    assert plan["lastCompletedCommitTimestamp"] == ""
    assert plan["version"] == 1
    assert am.write_container("HoodieCleanerPlan", None).startswith(am.AVRO_MAGIC)
    assert am.read_container(am.write_container("HoodieCleanerPlan", None)) is None
