"""Record-index lookup time and bytes read when the index lives in log files (no Spark needed).

    python bench/bench_record_index_log_lookup.py                      # 10k .. 1M entries, 10 keys
    python bench/bench_record_index_log_lookup.py --entries 100000 --commits 4

Right after a bulk insert (until the metadata table compacts) the record index of a file group
is one ``HFILE_DATA_BLOCK`` per delta commit in its log file. For each size, one record-index
log file of that many entries in ``--commits`` blocks is written as the metadata table writes
them (``write_hudi_block_hfile``: 1 MiB HFile blocks, GZ) and then looked up (half the keys
present, half absent):

* ``ranged``: the log blocks framed by ranged reads, each HFile seeked by key over ranged
  reads of the log file (how a keyed metadata-table read scans log files);
* ``whole``: the log file read whole, each HFile seeked in memory (the whole-file path).

Reported: best and median seconds of each, bytes each read, and the load average (``uptime``).
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
from bench_record_index_lookup import _keys  # noqa: E402

FILE_ID = "6a9e4f0c-1c59-4c8e-9d33-0f1d2a6b7c8e-0"
NAME = ".record-index-0000-0_20261124010203456.log.1_0-1-0"


def _write_log(folder: Path, keys: list[str], commits: int) -> Path:
    from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, encode_block
    from hudi_duck.core.hfile.writer import write_hudi_block_hfile
    from hudi_duck.core.metadata.records import encode_cells, record_index_record, writer_schema_json

    schema = writer_schema_json()
    path = folder / NAME
    with open(path, "wb") as out:
        for commit in range(commits):
            instant = f"2026112401020{commit:04d}"
            records = (record_index_record(k, "city=tokyo", FILE_ID, instant) for k in keys[commit::commits])
            content = write_hudi_block_hfile(encode_cells(records), schema)
            header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema}
            out.write(encode_block(BlockType.HFILE_DATA_BLOCK, header, content))
    return path


def _lookup(blocks, wanted: list[str]) -> int:
    from hudi_duck.core.hfile.seek import SeekableHFile

    found = 0
    rows = [k.encode() for k in wanted]
    for block in blocks:
        if block.content_reader is not None:
            hfile = SeekableHFile(block.content_reader, block.content_size, "bench")
        else:
            hfile = SeekableHFile.of_bytes(block.content, "bench")
        found += len(hfile.get(rows))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--commits", type=int, default=1)
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    args = ap.parse_args(argv)

    from hudi_duck.core.file_group.log_format import BlockType, iter_blocks_ranged, read_log_file
    from hudi_duck.core.storage.storage import Storage

    folder = Path(args.data_dir) / "record-index-log-lookup"
    remove(folder)
    folder.mkdir(parents=True)
    storage = Storage(str(folder))
    rows, cases = [], {}
    for entries in args.entries:
        keys = _keys(entries)
        path = _write_log(folder, keys, args.commits)
        size = path.stat().st_size
        rng = random.Random(entries)
        ranged, whole = Samples(f"ranged {entries}"), Samples(f"whole {entries}")
        read = [0]

        def read_range(start: int, end: int) -> bytes:
            data = storage.read_range(NAME, start, end)
            read[0] += len(data)
            return data

        for round_ in range(args.repeat):
            present = (args.keys + 1) // 2
            wanted = rng.sample(keys, present) + [f"absent-{round_}-{i}" for i in range(args.keys - present)]
            ranged.info.setdefault("load_1min", []).append(os.getloadavg()[0])
            read[0] = 0
            started = time.perf_counter()
            blocks = iter_blocks_ranged(read_range, size, NAME, frozenset({BlockType.HFILE_DATA_BLOCK}), lambda: storage.read(NAME))
            assert _lookup(blocks, wanted) == present
            ranged.seconds.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert _lookup(read_log_file(storage.read(NAME), NAME), wanted) == present
            whole.seconds.append(time.perf_counter() - started)
        cases[str(entries)] = {"ranged": ranged.to_json(), "whole": whole.to_json(), "bytes_read": read[0], "file_bytes": size}
        rows.append([
            entries, args.commits, args.keys, f"{size / 1e6:.2f}", f"{read[0] / 1e6:.3f}",
            f"{ranged.best * 1000:.1f}", f"{ranged.median * 1000:.1f}", f"{whole.best * 1000:.1f}", f"{whole.median * 1000:.1f}",
            " ".join(f"{x:.2f}" for x in ranged.info["load_1min"]),
        ])
        path.unlink()
    print(table(
        ["entries", "blocks", "keys", "log MB", "ranged MB read", "ranged best ms", "ranged median ms",
         "whole best ms", "whole median ms", "load (1 min)"],
        rows,
    ))
    out = write_results("record_index_log_lookup", {"env": environment(), "cases": cases})
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
