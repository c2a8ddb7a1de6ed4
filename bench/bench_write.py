"""Write benchmark: spark_writer bulk_insert vs plain ``df.write.parquet``, and upserts.

    python bench/bench_write.py                      # 2M rows, 3 rounds
    python bench/bench_write.py --rows 200000 --repeat 2

One run, one Spark session (local[*]):

1. the trips DataFrame (bench/data.py) is cached and materialised, so input
   generation is never timed;
2. in every round, side by side (order rotated between rounds), each into a
   fresh folder deleted beforehand (outside the timing):
   * ``df.write.parquet``  with Spark's default codec (snappy) and with gzip;
   * ``spark_writer.write(operation=bulk_insert)`` into a COW table with
     Hudi's default codec (gzip) and with snappy;
   * ``bulk_insert`` into a MOR table (gzip);
3. upserts of 1% and 10% of the keys (exact counts, cached first) into the COW
   table and into the MOR table left by the last round; ``--repeat`` rounds, each
   running every (size, table) pair once in a rotated order. Every upsert updates existing keys only
   (no inserts), so all tables keep exactly ``--rows`` rows.

Target: bulk_insert <= 1.3x ``df.write.parquet`` of the same DataFrame, judged
with the same codec on both sides (gzip vs gzip and snappy vs snappy); the
ratio against Spark's default (snappy) parquet is printed too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    Samples,
    count_files,
    dir_size,
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

BULK_TARGET = 1.3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows of the generated DataFrame (default 2M)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of every timed case (default 3)")
    ap.add_argument("--fractions", default="0.01,0.1", help="upsert sizes as fractions of the keys (1/n each)")
    ap.add_argument("--partitions", type=int, default=None, help="Spark partitions of the input (default: parallelism)")
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="where tables are written (default %(default)s)")
    ap.add_argument("--no-upserts", action="store_true", help="only bulk_insert vs parquet")
    ap.add_argument("--no-mor", action="store_true", help="skip the MOR table")
    ap.add_argument("--verify", action="store_true", help="count the tables with hudi_duck afterwards (not timed)")
    args = ap.parse_args(argv)

    import spark_writer
    from data import PARTITION, RECORD_KEY, hudi_options, trips, update_count, updates

    fractions = [float(f) for f in args.fractions.split(",") if f.strip()]
    root = Path(args.data_dir) / f"write-{args.rows}"
    remove(root)
    root.mkdir(parents=True, exist_ok=True)

    spark = spark_session("hudi-duck-bench-write")
    started = time.perf_counter()
    df = trips(spark, args.rows, args.partitions).cache()
    gen_s, n = timed(df.count)
    assert n == args.rows, n
    print(f"# write benchmark: {args.rows:,} rows, {df.rdd.getNumPartitions()} input partitions, "
          f"{args.repeat} rounds, data in {root} (input cached in {gen_s:.1f}s)", flush=True)

    cow = str(root / "cow")
    mor = str(root / "mor")
    results: dict[str, Samples] = {}

    def run_case(name: str, target: str, run) -> None:
        s = results.setdefault(name, Samples(name, info={"path": target}))
        remove(target)  # outside the timing
        seconds, value = timed(run)
        s.seconds.append(seconds)
        s.info["bytes"] = dir_size(target)
        s.info["parquet_files"] = count_files(target, ".parquet")
        if hasattr(value, "files_written"):
            s.info["files_written"] = value.files_written
        print(f"  {name:<32} {seconds:8.2f}s", flush=True)

    def parquet(target: str, codec: str | None):
        def run():
            w = df.write.mode("errorifexists")
            if codec:
                w = w.option("compression", codec)
            return w.parquet(target)

        return run

    def parquet_with_meta(target: str):
        """What Spark alone writes for the same file content: Hudi's five meta columns (same
        values as spark_writer gives them), one folder per city, gzip. The physical limit of
        the Hudi layout, as opposed to plain parquet of the input."""
        from pyspark.sql import functions as F

        instant = "20240101000000000"
        meta = df.select(
            F.lit(instant).alias("_hoodie_commit_time"),
            F.concat(F.lit(instant + "_"), F.spark_partition_id().cast("string"), F.lit("_"),
                     F.monotonically_increasing_id().cast("string")).alias("_hoodie_commit_seqno"),
            F.col(RECORD_KEY).cast("string").alias("_hoodie_record_key"),
            F.concat(F.lit(f"{PARTITION}="), F.col(PARTITION)).alias("_hoodie_partition_path"),
            F.lit("00000000-0000-0000-0000-000000000000-0_0-0-0_" + instant + ".parquet").alias("_hoodie_file_name"),
            "*",
            F.col(PARTITION).alias("_folder"),
        )
        return lambda: meta.write.mode("errorifexists").option("compression", "gzip").partitionBy("_folder").parquet(target)

    def bulk(path: str, table_type: str, codec: str | None):
        opts = hudi_options("bench_" + ("cow" if table_type == "COPY_ON_WRITE" else "mor"), table_type, "bulk_insert")
        if codec:
            opts["hoodie.parquet.compression.codec"] = codec
        return lambda: spark_writer.write(df, path, opts, mode="append")

    cases = [  # (name, folder, run); the COW/MOR tables of the last round stay for the upserts
        ("parquet (snappy, default)", str(root / "parquet_snappy"), parquet(str(root / "parquet_snappy"), None)),
        ("parquet (gzip)", str(root / "parquet_gzip"), parquet(str(root / "parquet_gzip"), "gzip")),
        ("parquet (gzip) + meta columns, by city", str(root / "parquet_meta"), parquet_with_meta(str(root / "parquet_meta"))),
        ("bulk_insert COW (gzip, default)", cow, bulk(cow, "COPY_ON_WRITE", None)),
        ("bulk_insert COW (snappy)", str(root / "cow_snappy"), bulk(str(root / "cow_snappy"), "COPY_ON_WRITE", "snappy")),
    ]
    if not args.no_mor:
        cases.append(("bulk_insert MOR (gzip, default)", mor, bulk(mor, "MERGE_ON_READ", None)))

    # warm-up: JVM class loading, Python workers; not recorded
    print("warm-up (not timed): one small parquet write and one small bulk_insert", flush=True)
    small = trips(spark, 10_000, 2)
    small.write.mode("overwrite").parquet(str(root / "warmup_parquet"))
    spark_writer.write(small, str(root / "warmup_hudi"), hudi_options("warmup", "COPY_ON_WRITE", "bulk_insert"))
    remove(root / "warmup_parquet")
    remove(root / "warmup_hudi")

    for r in range(args.repeat):
        print(f"round {r + 1}/{args.repeat}", flush=True)
        for name, target, run in rotated(cases, r):
            run_case(name, target, run)

    upserts: dict[str, Samples] = {}
    if not args.no_upserts:
        tables = [("COW", cow)] + ([] if args.no_mor else [("MOR", mor)])
        # sizes and tables interleaved: every round runs each (size, table) once, in a rotated order,
        # so a change in machine load during the run hits all of them alike
        round_no = 0
        for r in range(args.repeat):
            print(f"upsert round {r + 1}/{args.repeat}", flush=True)
            for fraction in rotated(fractions, r):
                round_no += 1
                upd = updates(spark, args.rows, fraction, round_no, args.partitions).cache()
                expected = update_count(args.rows, fraction, round_no)
                assert upd.count() == expected
                for label, path in rotated(tables, r + round_no):
                    name = f"upsert {fraction:.0%} into {label}"
                    s = upserts.setdefault(name, Samples(name, info={"records": expected}))
                    opts = hudi_options("bench_" + label.lower(), "COPY_ON_WRITE" if label == "COW" else "MERGE_ON_READ", "upsert")
                    seconds, result = timed(lambda: spark_writer.write(upd, path, opts))
                    s.seconds.append(seconds)
                    s.info.setdefault("files_written", []).append(result.files_written)
                    s.info.setdefault("num_updates", []).append(result.num_updates)
                    s.info.setdefault("num_inserts", []).append(result.num_inserts)
                    print(f"  {name:<28} {seconds:8.2f}s  ({result.num_updates} updates, {result.num_inserts} inserts, "
                          f"{result.files_written} files)", flush=True)
                upd.unpersist()
        upserts = dict(sorted(upserts.items(), key=lambda kv: (float(kv[0].split()[1].rstrip("%")), kv[0])))

    verify = {}
    if args.verify:
        import hudi_duck

        con = hudi_duck.connect()
        for label, path in (("COW", cow), ("MOR", mor)):
            if os.path.exists(path):
                verify[label] = con.sql(f"SELECT count(*) FROM hudi_snapshot('{path}')").fetchall()[0][0]
        print(f"verify: rows per table {verify}")
    total = time.perf_counter() - started
    spark.stop()

    # -- report ---------------------------------------------------------------------------------
    base_snappy = results["parquet (snappy, default)"]
    base_gzip = results["parquet (gzip)"]
    baseline_of = {
        "bulk_insert COW (gzip, default)": base_gzip,
        "bulk_insert COW (snappy)": base_snappy,
        "bulk_insert MOR (gzip, default)": base_gzip,
    }
    base_meta = results["parquet (gzip) + meta columns, by city"]
    rows = []
    ratios = {}
    for name, s in results.items():
        base = baseline_of.get(name)
        same = (s.best / base.best, s.median / base.median) if base else (None, None)
        vs_default = (s.best / base_snappy.best) if base else None
        vs_meta = s.best / base_meta.best if base is base_gzip else None
        if base:
            ratios[name] = {"vs_same_codec_best": same[0], "vs_same_codec_median": same[1], "vs_spark_default_best": vs_default,
                            "vs_same_content_best": vs_meta}
        rows.append([
            name, fmt_s(s.best), fmt_s(s.median), f"{s.info.get('bytes', 0) / 1e6:.0f} MB", s.info.get("parquet_files", "-"),
            f"{args.rows / s.best:,.0f}",
            fmt_ratio(same[0]) if base else "", fmt_ratio(same[1]) if base else "", fmt_ratio(vs_default) if base else "",
            fmt_ratio(vs_meta) if vs_meta else "", verdict(same[0], BULK_TARGET) if base else "",
        ])
    print()
    print(f"## bulk_insert vs df.write.parquet ({args.rows:,} rows, best / median of {args.repeat})")
    print(table(
        ["case", "best s", "median s", "size", "files", "rows/s", "x same codec (best)", "x same codec (median)",
         "x spark default", "x same content", f"target <= {BULK_TARGET}x"],
        rows,
    ))
    if upserts:
        print()
        print(f"## upserts into the {args.rows:,}-row tables (best / median of {args.repeat}; records are updates of existing keys)")
        urows = []
        for name, s in upserts.items():
            files = s.info.get("files_written", [])
            urows.append([name, s.info["records"], fmt_s(s.best), fmt_s(s.median), f"{s.info['records'] / s.best:,.0f}",
                          files[-1] if files else "-"])
        print(table(["case", "records", "best s", "median s", "records/s", "files written"], urows))
        bulk_cow = results["bulk_insert COW (gzip, default)"].best
        print(f"\n(for scale: bulk_insert of all {args.rows:,} rows into COW took {fmt_s(bulk_cow)}s best)")
    path = write_results("write", {
        "args": vars(args),
        "environment": environment(),
        "input_generation_s": gen_s,
        "total_s": total,
        "bulk": {k: v.to_json() for k, v in results.items()},
        "ratios": ratios,
        "target_bulk_vs_parquet": BULK_TARGET,
        "upserts": {k: v.to_json() for k, v in upserts.items()},
        "verify": verify,
    })
    print(f"\nresults: {path}  (total {total:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
