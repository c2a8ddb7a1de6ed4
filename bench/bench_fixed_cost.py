"""The fixed cost of a hudi-duck query: planning, warm queries, the disk cache (uses the tables bench_read.py built).

    python bench/bench_read.py --rows 200000 --build-only      # once: builds the tables
    python bench/bench_fixed_cost.py --rows 200000 --repeat 20

Cases (best and median of ``--repeat`` runs, milliseconds):

* ``plan <table>``: ``hudi_duck_read`` alone (the SQL DuckDB gets at bind time), no scan;
* ``warm <table> agg``: ``count(*), sum(fare)`` again on the same connection (merges in memory);
* ``disk-warm mor agg``: the same with the in-memory registry emptied before each run, the merged
  slices on disk (what a new process or an evicted plan sees);
* ``cold mor agg``: empty cache folder and registry (every slice merged again), fewer runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DATA_DIR, remove  # noqa: E402

AGG = "SELECT count(*) AS n, sum(fare) AS fare FROM {src}"


def timed(fn, repeat: int, before=None) -> list[float]:
    samples = []
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--cold", type=int, default=3)
    args = ap.parse_args(argv)

    root = Path(args.data_dir) / f"read-{args.rows}"
    tables = {name: str(root / name) for name in ("cow", "mor")}
    if not all(os.path.exists(os.path.join(p, ".hoodie")) for p in tables.values()):
        print(f"no tables under {root}: run bench/bench_read.py --rows {args.rows} --build-only first")
        return 1
    cache_dir = root / "hudi-duck-fixed-cost-cache"
    remove(cache_dir)
    os.environ["HUDI_DUCK_CACHE_DIR"] = str(cache_dir)

    import hudi_duck
    from hudi_duck.duck import lazy, planner

    def clear_registry() -> None:
        lazy.REGISTRY.clear()

    def clear_all() -> None:
        remove(cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        clear_registry()

    con = hudi_duck.connect()
    results: list[tuple[str, list[float]]] = []
    for name, path in tables.items():
        con.sql(AGG.format(src=f"hudi_snapshot('{path}')")).fetchall()  # warm the OS cache and the merge cache
        results.append((f"plan {name}", timed(lambda: planner.plan_sql("snapshot", path, None, None, {}), args.repeat)))
        query = AGG.format(src=f"hudi_snapshot('{path}')")
        results.append((f"warm {name} agg", timed(lambda: con.sql(query).fetchall(), args.repeat)))
    mor_query = AGG.format(src=f"hudi_snapshot('{tables['mor']}')")
    results.append(("disk-warm mor agg", timed(lambda: con.sql(mor_query).fetchall(), args.repeat, clear_registry)))
    results.append(("cold mor agg", timed(lambda: con.sql(mor_query).fetchall(), args.cold, clear_all)))
    print(f"| case ({args.rows} rows) | best ms | median ms |\n|---|---|---|")
    for name, samples in results:
        print(f"| {name} | {min(samples):.1f} | {statistics.median(samples):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
