"""Merge semantics of a file slice, checked against hudi-rs on generated log files.

Random sequences of log records (updates with higher/lower/equal ordering
values, deletes with no / natural / real ordering values, log-only keys) are
written as real Hudi log files next to a fixture's base file; our slice reader
and hudi-rs's file group reader must return the same rows, in both
commit-time (v6 table) and event-time (v8 table) ordering.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import canonical_rows

from hudi_duck.core.file_group.file_slice import FileSlice
from hudi_duck.core.file_group.log_blocks import (
    DeleteRecord,
    encode_avro_records,
    encode_delete_records,
)
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, encode_block
from hudi_duck.core.file_group.naming import (
    log_file_name,
    parse_base_file,
    parse_log_file,
)
from hudi_duck.core.file_group.reader import SliceReadContext, read_slice
from hudi_duck.core.table.fs_view import CommittedInstants
from hudi_duck.core.schema.avro_arrow import add_meta_fields_avro, avro_json
from hudi_duck.core.table.table import HudiTable

EVENT_TIME = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
COMMIT_TIME = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
PARTITION = "city=chennai"

entry = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from(["A", "X"]), st.integers(-3, 3)),
    st.tuples(st.just("delete"), st.sampled_from(["A", "X"]), st.sampled_from([None, "int0", "long-below", "long-equal", "long-above"])),
)


def _base(table_path: str) -> tuple[str, str, dict]:
    folder = Path(table_path) / PARTITION
    names = sorted(p.name for p in folder.glob("*.parquet"))
    base = parse_base_file(PARTITION, names[0])
    import pyarrow.parquet as pq

    row = pq.read_table(folder / names[0]).to_pylist()[0]
    return base.file_name, base.file_id, row


def _write_logs(table_path: str, file_id: str, base_instant: str, row: dict, steps: list, per_file: int, v8: bool) -> list[str]:
    table = HudiTable(table_path)
    schema = avro_json(add_meta_fields_avro(table.avro_schema))
    base_ts = row["ts"]
    names = []
    instants = [f"2099010100000{i:04d}" for i in range(len(steps))]
    chunks = [steps[i : i + per_file] for i in range(0, len(steps), per_file)]
    position = 0
    for version, chunk in enumerate(chunks, start=1):
        blocks = []
        for kind, key, value in chunk:
            instant = instants[position]
            position += 1
            record_key = row["_hoodie_record_key"] if key == "A" else "log-only-key"
            header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema}
            if kind == "upsert":
                record = dict(row)
                record.update(
                    _hoodie_commit_time=instant,
                    _hoodie_record_key=record_key,
                    _hoodie_file_name=file_id,
                    ts=base_ts + value,
                    fare=float(position),
                    uuid=record_key,
                )
                blocks.append(encode_block(BlockType.AVRO_DATA_BLOCK, header, encode_avro_records([record], schema)))
            else:
                ordering = {
                    None: (None, None),
                    "int0": (0, "IntWrapper"),
                    "long-below": (base_ts - 1, "LongWrapper"),
                    "long-equal": (base_ts, "LongWrapper"),
                    "long-above": (base_ts + 1, "LongWrapper"),
                }[value]
                delete = DeleteRecord(record_key, PARTITION, ordering[0], ordering[1])
                content = encode_delete_records([delete]) if ordering[0] is not None else _null_ordering_delete(record_key)
                blocks.append(encode_block(BlockType.DELETE_BLOCK, header, content))
        instant_in_name = instants[position - 1] if v8 else base_instant
        name = log_file_name(file_id, instant_in_name, 1 if v8 else version, "0-1-1")
        (Path(table_path) / PARTITION / name).write_bytes(b"".join(blocks))
        names.append(name)
    return names


def _null_ordering_delete(key: str) -> bytes:
    """A delete whose orderingVal is the Avro null branch (natural order)."""
    import io
    import struct

    import fastavro

    from hudi_duck.core.avro import models as avro_models

    buffer = io.BytesIO()
    fastavro.schemaless_writer(
        buffer,
        avro_models.parsed("HoodieDeleteRecordList"),
        {"deleteRecordList": [{"recordKey": key, "partitionPath": PARTITION, "orderingVal": None}]},
    )
    payload = buffer.getvalue()
    return struct.pack(">ii", 3, len(payload)) + payload


def _ours(table_path: str, base_name: str, logs: list[str]) -> pa.Table:
    table = HudiTable(table_path)
    folder = Path(table_path) / PARTITION
    base = parse_base_file(PARTITION, base_name, (folder / base_name).stat().st_size)
    log_files = [parse_log_file(PARTITION, n, (folder / n).stat().st_size) for n in logs]
    ctx = SliceReadContext(table.storage, table.schema, table.merge_config, CommittedInstants(frozenset(), None))
    return read_slice(ctx, FileSlice(PARTITION, base.file_id, base.instant_time, base, log_files))


def _theirs(table_path: str, base_name: str, logs: list[str]) -> pa.Table:
    from hudi import HudiFileGroupReader

    reader = HudiFileGroupReader(table_path, {"hoodie.read.end.timestamp": "99991231235959999"})
    batch = reader.read_file_slice_from_paths(f"{PARTITION}/{base_name}", [f"{PARTITION}/{n}" for n in logs])
    return pa.Table.from_batches([batch])


def _check(fixture_tables, tmp_path, fid: str, steps: list, per_file: int) -> None:
    source = fixture_tables[fid]
    copy = tmp_path / "t"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(source, copy)
    for old in (copy / PARTITION).glob(".*.log.*"):
        old.unlink()
    base_name, file_id, row = _base(str(copy))
    base_instant = parse_base_file(PARTITION, base_name).instant_time
    logs = _write_logs(str(copy), file_id, base_instant, row, steps, per_file, fid == EVENT_TIME)
    ours, theirs = _ours(str(copy), base_name, logs), _theirs(str(copy), base_name, logs)
    columns = ["_hoodie_record_key", "_hoodie_commit_time", "ts", "fare"]
    assert canonical_rows(ours, columns) == canonical_rows(theirs, columns), (steps, per_file)


@pytest.mark.parametrize("fid", [EVENT_TIME, COMMIT_TIME])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(entry, min_size=1, max_size=5), per_file=st.integers(1, 3))
def test_slice_merge_equals_hudi_rs(fixture_tables, tmp_path, fid, steps, per_file):
    _check(fixture_tables, tmp_path, fid, steps, per_file)


@pytest.mark.parametrize(
    "steps, expect_base",
    [
        ([("upsert", "A", -1)], True),  # lower ordering loses to the base
        ([("upsert", "A", 0)], False),  # ties go to the newer record
        ([("delete", "A", "long-below")], True),  # a delete with a lower ordering value is ignored
        ([("delete", "A", "int0")], False),  # natural-order deletes always win
        ([("delete", "A", "int0"), ("upsert", "A", -2)], True),  # resurrected below the base: base wins
    ],
)
def test_event_time_rules(fixture_tables, tmp_path, steps, expect_base):
    _check(fixture_tables, tmp_path, EVENT_TIME, steps, 1)
    copy = tmp_path / "t"
    base_name, _, row = _base(str(copy))
    logs = sorted(p.name for p in (copy / PARTITION).glob(".*.log.*"))
    rows = {r["_hoodie_record_key"]: r for r in _ours(str(copy), base_name, logs).to_pylist()}
    key = row["_hoodie_record_key"]
    if expect_base:
        assert rows[key]["ts"] == row["ts"] and rows[key]["_hoodie_commit_time"] == row["_hoodie_commit_time"]
    else:
        assert key not in rows or rows[key]["ts"] != row["ts"] or rows[key]["fare"] != row["fare"]
