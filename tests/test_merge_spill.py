"""A slice merge bounded by its memory budget (``hoodie.memory.merge.max.size``) spills.

With a budget too small to hold a slice's decoded log records, the merge
writes them to parquet files in the spill folder (``hoodie.memory.spillable.map.path``)
and folds them in DuckDB there; the result must be the one the default budget
gives, for every merge mode and ordering the merge tests cover (their generated
slices, with deletes of every kind, and the MOR fixture tables Hudi wrote).
The spill files exist while the merge runs and are gone after it, also when it
fails; an unwritable spill folder is an error naming the folder and the option.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_duck_merge import BLOCK, KEYS, PAYLOADS, SCHEMA, VALUE, _write_slice

import hudi_duck
from hudi_duck.api import arrow_table
from hudi_duck.core.config.read_settings import (
    DEFAULT_MERGE_MAX_SIZE,
    MERGE_MAX_SIZE,
    SPILLABLE_MAP_PATH,
    MergeMemory,
)
from hudi_duck.core.errors import CorruptFileError, HudiError
from hudi_duck.core.file_group.log_blocks import decode_data_block, encode_avro_records, iter_data_block
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, encode_block, read_log_file
from hudi_duck.core.file_group.reader import SliceReadContext
from hudi_duck.core.merge.mode import MergeConfig, MergeMode
from hudi_duck.core.storage.storage import get_storage
from hudi_duck.core.table.fs_view import CommittedInstants
from hudi_duck.duck import lazy, merge, planner
from hudi_duck.duck.merge import SpilledRows, merge_slice_logs

MOR_FIXTURES = [
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",  # commit-time ordering
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",  # event-time ordering, a delete
    "sample_table/mor/parquet/v6_nonpartitioned",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle",
]


def _rows(merged) -> tuple[list[int], list[tuple]]:
    """Dropped base rows and kept log rows of a merge (spilled rows read, then released)."""
    log_rows = merged.log_rows
    if isinstance(log_rows, SpilledRows):
        table = pa.Table.from_batches(list(log_rows.to_batches()), schema=log_rows.schema)
        log_rows.release()
    else:
        table = log_rows
    return sorted(int(r) for r in merged.dropped_base_rows), sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.fixture()
def spied(monkeypatch):
    """The spill folder's files as the spilled fold starts, for every merge that spills."""
    seen: list[list[str]] = []
    fold = merge._fold_spilled

    def spy(ctx, spec, spill, active):
        seen.append(sorted(os.listdir(spill.folder)))
        return fold(ctx, spec, spill, active)

    monkeypatch.setattr(merge, "_fold_spilled", spy)
    return seen


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.lists(st.tuples(KEYS, VALUE), max_size=5), blocks=st.lists(BLOCK, min_size=1, max_size=4),
       version=st.sampled_from([6, 8]))
def test_spilled_merge_equals_the_in_memory_merge(tmp_path_factory, spied, payload, base, blocks, version):
    root = tmp_path_factory.mktemp("slice")
    spill_path = tmp_path_factory.mktemp("spill")
    slice_ = _write_slice(root, base, blocks)
    mode = MergeMode.COMMIT_TIME_ORDERING if payload == "commit" else MergeMode.EVENT_TIME_ORDERING
    config = MergeConfig(mode, "ord", None, PAYLOADS[payload], version)
    instants = CommittedInstants(frozenset(f"{i:03d}" for i in range(1, 10)), None)
    storage = get_storage(str(root))
    default = SliceReadContext(storage, SCHEMA, config, instants)
    tiny = SliceReadContext(storage, SCHEMA, config, instants, memory=MergeMemory.of(0, str(spill_path)))
    spills = len(spied)
    assert _rows(merge_slice_logs(tiny, slice_)) == _rows(merge_slice_logs(default, slice_)), (base, blocks)
    assert len(spied) == spills + 1  # the tiny budget spilled, the default did not
    assert not os.listdir(spill_path)  # and its files are gone


def _read(path: str, cache: Path, **options) -> list[str]:
    """A fresh snapshot read (empty merge cache, no plan or merge remembered)."""
    os.environ["HUDI_DUCK_CACHE_DIR"] = str(cache)
    lazy.REGISTRY.clear()
    planner.clear_plan_cache()
    args = "".join(f", {name} := '{value}'" for name, value in options.items())
    table = arrow_table(hudi_duck.connect().sql(f"SELECT * FROM hudi_snapshot('{path}'{args})"))
    return sorted(str(sorted(row.items())) for row in table.to_pylist())


@pytest.fixture()
def fresh_cache(monkeypatch):
    monkeypatch.setenv("HUDI_DUCK_CACHE_DIR", os.environ.get("HUDI_DUCK_CACHE_DIR", ""))
    yield
    lazy.REGISTRY.clear()
    planner.clear_plan_cache()


@pytest.mark.parametrize("fid", MOR_FIXTURES)
def test_fixture_tables_read_the_same_with_a_tiny_budget(fixture_tables, tmp_path, fresh_cache, spied, fid):
    path = fixture_tables[fid]
    spill = tmp_path / "spill"
    default = _read(path, tmp_path / "cache-default")
    assert not spied
    small = _read(path, tmp_path / "cache-small", memory_merge_max_size="0", memory_spillable_map_path=str(spill))
    assert small == default and default
    # the spill happened: decoded log records and base keys were in the spill path during the merge
    assert spied and all({"base.parquet", "entries.parquet"} <= set(files) for files in spied)
    assert any(f.startswith("rows-") for files in spied for f in files)
    assert spill.is_dir() and not os.listdir(spill)  # removed after the merge


def test_the_python_api_takes_the_budget(fixture_tables, tmp_path, fresh_cache, spied):
    path = fixture_tables[MOR_FIXTURES[1]]
    os.environ["HUDI_DUCK_CACHE_DIR"] = str(tmp_path / "cache")
    lazy.REGISTRY.clear()
    reader = hudi_duck.open_table(path, memory_merge_max_size="1KiB", memory_spillable_map_path=str(tmp_path / "spill"))
    assert reader.plan().options.merge_memory == MergeMemory(1024, str(tmp_path / "spill"))
    rows = reader.snapshot().read_all()
    assert rows.num_rows == 6 and spied
    assert hudi_duck.read_snapshot(path).read_all().num_rows == 6


def test_a_failed_spilled_merge_removes_its_files(fixture_tables, tmp_path, fresh_cache, monkeypatch):
    spill = tmp_path / "spill"

    def fail(ctx, spec, spill_, active):
        assert os.listdir(spill_.folder)
        raise HudiError("the fold failed")

    monkeypatch.setattr(merge, "_fold_spilled", fail)
    with pytest.raises(Exception, match="the fold failed"):
        _read(fixture_tables[MOR_FIXTURES[1]], tmp_path / "cache", memory_merge_max_size="0",
              memory_spillable_map_path=str(spill))
    assert spill.is_dir() and not os.listdir(spill)


def test_an_unwritable_spill_path_is_an_error_naming_it(fixture_tables, tmp_path, fresh_cache):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the spill folder should be")
    spill = blocker / "spill"
    with pytest.raises(Exception) as info:
        _read(fixture_tables[MOR_FIXTURES[1]], tmp_path / "cache", memory_merge_max_size="0",
              memory_spillable_map_path=str(spill))
    message = str(info.value)
    assert str(spill) in message and SPILLABLE_MAP_PATH in message and MERGE_MAX_SIZE in message
    assert "Traceback" not in message
    # under the budget nothing spills, so the same path is never touched
    assert _read(fixture_tables[MOR_FIXTURES[1]], tmp_path / "cache2", memory_spillable_map_path=str(spill))


def test_a_spill_that_fails_to_write_names_the_path(tmp_path, monkeypatch):
    """A write error while spilling (a full disk) is the same clear error, and nothing is left."""
    spill = merge.Spill(MergeMemory.of("1MiB", str(tmp_path)))
    spill.start()

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(merge.pq.ParquetWriter, "write_table", full)
    with pytest.raises(HudiError) as info:
        spill.write("entries", pa.table({"a": [1]}))
    assert "No space left on device" in str(info.value) and str(tmp_path) in str(info.value)
    assert SPILLABLE_MAP_PATH in str(info.value)
    spill.remove()
    assert not os.listdir(tmp_path)


def test_budget_options_are_checked():
    assert MergeMemory.of() == MergeMemory(DEFAULT_MERGE_MAX_SIZE, None) and DEFAULT_MERGE_MAX_SIZE == 1024**3
    assert MergeMemory.of("2GB").max_size == 2 * 1000**3 and MergeMemory.of("512MiB").max_size == 512 * 1024**2
    assert MergeMemory.of(None, "").spill_folder == MergeMemory().spill_folder
    with pytest.raises(ValueError, match=MERGE_MAX_SIZE):
        MergeMemory.of("lots")
    with pytest.raises(ValueError, match=MERGE_MAX_SIZE):
        hudi_duck.open_table("/nowhere", memory_merge_max_size=-1)


def test_bad_budget_in_sql_names_the_option(fixture_tables, fresh_cache):
    con = hudi_duck.connect()
    with pytest.raises(Exception) as info:
        con.sql(f"SELECT * FROM hudi_snapshot('{fixture_tables[MOR_FIXTURES[0]]}', memory_merge_max_size := 'lots')").fetchall()
    assert MERGE_MAX_SIZE in str(info.value) and "lots" in str(info.value)


SCHEMA_JSON = (
    '{"type": "record", "name": "r", "fields": [{"name": "k", "type": "string"}, '
    '{"name": "v", "type": ["null", "long"], "default": null}]}'
)


def _avro_block(tmp_path: Path, n: int) -> tuple[object, Path]:
    records = [{"k": f"key-{i:05d}", "v": None if i % 7 == 0 else i} for i in range(n)]
    content = encode_avro_records(records, SCHEMA_JSON)
    data = encode_block(BlockType.AVRO_DATA_BLOCK, {HeaderKey.INSTANT_TIME: "001", HeaderKey.SCHEMA: SCHEMA_JSON}, content)
    path = tmp_path / ".f1_001.log.1_0-0-0"
    path.write_bytes(data)
    return content, path


def test_a_large_avro_block_decodes_by_runs_to_the_same_rows(tmp_path):
    _, path = _avro_block(tmp_path, 5000)
    from hudi_duck.core.file_group.log_scanner import read_blocks
    from hudi_duck.core.file_group.naming import parse_log_file

    (block,) = list(read_blocks(get_storage(str(tmp_path)), [parse_log_file("", path.name, path.stat().st_size)]))
    target = pa.schema([("k", pa.string()), ("v", pa.int64())])
    whole = decode_data_block(block, target)
    pieces = list(iter_data_block(block, target, piece_bytes=4096))
    assert len(pieces) > 5 and sum(p.num_rows for p in pieces) == 5000
    assert pa.concat_tables(pieces).equals(whole)


def test_a_damaged_large_avro_block_is_a_corrupt_file_error(tmp_path):
    content, path = _avro_block(tmp_path, 2000)
    (block,) = read_log_file(path.read_bytes(), str(path))
    damaged = bytearray(content)
    damaged[8 + 4 * 0 : 8 + 4] = (10**6).to_bytes(4, "big")  # the first record's length runs past the block
    block.content = bytes(damaged)
    target = pa.schema([("k", pa.string()), ("v", pa.int64())])
    with pytest.raises(CorruptFileError, match=str(path)):
        list(iter_data_block(block, target, piece_bytes=4096))


def test_slices_merged_together_spill_each_on_its_own(tmp_path, spied):
    """A job of several slices (small slices batched) spills and folds each slice separately."""
    from test_duck_merge import _outcome
    from hudi_duck.core.file_group.file_slice import FileSlice
    from hudi_duck.core.file_group.naming import parse_base_file, parse_log_file
    from hudi_duck.core.file_group.reader import merge_slice_logs as core_merge
    from hudi_duck.core.merge.mode import DEFAULT_PAYLOAD

    blocks = [("data", True, [("record", "a", 5, None), ("record", "b", 1, None)]),
              ("deletes", True, [("delete", "b", None, None)])]
    moved = []
    for i, base in enumerate([[("a", 1), ("b", 9)], [("a", 7)], []]):
        folder = tmp_path / f"s{i}"
        folder.mkdir()
        s = _write_slice(folder, base, blocks)
        moved.append(FileSlice(f"s{i}", s.file_id, s.base_instant_time,
                               parse_base_file(f"s{i}", s.base_file.file_name, s.base_file.size),
                               tuple(parse_log_file(f"s{i}", f.file_name, f.size) for f in s.log_files)))
    config = MergeConfig(MergeMode.EVENT_TIME_ORDERING, "ord", None, DEFAULT_PAYLOAD, 6)
    instants = CommittedInstants(frozenset(["001", "002", "003"]), None)
    spill = tmp_path / "spill"
    ctx = SliceReadContext(get_storage(str(tmp_path)), SCHEMA, config, instants, memory=MergeMemory.of(0, str(spill)))
    together = [_rows(m) for m in merge.merge_slices(ctx, moved)]
    assert len(spied) == 1 and {"rows-0.parquet", "rows-1.parquet", "rows-2.parquet"} <= set(spied[0])
    assert together == [(sorted(_outcome(core_merge(ctx, s))[0]), _outcome(core_merge(ctx, s))[1]) for s in moved]
    assert together[0] == ([0, 1], [("a", "U", "0.0", False, 5)])
    assert not os.listdir(spill)


def test_batched_slices_spilled_read_as_hudi_rs_reads_them(fixture_tables, tmp_path, fresh_cache, spied, monkeypatch):
    from oracle import diff_rows, hudi_rs_read

    monkeypatch.setattr(lazy, "GROUP_MIN_SLICES", 1)
    monkeypatch.setattr(lazy, "_cores", lambda: 1)
    path, as_of = fixture_tables[MOR_FIXTURES[1]], "20251220210128625"
    os.environ["HUDI_DUCK_CACHE_DIR"] = str(tmp_path / "cache")
    lazy.REGISTRY.clear()
    planner.clear_plan_cache()
    con = hudi_duck.connect()
    got = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{path}', as_of := '{as_of}', memory_merge_max_size := 0, "
                              f"memory_spillable_map_path := '{tmp_path / 'spill'}')"))
    assert not diff_rows(got, hudi_rs_read(path, as_of=as_of))
    assert len(spied) == 1 and len([f for f in spied[0] if f.startswith("rows-")]) > 1
    assert not os.listdir(tmp_path / "spill")


def test_spill_folders_of_dead_processes_are_removed(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f"{merge._spill_prefix()}{int(dead.stdout)}-abc"
    (orphan / "duckdb").mkdir(parents=True)
    (orphan / "entries.parquet").write_bytes(b"left by a process that was killed")
    mine = tmp_path / f"{merge._spill_prefix()}{os.getpid()}-keep"
    mine.mkdir()
    spill = merge.Spill(MergeMemory.of(0, str(tmp_path)))
    spill.start()
    assert not orphan.exists() and mine.exists()
    spill.remove()
    assert sorted(os.listdir(tmp_path)) == [mine.name]
