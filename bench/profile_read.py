"""Where a cold hudi-duck read spends its time (uses the tables bench_read.py built).

    python bench/profile_read.py                       # 2M-row tables, MOR agg query
    python bench/profile_read.py --rows 200000 --query full --table cow

1. Breakdown of one cold query: planning (``hudi_duck_plan``), slice merging
   (``SliceJob.ensure``: Python, runs on DuckDB's threads), the ``hudi_duck_keep``
   UDF, and the rest (DuckDB itself). Per-thread times are summed, so with
   several DuckDB threads the parts can add up to more than the wall time.
2. cProfile of merging every slice with logs in the main thread (the same work
   the cold query does on DuckDB's threads, which cProfile cannot see).
3. cProfile of planning, and DuckDB's EXPLAIN ANALYZE of the query.

Profiles go to bench/results/*.prof (open with ``python -m pstats`` or snakeviz).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import os
import pstats
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DATA_DIR, RESULTS_DIR, remove  # noqa: E402

QUERIES = {
    "agg": "SELECT count(*) AS n, sum(fare) AS fare FROM {src}",
    "full": "SELECT * FROM {src}",
    "part": "SELECT count(*) AS n, sum(fare) AS fare FROM {src} WHERE city = 'tokyo'",
}


class Accumulator:
    def __init__(self):
        self.lock = threading.Lock()
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, name: str, fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                with self.lock:
                    self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0
                    self.calls[name] = self.calls.get(name, 0) + 1

        return wrapper


def print_stats(prof: cProfile.Profile, title: str, path: Path, limit: int = 25) -> None:
    prof.dump_stats(str(path))
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(key).print_stats(limit)
        text = out.getvalue()
        start = text.find("   ncalls")
        print(f"\n### {title} — top {limit} by {key} ({path.name})\n" + text[start:].rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--table", default="mor", choices=("cow", "mor"))
    ap.add_argument("--query", default="agg", choices=tuple(QUERIES))
    ap.add_argument("--kind", default="snapshot", choices=("snapshot", "read_optimized"))
    ap.add_argument("--log-block-format", default="avro", choices=("avro", "parquet"),
                    help="which bench_read.py tables (see its --log-block-format)")
    args = ap.parse_args(argv)

    root = Path(args.data_dir) / (f"read-{args.rows}" + ("" if args.log_block_format == "avro" else f"-{args.log_block_format}log"))
    path = str(root / args.table)
    if not os.path.exists(os.path.join(path, ".hoodie")):
        print(f"no table at {path}: run bench/bench_read.py --rows {args.rows} first")
        return 1
    cache_dir = root / "hudi-duck-profile-cache"
    remove(cache_dir)
    cache_dir.mkdir(parents=True)
    os.environ["HUDI_DUCK_CACHE_DIR"] = str(cache_dir)

    import hudi_duck
    from hudi_duck.core.file_group.reader import merge_slice_logs
    from hudi_duck.core.table.read_plan import plan_snapshot
    from hudi_duck.core.table.table import HudiTable
    from hudi_duck.duck import functions, lazy, planner

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    tag = f"{args.table}-{args.kind}-{args.query}-{args.rows}-{args.log_block_format}"
    src = f"hudi_{args.kind}('{path}')"
    sql = QUERIES[args.query].format(src=src)

    # -- 1. breakdown of one cold query --------------------------------------------------------------------
    acc = Accumulator()
    lazy.SliceJob.ensure = acc.wrap("merge slices (SliceJob.ensure)", lazy.SliceJob.ensure)
    lazy.Registry.keep = acc.wrap("hudi_duck_keep UDF (Registry.keep, incl. ensure)", lazy.Registry.keep)
    functions.plan_sql = acc.wrap("planning (plan_sql)", functions.plan_sql)
    lazy.LazySliceFileSystem._open = acc.wrap("hudiduck:// open (incl. ensure)", lazy.LazySliceFileSystem._open)
    con = hudi_duck.connect()
    t0 = time.perf_counter()
    rel = con.sql(sql)
    from hudi_duck.api import arrow_table

    result = arrow_table(rel).num_rows if args.query == "full" else rel.fetchall()
    wall = time.perf_counter() - t0
    print(f"## cold {sql}\nresult {result}; wall {wall:.3f}s")
    for name, seconds in acc.seconds.items():
        print(f"  {name:<52} {seconds:8.3f}s  ({acc.calls[name]} calls)")
    acc.seconds.clear()
    acc.calls.clear()
    t0 = time.perf_counter()
    rel = con.sql(sql)
    _ = arrow_table(rel).num_rows if args.query == "full" else rel.fetchall()
    print(f"## warm repeat (same connection): wall {time.perf_counter() - t0:.3f}s")
    for name, seconds in acc.seconds.items():
        print(f"  {name:<52} {seconds:8.3f}s  ({acc.calls[name]} calls)")

    # -- 2. cProfile of merging every slice with logs ------------------------------------------------------------
    table = HudiTable(path)
    plan = plan_snapshot(table)
    ctx = plan.context()
    with_logs = plan.slices_with_logs
    if with_logs and args.kind == "snapshot":
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        rows = dropped = 0
        for s in with_logs:
            merged = merge_slice_logs(ctx, s)
            rows += merged.log_rows.num_rows
            dropped += len(merged.dropped_base_rows)
        prof.disable()
        print(f"\nmerge_slice_logs over {len(with_logs)} slices in the main thread: {time.perf_counter() - t0:.3f}s "
              f"(profiled), {rows} log rows, {dropped} base rows dropped")
        print_stats(prof, "merge_slice_logs", RESULTS_DIR / f"profile-merge-{tag}.prof")

    # -- 3. planning and EXPLAIN ANALYZE ------------------------------------------------------------------------------
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(5):
        planner.plan_sql(args.kind, path, None, None, {})
    prof.disable()
    print_stats(prof, "plan_sql x5", RESULTS_DIR / f"profile-plan-{tag}.prof", limit=15)
    con2 = hudi_duck.connect()
    plan_text = con2.sql("EXPLAIN ANALYZE " + sql).fetchall()
    print("\n### EXPLAIN ANALYZE (warm cache)\n" + "\n".join(str(r[1]) for r in plan_text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
