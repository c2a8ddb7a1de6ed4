"""Mutation fuzzing of the readers of every file kind a table holds.

Each target takes one real file of a fixture table (written by Apache Hudi),
mutates a copy (bit flips, truncations, zeroed ranges, swapped chunks, random
bytes at random lengths; deterministic seeds) and reads it the way hudi-duck
does. Every case ends in one outcome:

* ``same``     the reader returned what it returns for the intact file
* ``warned``   rows came back with a warning naming the file (a corrupt log block Hudi skips)
* ``error``    one of hudi-duck's errors, naming the file
* ``rejected`` a cache entry failed its seal and is rebuilt (never read)
* ``changed``  different content and no word: the mutation hit bytes no checksum covers
  (Hudi's log blocks, timeline files, bloom filters carry none)

and the outcomes that are bugs: ``foreign`` (an exception that is not a hudi-duck
error), ``unnamed`` (a hudi-duck error that does not name the file), ``hang``
(the case ran past the time limit).

    python bench/fuzz.py --cases 1000            # every target, 1000 cases each
    python bench/fuzz.py --cases 200 --target log_avro --show foreign
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FIXTURES = Path(os.environ.get("HUDI_DUCK_FIXTURES", ROOT.parent / "shared" / "fixtures" / "hudi-tables"))

BUG_OUTCOMES = ("foreign", "unnamed", "hang")
CASE_SECONDS = 10.0


# -- mutations ---------------------------------------------------------------------------------------


def _bit_flips(data: bytearray, rng: random.Random) -> bytearray:
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        pos = rng.randrange(len(data))
        data[pos] ^= 1 << rng.randrange(8)
    return data


def _truncate(data: bytearray, rng: random.Random) -> bytearray:
    return data[: rng.randrange(len(data))]


def _zero_range(data: bytearray, rng: random.Random) -> bytearray:
    start = rng.randrange(len(data))
    length = rng.choice((1, 4, 8, 64, 512, len(data)))
    data[start : start + length] = bytes(len(data[start : start + length]))
    return data


def _swap_chunks(data: bytearray, rng: random.Random) -> bytearray:
    size = rng.choice((1, 4, 16, 128, 1024))
    if len(data) < 2 * size:
        size = max(1, len(data) // 2)
    a = rng.randrange(len(data) - size + 1)
    b = rng.randrange(len(data) - size + 1)
    chunk_a, chunk_b = bytes(data[a : a + size]), bytes(data[b : b + size])
    data[a : a + size] = chunk_b
    data[b : b + size] = chunk_a
    return data


def _random_bytes(data: bytearray, rng: random.Random) -> bytearray:
    """Random bytes of a random length over a random place (a length field, often)."""
    start = rng.randrange(len(data))
    length = rng.choice((1, 2, 4, 8, 32))
    data[start : start + length] = bytes(rng.randrange(256) for _ in range(length))
    if rng.random() < 0.2:
        data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 256)))
    return data


def _extreme_int(data: bytearray, rng: random.Random) -> bytearray:
    """A 4- or 8-byte big-endian field set to a huge or negative value (a corrupt length)."""
    start = rng.randrange(len(data))
    width = rng.choice((4, 8))
    value = rng.choice((b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x10\x00\x00"))
    data[start : start + width] = (value * 2)[:width]
    return data


MUTATORS: dict[str, Callable[[bytearray, random.Random], bytearray]] = {
    "bit_flip": _bit_flips,
    "truncate": _truncate,
    "zero_range": _zero_range,
    "swap_chunks": _swap_chunks,
    "random_bytes": _random_bytes,
    "extreme_int": _extreme_int,
}


def mutate(data: bytes, seed: int) -> bytes:
    """A mutated copy of ``data``; the same seed gives the same copy."""
    rng = random.Random(seed)
    name = rng.choice(sorted(MUTATORS))
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    return bytes(MUTATORS[name](bytearray(data), rng))


# -- running one case ---------------------------------------------------------------------------------


class CaseTimeout(BaseException):
    """Raised by the alarm when one case runs too long (a BaseException: no reader catches it)."""


@dataclass
class Outcome:
    kind: str
    detail: str = ""


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _on_alarm(signum, frame):  # noqa: ARG001
    raise CaseTimeout()


def run_case(read: Callable[[], object], baseline: object, names: tuple[str, ...]) -> Outcome:
    """Run one read and classify it; ``names``: spellings of the mutated file an error must contain."""
    from hudi_duck.core.errors import HudiError
    from hudi_duck.core.file_group import log_scanner

    log_scanner._reported_files.clear()  # warn again for the same file in every case
    handler = _Warnings()
    logger = logging.getLogger("hudi_duck")
    logger.addHandler(handler)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        result = read()
    except CaseTimeout:
        return Outcome("hang")
    except HudiError as exc:
        text = str(exc)
        if any(n in text for n in names):
            return Outcome("error", f"{type(exc).__name__}: {text[:200]}")
        return Outcome("unnamed", f"{type(exc).__name__}: {text[:300]}")
    except Exception as exc:  # noqa: BLE001 - classifying is the point
        return Outcome("foreign", f"{type(exc).__name__}: {str(exc)[:200]}\n{traceback.format_exc(limit=-4)}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        logger.removeHandler(handler)
    if any(any(n in m for n in names) for m in handler.messages):
        return Outcome("warned")
    if result == "rejected":
        return Outcome("rejected")
    if result == baseline:
        return Outcome("same")
    return Outcome("changed", _difference(baseline, result))


def _difference(baseline: object, result: object) -> str:
    if isinstance(baseline, tuple) and isinstance(result, tuple):
        lost = [r for r in baseline if r not in set(result)]
        new = [r for r in result if r not in set(baseline)]
        return f"{len(lost)} rows lost, {len(new)} rows new; e.g. {(lost or new)[:1]!s:.300}"
    return f"{result!r:.200}"


# -- targets ------------------------------------------------------------------------------------------


@dataclass
class Target:
    """One file of one table and how hudi-duck reads it."""

    name: str
    file: Path  # the file the cases overwrite
    read: Callable[[], object]  # reads the table (or file) as hudi-duck does; a comparable result
    names: tuple[str, ...] = ()
    original: bytes = b""
    baseline: object = None
    restore: Callable[[], None] = field(default=lambda: None)

    def prepare(self) -> None:
        self.original = self.file.read_bytes()
        self.names = self.names or (self.file.name,)
        self.baseline = self.read()

    def case(self, seed: int) -> Outcome:
        data = mutate(self.original, seed)
        if data == self.original:
            return Outcome("same")
        self.file.write_bytes(data)
        try:
            return run_case(self.read, self.baseline, self.names)
        finally:
            self.file.write_bytes(self.original)
            self.restore()


def _unzip(fid: str, root: Path) -> Path:
    dest = root / fid.replace("/", "__")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with zipfile.ZipFile(FIXTURES / f"{fid}.zip") as archive:
        archive.extractall(dest, [m for m in archive.namelist() if not m.startswith("__MACOSX/")])
    (table,) = [p.parent for p in dest.glob("*/.hoodie")]
    return table


def _table_rows(base: Path, plan_of: str | None = None, as_of: str | None = None) -> Callable[[], object]:
    """A snapshot read with the core reader (plan, file-presence check, log merge): sorted rows."""

    def read() -> object:
        import pyarrow as pa

        from hudi_duck.core.file_group.reader import read_slice
        from hudi_duck.core.table.read_plan import plan_snapshot
        from hudi_duck.core.table.table import HudiTable

        table = HudiTable(str(base))
        if plan_of is not None:  # a plan no snapshot reads: decode it as table services do
            table.timeline.plan(plan_of)
        plan = plan_snapshot(table, as_of=as_of)
        ctx = plan.context()
        tables = [read_slice(ctx, s) for s in plan.slices]
        if not tables:
            return ()
        rows = pa.concat_tables(tables, promote_options="permissive")
        return tuple(sorted(repr(r) for r in rows.to_pylist()))

    return read


def _one(base: Path, pattern: str) -> Path:
    found = sorted(p for p in base.glob(pattern) if "__MACOSX" not in str(p))
    return found[0]


def _hfile_target(root: Path) -> Target:
    from hudi_duck.core.hfile.reader import read_hfile

    base = _unzip("quickstart_trips_table/mor/avro/v8_trips_8i3u1d", root)
    path = _one(base, ".hoodie/metadata/files/files-0000-0_*_20251220210130942.hfile")
    return Target("hfile", path, lambda: tuple(read_hfile(path.read_bytes(), str(path))))


def _bloom_target(root: Path) -> Target:
    """A base file whose footer holds the mutated bloom filter; read as the bloom index does."""
    import pyarrow.parquet as pq

    from hudi_duck.core.file_group.base_file import read_base_file_footer
    from hudi_duck.core.index import bloom
    from hudi_duck.core.storage.storage import get_storage

    base = _unzip("sample_table/cow/v6_nonpartitioned", root)
    source = _one(base, "*.parquet")
    meta = pq.read_metadata(source).metadata
    keys = pq.read_table(source, columns=["_hoodie_record_key"]).column(0).to_pylist()
    table = pq.read_table(source)
    blob = root / "bloom.bin"
    blob.write_bytes(meta[bloom.BLOOM_FILTER_FOOTER_KEY.encode()])
    folder = root / "bloom_table"
    folder.mkdir(exist_ok=True)
    target = folder / source.name
    storage = get_storage(str(folder))

    def read() -> object:
        footer = dict(meta)
        footer[bloom.BLOOM_FILTER_FOOTER_KEY.encode()] = blob.read_bytes()
        pq.write_table(table.replace_schema_metadata(footer), target)
        bf = read_base_file_footer(storage, target.name)["bloom_filter"]
        return bool(bf.might_contain_all(keys).all())

    return Target("bloom_footer", blob, read, names=(target.name,))


def _cache_target(root: Path) -> Target:
    """A sealed merge-cache entry: a damaged one must be refused (rebuilt), never read."""
    import pyarrow as pa

    from hudi_duck.duck import cache

    folder = root / "cache"
    folder.mkdir(exist_ok=True)
    path = folder / "fuzzkey.merged.parquet"
    rows = pa.table({"_hoodie_record_key": [f"k{i}" for i in range(200)], "v": list(range(200))})
    cache.write_parquet(rows, path, "fuzzkey.merged")
    intact = path.read_bytes()

    def read() -> object:
        cache._forget(str(path))
        data = cache.read_checked(path, "fuzzkey.merged")
        if data is None:
            return "rejected"
        return "intact" if data == intact else ("accepted", len(data))

    return Target("merge_cache", path, read)


def _blob_target(root: Path) -> Target:
    """A signed plan blob of the lazy merge: a damaged one must be refused, never unpickled."""
    import pickle

    from hudi_duck.duck import cache

    path = root / "plan.blob"
    payload = pickle.dumps({"slices": [f"slice-{i}" for i in range(50)]})
    cache.write_blob(path, "plan-token", payload, b"secret")

    def read() -> object:
        data = cache.read_blob(path, "plan-token", b"secret")
        if data is None:
            return "rejected"
        return "intact" if data == payload else ("accepted", len(data))

    return Target("plan_blob", path, read)


TRIPS6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
TRIPS8 = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
ROLLBACK = "sample_table/mor/parquet/v6_nonpartitioned_rollback"
PARQUET_LOGS = "sample_table/mor/parquet/v6_nonpartitioned"


def _table_target(name: str, fid: str, pattern: str, **read: str) -> Callable[[Path], Target]:
    def make(root: Path) -> Target:
        base = _unzip(fid, root)
        return Target(name, _one(base, pattern), _table_rows(base, **read))

    return make


#: target name -> how to set it up under a scratch folder
TARGETS: dict[str, Callable[[Path], Target]] = {
    "log_avro": _table_target("log_avro", TRIPS6, "city=san_francisco/.*.log.*"),
    "log_parquet": _table_target("log_parquet", PARQUET_LOGS, ".*.log.*"),
    # the delete block is compacted since: read as of the commit that wrote it
    "log_delete": _table_target(
        "log_delete", TRIPS8, "city=chennai/.*_20251220210128625.log.*", as_of="20251220210128625"
    ),
    "log_command": _table_target("log_command", ROLLBACK, ".*.log.2_*"),
    "hoodie_properties": _table_target("hoodie_properties", TRIPS6, ".hoodie/hoodie.properties"),
    "timeline_json": _table_target("timeline_json", TRIPS6, ".hoodie/20250331030645735.deltacommit"),
    "timeline_avro_commit": _table_target(
        "timeline_avro_commit", TRIPS8, ".hoodie/timeline/20251220210130911_*.deltacommit"
    ),
    "timeline_avro_plan": _table_target(
        "timeline_avro_plan", TRIPS8, ".hoodie/timeline/20251220210129235.compaction.requested",
        plan_of="20251220210129235",
    ),
    "hfile": _hfile_target,
    "bloom_footer": _bloom_target,
    "merge_cache": _cache_target,
    "plan_blob": _blob_target,
}


# -- the run ------------------------------------------------------------------------------------------


def fuzz(cases: int, only: set[str] | None = None, root: Path | None = None, seed: int = 0,
         show: set[str] = frozenset()) -> dict[str, collections.Counter]:
    """Outcome counts per target for ``cases`` mutations each (seeds ``seed`` .. ``seed + cases - 1``)."""
    from hudi_duck.duck import cache

    own_root = root is None
    root = Path(tempfile.mkdtemp(prefix="hudi_duck_fuzz_")) if root is None else root
    previous_cache = os.environ.get(cache.ENV_DIR)
    os.environ[cache.ENV_DIR] = str(root / "merge_cache_dir")
    logging.getLogger("hudi_duck").propagate = False
    try:
        results: dict[str, collections.Counter] = {}
        for name, make in TARGETS.items():
            if only and name not in only:
                continue
            (root / name).mkdir(parents=True, exist_ok=True)
            target = make(root / name)
            target.prepare()
            counts: collections.Counter = collections.Counter()
            for index in range(cases):
                outcome = target.case(seed + index)
                counts[outcome.kind] += 1
                if outcome.kind in show:
                    print(f"[{target.name} seed={seed + index}] {outcome.kind}: {outcome.detail}", file=sys.stderr)
            results[target.name] = counts
        return results
    finally:
        logging.getLogger("hudi_duck").propagate = True
        if previous_cache is None:
            os.environ.pop(cache.ENV_DIR, None)
        else:
            os.environ[cache.ENV_DIR] = previous_cache
        if own_root:
            shutil.rmtree(root, ignore_errors=True)


KINDS = ("same", "warned", "error", "rejected", "changed", "foreign", "unnamed", "hang")


def format_table(results: dict[str, collections.Counter], cases: int) -> str:
    lines = ["| target | cases | " + " | ".join(KINDS) + " |", "|---|---:|" + "---:|" * len(KINDS)]
    for name, counts in results.items():
        lines.append(f"| `{name}` | {cases} | " + " | ".join(str(counts.get(k, 0)) for k in KINDS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="mutations per target (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--target", action="append", help="only this target (repeatable)")
    parser.add_argument("--show", action="append", default=[], help="print the cases of this outcome (repeatable)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = fuzz(args.cases, set(args.target) if args.target else None, seed=args.seed, show=set(args.show))
    print(format_table(results, args.cases))
    bugs = sum(c[k] for c in results.values() for k in BUG_OUTCOMES)
    print(f"\n{sum(sum(c.values()) for c in results.values())} cases in {time.perf_counter() - started:.1f}s; "
          f"{bugs} ended in foreign errors, unnamed errors or hangs")
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
