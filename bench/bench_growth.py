"""Growth benchmark: read and write times as a table grows, each against its baseline in the same run.

    python bench/bench_growth.py                          # 8 steps, 50,000 rows a step (a few minutes)
    python bench/bench_growth.py --steps 4 --rows 20000   # quicker

Two tables grow side by side, one commit per step:

* **COW** (``insert`` of ``--rows`` new rows a step): rows, file groups and commits grow. Its writes set
  ``hoodie.parquet.small.file.limit`` (``--small-file-limit``, default 0: no file is small, so every insert
  makes new file groups; Hudi's default, 104857600, would let the inserts fill the first step's files and the
  file groups would stay as they are).
  Write baseline: Spark writing the same batch as a Hudi base file holds it (meta columns first,
  gzip, one folder per partition). Read baseline: ``read_parquet`` over the same latest base files.
* **MOR** (``bulk_insert`` of ``--rows`` rows, then an ``upsert`` of 5% of the keys a step): commits
  and log files per file slice grow (no compaction). Write baseline: Spark writing the update batch the
  same way. Read baseline: hudi-rs reading the table + the same query in DuckDB over its Arrow.

Reads are ``SELECT count(*), sum(fare)`` cold (new connection, hudi-duck caches emptied), median of
``--repeat``; writes are timed once per step (each step writes different data). Every read is checked
against its baseline (same count and sum). Writes ``bench/growth.png`` and prints the markdown table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_DIR, DEFAULT_DATA_DIR, environment, remove, spark_session, table, write_results  # noqa: E402

QUERY = "SELECT count(*), round(sum(fare), 2) FROM {src}"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def median_time(fn, repeat: int):
    import statistics

    seconds, value = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        seconds.append(time.perf_counter() - t0)
    return statistics.median(seconds), value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rows", type=int, default=50_000, help="rows inserted per COW step / in the MOR table")
    ap.add_argument("--fraction", type=float, default=0.05, help="keys of the MOR table upserted per step")
    ap.add_argument("--repeat", type=int, default=3, help="cold reads per step and table (median)")
    ap.add_argument("--small-file-limit", type=int, default=0,
                    help="hoodie.parquet.small.file.limit of the COW writes (0: file groups grow every step)")
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--chart", default=str(BENCH_DIR / "growth.png"))
    args = ap.parse_args(argv)

    import duckdb
    import pyarrow as pa

    import hudi_duck
    import spark_writer
    from bench_write import same_content_frame
    from data import PARTITION, RECORD_KEY, hudi_options, trips
    from hudi_duck.duck import lazy
    from hudi_duck.core.file_group import parquet_stats
    from hudi_duck.duck.planner import clear_plan_cache
    from pyspark.sql import functions as F

    root = Path(args.data_dir) / f"growth-{args.rows}"
    remove(root)
    root.mkdir(parents=True)
    cow, mor, base = str(root / "cow"), str(root / "mor"), str(root / "baseline")
    cache_dir = root / "cache"
    os.environ["HUDI_DUCK_CACHE_DIR"] = str(cache_dir)
    load_before = uptime()
    spark = spark_session("hudi-duck-bench-growth")
    print(f"# growth benchmark: {args.steps} steps of {args.rows:,} rows; {os.cpu_count()} cpus; {load_before}", flush=True)

    def cold() -> None:
        remove(cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        lazy.REGISTRY.clear()
        clear_plan_cache()
        parquet_stats.forget()

    def hudi_read(path: str):
        cold()
        con = hudi_duck.connect()
        try:
            return tuple(con.sql(QUERY.format(src=f"hudi_snapshot('{path}')")).fetchall()[0])
        finally:
            con.close()

    def latest_base_files(path: str) -> list[str]:
        con = hudi_duck.connect()
        rows = con.sql(f"SELECT partition_path, base_file FROM hudi_file_slices('{path}')").fetchall()
        con.close()
        return [f"{path}/{p}/{b}" if p else f"{path}/{b}" for p, b in rows if b]

    def parquet_read(files: list[str]):
        src = "read_parquet([" + ", ".join(f"'{f}'" for f in files) + "])"
        return tuple(duckdb.connect().sql(QUERY.format(src=src)).fetchall()[0])

    def hudi_rs_read(path: str):
        from hudi import HudiTableBuilder

        arrow = pa.Table.from_batches(HudiTableBuilder.from_base_uri(path).build().read())
        con = duckdb.connect()
        con.register("rs", arrow)
        return tuple(con.sql(QUERY.format(src="rs")).fetchall()[0])

    def spark_same_content(frame) -> float:
        remove(base)
        t0 = time.perf_counter()
        same_content_frame(frame, "20240101000000000", PARTITION, RECORD_KEY).write.option("compression", "gzip") \
            .partitionBy("_folder").parquet(base)
        return time.perf_counter() - t0

    def slice_shape(path: str) -> tuple[int, int, float]:
        con = hudi_duck.connect()
        slices, logs, commits = con.sql(
            f"SELECT count(*), coalesce(max(num_log_files), 0), 0 FROM hudi_file_slices('{path}')").fetchall()[0]
        con.close()
        completed = [n for n in os.listdir(os.path.join(path, ".hoodie"))
                     if n.endswith((".commit", ".deltacommit", ".replacecommit"))]
        return int(slices), int(logs), len(completed)

    # warm-up (not timed): JVM, Python workers, DuckDB
    warm = trips(spark, 5_000, 2)
    spark_writer.write(warm, str(root / "warm"), hudi_options("warm", "COPY_ON_WRITE", "bulk_insert"))
    spark_same_content(warm)
    remove(root / "warm")

    total = args.rows * args.steps
    source = spark.range(0, total, 1, 4).select(F.col("id"))
    from data import _columns, updates

    steps = []
    mor_rows = trips(spark, args.rows, 4).cache()
    mor_rows.count()
    for step in range(args.steps):
        print(f"step {step + 1}/{args.steps}  ({uptime()})", flush=True)
        batch = source.where((F.col("id") >= step * args.rows) & (F.col("id") < (step + 1) * args.rows)) \
            .select(*_columns()).repartition(4).cache()
        batch.count()
        if step == 0:
            mor_batch = mor_rows
            mor_op = "bulk_insert"
        else:
            mor_batch = updates(spark, args.rows, args.fraction, step, 4).cache()
            mor_batch.count()
            mor_op = "upsert"
        # writes (the baseline writes the same batch, right before)
        spark_cow_s = spark_same_content(batch)
        t0 = time.perf_counter()
        cow_options = hudi_options("growth_cow", "COPY_ON_WRITE", "insert" if step else "bulk_insert",
                                   **{"hoodie.parquet.small.file.limit": str(args.small_file_limit)})
        spark_writer.write(batch, cow, cow_options)
        cow_s = time.perf_counter() - t0
        spark_mor_s = spark_same_content(mor_batch)
        t0 = time.perf_counter()
        spark_writer.write(mor_batch, mor, hudi_options("growth_mor", "MERGE_ON_READ", mor_op))
        mor_s = time.perf_counter() - t0
        batch.unpersist()
        if mor_batch is not mor_rows:
            mor_batch.unpersist()
        # reads, cold, each against its baseline
        files = latest_base_files(cow)
        cow_read, cow_value = median_time(lambda: hudi_read(cow), args.repeat)
        pq_read, pq_value = median_time(lambda: parquet_read(files), args.repeat)
        mor_read, mor_value = median_time(lambda: hudi_read(mor), args.repeat)
        rs_read, rs_value = median_time(lambda: hudi_rs_read(mor), args.repeat)
        cow_shape, mor_shape = slice_shape(cow), slice_shape(mor)
        row = {
            "step": step + 1,
            "cow_rows": cow_value[0], "cow_file_groups": cow_shape[0], "cow_commits": cow_shape[2],
            "mor_rows": mor_value[0], "mor_slices": mor_shape[0], "mor_logs_per_slice": mor_shape[1],
            "mor_commits": mor_shape[2],
            "cow_write_s": cow_s, "spark_cow_write_s": spark_cow_s,
            "mor_write_s": mor_s, "spark_mor_write_s": spark_mor_s, "mor_op": mor_op,
            "cow_read_s": cow_read, "parquet_read_s": pq_read, "mor_read_s": mor_read, "hudi_rs_read_s": rs_read,
            "checks": {"cow": cow_value == pq_value, "mor": mor_value == rs_value},
            "load": os.getloadavg()[0],
        }
        steps.append(row)
        print(f"  COW {row['cow_rows']:,} rows / {row['cow_file_groups']} file groups / {row['cow_commits']} commits: "
              f"write {cow_s:.1f}s (spark {spark_cow_s:.1f}s), read {cow_read:.3f}s (read_parquet {pq_read:.3f}s)\n"
              f"  MOR {row['mor_rows']:,} rows / {row['mor_logs_per_slice']} logs per slice / {row['mor_commits']} commits: "
              f"{mor_op} {mor_s:.1f}s (spark {spark_mor_s:.1f}s), read {mor_read:.3f}s (hudi-rs {rs_read:.3f}s); "
              f"checks {row['checks']}", flush=True)
    load_after = uptime()
    spark.stop()

    headers = ["step", "COW rows", "file groups", "commits", "COW write s (x spark)", "COW read s (x read_parquet)",
               "MOR logs/slice", "MOR write s (x spark)", "MOR read s (x hudi-rs)", "checks"]
    rows = [[
        r["step"], f"{r['cow_rows']:,}", r["cow_file_groups"], r["cow_commits"],
        f"{r['cow_write_s']:.1f} ({r['cow_write_s'] / r['spark_cow_write_s']:.2f}x)",
        f"{r['cow_read_s']:.3f} ({r['cow_read_s'] / r['parquet_read_s']:.2f}x)",
        r["mor_logs_per_slice"],
        f"{r['mor_write_s']:.1f} ({r['mor_write_s'] / r['spark_mor_write_s']:.2f}x)",
        f"{r['mor_read_s']:.3f} ({r['mor_read_s'] / r['hudi_rs_read_s']:.2f}x)",
        "ok" if all(r["checks"].values()) else f"MISMATCH {r['checks']}",
    ] for r in steps]
    print()
    print(table(headers, rows))
    print(f"\nload before: {load_before}\nload after:  {load_after}")
    chart(steps, args.chart)
    path = write_results("growth", {"args": vars(args), "environment": environment(), "load_before": load_before,
                                    "load_after": load_after, "steps": steps})
    print(f"chart: {args.chart}\nresults: {path}")
    return 0 if all(all(r["checks"].values()) for r in steps) else 1


def chart(steps: list[dict], path: str) -> None:
    """Four panels: times of each side and its baseline against the step (with what grew)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no chart: pip install 'hudi-duck[bench]' for matplotlib)")
        return
    x = [r["step"] for r in steps]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    panels = [
        (axes[0][0], "COW insert (rows, file groups grow)", "cow_write_s", "spark_cow_write_s", "spark_writer", "Spark parquet, same content"),
        (axes[0][1], "MOR upsert (log files per slice grow)", "mor_write_s", "spark_mor_write_s", "spark_writer", "Spark parquet, same content"),
        (axes[1][0], "COW snapshot read, cold", "cow_read_s", "parquet_read_s", "hudi_snapshot", "read_parquet, same files"),
        (axes[1][1], "MOR snapshot read, cold", "mor_read_s", "hudi_rs_read_s", "hudi_snapshot", "hudi-rs + DuckDB"),
    ]
    for ax, title, ours, theirs, ours_label, theirs_label in panels:
        ax.plot(x, [r[ours] for r in steps], "o-", label=ours_label)
        ax.plot(x, [r[theirs] for r in steps], "s--", label=theirs_label)
        ax.set_title(title)
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
        ax.set_xticks(x)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[1][0].set_xlabel("step (COW: rows = step x batch)")
    axes[1][1].set_xlabel("step (MOR: log files per slice = step - 1)")
    fig.suptitle("hudi-duck as the table grows (2 shared cores)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
