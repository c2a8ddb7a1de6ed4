"""Memory of merging one large file slice: a base file and a log of N updates of it.

    python bench/bench_merge_memory.py --records 5000000          # builds once, then measures
    python bench/bench_merge_memory.py --records 500000 --memory-limit 512MB
    python bench/bench_merge_memory.py --records 5000000 --budget 2GB --budget 512MB

The table is merge-on-read, not partitioned, with one file group: ``--records`` rows
bulk-inserted into one base file, then every row updated by one upsert, so the only
file slice has a base file of N rows and a log of N records (Avro data blocks).

Each case runs in a fresh Python process (so peak memory is the case's alone) with an
empty merge cache: ``SELECT count(*), sum(fare)`` of the snapshot through
``hudi_snapshot`` (DuckDB's ``memory_limit`` set to ``--memory-limit``), once per
``--budget`` (the merge's ``memory_merge_max_size``, Hudi's ``hoodie.memory.merge.max.size``;
none given: the default), and hudi-rs reading the same snapshot to Arrow. It reports
wall time and peak resident memory (``ru_maxrss``); every result is checked equal to hudi-rs's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DATA_DIR, environment, fmt_s, remove, table  # noqa: E402

QUERY = "SELECT count(*) AS n, round(sum(fare), 2) AS fare FROM {src}"

_HUDI_DUCK_CASE = """
import json, os, resource, sys, time
import hudi_duck
path, limit, budget, spill = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
con = hudi_duck.connect()
con.execute(f"SET memory_limit = '{limit}'")
con.execute("SET enable_progress_bar = false")
args = f"'{path}'"
if budget:
    args += f", memory_merge_max_size := '{budget}'"
if spill:
    args += f", memory_spillable_map_path := '{spill}'"
started = time.perf_counter()
row = con.execute(__QUERY__.format(src=f"hudi_snapshot({args})")).fetchone()
seconds = time.perf_counter() - started
print("RESULT", json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "row": list(row)}))
"""

_HUDI_RS_CASE = """
import json, resource, sys, time
import duckdb
from hudi import HudiReadOptions, HudiTableBuilder
path = sys.argv[1]
started = time.perf_counter()
batches = HudiTableBuilder.from_base_uri(path).build().read(HudiReadOptions())
import pyarrow as pa
snapshot = pa.Table.from_batches(batches)
row = duckdb.connect().execute(__QUERY__.format(src="snapshot")).fetchone()
seconds = time.perf_counter() - started
print("RESULT", json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "row": list(row)}))
"""


def build(path: Path, records: int, upserts: int = 1) -> dict:
    """One file group: N rows bulk-inserted, then all N updated into its log (by ``upserts``
    upserts of consecutive key ranges: one log file each, N log records in all)."""
    from common import spark_session
    from data import _columns as data_columns
    from data import hudi_options, trips
    from pyspark.sql import functions as F

    import spark_writer

    spark = spark_session("hudi-duck-bench-merge-memory", shuffle_partitions=1)
    opts = {
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.bulkinsert.shuffle.parallelism": "1",
        "hoodie.upsert.shuffle.parallelism": "1",
        "hoodie.parquet.max.file.size": str(64 * 1024**3),
        "hoodie.logfile.max.size": str(64 * 1024**3),
    }
    remove(path)
    rows = trips(spark, records, 1).cache()
    rows.count()
    started = time.perf_counter()
    spark_writer.write(rows, str(path), hudi_options("bench_merge_memory", "MERGE_ON_READ", "bulk_insert", **opts))
    inserted = time.perf_counter() - started
    started = time.perf_counter()
    step = -(-records // upserts)
    for first in range(0, records, step):
        keys = rows if upserts == 1 else spark.range(first, min(first + step, records), 1, 1).select(*data_columns())
        batch = keys.withColumn("fare", F.col("fare") + F.lit(1.0)).withColumn("ts", F.col("ts") + F.lit(1))
        spark_writer.write(batch, str(path), hudi_options("bench_merge_memory", "MERGE_ON_READ", "upsert", **opts))
    updated = time.perf_counter() - started
    spark.stop()
    return {"records": records, "bulk_insert_s": inserted, "upsert_s": updated}


def run_case(source: str, path: Path, *args: str) -> dict:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="hudi_duck_merge_memory_cache_") as cache:
        env["HUDI_DUCK_CACHE_DIR"] = cache
        out = subprocess.run(
            [sys.executable, "-c", source.replace("__QUERY__", repr(QUERY)), str(path), *args],
            env=env,
            capture_output=True,
            text=True,
        )
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-3:], "returncode": out.returncode}
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        return {"error": out.stdout.strip().splitlines()[-3:], "returncode": out.returncode}
    return json.loads(lines[-1][len("RESULT "):])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--memory-limit", default="1GB", help="DuckDB memory_limit for the hudi-duck query")
    ap.add_argument("--budget", action="append", default=[],
                    help="memory_merge_max_size of the merge (repeatable; default: the default budget)")
    ap.add_argument("--spill-path", default="", help="memory_spillable_map_path (default: the temporary folder)")
    ap.add_argument("--skip-hudi-rs", action="store_true", help="do not run hudi-rs (results are then unchecked)")
    ap.add_argument("--upserts", type=int, default=1,
                    help="write the N updates with this many upserts (smaller Spark tasks; one log file each)")
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args(argv)

    path = Path(args.data_dir) / f"merge-memory-{args.records}"
    manifest = path.parent / f"merge-memory-{args.records}.json"
    if args.rebuild or not manifest.exists():
        info = build(path, args.records, args.upserts)
        manifest.write_text(json.dumps(info))
    info = json.loads(manifest.read_text())

    import hudi_duck

    slices = hudi_duck.open_table(str(path)).file_slices()
    assert len(slices) == 1 and slices[0]["num_log_files"] >= 1, slices
    budgets = args.budget or [""]
    ours = {budget: run_case(_HUDI_DUCK_CASE, path, args.memory_limit, budget, args.spill_path) for budget in budgets}
    theirs = {"error": ["not run (--skip-hudi-rs)"]} if args.skip_hudi_rs else run_case(_HUDI_RS_CASE, path)
    agree = all("row" in case and "row" in theirs and case["row"] == theirs["row"] for case in ours.values())
    env = environment()
    print(f"machine: {env.get('cpus')} cpus, {env.get('mem_total_kb', 0) / 1024**2:.0f} GB; load {os.getloadavg()[0]:.1f}")
    print(f"one file slice: {args.records:,} base rows + {args.records:,} log records "
          f"({slices[0]['total_size'] / 1e6:.0f} MB on disk); built in {info['bulk_insert_s']:.0f}s + {info['upsert_s']:.0f}s")
    rows = []
    cases = [(f"hudi_snapshot, merge budget {budget or 'default (1GiB)'}", case) for budget, case in ours.items()]
    for name, case in cases + [("hudi-rs read_snapshot + DuckDB", theirs)]:
        if "error" in case:
            rows.append([name, "failed", "-", " ".join(case["error"])])
        else:
            rows.append([name, fmt_s(case["seconds"]), f"{case['rss_mb']:.0f}", str(case["row"])])
    print(table(["case", "seconds", "peak RSS MB", "result"], rows))
    print(f"DuckDB memory_limit of the query: {args.memory_limit}; results agree: {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
