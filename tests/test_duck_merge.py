"""The slice merge in DuckDB (``duck.merge``) decides exactly what the core's merge decides.

Random file slices (a base file and log files of data blocks, with and without
the ordering column, soft deletes, ``_hoodie_operation`` deletes and delete
blocks of every wrapper class) are merged by both; base rows dropped and log
rows kept must be the same. The ranks rendered as SQL are also checked
against ``fold.rank_log_entries`` directly.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_duck.core.file_group.file_slice import FileSlice
from hudi_duck.core.file_group.log_blocks import DeleteRecord, encode_avro_records, encode_delete_records
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, encode_block
from hudi_duck.core.file_group.naming import base_file_name, log_file_name, parse_base_file, parse_log_file
from hudi_duck.core.file_group.reader import SliceReadContext, merge_slice_logs as core_merge
from hudi_duck.core.merge.fold import LogEntry, rank_log_entries
from hudi_duck.core.merge.mode import DEFAULT_PAYLOAD, OVERWRITE_WITH_LATEST_PAYLOAD, EVENT_TIME_PAYLOAD, MergeConfig, MergeMode
from hudi_duck.core.merge.ordering import NATURAL, Kind, Ordering, JavaClass, delete_ordering
from hudi_duck.core.merge.sql import log_ranks_sql
from hudi_duck.core.storage.storage import get_storage
from hudi_duck.core.table.fs_view import CommittedInstants
from hudi_duck.duck.merge import merge_slice_logs as duck_merge, merge_slices

KEYS = st.sampled_from(["a", "b", "c", "d"])
VALUE = st.one_of(st.none(), st.integers(-3, 3))
RECORD = st.tuples(st.just("record"), KEYS, VALUE, st.sampled_from([None, "soft", "op"]))
WRAPPED = st.one_of(
    st.none(),
    st.tuples(st.sampled_from(["IntWrapper", "LongWrapper", "StringWrapper", "DoubleWrapper"]), st.integers(-2, 2)),
)
DELETE = st.tuples(st.just("delete"), KEYS, WRAPPED, st.none())
BLOCK = st.one_of(
    st.tuples(st.just("data"), st.booleans(), st.lists(RECORD, min_size=1, max_size=4)),
    st.tuples(st.just("deletes"), st.just(True), st.lists(DELETE, min_size=1, max_size=3)),
)
PAYLOADS = {"event": DEFAULT_PAYLOAD, "event_payload": EVENT_TIME_PAYLOAD, "commit": OVERWRITE_WITH_LATEST_PAYLOAD}

FIELDS = [
    {"name": "_hoodie_record_key", "type": ["null", "string"], "default": None},
    {"name": "_hoodie_operation", "type": ["null", "string"], "default": None},
    {"name": "v", "type": ["null", "string"], "default": None},
    {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None},
]
ORD = {"name": "ord", "type": ["null", "long"], "default": None}
SCHEMA = pa.schema([("_hoodie_record_key", pa.string()), ("_hoodie_operation", pa.string()), ("v", pa.string()),
                    ("_hoodie_is_deleted", pa.bool_()), ("ord", pa.int64())])


def _write_slice(root: Path, base: list[tuple[str, int | None]], blocks: list) -> FileSlice:
    file_id = "f1"
    name = base_file_name(file_id, "0-0-0", "001")
    pq.write_table(
        pa.table({"_hoodie_record_key": [k for k, _ in base], "_hoodie_operation": [None] * len(base),
                  "v": [f"base{i}" for i in range(len(base))], "_hoodie_is_deleted": [False] * len(base),
                  "ord": pa.array([o for _, o in base], pa.int64())}),
        root / name,
    )
    data = b""
    for i, (kind, with_ordering, items) in enumerate(blocks):
        instant = f"{2 + i:03d}"
        if kind == "data":
            schema = {"type": "record", "name": "r", "fields": FIELDS + ([ORD] if with_ordering else [])}
            records = []
            for j, (_, key, value, deleted) in enumerate(items):
                record = {"_hoodie_record_key": key, "_hoodie_operation": "D" if deleted == "op" else "U",
                          "v": f"{i}.{j}", "_hoodie_is_deleted": deleted == "soft"}
                if with_ordering:
                    record["ord"] = value
                records.append(record)
            header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: json.dumps(schema)}
            data += encode_block(BlockType.AVRO_DATA_BLOCK, header, encode_avro_records(records, json.dumps(schema)))
        else:
            deletes = [DeleteRecord(key, "", None if w is None else (str(w[1]) if w[0] == "StringWrapper" else w[1]),
                                    None if w is None else w[0]) for _, key, w, _ in items]
            data += encode_block(BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: instant}, encode_delete_records(deletes))
    log_name = log_file_name(file_id, "001", 1, "0-0-0")
    (root / log_name).write_bytes(data)
    return FileSlice("", file_id, "001", parse_base_file("", name, (root / name).stat().st_size),
                     (parse_log_file("", log_name, len(data)),))


def _outcome(merge) -> tuple[list[int], list[tuple]]:
    rows = sorted(tuple(r.values()) for r in merge.log_rows.to_pylist())
    return sorted(merge.dropped_base_rows), rows


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.lists(st.tuples(KEYS, VALUE), max_size=5), blocks=st.lists(BLOCK, min_size=1, max_size=4),
       version=st.sampled_from([6, 8]))
def test_duckdb_merge_equals_the_core_merge(tmp_path_factory, payload, base, blocks, version):
    root = tmp_path_factory.mktemp("slice")
    slice_ = _write_slice(root, base, blocks)
    mode = MergeMode.COMMIT_TIME_ORDERING if payload == "commit" else MergeMode.EVENT_TIME_ORDERING
    merge = MergeConfig(mode, "ord", None, PAYLOADS[payload], version)
    ctx = SliceReadContext(get_storage(str(root)), SCHEMA, merge, CommittedInstants(frozenset(f"{i:03d}" for i in range(1, 10)), None))
    assert _outcome(duck_merge(ctx, slice_)) == _outcome(core_merge(ctx, slice_)), (base, blocks)


ENTRY = st.tuples(KEYS, st.sampled_from(["record", "natural_record", "delete"]), st.one_of(st.none(), st.integers(-2, 2)))


def _sql_and_core_ranks(entries, mode: MergeMode, one_record_per_key: bool = False) -> tuple[list, list]:
    """(ignored, reset) of each entry as ``log_ranks_sql`` ranks it in DuckDB, and as the core does."""
    logged = []
    for key, kind, value in entries:
        if kind == "record":
            logged.append(LogEntry(key, False, Ordering(Kind.VALUE, JavaClass.LONG, value) if value is not None else Ordering(Kind.NULL)))
        elif kind == "natural_record":
            logged.append(LogEntry(key, False, NATURAL))
        else:
            logged.append(LogEntry(key, True, delete_ordering(value, "LongWrapper" if value else None)))
    want = [(r.ignored, r.reset) for r in rank_log_entries(logged, mode, JavaClass.LONG)]
    table = pa.table({
        "k": pa.array([e.key for e in logged], pa.string()),
        "s": pa.array(range(len(logged)), pa.int64()),
        "d": pa.array([e.is_delete for e in logged], pa.bool_()),
        "n": pa.array([e.ordering.is_natural or (e.is_delete and e.ordering.java_class is not JavaClass.LONG) for e in logged], pa.bool_()),
        "nd": pa.array([e.is_delete and e.ordering.is_natural for e in logged], pa.bool_()),
    })
    sql = log_ranks_sql("t", mode, key="k", seq="s", is_delete="d", never_compared="n", natural_delete="nd",
                        one_record_per_key=one_record_per_key)
    con = duckdb.connect()
    con.register("t", table)
    got = con.execute(f"SELECT _hd_ignored, _hd_reset FROM ({sql}) ORDER BY s").fetchall()
    return [tuple(r) for r in got], want


@settings(max_examples=200, deadline=None)
@given(entries=st.lists(ENTRY, max_size=10), mode=st.sampled_from(list(MergeMode)))
def test_ranks_in_sql_equal_the_core_ranks(entries, mode):
    got, want = _sql_and_core_ranks(entries, mode)
    assert got == want


@settings(max_examples=200, deadline=None)
@given(entries=st.lists(ENTRY, max_size=4, unique_by=lambda e: e[0]), mode=st.sampled_from(list(MergeMode)))
def test_ranks_of_one_record_per_key_equal_the_core_ranks(entries, mode):
    """The rendering for log records of distinct keys (no window) ranks as the core does."""
    got, want = _sql_and_core_ranks(entries, mode, one_record_per_key=True)
    assert got == want


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 2), st.integers(-2, 2) | st.none(), st.booleans(), st.booleans()), max_size=8),
       mode=st.sampled_from(list(MergeMode)))
def test_one_record_per_key_winners_equal_the_ranked_winners(rows, mode):
    """Distinct keys: the plain rendering of the winners keeps the rows the windowed one keeps."""
    from hudi_duck.core.merge.ordering import engine_ordering
    from hudi_duck.core.merge.sql import latest_log_records_sql

    table = pa.table({
        "k": pa.array([f"k{i}" for i in range(len(rows))], pa.string()),
        "slice": pa.array([r[0] for r in rows], pa.int32()),
        "s": pa.array(range(len(rows)), pa.int64()),
        "o": pa.array([r[1] for r in rows], pa.int64()),
        "d": pa.array([r[2] for r in rows], pa.bool_()),
        "n": pa.array([r[3] for r in rows], pa.bool_()),
        "nd": pa.array([r[2] and r[3] for r in rows], pa.bool_()),
    })
    con = duckdb.connect()
    con.register("t", table)
    spec = engine_ordering("o", pa.int64())
    picked = []
    for one in (False, True):
        ranks = log_ranks_sql("t", mode, key="slice, k", seq="s", is_delete="d", never_compared="n", natural_delete="nd",
                              one_record_per_key=one)
        sql = latest_log_records_sql(f"({ranks})", key="slice, k", seq="s", ignored="_hd_ignored", reset="_hd_reset",
                                     ordering="o", spec=spec, one_record_per_key=one)
        picked.append(con.execute(f"SELECT s, _hd_reset FROM ({sql}) ORDER BY s").fetchall())
    assert picked[0] == picked[1]


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@pytest.mark.parametrize("repeated", [False, True])
@pytest.mark.parametrize("base_repeats", [False, True])
def test_the_fold_ranks_only_when_a_key_repeats(tmp_path, monkeypatch, payload, repeated, base_repeats):
    """Log records of distinct keys fold without ranking; a key in two blocks is ranked. A base
    key's first row is looked for only when a base key repeats. All decide what the core's merge
    decides."""
    from hudi_duck.duck import merge as duck_merge_module

    blocks = [("data", True, [("record", "a", 5, None), ("record", "b", 1, None)]),
              ("data", True, [("record", "c", 2, "soft")] + ([("record", "a", 3, None)] if repeated else []))]
    base = [("a", 4), ("b", 2), ("c", 1), ("d", 0)] + ([("a", 9), ("d", 1)] if base_repeats else [])
    slice_ = _write_slice(tmp_path, base, blocks)
    mode = MergeMode.COMMIT_TIME_ORDERING if payload == "commit" else MergeMode.EVENT_TIME_ORDERING
    ctx = SliceReadContext(get_storage(str(tmp_path)), SCHEMA, MergeConfig(mode, "ord", None, PAYLOADS[payload], 6),
                           CommittedInstants(frozenset(["001", "002", "003"]), None))
    rendered = []
    real = duck_merge_module.merge_sql

    def spy(c, s, one_record_per_key=False, one_base_row_per_key=False):
        rendered.append((one_record_per_key, one_base_row_per_key))
        return real(c, s, one_record_per_key, one_base_row_per_key)

    monkeypatch.setattr(duck_merge_module, "merge_sql", spy)
    assert _outcome(duck_merge(ctx, slice_)) == _outcome(core_merge(ctx, slice_))
    assert rendered == [(not repeated, not base_repeats)]


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_base_ordering_is_read_only_when_it_can_decide(tmp_path, payload):
    """Under commit-time ordering a base row never outlives a log record: its ordering value is not read."""
    from hudi_duck.core.file_group.reader import read_base_keys

    slice_ = _write_slice(tmp_path, [("a", 4), ("b", None)], [("data", True, [("record", "a", 5, None)])])
    mode = MergeMode.COMMIT_TIME_ORDERING if payload == "commit" else MergeMode.EVENT_TIME_ORDERING
    ctx = SliceReadContext(get_storage(str(tmp_path)), SCHEMA, MergeConfig(mode, "ord", None, PAYLOADS[payload], 6),
                           CommittedInstants(frozenset(["001", "002"]), None))
    keys, order = read_base_keys(ctx, slice_)
    assert keys.to_pylist() == ["a", "b"]
    assert (order.to_pylist() if order is not None else None) == (None if payload == "commit" else [4, None])


def test_slices_merged_in_one_query_fold_each_on_its_own(tmp_path):
    """Slices batched into one job: the same key in two slices is merged in each slice separately."""
    blocks = [("data", True, [("record", "a", 5, None), ("record", "b", 1, None)]),
              ("deletes", True, [("delete", "b", None, None)])]
    slices = []
    for i, base in enumerate([[("a", 1), ("b", 9)], [("a", 7)], []]):
        folder = tmp_path / f"s{i}"
        folder.mkdir()
        slices.append((folder, _write_slice(folder, base, blocks)))
    merge = MergeConfig(MergeMode.EVENT_TIME_ORDERING, "ord", None, DEFAULT_PAYLOAD, 6)
    for folder, slice_ in slices:
        ctx = SliceReadContext(get_storage(str(folder)), SCHEMA, merge, CommittedInstants(frozenset(["001", "002", "003"]), None))
        alone = _outcome(core_merge(ctx, slice_))
        (together,) = merge_slices(ctx, [slice_])
        assert _outcome(together) == alone
    # one query over the three (same storage root: the slices' paths are relative to it)
    ctx = SliceReadContext(get_storage(str(tmp_path)), SCHEMA, merge, CommittedInstants(frozenset(["001", "002", "003"]), None))
    moved = [FileSlice(f"s{i}", s.file_id, s.base_instant_time,
                       parse_base_file(f"s{i}", s.base_file.file_name, s.base_file.size),
                       tuple(parse_log_file(f"s{i}", f.file_name, f.size) for f in s.log_files)) for i, (_, s) in enumerate(slices)]
    together = [_outcome(m) for m in merge_slices(ctx, moved)]
    assert together == [_outcome(core_merge(ctx, s)) for s in moved]
    assert together[0] == ([0, 1], [("a", "U", "0.0", False, 5)])  # a: log 5 > base 1; b: deleted
    assert together[1] == ([], [])  # a: base 7 > log 5 survives; b: only deleted


# -- small slices batched into one merge job, read through DuckDB ----------------------------------------------

TRIPS_V8 = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
THREE_MERGES_AS_OF = "20251220210128625"


@pytest.fixture()
def batched(tmp_path, monkeypatch):
    """Every plan batches its small slices (the fixtures have fewer than a plan needs to batch),
    all into one job (as on one core)."""
    from hudi_duck.duck import lazy, planner

    monkeypatch.setenv("HUDI_DUCK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(lazy, "GROUP_MIN_SLICES", 1)
    monkeypatch.setattr(lazy, "_cores", lambda: 1)
    lazy.REGISTRY.clear()
    planner.clear_plan_cache()
    yield tmp_path / "cache"
    lazy.REGISTRY.clear()
    planner.clear_plan_cache()


def test_batched_slices_read_as_hudi_rs_reads_them(fixture_tables, batched):
    import hudi_duck
    from hudi_duck.api import arrow_table
    from hudi_duck.duck import lazy
    from oracle import diff_rows, hudi_rs_read

    path, as_of = fixture_tables[TRIPS_V8], THREE_MERGES_AS_OF
    con = hudi_duck.connect()
    args = f"'{path}', as_of := '{as_of}'"
    got = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot({args})"))
    assert not diff_rows(got, hudi_rs_read(path, as_of=as_of))
    assert len(list(batched.glob("*.logrows.parquet"))) == 1  # one job for every slice with logs
    (state,) = [s for s in lazy.REGISTRY.plans.values() if s.plan is not None]
    assert len(state.jobs) == 1 and len(next(iter(state.jobs.values()))) == len(state.slices) > 1
    # from the cache, in a new registry (as in another process), and with a partition filter
    lazy.REGISTRY.clear()
    city = got.column("city")[0].as_py()
    filtered = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot({args}) WHERE city = '{city}'"))
    assert not diff_rows(filtered, got.filter(pa.compute.equal(got.column("city"), city)))
