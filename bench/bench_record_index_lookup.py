"""Record-index lookup time vs the size of the record-index file group (no Spark needed).

    python bench/bench_record_index_lookup.py                        # 10k .. 2M entries, 10 keys
    python bench/bench_record_index_lookup.py --entries 10000 100000 --keys 10 100

Half the keys looked up are present (rounded up), half absent. For each size, one record-index base HFile (``record-index-0000-0``) of that many entries
is written as the metadata table writes it (1 MiB blocks, GZ, bloom filter) and then looked
up, the way ``lookup_record_index`` reads a file slice's base file:

* ``seek``: trailer + load-on-open section, then only the data blocks that can hold the
  keys (range reads through ``Storage``), decoded;
* ``whole file``: read and parse the whole file, decode the wanted keys (the reader
  before the block-index seek), for comparison.

Reported per size and key count: best and median seconds of each, bytes read by the
seek, data blocks in the file, and the load average (``uptime``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DATA_DIR, Samples, environment, remove, table, write_results  # noqa: E402


def _keys(count: int) -> list[str]:
    """Record keys shaped like the bench tables' (uuid-like), sorted as the HFile keeps them."""
    rng = random.Random(count)
    return sorted("%08x-%04x-%04x-%04x-%012x" % tuple(rng.getrandbits(b) for b in (32, 16, 16, 16, 48)) for _ in range(count))


def _write_file(folder: Path, keys: list[str]) -> Path:
    from hudi_duck.core.hfile.writer import write_hudi_base_hfile
    from hudi_duck.core.index import bloom
    from hudi_duck.core.metadata.records import encode_cells, record_index_record, writer_schema_json

    file_id = "6a9e4f0c-1c59-4c8e-9d33-0f1d2a6b7c8e-0"
    records = (record_index_record(k, "city=tokyo", file_id, "20261124010203456") for k in keys)
    data = write_hudi_base_hfile(encode_cells(records), writer_schema_json(), bloom_filter=bloom.create())
    path = folder / "record-index-0000-0_0-1-0_20261124010203456.hfile"
    path.write_bytes(data)
    return path


class _Counting:
    def __init__(self, storage) -> None:
        self.storage = storage
        self.bytes = 0

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        data = self.storage.read_range(rel, start, end)
        self.bytes += len(data)
        return data


def _seek(storage, name: str, size: int, wanted: list[str]) -> tuple[int, int]:
    from hudi_duck.core.hfile.seek import SeekableHFile
    from hudi_duck.core.metadata.records import decode_values

    counting = _Counting(storage)
    hfile = SeekableHFile(lambda s, e: counting.read_range(name, s, e), size, name)
    records = decode_values(hfile.get(k.encode() for k in wanted), hfile.schema_json or "", name)
    return len(records), counting.bytes


def _whole(storage, name: str, wanted: list[str]) -> int:
    from hudi_duck.core.hfile.reader import open_hfile
    from hudi_duck.core.metadata.records import decode_values

    hfile = open_hfile(storage.read(name), name)
    keys = {k.encode() for k in wanted}
    return len(decode_values([c for c in hfile.cells if c[0] in keys], hfile.schema_json or "", name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, nargs="+", default=[10_000, 100_000, 500_000, 2_000_000])
    ap.add_argument("--keys", type=int, nargs="+", default=[10])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    args = ap.parse_args(argv)

    from hudi_duck.core.hfile.seek import KeyRange, SeekableHFile
    from hudi_duck.core.storage.storage import Storage

    folder = Path(args.data_dir) / "record-index-lookup"
    remove(folder)
    folder.mkdir(parents=True)
    storage = Storage(str(folder))
    rows, cases = [], {}
    for entries in args.entries:
        keys = _keys(entries)
        started = time.perf_counter()
        path = _write_file(folder, keys)
        print(f"{entries} entries: wrote {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s", flush=True)
        size = path.stat().st_size
        blocks = len(SeekableHFile.of_bytes(path.read_bytes()).data_blocks([KeyRange(b"", None)]))
        for count in args.keys:
            rng = random.Random(entries + count)
            seek, whole = Samples(f"seek {entries}/{count}"), Samples(f"whole {entries}/{count}")
            read = 0
            for round_ in range(args.repeat):
                present = (count + 1) // 2
                wanted = rng.sample(keys, present) + [f"absent-{round_}-{i}" for i in range(count - present)]
                load = os.getloadavg()[0]
                started = time.perf_counter()
                found, read = _seek(storage, path.name, size, wanted)
                seek.seconds.append(time.perf_counter() - started)
                assert found == present
                started = time.perf_counter()
                assert _whole(storage, path.name, wanted) == present
                whole.seconds.append(time.perf_counter() - started)
                seek.info.setdefault("load_1min", []).append(load)
            cases[f"{entries}/{count}"] = {"seek": seek.to_json(), "whole": whole.to_json(), "bytes_read": read, "file_bytes": size, "blocks": blocks}
            rows.append([
                entries, count, blocks, f"{size / 1e6:.1f}", f"{read / 1e6:.2f}",
                f"{seek.best * 1000:.1f}", f"{seek.median * 1000:.1f}", f"{whole.best * 1000:.0f}",
                " ".join(f"{x:.2f}" for x in seek.info["load_1min"]),
            ])
        path.unlink()
    print(table(["entries", "keys", "blocks", "file MB", "seek MB read", "seek best ms", "seek median ms", "whole-file best ms", "load (1 min)"], rows))
    out = write_results("record_index_lookup", {"env": environment(), "cases": cases})
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
