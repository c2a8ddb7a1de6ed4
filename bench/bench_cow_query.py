"""A COW aggregate through ``hudi_snapshot`` vs ``read_parquet`` of the same base files, warm.

    python bench/bench_read.py --build-only                 # once: builds the tables
    python bench/bench_cow_query.py --repeat 21

The query is ``SELECT city, count(*), sum(fare), max(fare) ... GROUP BY city`` on the
``bench_read.py`` COW table, on one connection, after one unmeasured run of each
case (so plans are cached and the OS has the files). Cases run interleaved; each
reports the median wall time and the median CPU time of the process (all threads),
which a busy machine distorts less:

* ``read_parquet``: the latest base files of the snapshot, listed in the query;
* ``hudi_snapshot``: the default, partition values taken from the folder (files of
  other partitions are skipped unopened on a partition filter) and checked against
  the value stored in the rows;
* ``hudi_snapshot, values from files``: ``extract_partition_values_from_path := false``
  (Hudi's default): the stored values, no check.

Results are compared (counts exact, sums rounded) before timing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DATA_DIR, table  # noqa: E402

QUERY = "SELECT city, count(*) AS n, sum(fare) AS fare, max(fare) AS top FROM {src} GROUP BY city ORDER BY city"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rounded(rows: list[tuple]) -> list[tuple]:
    return [(city, n, round(fare, 2), top) for city, n, fare, top in rows]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--repeat", type=int, default=21)
    args = ap.parse_args(argv)

    import hudi_duck

    path = Path(args.data_dir) / f"read-{args.rows}" / "cow"
    if not (path / ".hoodie").exists():
        print(f"no table at {path}: run bench/bench_read.py --rows {args.rows} --build-only first")
        return 1
    slices = hudi_duck.open_table(str(path)).file_slices()
    files = [str(path / s["partition_path"] / s["base_file"]) for s in slices]
    cases = {
        "read_parquet (same base files)": QUERY.format(src=f"read_parquet({files!r})"),
        "hudi_snapshot": QUERY.format(src=f"hudi_snapshot('{path}')"),
        "hudi_snapshot, values from files": QUERY.format(
            src=f"hudi_snapshot('{path}', extract_partition_values_from_path := false)"
        ),
    }
    con = hudi_duck.connect()
    results = {name: _rounded(con.execute(sql).fetchall()) for name, sql in cases.items()}
    agree = len({repr(r) for r in results.values()}) == 1
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, sql in cases.items():
            cpu_start, wall_start = _cpu(), time.perf_counter()
            con.execute(sql).fetchall()
            wall[name].append(time.perf_counter() - wall_start)
            cpu[name].append(_cpu() - cpu_start)
    base = "read_parquet (same base files)"
    rows = []
    for name in cases:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        rows.append([name, f"{w * 1000:.1f}", f"{c * 1000:.1f}",
                     f"{w / statistics.median(wall[base]):.2f}x", f"{c / statistics.median(cpu[base]):.2f}x"])
    print(f"{args.rows:,} rows, {len(files)} base files; {os.cpu_count()} cpus; load {os.getloadavg()[0]:.1f}; "
          f"medians of {args.repeat}")
    print(table(["case", "wall ms", "CPU ms", "wall ratio", "CPU ratio"], rows))
    print(f"results agree: {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
