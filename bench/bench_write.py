"""Write benchmark: the write targets, each against its baseline in the same run.

    python bench/bench_write.py                      # 2M rows in 16 input partitions, 3 rounds
    python bench/bench_write.py --rows 200000 --repeat 3

One Spark session (local[*]); every input DataFrame is cached and counted first, so reading or
generating the source is never inside a timed write. Each round runs, in a rotated order, every
case once, each into a folder deleted beforehand (not timed):

===========================  ========================================================================
case                         what is timed
===========================  ========================================================================
spark same content           ``df.write.parquet`` of exactly what a Hudi base file holds: the five
                             meta columns first (same values), then the data; same codec (gzip,
                             Hudi's default), one folder per partition path (``partitionBy``)
bulk_insert COW              ``spark_writer.write(df, operation=bulk_insert)``
bulk_insert MOR              the same into a MERGE_ON_READ table (the baseline of the next case)
spark key lookup 1%          (a floor, not hudi-duck) that table's base files read by Spark's own parquet
                             reader (key and partition columns) and joined with the 1% of keys: what a
                             simple index must read and join, before any file is written
upsert 1% MOR                that table, upsert of 1% of its keys (updates only) into log files
small: bulk_insert MOR       10,000 rows in 500 partitions (a MOR table of 1,000 file groups)
small: upsert 1/7 MOR        ~14% of those keys (every 7th), upserted into log files
bucket: bulk_insert MOR      the same MOR table with ``hoodie.index.type=BUCKET`` (16 buckets a
                             partition): records shuffled to their buckets' file groups
bucket: upsert 1% MOR        the same 1% upsert into that table: locating is hashing, no key is read
===========================  ========================================================================

Targets (medians of ``--repeat`` rounds): bulk_insert COW <= 1.2x spark same content;
upsert 1% <= 0.3x bulk_insert MOR; small upsert <= 1.0x small bulk_insert. Afterwards (not timed)
every table is read back with hudi_duck and checked: row count, distinct keys and sum(fare) equal
what the input and the updates say (each update raises ``fare`` by exactly ``round + 1``).
The bucket-index cases (``--no-bucket`` leaves them out) are reported against the plain MOR
bulk_insert, not as targets.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    Samples,
    environment,
    fmt_ratio,
    fmt_s,
    remove,
    rotated,
    spark_session,
    table,
    timed,
    verdict,
    write_results,
)

SMALL_ROWS, SMALL_PARTITIONS, SMALL_STEP = 10_000, 500, 7
SPARK_KEY_LOOKUP = "spark key lookup 1%"
TARGETS = {  # (case, baseline, target ratio of medians)
    "bulk_insert vs same content": ("bulk_insert COW", "spark same content", 1.2),
    "upsert 1% vs bulk_insert": ("upsert 1% MOR", "bulk_insert MOR", 0.3),
    "small: upsert ~14% vs bulk_insert": ("small: upsert 1/7 MOR", "small: bulk_insert MOR", 1.0),
}
BUCKET_INDEX = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "16"}
COMPARED = {  # (case, baseline): reported beside the targets
    "bucket index: bulk_insert vs plain bulk_insert": ("bucket: bulk_insert MOR", "bulk_insert MOR"),
    "bucket index: upsert 1% vs plain bulk_insert": ("bucket: upsert 1% MOR", "bulk_insert MOR"),
    "bucket index: upsert 1% vs its own bulk_insert": ("bucket: upsert 1% MOR", "bucket: bulk_insert MOR"),
}


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def same_content_frame(df, instant: str, partition: str, record_key: str):
    """What a Hudi base file holds for ``df``: the five meta columns first (values as spark_writer
    gives them), the data columns, and a copy of the partition column to lay out the folders."""
    from pyspark.sql import functions as F

    return df.select(
        F.lit(instant).alias("_hoodie_commit_time"),
        F.concat(F.lit(instant + "_"), F.spark_partition_id().cast("string"), F.lit("_"),
                 F.monotonically_increasing_id().cast("string")).alias("_hoodie_commit_seqno"),
        F.col(record_key).cast("string").alias("_hoodie_record_key"),
        F.concat(F.lit(f"{partition}="), F.col(partition)).alias("_hoodie_partition_path"),
        F.concat(F.lit("00000000-0000-0000-0000-000000000000-0_0-0-0_" + instant), F.lit(".parquet")).alias("_hoodie_file_name"),
        "*",
        F.col(partition).alias("_folder"),
    )


def snapshot_facts(path: str) -> tuple[int, int, float]:
    """(rows, distinct keys, sum(fare)) of a table's snapshot, read by hudi_duck."""
    import hudi_duck

    con = hudi_duck.connect()
    rows, keys, fare = con.sql(
        f"SELECT count(*), count(DISTINCT uuid), round(sum(fare), 2) FROM hudi_snapshot('{path}')").fetchall()[0]
    return int(rows), int(keys), float(fare)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows of the generated DataFrame (default 2M)")
    ap.add_argument("--partitions", type=int, default=16, help="Spark partitions of the cached input (default 16)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of every timed case (default 3)")
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="where tables are written (default %(default)s)")
    ap.add_argument("--no-small", action="store_true", help="leave out the 500-partition table")
    ap.add_argument("--no-bucket", action="store_true", help="leave out the bucket-index table")
    args = ap.parse_args(argv)

    import spark_writer
    from data import PARTITION, RECORD_KEY, hudi_options, trips, update_count, updates
    from pyspark.sql import functions as F

    root = Path(args.data_dir) / f"write-{args.rows}"
    remove(root)
    root.mkdir(parents=True, exist_ok=True)
    load_before = uptime()
    started = time.perf_counter()
    spark = spark_session("hudi-duck-bench-write")

    def cached(frame, expected: int):
        frame = frame.cache()
        n = frame.count()
        assert n == expected, (n, expected)
        return frame

    df = cached(trips(spark, args.rows, args.partitions), args.rows)
    input_fare = round(df.agg(F.sum("fare")).first()[0], 2)
    fraction = 0.01
    upd = [cached(updates(spark, args.rows, fraction, r, args.partitions), update_count(args.rows, fraction, r))
           for r in range(args.repeat)]
    small_city = F.format_string("c%03d", F.pmod(F.xxhash64("uuid"), F.lit(SMALL_PARTITIONS)).cast("int"))
    small = cached(trips(spark, SMALL_ROWS, 2).withColumn("city", small_city), SMALL_ROWS)
    small_fare = round(small.agg(F.sum("fare")).first()[0], 2)
    small_upd = [cached(updates(spark, SMALL_ROWS, 1 / SMALL_STEP, r, 2).withColumn("city", small_city),
                        update_count(SMALL_ROWS, 1 / SMALL_STEP, r)) for r in range(args.repeat)]
    print(f"# write benchmark: {args.rows:,} rows in {df.rdd.getNumPartitions()} cached partitions; "
          f"upserts of {upd[0].count():,} keys (1%); small table {SMALL_ROWS:,} rows in {SMALL_PARTITIONS} partitions, "
          f"upserts of {small_upd[0].count():,} keys (1/{SMALL_STEP}); {args.repeat} rounds; data in {root}", flush=True)
    print(f"# {os.cpu_count()} cpus; {load_before}", flush=True)

    cow, mor, small_mor, bucket = str(root / "cow"), str(root / "mor"), str(root / "small"), str(root / "bucket")
    same = str(root / "same_content")
    cow_opts = hudi_options("bench_cow", "COPY_ON_WRITE", "bulk_insert")
    mor_opts = hudi_options("bench_mor", "MERGE_ON_READ", "bulk_insert")
    small_opts = hudi_options("bench_small", "MERGE_ON_READ", "bulk_insert")
    codec = "gzip"  # hoodie.parquet.compression.codec's default: both sides write the same codec
    results: dict[str, Samples] = {}

    def record(name: str, run, target: str | None = None):
        s = results.setdefault(name, Samples(name))
        if target:
            remove(target)  # outside the timing
        seconds, value = timed(run)
        s.seconds.append(seconds)
        extra = ""
        if hasattr(value, "files_written"):
            s.info.setdefault("results", []).append(repr(value))
            extra = f"  ({value.num_inserts:,} inserts, {value.num_updates:,} updates, {value.files_written} files)"
        print(f"  {name:<26} {seconds:8.2f}s{extra}", flush=True)

    def same_content():
        same_content_frame(df, "20240101000000000", PARTITION, RECORD_KEY).write.mode("errorifexists") \
            .option("compression", codec).partitionBy("_folder").parquet(same)

    def key_lookup(r: int):
        """The simple index's floor in Spark alone: its own parquet reader reads every key of the
        base files, joined with the upsert's keys (what any simple index must read and join)."""
        files = [str(p) for p in Path(mor).rglob("*.parquet") if ".hoodie" not in p.parts]
        keys = spark.read.schema("_hoodie_record_key string, _hoodie_partition_path string").parquet(*files)
        wanted = upd[r].select(F.col(RECORD_KEY).alias("_k"), F.col(PARTITION).alias("_p"))
        found = wanted.join(keys, (F.col("_k") == F.col("_hoodie_record_key"))
                            & (F.col("_hoodie_partition_path") == F.concat(F.lit(f"{PARTITION}="), F.col("_p"))))
        n = found.count()
        assert n == update_count(args.rows, fraction, r), (n, r)

    def mor_round(r: int):
        record("bulk_insert MOR", lambda: spark_writer.write(df, mor, mor_opts), mor)
        record(SPARK_KEY_LOOKUP, lambda: key_lookup(r))
        record("upsert 1% MOR", lambda: spark_writer.write(upd[r], mor, hudi_options("bench_mor", "MERGE_ON_READ", "upsert")))

    def bucket_round(r: int):
        record("bucket: bulk_insert MOR",
               lambda: spark_writer.write(df, bucket, hudi_options("bench_bucket", "MERGE_ON_READ", "bulk_insert", **BUCKET_INDEX)),
               bucket)
        record("bucket: upsert 1% MOR",
               lambda: spark_writer.write(upd[r], bucket, hudi_options("bench_bucket", "MERGE_ON_READ", "upsert", **BUCKET_INDEX)))

    def small_round(r: int):
        record("small: bulk_insert MOR", lambda: spark_writer.write(small, small_mor, small_opts), small_mor)
        record("small: upsert 1/7 MOR",
               lambda: spark_writer.write(small_upd[r], small_mor, hudi_options("bench_small", "MERGE_ON_READ", "upsert")))

    # warm-up: JVM class loading, Python workers, executor check; not recorded
    print("warm-up (not timed)", flush=True)
    warm = trips(spark, 10_000, 2)
    spark_writer.write(warm, str(root / "warmup"), hudi_options("warmup", "COPY_ON_WRITE", "bulk_insert"))
    same_content_frame(warm, "20240101000000000", PARTITION, RECORD_KEY).write.partitionBy("_folder") \
        .option("compression", codec).parquet(str(root / "warmup_parquet"))
    remove(root / "warmup")
    remove(root / "warmup_parquet")

    for r in range(args.repeat):
        print(f"round {r + 1}/{args.repeat}  ({uptime()})", flush=True)
        cases = [
            lambda r=r: record("spark same content", same_content, same),
            lambda r=r: record("bulk_insert COW", lambda: spark_writer.write(df, cow, cow_opts), cow),
            lambda r=r: mor_round(r),
        ] + ([] if args.no_small else [lambda r=r: small_round(r)]) + ([] if args.no_bucket else [lambda r=r: bucket_round(r)])
        for case in rotated(cases, r):
            case()
        for label, (case, base, target) in TARGETS.items():  # running medians: a cut-short run still tells
            if case in results and base in results:
                ratio = results[case].median / results[base].median
                print(f"  so far: {label}: {ratio:.2f}x (target <= {target}x)", flush=True)
    load_after = uptime()
    spark.stop()

    # -- checks (not timed): what each table holds, read back -------------------------------------
    last = args.repeat - 1
    n_upd = update_count(args.rows, fraction, last)
    n_small_upd = update_count(SMALL_ROWS, 1 / SMALL_STEP, last)
    import duckdb

    same_facts = duckdb.sql(
        f"SELECT count(*), count(DISTINCT uuid), round(sum(fare), 2) FROM read_parquet('{same}/**/*.parquet')").fetchall()[0]
    expected = {
        "spark same content": (args.rows, args.rows, input_fare),
        "bulk_insert COW": (args.rows, args.rows, input_fare),
        "upsert 1% MOR": (args.rows, args.rows, round(input_fare + n_upd * (last + 1), 2)),
    }
    facts = {"spark same content": tuple(same_facts), "bulk_insert COW": snapshot_facts(cow),
             "upsert 1% MOR": snapshot_facts(mor)}
    if not args.no_small:
        expected["small: upsert 1/7 MOR"] = (SMALL_ROWS, SMALL_ROWS, round(small_fare + n_small_upd * (last + 1), 2))
        facts["small: upsert 1/7 MOR"] = snapshot_facts(small_mor)
    if not args.no_bucket:
        expected["bucket: upsert 1% MOR"] = expected["upsert 1% MOR"]
        facts["bucket: upsert 1% MOR"] = snapshot_facts(bucket)
    checks = {}
    for name, want in expected.items():
        got = facts[name]
        ok = got[0] == want[0] and got[1] == want[1] and abs(got[2] - want[2]) < 0.01 * max(1, want[0] / 1e5)
        checks[name] = {"expected": want, "read_back": got, "ok": ok}
    total = time.perf_counter() - started

    # -- report ---------------------------------------------------------------------------------
    print()
    print(f"## write targets ({args.rows:,} rows / {SMALL_ROWS:,} rows in {SMALL_PARTITIONS} partitions; "
          f"median and best of {args.repeat}; seconds)")
    rows, ratios = [], {}
    for label, (case, base, target) in TARGETS.items():
        if case not in results or base not in results:
            continue
        c, b = results[case], results[base]
        ratio = c.median / b.median
        ratios[label] = {"median": ratio, "best": c.best / b.best, "target": target}
        rows.append([label, fmt_s(c.median), fmt_s(b.median), fmt_ratio(ratio), fmt_ratio(c.best / b.best),
                     f"<= {target}x", verdict(ratio, target)])
    if SPARK_KEY_LOOKUP in results and "bulk_insert MOR" in results:
        c, b = results[SPARK_KEY_LOOKUP], results["bulk_insert MOR"]
        ratios["floor: simple-index key lookup in Spark vs bulk_insert"] = {"median": c.median / b.median, "best": c.best / b.best}
        rows.append(["(floor) Spark alone: read every base-file key, join the 1% keys, vs bulk_insert",
                     fmt_s(c.median), fmt_s(b.median), fmt_ratio(c.median / b.median), fmt_ratio(c.best / b.best), "-", ""])
    for label, (case, base) in COMPARED.items():
        if case in results and base in results:
            c, b = results[case], results[base]
            ratios[label] = {"median": c.median / b.median, "best": c.best / b.best}
            rows.append([f"({label})", fmt_s(c.median), fmt_s(b.median), fmt_ratio(c.median / b.median),
                         fmt_ratio(c.best / b.best), "-", ""])
    print(table(["target", "hudi-duck median s", "baseline median s", "ratio (median)", "ratio (best)", "target", ""], rows))
    print()
    print(table(["case", "samples s", "median s", "best s"],
                [[n, " ".join(f"{x:.2f}" for x in s.seconds), fmt_s(s.median), fmt_s(s.best)] for n, s in results.items()]))
    print()
    print(table(["read back (rows, keys, sum fare)", "expected", "read", "ok"],
                [[n, v["expected"], v["read_back"], "yes" if v["ok"] else "NO"] for n, v in checks.items()]))
    print(f"\nload before: {load_before}\nload after:  {load_after}")
    path = write_results("write", {
        "args": vars(args),
        "environment": environment(),
        "load_before": load_before,
        "load_after": load_after,
        "total_s": total,
        "cases": {k: v.to_json() for k, v in results.items()},
        "ratios": ratios,
        "checks": checks,
    })
    print(f"results: {path}  (total {total:.0f}s)")
    return 0 if all(v["ok"] for v in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
