"""Read plans are values: frozen, picklable, without callables or a table object, and
whatever executes them (the core's slice reader, the SQL renderer) needs nothing else."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_duck.api import arrow_table
from hudi_duck.core.table.read_plan import (
    KeyGeneratorSpec,
    PartitionValues,
    QueryType,
    ReadOptions,
    ReadPlan,
    canonical,
    plan_incremental,
    plan_read_optimized,
    plan_snapshot,
)
from hudi_duck.core.table.table import HudiTable
from hudi_duck.duck.planner import render_plan
from oracle import diff_rows, hudi_rs_read
from conftest import FIXTURE_IDS

TRIPS_V8 = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
TIMESTAMP_KEYGEN = "sample_table/cow/v6_timebasedkeygen_nonhivestyle"
COMPLEX_KEYGEN = "sample_table/cow/v6_complexkeygen_hivestyle"
ROOT = Path(__file__).resolve().parents[1]


def plans_of(path: str) -> list[ReadPlan]:
    table = HudiTable(path)
    plans = [plan_snapshot(table), plan_read_optimized(table)]
    if table.has_meta_fields:
        plans.append(plan_incremental(table))
    for instant in table.timeline.completed_writes:
        plans.append(plan_snapshot(table, as_of=instant.requested_time))
    return plans


def leaves(value, seen_path="plan"):
    """Every value reachable from a plan's fields, with where it was found."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from leaves(getattr(value, f.name), f"{seen_path}.{f.name}")
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            yield from leaves(item, f"{seen_path}[]")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(k, f"{seen_path}{{}}")
            yield from leaves(v, f"{seen_path}[{k!r}]")
    else:
        yield seen_path, value


@pytest.mark.parametrize("fid", FIXTURE_IDS)
def test_plans_are_frozen_picklable_values_without_callables_or_tables(fixture_tables, fid):
    for plan in plans_of(fixture_tables[fid]):
        for where, value in leaves(plan):
            assert not callable(value), f"{where} is callable: {value!r}"
            assert not isinstance(value, HudiTable), where
        copy = pickle.loads(pickle.dumps(plan))
        assert copy == plan and copy.fingerprint() == plan.fingerprint()
        with pytest.raises(dataclasses.FrozenInstanceError):
            plan.slices = ()  # type: ignore[misc]
        for s in plan.slices:
            with pytest.raises(dataclasses.FrozenInstanceError):
                s.log_files = ()  # type: ignore[misc]


def test_plans_answer_the_format_questions(fixture_tables):
    trips = plan_snapshot(HudiTable(fixture_tables[TRIPS_V8]))
    assert trips.partition_columns == ("city",)
    assert {p.path: dict(p.values) for p in trips.partition_values} == {
        "city=chennai": {"city": "chennai"},
        "city=san_francisco": {"city": "san_francisco"},
        "city=sao_paulo": {"city": "sao_paulo"},
    }
    assert all(trips.has_table_schema(s) for s in trips.slices if s.base_file is not None)
    assert trips.key_generator is None and trips.instants is not None and trips.instants.until is None
    # typed values, exactly as the key generator parses the folders back
    complex_plan = plan_snapshot(HudiTable(fixture_tables[COMPLEX_KEYGEN]))
    values = [dict(p.values) for p in complex_plan.partition_values]
    assert values and all(isinstance(v["byteField"], int) and isinstance(v["shortField"], int) for v in values)
    # timestamp-based folders do not give the column's value back exactly: None, the files are read
    timestamp_plan = plan_snapshot(HudiTable(fixture_tables[TIMESTAMP_KEYGEN]))
    assert timestamp_plan.partition_values and all(p.values is None for p in timestamp_plan.partition_values)
    # a read taking partition values from the files needs none
    from_files = plan_snapshot(HudiTable(fixture_tables[TRIPS_V8]), options=ReadOptions(False))
    assert from_files.partition_columns == () and from_files.partition_values == ()
    assert plan_read_optimized(HudiTable(fixture_tables[TRIPS_V8])).instants is None


def test_instants_are_data_for_time_travel_and_v8_incremental_windows(fixture_tables):
    table = HudiTable(fixture_tables[TRIPS_V8])
    timeline = table.timeline
    writes = timeline.completed_writes
    middle = writes[len(writes) // 2]
    as_of = plan_snapshot(table, as_of=middle.requested_time)
    assert as_of.instants.until == middle.requested_time
    assert as_of.instants.completed == timeline.completed_write_times
    assert as_of.instants.admits(middle.requested_time) and not as_of.instants.admits(writes[-1].requested_time)
    # v8+: an instant counts for a window ending at T only if it completed by T
    end = middle.completion_time
    window = plan_incremental(table, begin=None, end=end)
    assert window.instants.until == end
    assert window.instants.completed == {i.requested_time for i in writes if i.completion_time <= end}
    assert window.commit_times == {i.requested_time for i in writes if i.completion_time <= end}


def test_the_sql_of_a_plan_needs_only_the_plan(con, fixture_tables):
    """A plan that went through pickle (no table anywhere) renders SQL that reads the right rows."""
    path = fixture_tables[TRIPS_V8]
    table = HudiTable(path)
    for plan, expected in (
        (plan_snapshot(table), hudi_rs_read(path)),
        (plan_read_optimized(table), hudi_rs_read(path, read_optimized=True)),
        (plan_incremental(table), hudi_rs_read(path, incremental=True)),
    ):
        copy = pickle.loads(pickle.dumps(plan))
        ours = arrow_table(con.sql(render_plan(copy)))
        assert not diff_rows(ours, expected), plan.query_type


READ_PLAN_SCRIPT = textwrap.dedent(
    """
    import pickle, sys
    import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
    from hudi_duck.core.file_group.reader import read_slice
    from hudi_duck.core.table import table as table_module

    def refuse(*args, **kwargs):
        raise AssertionError("a table object was made")

    table_module.HudiTable.__init__ = refuse
    plan = pickle.load(open(sys.argv[1], "rb"))
    ctx = plan.context()
    parts = [read_slice(ctx, s) for s in plan.slices]
    rows = pa.concat_tables(parts) if parts else plan.schema.empty_table()
    if plan.commit_times is not None:
        rows = rows.filter(pc.is_in(rows["_hoodie_commit_time"], pa.array(sorted(plan.commit_times), pa.string())))
    pq.write_table(rows, sys.argv[2])
    print(plan.fingerprint())
    print(sorted(m for m in sys.modules if m.split(".")[0] == "duckdb"))
    """
)


@pytest.mark.parametrize("kind", ["snapshot", "incremental", "as_of"])
def test_a_plan_is_executed_in_another_process_with_nothing_but_the_plan(fixture_tables, tmp_path, kind):
    path = fixture_tables[TRIPS_V8]
    table = HudiTable(path)
    first = table.timeline.completed_writes[1].requested_time
    if kind == "snapshot":
        plan, expected = plan_snapshot(table), hudi_rs_read(path)
    elif kind == "as_of":
        plan, expected = plan_snapshot(table, as_of=first), hudi_rs_read(path, as_of=first)
    else:
        plan, expected = plan_incremental(table, begin=first), hudi_rs_read(path, begin=first, incremental=True)
    (tmp_path / "plan.pickle").write_bytes(pickle.dumps(plan))
    env = dict(os.environ, PYTHONHASHSEED="12345")  # another order of sets: the fingerprint must not care
    done = subprocess.run(
        [sys.executable, "-c", READ_PLAN_SCRIPT, str(tmp_path / "plan.pickle"), str(tmp_path / "rows.parquet")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    fingerprint, loaded = done.stdout.splitlines()
    assert fingerprint == plan.fingerprint()
    assert loaded == "[]"  # no table object was made, and DuckDB was not loaded
    assert not diff_rows(pq.read_table(tmp_path / "rows.parquet"), expected)


def _generic_canonical(value):
    """The canonical form of a dataclass the way the generic rule spells it (field by field)."""
    return (type(value).__name__,) + tuple((f.name, canonical(getattr(value, f.name))) for f in dataclasses.fields(value))


def test_canonical_forms_of_partition_values_and_plans_are_the_generic_ones(fixture_tables):
    """The direct forms (partition values, dataclass fields looked up once) keep a plan's
    fingerprint what the field-by-field rule gives, so fingerprints stay stable."""
    for value in (
        PartitionValues("city=sf", (("city", "sf"),)),
        PartitionValues("", None),
        PartitionValues("d=2024-01-01", (("d", __import__("datetime").date(2024, 1, 1)), ("n", 3))),
    ):
        assert canonical(value) == _generic_canonical(value)
    plan = plan_snapshot(HudiTable(fixture_tables[TRIPS_V8]))
    assert plan.partition_values and plan.folder_partition_values
    assert canonical(plan) == _generic_canonical(plan)
    assert canonical(plan.partition_values) == tuple(_generic_canonical(v) for v in plan.partition_values)


def test_virtual_key_tables_carry_their_key_generator_as_configuration(fixture_tables):
    path = fixture_tables[TRIPS_V8]
    table = HudiTable(path)
    spec = KeyGeneratorSpec(tuple(sorted(table.config.props.items())))
    rows = pa.table({"uuid": ["a", "b"], "city": ["x", "y"]})
    assert spec.build().record_keys(rows).to_pylist() == table.key_generator.record_keys(rows).to_pylist()
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert plan_snapshot(table).query_type is QueryType.SNAPSHOT
