"""The inspection functions (``hudi_commits``, ``hudi_log_blocks`` ...) against the
timeline files, plans and log files themselves.

Expected values are read here independently of the views: commit metadata with
``json`` (table version 6) or ``fastavro`` (8+), plans and service metadata with
``fastavro``, file slices with hudi-rs, base file row counts from parquet
footers, log files block by block with the log format reader. The Apache-written
fixtures cover commits, compaction, clustering, rollback and every log block kind;
tables written with ``spark_writer`` cover pending plans, cleans, savepoints,
rollbacks of merge-on-read writes, archived commits and schema changes.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import re
import shutil
from pathlib import Path
from typing import Any

import fastavro
import fastavro.schema
import pyarrow.parquet as pq
import pytest

import hudi_duck
from conftest import FIXTURE_IDS
from hudi_duck.api import arrow_table
from hudi_duck.core.hfile.reader import read_hfile
from hudi_duck.core.file_group.log_format import BlockType, FooterKey, HeaderKey, read_log_file
from hudi_duck.core.file_group.log_blocks import avro_block_records, decode_delete_block
from hudi_duck.core.errors import HudiError

V6_MOR = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
V6_ROLLBACK = "sample_table/mor/parquet/v6_nonpartitioned_rollback"
V6_MOR_PARQUET = "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle"
V8_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
V9_MOR = "sample_table/mor/avro/v9_txns_simple_meta"
V9_COW = "sample_table/cow/v9_txns_simple_meta"
MOR_FIXTURES = [V6_MOR, V6_ROLLBACK, V6_MOR_PARQUET, V8_MOR, V9_MOR]

# -- reading the table's files independently ---------------------------------------------------------

_COMPLETED_WRITE = re.compile(r"^(\d{17})(?:_(\d{17}))?\.(commit|deltacommit|replacecommit)$")


def timeline_dir(base: str) -> Path:
    layout2 = Path(base) / ".hoodie" / "timeline"
    return layout2 if layout2.is_dir() else Path(base) / ".hoodie"


def decode(data: bytes) -> dict[str, Any]:
    """A timeline file: Avro container (plans, v8+ commits) or JSON (v6 commits); empty is {}."""
    if not data.strip():
        return {}
    if data.startswith(b"Obj\x01"):
        return next(iter(fastavro.reader(io.BytesIO(data))))
    return json.loads(data.decode("utf-8"))


def raw_commits(base: str) -> dict[str, tuple[str, str | None, dict[str, Any]]]:
    """requested time -> (action, completion time, decoded commit metadata) of completed writes."""
    out = {}
    for file in timeline_dir(base).iterdir():
        match = _COMPLETED_WRITE.match(file.name)
        if match:
            out[match.group(1)] = (match.group(3), match.group(2), decode(file.read_bytes()))
    return dict(sorted(out.items()))


def raw_file(base: str, suffix: str) -> tuple[str, dict[str, Any]]:
    """(file name, decoded content) of the one timeline file ending with ``suffix``."""
    (file,) = [f for f in timeline_dir(base).iterdir() if f.name.endswith(suffix)]
    return file.name, decode(file.read_bytes())


def completion_of(base: str, requested: str) -> str | None:
    for file in timeline_dir(base).iterdir():
        match = _COMPLETED_WRITE.match(file.name)
        if match and match.group(1) == requested:
            return match.group(2)
    return None


def is_new(stat: dict[str, Any]) -> bool:
    return stat.get("prevCommit") in (None, "null")


def n(value: Any) -> int:
    return int(value or 0)


def rows(con, sql: str) -> list[dict[str, Any]]:
    return arrow_table(con.sql(sql)).to_pylist()


def as_dict(pairs: Any) -> dict:
    """DuckDB maps come back from Arrow as lists of (key, value) pairs."""
    return dict(pairs) if pairs is not None else None


# -- commits and the files they wrote -----------------------------------------------------------------


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_commits_match_commit_files(con, fixture_tables, fid):
    path = fixture_tables[fid]
    got = rows(con, f"SELECT * FROM hudi_commits('{path}')")
    expected = raw_commits(path)
    assert [r["instant_time"] for r in got] == list(expected)
    for row in got:
        action, completion, meta = expected[row["instant_time"]]
        stats = [s for items in (meta.get("partitionToWriteStats") or {}).values() for s in items or ()]
        assert (row["action"], row["state"], row["completion_time"], row["archived"]) == (action, "COMPLETED", completion, False)
        assert row["operation_type"] == meta.get("operationType")
        assert row["partitions_written"] == len(meta.get("partitionToWriteStats") or {})
        assert row["partitions"] == sorted(meta.get("partitionToWriteStats") or {})
        assert row["files_added"] == sum(1 for s in stats if is_new(s))
        assert row["files_updated"] == sum(1 for s in stats if not is_new(s))
        assert row["files_replaced"] == sum(len(v) for v in (meta.get("partitionToReplaceFileIds") or {}).values())
        assert row["log_files_written"] == sum(1 for s in stats if posixpath.basename(s["path"]).startswith("."))
        for column, field in (
            ("records_written", "numWrites"),
            ("records_inserted", "numInserts"),
            ("records_updated", "numUpdateWrites"),
            ("records_deleted", "numDeletes"),
            ("bytes_written", "totalWriteBytes"),
            ("write_errors", "totalWriteErrors"),
            ("log_blocks", "totalLogBlocks"),
            ("log_records", "totalLogRecords"),
            ("log_files_compacted", "totalLogFilesCompacted"),
            ("updated_records_compacted", "totalUpdatedRecordsCompacted"),
        ):
            assert row[column] == sum(n(s.get(field)) for s in stats), (row["instant_time"], column)
        extra = {k: v for k, v in (meta.get("extraMetadata") or {}).items() if k != "schema"}
        assert as_dict(row["extra_metadata"]) == extra


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_commit_files_are_the_write_stats(con, fixture_tables, fid):
    path = fixture_tables[fid]
    got = rows(con, f"SELECT * FROM hudi_commit_files('{path}')")
    expected = []
    for requested, (action, completion, meta) in raw_commits(path).items():
        for partition, items in (meta.get("partitionToWriteStats") or {}).items():
            for s in items or ():
                expected.append(
                    (
                        requested, action, completion, s.get("partitionPath", partition), s["fileId"], s["path"],
                        posixpath.basename(s["path"]), None if is_new(s) else s["prevCommit"],
                        n(s.get("numWrites")), n(s.get("numInserts")), n(s.get("numUpdateWrites")), n(s.get("numDeletes")),
                        n(s.get("totalWriteBytes")), n(s.get("fileSizeInBytes")), n(s.get("totalWriteErrors")),
                        "log" if posixpath.basename(s["path"]).startswith(".") else "base",
                    )
                )
    mine = [
        (
            r["instant_time"], r["action"], r["completion_time"], r["partition_path"], r["file_id"], r["path"],
            r["file_name"], r["prev_commit"], r["records_written"], r["records_inserted"], r["records_updated"],
            r["records_deleted"], r["bytes_written"], r["file_size"], r["write_errors"], r["file_type"],
        )
        for r in got
    ]
    assert sorted(mine, key=repr) == sorted(expected, key=repr)
    if expected:  # one instant only
        instant = expected[-1][0]
        one = rows(con, f"SELECT file_id FROM hudi_commit_files('{path}', instant := '{instant}')")
        assert sorted(r["file_id"] for r in one) == sorted(e[4] for e in expected if e[0] == instant)


def test_commits_join_their_files(con, fixture_tables):
    path = fixture_tables[V9_MOR]
    joined = rows(
        con,
        f"""SELECT c.instant_time, any_value(c.records_written) AS total, sum(f.records_written) AS summed,
                   any_value(c.bytes_written) AS bytes, sum(f.bytes_written) AS summed_bytes, count(*) AS files
            FROM hudi_commits('{path}') c JOIN hudi_commit_files('{path}') f USING (instant_time)
            GROUP BY c.instant_time ORDER BY c.instant_time""",
    )
    assert len(joined) == len(raw_commits(path))
    assert all(r["total"] == r["summed"] and r["bytes"] == r["summed_bytes"] for r in joined)
    # the join works across functions: log blocks with the commit that wrote them
    blocks = rows(
        con,
        f"""SELECT b.log_file, c.operation_type FROM hudi_log_blocks('{path}') b
            JOIN hudi_commits('{path}') c ON b.instant_time = c.instant_time""",
    )
    assert len(blocks) == 5 and {b["operation_type"] for b in blocks} <= {"UPSERT", "UPSERT_PREPPED", "DELETE", "DELETE_PREPPED"}


def test_commit_files_of_an_unknown_instant_is_an_error(con, fixture_tables):
    path = fixture_tables[V6_MOR]
    with pytest.raises(Exception, match="no completed commit at instant 20990101000000000"):
        con.sql(f"SELECT * FROM hudi_commit_files('{path}', instant := '20990101000000000')").fetchall()
    with pytest.raises(Exception, match="v6_trips_8i1u: instant 'yesterday' is not an instant time; use an instant time"):
        con.sql(f"SELECT * FROM hudi_commit_files('{path}', instant := 'yesterday')").fetchall()
    with pytest.raises(Exception, match="v6_trips_8i1u: as_of '2024-13-45' is not an instant time"):
        con.sql(f"SELECT * FROM hudi_partitions('{path}', as_of := '2024-13-45')").fetchall()


# -- partitions --------------------------------------------------------------------------------------------


def _committed_instants(base: str) -> set[str]:
    return set(raw_commits(base))


def _log_counts(base: str, logs: list[str]) -> tuple[int, int]:
    """(records, deletes) of the committed blocks of logs, decoded here."""
    committed = _committed_instants(base)
    blocks = [b for rel in logs for b in read_log_file((Path(base) / rel).read_bytes(), rel)]
    undone = {(b.target_instant_time) for b in blocks if b.is_rollback}
    records = deletes = 0
    for b in blocks:
        if b.instant_time not in committed or b.instant_time in undone:
            continue
        if b.block_type is BlockType.DELETE_BLOCK:
            deletes += len(decode_delete_block(b))
        elif b.block_type.is_data:
            records += expected_record_count(b)
    return records, deletes


@pytest.mark.parametrize("fid", [f for f in FIXTURE_IDS if "empty" not in f])
def test_partitions_match_hudi_rs_file_slices(con, fixture_tables, fid):
    import hudi

    path = fixture_tables[fid]
    slices = hudi.HudiTableBuilder.from_base_uri(path).build().get_file_slices()
    expected: dict[str, dict[str, Any]] = {}
    for s in slices:
        e = expected.setdefault(s.partition_path, {"groups": 0, "bases": [], "logs": []})
        e["groups"] += 1
        if s.base_file_name:
            e["bases"].append(s.base_file_relative_path())
        e["logs"] += list(s.log_files_relative_paths())
    got = {r["partition_path"]: r for r in rows(con, f"SELECT * FROM hudi_partitions('{path}')")}
    assert set(got) == set(expected)
    for partition, e in expected.items():
        row = got[partition]
        base_sizes = [os.path.getsize(Path(path) / b) for b in e["bases"]]
        assert row["file_groups"] == e["groups"]
        assert row["base_files"] == len(e["bases"]) and row["log_files"] == len(e["logs"])
        assert row["base_file_bytes"] == sum(base_sizes)
        assert row["log_file_bytes"] == sum(os.path.getsize(Path(path) / log) for log in e["logs"])
        assert row["total_bytes"] == row["base_file_bytes"] + row["log_file_bytes"]
        assert row["min_base_file_size"] == min(base_sizes) and row["max_base_file_size"] == max(base_sizes)
        assert row["avg_base_file_size"] == pytest.approx(sum(base_sizes) / len(base_sizes))
        assert row["base_records"] == sum(pq.ParquetFile(Path(path) / b).metadata.num_rows for b in e["bases"])
        assert (row["log_records"], row["log_deletes"]) == _log_counts(path, e["logs"])


# -- compaction and clustering plans ---------------------------------------------------------------------


@pytest.mark.parametrize("fid", [V8_MOR, V9_MOR])
def test_completed_compactions_are_their_plans(con, fixture_tables, fid):
    path = fixture_tables[fid]
    name, plan = raw_file(path, ".compaction.requested")
    instant = name.split(".")[0]
    got = rows(con, f"SELECT * FROM hudi_compactions('{path}')")
    expected = [
        {
            "instant_time": instant,
            "action": "compaction",
            "state": "COMPLETED",
            "completion_time": completion_of(path, instant),
            "partition_path": op["partitionPath"],
            "file_id": op["fileId"],
            "base_instant_time": op["baseInstantTime"],
            "base_file": op["dataFilePath"],
            "log_files": op["deltaFilePaths"],
            "num_log_files": len(op["deltaFilePaths"]),
            "metrics": op["metrics"],
        }
        for op in plan["operations"]
    ]
    for row in got:
        row["metrics"] = as_dict(row["metrics"])
    assert got == expected
    assert all(r["completion_time"] for r in got)


@pytest.mark.parametrize("fid", [V9_COW, V9_MOR])
def test_completed_clustering_is_its_plan(con, fixture_tables, fid):
    path = fixture_tables[fid]
    name, raw = raw_file(path, ".clustering.requested")
    instant = name.split(".")[0]
    plan = raw["clusteringPlan"]
    strategy = plan["strategy"]
    expected = []
    for index, group in enumerate(plan["inputGroups"]):
        for s in group["slices"]:
            expected.append(
                (
                    instant, "clustering", "COMPLETED", completion_of(path, instant), index, s["partitionPath"], s["fileId"],
                    posixpath.basename(s["dataFilePath"]), [posixpath.basename(p) for p in s["deltaFilePaths"]],
                    group["numOutputFileGroups"], group["metrics"], strategy["strategyClassName"], strategy["strategyParams"],
                    plan["preserveHoodieMetadata"],
                )
            )
    got = [
        (
            r["instant_time"], r["action"], r["state"], r["completion_time"], r["input_group"], r["partition_path"],
            r["file_id"], r["base_file"], r["log_files"], r["num_output_file_groups"], as_dict(r["group_metrics"]),
            r["strategy"], as_dict(r["strategy_params"]), r["preserve_hoodie_metadata"],
        )
        for r in rows(con, f"SELECT * FROM hudi_clustering('{path}')")
    ]
    assert got == expected and len(got) == 5
    # the clustering's replacecommit replaced exactly the input file groups
    (commit,) = rows(con, f"SELECT files_replaced FROM hudi_commits('{path}') WHERE instant_time = '{instant}'")
    assert commit["files_replaced"] == len(expected)


# -- rollbacks ---------------------------------------------------------------------------------------------


def test_rollback_fixture(con, fixture_tables):
    path = fixture_tables[V6_ROLLBACK]
    name, meta = raw_file(path, ".rollback")
    instant = name.split(".")[0]
    (row,) = rows(con, f"SELECT * FROM hudi_rollbacks('{path}')")
    partition = meta["partitionMetadata"][""]
    assert row == {
        "instant_time": instant,
        "state": "COMPLETED",
        "completion_time": None,
        "rolled_back_instant": meta["commitsRollback"][0],
        "rolled_back_action": meta["instantsRollback"][0]["action"],
        "rolled_back_instants": meta["commitsRollback"],
        "partitions": 1,
        "files_deleted": meta["totalFilesDeleted"],
        "failed_deletes": 0,
        "rollback_log_files": len(partition["rollbackLogFiles"]),
        "time_taken_ms": meta["timeTakenInMillis"],
    }
    files = rows(con, f"SELECT kind, path, file_name, size, succeeded FROM hudi_rollback_files('{path}') ORDER BY kind, path")
    expected = [("deleted", p, None, True) for p in partition["successDeleteFiles"]]
    expected += [("failed_commit_log", p, s, True) for p, s in partition["logFilesFromFailedCommit"].items()]
    expected += [("rollback_log", p, s, True) for p, s in partition["rollbackLogFiles"].items()]
    assert [(f["kind"], f["path"], f["size"], f["succeeded"]) for f in files] == sorted(expected)
    assert all(f["file_name"] == posixpath.basename(f["path"]) for f in files)


# -- log blocks ----------------------------------------------------------------------------------------------


def expected_record_count(block) -> int | None:
    """Records of a block, decoding every record (not the count the header states)."""
    if block.block_type is BlockType.AVRO_DATA_BLOCK:
        return len(avro_block_records(block.content, block.schema))
    if block.block_type is BlockType.PARQUET_DATA_BLOCK:
        return pq.read_table(io.BytesIO(block.content)).num_rows if block.content else 0
    if block.block_type is BlockType.HFILE_DATA_BLOCK:
        return len(read_hfile(block.content))
    if block.block_type is BlockType.DELETE_BLOCK:
        return len(decode_delete_block(block))
    return None


def log_files_on_disk(base: str) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        out += [Path(folder) / f for f in files if re.match(r"^\..+\.log\.\d+_", f)]
    return out


def _instant_states(base: str) -> dict[str, str]:
    """Latest state of each requested time, from the timeline's file names."""
    states: dict[str, str] = {}
    rank = {"REQUESTED": 0, "INFLIGHT": 1, "COMPLETED": 2}
    for file in timeline_dir(base).iterdir():
        match = re.match(r"^(\d{17})(?:_\d{17})?\.([a-z]+)(?:\.(requested|inflight))?$", file.name)
        if not match or match.group(2) == "savepoint":
            continue
        state = (match.group(3) or "completed").upper()
        if match.group(2) == "inflight":
            state = "INFLIGHT"
        if rank[state] >= rank.get(states.get(match.group(1), "REQUESTED"), -1):
            states[match.group(1)] = state
    return states


@pytest.mark.parametrize("fid", MOR_FIXTURES)
def test_log_blocks_block_by_block(con, fixture_tables, fid):
    path = fixture_tables[fid]
    got = rows(con, f"SELECT * FROM hudi_log_blocks('{path}')")
    by_key = {(r["partition_path"], r["log_file"], r["block_number"]): r for r in got}
    states = _instant_states(path)
    seen = 0
    for file in log_files_on_disk(path):
        partition = os.path.relpath(file.parent, path).replace(os.sep, "/")
        partition = "" if partition == "." else partition
        for number, block in enumerate(read_log_file(file.read_bytes(), str(file))):
            row = by_key[(partition, file.name, number)]
            seen += 1
            assert row["file_id"] == file.name[1:].split("_")[0]
            assert (row["block_offset"], row["block_size"], row["block_type"]) == (block.offset, block.length, block.block_type.name)
            assert row["content_size"] == len(block.content) and row["is_corrupt"] is False
            assert row["instant_time"] == block.header.get(HeaderKey.INSTANT_TIME)
            assert row["target_instant_time"] == block.header.get(HeaderKey.TARGET_INSTANT_TIME)
            assert row["record_count"] == expected_record_count(block)
            header = {HeaderKey(k).name: v for k, v in block.header.items() if k != HeaderKey.SCHEMA}
            assert as_dict(row["header"]) == header
            assert row["header_keys"] == [HeaderKey(k).name for k in block.header]
            assert as_dict(row["footer"]) == {FooterKey(k).name: v for k, v in block.footer.items()}
            if block.schema:
                canonical = fastavro.schema.to_parsing_canonical_form(json.loads(block.schema))
                assert row["schema_fingerprint"] == fastavro.schema.fingerprint(canonical, "CRC-64-AVRO")
            else:
                assert row["schema_fingerprint"] is None
            assert row["instant_state"] == states.get(block.instant_time)
            assert row["error"] is None
    assert seen == len(got) and seen > 0


def test_log_blocks_show_the_rollback(con, fixture_tables):
    """The v6 rollback fixture: the failed delta commit's block, the rollback command block
    that undoes it, and the next delta commit's block."""
    path = fixture_tables[V6_ROLLBACK]
    got = rows(con, f"SELECT * FROM hudi_log_blocks('{path}') ORDER BY log_version, block_number")
    failed, rollback, later = got
    assert (failed["instant_time"], failed["instant_state"], failed["rolled_back"]) == ("20250126040826878", None, True)
    assert failed["block_type"] == "PARQUET_DATA_BLOCK" and failed["record_count"] > 0
    assert rollback["block_type"] == "COMMAND_BLOCK" and rollback["command_type"] == "ROLLBACK_BLOCK"
    assert (rollback["instant_time"], rollback["target_instant_time"]) == ("20250126040936578", "20250126040826878")
    assert rollback["instant_state"] == "COMPLETED" and rollback["record_count"] is None
    assert later["instant_state"] == "COMPLETED" and not later["rolled_back"]


def test_log_blocks_of_the_metadata_table(con, fixture_tables):
    """HFile data blocks (the metadata table is a merge-on-read table of its own)."""
    path = str(Path(fixture_tables[V9_MOR]) / ".hoodie" / "metadata")
    got = rows(con, f"SELECT * FROM hudi_log_blocks('{path}')")
    assert {r["block_type"] for r in got} >= {"HFILE_DATA_BLOCK"}
    hfile = [r for r in got if r["block_type"] == "HFILE_DATA_BLOCK"]
    for row in hfile[:20]:
        data = (Path(path) / row["partition_path"] / row["log_file"]).read_bytes()
        (block,) = [b for b in read_log_file(data) if b.offset == row["block_offset"]]
        assert row["record_count"] == len(read_hfile(block.content)) > 0


def test_corrupt_log_block(con, fresh_fixture):
    """A torn write at the end of a log file shows as a corrupt block, not an error."""
    base = Path(fresh_fixture(V6_MOR))
    (log,) = [p for p in (base / "city=san_francisco").iterdir() if ".log." in p.name]
    good = log.read_bytes()
    log.write_bytes(good + good[:50])
    got = rows(con, f"SELECT block_type, is_corrupt, block_offset, block_size, record_count FROM hudi_log_blocks('{base}')")
    assert got == [
        {"block_type": "AVRO_DATA_BLOCK", "is_corrupt": False, "block_offset": 0, "block_size": len(good), "record_count": 1},
        {"block_type": "CORRUPT_BLOCK", "is_corrupt": True, "block_offset": len(good), "block_size": 50, "record_count": None},
    ]


# -- schema --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fid", [f for f in FIXTURE_IDS if "empty" not in f])
def test_schema_is_the_snapshot_schema(con, fixture_tables, fid):
    path = fixture_tables[fid]
    got = rows(con, f"SELECT * FROM hudi_schema('{path}') ORDER BY ordinal_position")
    described = rows(con, f"DESCRIBE SELECT * FROM hudi_snapshot('{path}')")
    assert [(r["column_name"], r["duckdb_type"]) for r in got] == [(d["column_name"], d["column_type"]) for d in described]
    latest = [t for t, (_, _, meta) in raw_commits(path).items() if (meta.get("extraMetadata") or {}).get("schema")][-1]
    avro = json.loads(raw_commits(path)[latest][2]["extraMetadata"]["schema"])
    fields = {f["name"]: f for f in avro["fields"]}
    for row in got:
        assert row["instant_time"] == latest
        if row["is_meta_field"]:
            assert row["avro_type"] == '["null","string"]' and row["column_name"].startswith("_hoodie_")
        else:
            assert json.loads(row["avro_type"]) == fields[row["column_name"]]["type"]
            assert row["nullable"] == (isinstance(fields[row["column_name"]]["type"], list) and "null" in fields[row["column_name"]]["type"])
    assert [r["ordinal_position"] for r in got] == list(range(1, len(got) + 1))


@pytest.mark.parametrize("fid", [V9_COW, V8_MOR])
def test_schema_history_of_fixtures(con, fixture_tables, fid):
    path = fixture_tables[fid]
    commits = raw_commits(path)
    first = next(t for t, (_, _, m) in commits.items() if (m.get("extraMetadata") or {}).get("schema"))
    (row,) = rows(con, f"SELECT * FROM hudi_schema_history('{path}')")  # the schema never changed
    text = commits[first][2]["extraMetadata"]["schema"]
    assert (row["instant_time"], row["schema"], row["removed_columns"], row["changed_columns"]) == (first, text, [], [])
    assert row["added_columns"] == [f["name"] for f in json.loads(text)["fields"]]
    assert row["num_columns"] == len(row["added_columns"])


# -- types ---------------------------------------------------------------------------------------------------

EXPECTED_TYPES = {
    "hudi_commits": {"instant_time": "VARCHAR", "partitions": "VARCHAR[]", "records_written": "BIGINT", "archived": "BOOLEAN", "extra_metadata": "MAP(VARCHAR, VARCHAR)"},
    "hudi_commit_files": {"prev_commit": "VARCHAR", "records_updated": "BIGINT", "file_size": "BIGINT"},
    "hudi_partitions": {"file_groups": "BIGINT", "base_records": "BIGINT", "avg_base_file_size": "DOUBLE"},
    "hudi_compactions": {"log_files": "VARCHAR[]", "num_log_files": "BIGINT", "metrics": "MAP(VARCHAR, DOUBLE)"},
    "hudi_clustering": {"input_group": "INTEGER", "strategy_params": "MAP(VARCHAR, VARCHAR)", "sort_columns": "VARCHAR[]"},
    "hudi_cleans": {"files_deleted": "BIGINT", "earliest_commit_to_retain": "VARCHAR"},
    "hudi_clean_partitions": {"deleted_files": "VARCHAR[]", "partition_deleted": "BOOLEAN"},
    "hudi_rollbacks": {"rolled_back_instants": "VARCHAR[]", "files_deleted": "BIGINT"},
    "hudi_rollback_files": {"size": "BIGINT", "succeeded": "BOOLEAN"},
    "hudi_savepoints": {"savepointed_at": "TIMESTAMP WITH TIME ZONE", "data_files": "VARCHAR[]"},
    "hudi_schema": {"ordinal_position": "INTEGER", "nullable": "BOOLEAN"},
    "hudi_schema_history": {"added_columns": "VARCHAR[]", "num_columns": "BIGINT"},
    "hudi_log_blocks": {"block_offset": "BIGINT", "record_count": "BIGINT", "header": "MAP(VARCHAR, VARCHAR)", "header_keys": "VARCHAR[]", "is_corrupt": "BOOLEAN"},
    "hudi_timeline": {"requested_time": "VARCHAR", "completion_time": "VARCHAR"},
    "hudi_file_slices": {"log_files": "VARCHAR[]", "num_log_files": "INTEGER", "total_size": "BIGINT"},
}


@pytest.mark.parametrize("function", sorted(EXPECTED_TYPES))
def test_column_types(con, fixture_tables, function):
    """Every function has its types also when it returns no rows (the v6 COW fixture has no plans)."""
    from hudi_duck.duck.views import get_view

    path = fixture_tables["sample_table/cow/v6_nonpartitioned"]
    described = {d["column_name"]: d["column_type"] for d in rows(con, f"DESCRIBE SELECT * FROM {function}('{path}')")}
    for column, dtype in EXPECTED_TYPES[function].items():
        assert described[column] == dtype, (function, column)
    assert list(described) == get_view(function[len("hudi_"):]).schema.names


# -- the Python API ----------------------------------------------------------------------------------------

PYTHON_VIEWS = {
    "commits": lambda t: t.commits(),
    "commit_files": lambda t: t.commit_files(),
    "partitions": lambda t: t.partitions(),
    "compactions": lambda t: t.compactions(),
    "clustering": lambda t: t.clustering(),
    "cleans": lambda t: t.cleans(),
    "clean_partitions": lambda t: t.clean_partitions(),
    "rollbacks": lambda t: t.rollbacks(),
    "rollback_files": lambda t: t.rollback_files(),
    "savepoints": lambda t: t.savepoints(),
    "schema": lambda t: t.schema_columns(),
    "schema_history": lambda t: t.schema_history(),
    "log_blocks": lambda t: t.log_blocks(),
}


@pytest.mark.parametrize("fid", [V9_MOR, V6_ROLLBACK])
@pytest.mark.parametrize("view", sorted(PYTHON_VIEWS))
def test_python_api_returns_the_sql_rows(con, fixture_tables, fid, view):
    path = fixture_tables[fid]
    mine = PYTHON_VIEWS[view](hudi_duck.open_table(path))
    sql = arrow_table(con.sql(f"SELECT * FROM hudi_{view}('{path}')"))
    assert mine.schema.names == sql.schema.names
    assert mine.to_pylist() == sql.to_pylist()
    assert hudi_duck.inspect_table(path, view).equals(mine)


def test_views_are_cached_by_timeline_state(con, fresh_fixture, tmp_path, monkeypatch):
    """A repeated query reads the cached file; a new instant gives a new one."""
    monkeypatch.setenv("HUDI_DUCK_CACHE_DIR", str(tmp_path / "cache"))
    base = fresh_fixture(V6_MOR)
    con2 = hudi_duck.connect()
    first = con2.sql(f"SELECT count(*) FROM hudi_commits('{base}')").fetchall()[0][0]
    files = sorted((tmp_path / "cache").glob("*.inspect.parquet"))
    con2.sql(f"SELECT count(*) FROM hudi_commits('{base}')").fetchall()
    assert sorted((tmp_path / "cache").glob("*.inspect.parquet")) == files and len(files) == 1
    hoodie = Path(base) / ".hoodie"
    shutil.copy(hoodie / "20250331030645735.deltacommit", hoodie / "20250331030699999.deltacommit")
    assert con2.sql(f"SELECT count(*) FROM hudi_commits('{base}')").fetchall()[0][0] == first + 1
    assert len(list((tmp_path / "cache").glob("*.inspect.parquet"))) == 2
    # the log-block dump follows the log files: a block appended to a log shows up
    (log,) = [p for p in (Path(base) / "city=san_francisco").iterdir() if ".log." in p.name]
    assert con2.sql(f"SELECT count(*) FROM hudi_log_blocks('{base}')").fetchall()[0][0] == 1
    log.write_bytes(log.read_bytes() * 2)
    assert con2.sql(f"SELECT count(*) FROM hudi_log_blocks('{base}')").fetchall()[0][0] == 2


def test_unknown_view_is_an_error(fixture_tables):
    with pytest.raises(HudiError, match="unknown Hudi inspection view 'commitz'"):
        hudi_duck.inspect_table(fixture_tables[V6_MOR], "commitz")


# -- tables written with spark_writer: the services the fixtures lack ------------------------------------

pyspark = pytest.importorskip("pyspark")
import spark_writer  # noqa: E402

DDL = "id string, p string, ts long, v int, s string"


def _options(table_type: str, **extra: Any) -> dict[str, str]:
    options = {
        "hoodie.table.name": "insp",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
    }
    options.update({k: str(v) for k, v in extra.items()})
    return options


class Writer:
    """Upserts with a growing ordering value; returns the instant time."""

    def __init__(self, spark, path: str, options: dict[str, str]):
        self.spark, self.path, self.options, self.ts = spark, path, options, 0

    def upsert(self, keys: list[int], ddl: str = DDL, value: Any = 1, **extra: Any) -> str:
        rows = []
        for k in keys:
            self.ts += 1
            row = (f"k{k:02d}", "ab"[k % 2], self.ts, value, f"s{self.ts}") + tuple(extra.values())
            rows.append(row)
        frame = self.spark.createDataFrame(rows, ddl).coalesce(1)
        return spark_writer.write(frame, self.path, self.options).instant_time


@pytest.fixture(scope="module")
def services_table(small_spark, tmp_path_factory):
    """MOR: writes, a completed compaction, a completed clustering, a clean, a savepoint, a
    rolled-back delta commit and a pending compaction."""
    path = str(tmp_path_factory.mktemp("inspect_services") / "mor")
    options = _options("MERGE_ON_READ")
    w = Writer(small_spark, path, options)
    t: dict[str, Any] = {"path": path}
    t["d1"] = w.upsert(list(range(6)))
    t["d2"] = w.upsert(list(range(6)))
    (t["c1"],) = spark_writer.compact(small_spark, path, options)
    t["d3"] = w.upsert([0, 2, 4])
    (t["r1"],) = spark_writer.cluster(small_spark, path, dict(options, **{"hoodie.clustering.plan.strategy.sort.columns": "ts"}))
    t["d4"] = w.upsert(list(range(6)))
    t["clean"] = spark_writer.clean(small_spark, path, dict(options, **{"hoodie.cleaner.commits.retained": "1"}))
    t["sp"] = spark_writer.savepoint(path, t["d4"], comment="before the bad write")
    t["d5"] = w.upsert([1, 3])
    spark_writer.rollback(path)  # the latest delta commit (d5)
    t["d6"] = w.upsert([0, 1])
    t["c2"] = spark_writer.schedule_compaction(path, options)
    assert t["clean"] and t["c2"]
    return t


def _rollback_time(path: str) -> str:
    (name,) = [f.name for f in timeline_dir(path).iterdir() if f.name.endswith(".rollback")]
    return name.split(".")[0]


def test_pending_and_completed_compactions(con, services_table):
    path, c1, c2 = services_table["path"], services_table["c1"], services_table["c2"]
    got = rows(con, f"SELECT * FROM hudi_compactions('{path}') ORDER BY instant_time, partition_path")
    for instant, state in ((c1, "COMPLETED"), (c2, "REQUESTED")):
        plan = decode((timeline_dir(path) / f"{instant}.compaction.requested").read_bytes())
        mine = [r for r in got if r["instant_time"] == instant]
        assert [r["state"] for r in mine] == [state] * len(plan["operations"])
        ops = sorted(plan["operations"], key=lambda op: op["partitionPath"])
        assert [(r["partition_path"], r["file_id"], r["base_instant_time"], r["base_file"], r["log_files"], as_dict(r["metrics"])) for r in mine] == [
            (op["partitionPath"], op["fileId"], op["baseInstantTime"], op["dataFilePath"], op["deltaFilePaths"], op["metrics"]) for op in ops
        ]
    # the pending compaction is a pending write of hudi_commits; the completed one a commit
    commits = {r["instant_time"]: r for r in rows(con, f"SELECT * FROM hudi_commits('{path}')")}
    assert (commits[c2]["action"], commits[c2]["state"], commits[c2]["records_written"]) == ("compaction", "REQUESTED", None)
    assert (commits[c1]["action"], commits[c1]["operation_type"]) == ("commit", "COMPACT")
    compacted = {r["file_id"]: r for r in rows(con, f"SELECT * FROM hudi_commit_files('{path}', instant := '{c1}')")}
    for op in (r for r in got if r["instant_time"] == c1):
        assert compacted[op["file_id"]]["log_files_compacted"] == op["num_log_files"]


def test_completed_clustering_with_sort_columns(con, services_table):
    path, r1 = services_table["path"], services_table["r1"]
    raw = decode((timeline_dir(path) / f"{r1}.replacecommit.requested").read_bytes())
    got = rows(con, f"SELECT * FROM hudi_clustering('{path}')")
    slices = [(i, s) for i, g in enumerate(raw["clusteringPlan"]["inputGroups"]) for s in g["slices"]]
    assert [(r["input_group"], r["file_id"], r["base_file"], r["log_files"]) for r in got] == [
        (i, s["fileId"], posixpath.basename(s["dataFilePath"]), [posixpath.basename(p) for p in s["deltaFilePaths"]]) for i, s in slices
    ]
    assert all(r["state"] == "COMPLETED" and r["action"] == "replacecommit" and r["sort_columns"] == ["ts"] for r in got)
    assert any(r["log_files"] for r in got)  # merge-on-read slices bring their logs


def test_cleans(con, services_table):
    path, clean = services_table["path"], services_table["clean"]
    meta = decode((timeline_dir(path) / f"{clean}.clean").read_bytes())
    plan = decode((timeline_dir(path) / f"{clean}.clean.requested").read_bytes())
    (row,) = rows(con, f"SELECT * FROM hudi_cleans('{path}')")
    partitions = meta["partitionMetadata"]
    assert row["instant_time"] == clean and row["state"] == "COMPLETED"
    assert (row["policy"], row["earliest_commit_to_retain"]) == (plan["policy"], meta["earliestCommitToRetain"])
    assert row["last_completed_commit"] == meta["lastCompletedCommitTimestamp"]
    assert row["files_deleted"] == meta["totalFilesDeleted"] > 0
    assert row["files_to_delete"] == sum(len(v) for v in plan["filePathsToBeDeletedPerPartition"].values())
    assert (row["partitions"], row["failed_deletes"], row["time_taken_ms"]) == (len(partitions), 0, meta["timeTakenInMillis"])
    got = rows(con, f"SELECT * FROM hudi_clean_partitions('{path}') ORDER BY partition_path")
    assert [(r["partition_path"], r["policy"], r["deleted_files"], r["failed_files"], r["num_deleted"]) for r in got] == [
        (p, m["policy"], [posixpath.basename(f) for f in m["successDeleteFiles"]], m["failedDeleteFiles"], len(m["successDeleteFiles"]))
        for p, m in sorted(partitions.items())
    ]
    # the deleted files are gone
    assert not any((Path(path) / r["partition_path"] / f).exists() for r in got for f in r["deleted_files"])


def test_savepoints(con, services_table):
    path, sp = services_table["path"], services_table["sp"]
    meta = decode((timeline_dir(path) / f"{sp}.savepoint").read_bytes())
    (row,) = rows(con, f"SELECT * FROM hudi_savepoints('{path}')")
    assert (row["instant_time"], row["state"], row["savepointed_by"], row["comments"]) == (sp, "COMPLETED", meta["savepointedBy"], "before the bad write")
    assert int(row["savepointed_at"].timestamp()) == meta["savepointedAt"]
    files = sorted(f"{p}/{name}" for p, info in meta["partitionMetadata"].items() for name in info["savepointDataFile"])
    assert sorted(row["data_files"]) == files and row["files"] == len(files) > 0
    assert sorted(row["partition_paths"]) == sorted(meta["partitionMetadata"]) and row["partitions"] == 2
    # the savepoint pins the base files of a snapshot as of its commit
    as_of = rows(con, f"SELECT partition_path, base_file FROM hudi_file_slices('{path}', as_of := '{sp}')")
    assert files == sorted(f"{r['partition_path']}/{r['base_file']}" for r in as_of)


def test_rollback_of_a_delta_commit(con, services_table):
    path, d5 = services_table["path"], services_table["d5"]
    rollback = _rollback_time(path)
    meta = decode((timeline_dir(path) / f"{rollback}.rollback").read_bytes())
    (row,) = rows(con, f"SELECT * FROM hudi_rollbacks('{path}')")
    assert (row["rolled_back_instant"], row["rolled_back_action"], row["rolled_back_instants"]) == (d5, "deltacommit", [d5])
    logs = {p: n for m in meta["partitionMetadata"].values() for p, n in (m["rollbackLogFiles"] or {}).items()}
    assert row["rollback_log_files"] == len(logs) > 0 and row["files_deleted"] == meta["totalFilesDeleted"]
    files = rows(con, f"SELECT * FROM hudi_rollback_files('{path}') WHERE kind = 'rollback_log'")
    assert {f["path"]: f["size"] for f in files} == logs
    # in the log-block dump, d5's blocks are rolled back by the block the rollback appended
    blocks = rows(con, f"SELECT * FROM hudi_log_blocks('{path}')")
    undone = [b for b in blocks if b["instant_time"] == d5]
    assert undone and all(b["rolled_back"] and b["instant_state"] is None for b in undone)
    commands = [b for b in blocks if b["block_type"] == "COMMAND_BLOCK"]
    assert {b["log_file"] for b in commands} == {posixpath.basename(p) for p in logs}
    assert all(b["target_instant_time"] == d5 and b["instant_time"] == rollback for b in commands)
    assert not any(b["rolled_back"] for b in blocks if b["instant_time"] != d5)
    assert d5 not in {r["instant_time"] for r in rows(con, f"SELECT * FROM hudi_commits('{path}')")}


def test_partitions_after_services(con, services_table):
    """Records of the latest slices: base files from their write stats, logs from theirs."""
    path = services_table["path"]
    got = rows(con, f"SELECT * FROM hudi_partitions('{path}') ORDER BY partition_path")
    ro = rows(con, f"SELECT _hoodie_partition_path AS p, count(*) AS n FROM hudi_read_optimized('{path}') GROUP BY ALL ORDER BY p")
    assert [(r["partition_path"], r["base_records"]) for r in got] == [(r["p"], r["n"]) for r in ro]
    slices = rows(con, f"SELECT * FROM hudi_file_slices('{path}')")
    for r in got:
        logs = [f"{r['partition_path']}/{log}" for s in slices if s["partition_path"] == r["partition_path"] for log in s["log_files"]]
        assert (r["log_records"], r["log_deletes"]) == _log_counts(path, logs)
        # d6 upserted into both partitions (k00 into a, k01 into b); version-6 logs are named
        # after their base instant, so this comes from the write stats
        assert r["latest_instant_time"] == services_table["d6"]


@pytest.fixture(scope="module")
def archived_table(small_spark, tmp_path_factory):
    """COW: five commits (one adds a column, one widens another), the three oldest archived;
    then a pending clustering."""
    path = str(tmp_path_factory.mktemp("inspect_archive") / "cow")
    # without a metadata table: archival does not wait for its compaction
    options = _options("COPY_ON_WRITE", **{"hoodie.parquet.small.file.limit": "0", "hoodie.metadata.enable": "false"})
    w = Writer(small_spark, path, options)
    t: dict[str, Any] = {"path": path, "writes": []}
    t["writes"].append(w.upsert([0, 1]))
    t["writes"].append(w.upsert([2, 3]))
    t["writes"].append(w.upsert([4, 5], ddl=DDL + ", e string", e="x"))
    t["writes"].append(w.upsert([6, 7], ddl="id string, p string, ts long, v long, s string, e string", value=2**40, e="y"))
    t["writes"].append(w.upsert([8, 9], ddl="id string, p string, ts long, v long, s string, e string", e="z"))
    con = hudi_duck.connect()
    t["commits_before"] = rows(con, f"SELECT * FROM hudi_commits('{path}')")
    t["files_before"] = rows(con, f"SELECT * FROM hudi_commit_files('{path}')")
    t["history_before"] = rows(con, f"SELECT * FROM hudi_schema_history('{path}')")
    t["archived"] = spark_writer.archive(path, {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"})
    assert t["archived"] == t["writes"][:3]
    return t


def test_archived_commits(con, archived_table):
    path, archived = archived_table["path"], archived_table["archived"]
    active = rows(con, f"SELECT * FROM hudi_commits('{path}')")
    assert [r["instant_time"] for r in active] == archived_table["writes"][3:]
    everything = rows(con, f"SELECT * FROM hudi_commits('{path}', include_archived := true)")
    # the archived instants keep every statistic they had on the active timeline
    for mine, before in zip(everything, archived_table["commits_before"]):
        if mine["archived"]:
            # Hudi's archiver blanks ROLLING_STAT into the archived commit metadata
            before = dict(before, archived=True, extra_metadata=before["extra_metadata"] + [("ROLLING_STAT", "")])
        assert mine == before
    assert len(everything) == len(archived_table["commits_before"])
    assert [r["instant_time"] for r in everything if r["archived"]] == archived
    files = rows(con, f"SELECT * FROM hudi_commit_files('{path}', include_archived := true)")
    assert [dict(r, archived=False) for r in files] == archived_table["files_before"]
    one = rows(con, f"SELECT * FROM hudi_commit_files('{path}', instant := '{archived[0]}', include_archived := true)")
    assert one and all(r["archived"] for r in one)
    with pytest.raises(Exception, match="include_archived := true also searches the archive"):
        con.sql(f"SELECT * FROM hudi_commit_files('{path}', instant := '{archived[0]}')").fetchall()


def test_schema_history_and_schema_as_of(con, archived_table):
    path, writes = archived_table["path"], archived_table["writes"]
    history = rows(con, f"SELECT * FROM hudi_schema_history('{path}', include_archived := true)")
    assert [dict(h, archived=False) for h in history] == archived_table["history_before"]
    assert [h["archived"] for h in history] == [True, True, False]
    assert [(h["instant_time"], h["added_columns"], h["removed_columns"], h["changed_columns"]) for h in history] == [
        (writes[0], ["id", "p", "ts", "v", "s"], [], []),
        (writes[2], ["e"], [], []),
        (writes[3], [], [], ["v: INTEGER -> BIGINT"]),
    ]
    for h in history:
        commit = decode((timeline_dir(path) / f"{h['instant_time']}.commit").read_bytes()) if h["instant_time"] in writes[3:] else None
        if commit is not None:
            assert h["schema"] == commit["extraMetadata"]["schema"]
    # only the active timeline: the first change still shown is the type change
    assert [h["instant_time"] for h in rows(con, f"SELECT * FROM hudi_schema_history('{path}')")] == [writes[3]]
    first = rows(con, f"SELECT column_name, duckdb_type, instant_time FROM hudi_schema('{path}', as_of := '{writes[3]}') WHERE NOT is_meta_field")
    assert [(r["column_name"], r["duckdb_type"]) for r in first] == [("id", "VARCHAR"), ("p", "VARCHAR"), ("ts", "BIGINT"), ("v", "BIGINT"), ("s", "VARCHAR"), ("e", "VARCHAR")]
    assert {r["instant_time"] for r in first} == {writes[3]}


def test_pending_clustering(con, archived_table, tmp_path):
    from hudi_duck.core.services.clustering import ClusteringSettings, schedule_clustering
    from hudi_duck.core.timeline.instant import new_instant_time
    from hudi_duck.core.table.table import HudiTable

    path = str(tmp_path / "cow")
    shutil.copytree(archived_table["path"], path)
    table = HudiTable(path)
    when = new_instant_time(table.config.timeline_timezone_utc, after=table.timeline.last_instant_time)
    assert schedule_clustering(table, ClusteringSettings(sort_columns=["v"]), when) is not None
    raw = decode((timeline_dir(path) / f"{when}.replacecommit.requested").read_bytes())
    got = rows(con, f"SELECT * FROM hudi_clustering('{path}')")
    expected = [(s["partitionPath"], s["fileId"]) for g in raw["clusteringPlan"]["inputGroups"] for s in g["slices"]]
    assert [(r["partition_path"], r["file_id"]) for r in got] == expected and len(expected) > 2
    assert all((r["instant_time"], r["state"], r["completion_time"], r["sort_columns"]) == (when, "REQUESTED", None, ["v"]) for r in got)
    (pending,) = rows(con, f"SELECT * FROM hudi_commits('{path}') WHERE state <> 'COMPLETED'")
    assert (pending["instant_time"], pending["action"], pending["bytes_written"]) == (when, "replacecommit", None)
