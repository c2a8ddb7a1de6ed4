"""Damaged files of every kind end in a hudi-duck error naming the file (or Hudi's documented
skip-with-warning), never a foreign exception, a hang or rows from a refused cache entry.

A bounded, deterministic run of ``bench/fuzz.py`` (the longer run: ``python bench/fuzz.py --cases N``).
"""

from __future__ import annotations

import collections
import glob
import json
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import fuzz  # noqa: E402

from hudi_duck.core.errors import CorruptFileError  # noqa: E402
from hudi_duck.core.file_group.log_blocks import block_record_count, decode_data_block  # noqa: E402
from hudi_duck.core.file_group.log_format import HeaderKey, read_log_file  # noqa: E402
from hudi_duck.core.table.table import HudiTable  # noqa: E402

CASES = 10  # per target: the whole run stays well under a minute


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory) -> dict[str, dict]:
    """Outcomes per target, with the seed and detail of every case that is a bug."""
    root = tmp_path_factory.mktemp("fuzz")
    bugs: dict[str, list[str]] = collections.defaultdict(list)
    counts: dict[str, collections.Counter] = {}
    for name, make in fuzz.TARGETS.items():
        (root / name).mkdir()
        target = make(root / name)
        target.prepare()
        tally: collections.Counter = collections.Counter()
        for seed in range(CASES):
            outcome = target.case(seed)
            tally[outcome.kind] += 1
            if outcome.kind in fuzz.BUG_OUTCOMES:
                bugs[name].append(f"seed {seed}: {outcome.kind}: {outcome.detail}")
        counts[name] = tally
    return {"counts": counts, "bugs": bugs}


@pytest.mark.parametrize("target", list(fuzz.TARGETS))
def test_damaged_file_is_an_error_naming_it(fuzz_run, target):
    assert not fuzz_run["bugs"].get(target), "\n".join(fuzz_run["bugs"][target])
    counts = fuzz_run["counts"][target]
    assert sum(counts.values()) == CASES
    if target in ("merge_cache", "plan_blob"):
        assert counts["rejected"] + counts["same"] == CASES  # a damaged entry is never read
    else:
        assert counts["error"] + counts["warned"] > 0, counts  # the mutated file is really read


def test_mutations_are_deterministic():
    data = bytes(range(256)) * 4
    assert [fuzz.mutate(data, s) for s in range(20)] == [fuzz.mutate(data, s) for s in range(20)]
    assert len({fuzz.mutate(data, s) for s in range(20)}) > 15


# -- the cases the fault probe found, spelled out ---------------------------------------------------


def _avro_log(fixture_tables) -> str:
    base = fixture_tables["quickstart_trips_table/mor/avro/v6_trips_8i1u"]
    (path,) = glob.glob(f"{base}/city=san_francisco/.*.log.*")
    return path


def test_damaged_schema_header_names_the_log_file(fixture_tables):
    path = _avro_log(fixture_tables)
    (block,) = read_log_file(Path(path).read_bytes(), path)
    target = HudiTable(str(Path(path).parents[1])).schema
    for damaged in (
        block.schema.replace('"fields"', '"fie"lds"'),  # not JSON
        block.schema.replace('"type":"record"', '"type":"recrod"'),  # JSON, not Avro
        json.dumps({"type": "record", "name": "r", "fields": [{"name": "x", "type": "no.such.Type"}]}),
    ):
        block.header[HeaderKey.SCHEMA] = damaged
        with pytest.raises(CorruptFileError) as info:
            decode_data_block(block, target)
        assert path in str(info.value)


def test_implausible_record_count_is_refused_before_decoding(fixture_tables):
    path = _avro_log(fixture_tables)
    (block,) = read_log_file(Path(path).read_bytes(), path)
    target = HudiTable(str(Path(path).parents[1])).schema
    block.content = struct.pack(">ii", 3, 2**31 - 1) + block.content[8:]
    with pytest.raises(CorruptFileError) as info:
        decode_data_block(block, target)
    assert path in str(info.value) and "claims" in str(info.value)


def test_trailing_bytes_after_the_records_are_corrupt(fixture_tables):
    path = _avro_log(fixture_tables)
    (block,) = read_log_file(Path(path).read_bytes(), path)
    target = HudiTable(str(Path(path).parents[1])).schema
    version, count = struct.unpack_from(">ii", block.content)
    block.content = struct.pack(">ii", version, count - 1) + block.content[8:]
    with pytest.raises(CorruptFileError) as info:
        decode_data_block(block, target)
    assert path in str(info.value)


def test_damaged_parquet_block_names_the_log_file(fixture_tables):
    base = fixture_tables["sample_table/mor/parquet/v6_nonpartitioned"]
    (path,) = glob.glob(f"{base}/.*.log.*")
    (block,) = read_log_file(Path(path).read_bytes(), path)
    target = HudiTable(base).schema
    block.content = block.content[: len(block.content) // 2]
    for decode in (lambda: decode_data_block(block, target), lambda: block_record_count(block)):
        with pytest.raises(CorruptFileError) as info:
            decode()
        assert path in str(info.value)
