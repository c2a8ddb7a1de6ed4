"""Where spark_writer spends its time: driver-side profile and the Python workers' profile.

    python bench/profile_write.py                         # 2M rows: bulk_insert, then a 1% upsert, COW
    python bench/profile_write.py --rows 200000 --table-type MERGE_ON_READ --fraction 0.1

* driver: cProfile of ``spark_writer.write`` (time spent waiting on each Spark
  action shows up under the client/index function that triggered it);
* executors: Spark's Python UDF profiler (``spark.sql.pyspark.udf.profiler=perf``)
  over the ``mapInArrow`` functions (key generation, file writing, index lookup);
* for scale: ``df.write.parquet`` of the same cached DataFrame.

Profiles are printed and dumped to bench/results/.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DATA_DIR, RESULTS_DIR, remove, spark_session  # noqa: E402


def show(prof: cProfile.Profile, title: str, path: Path, limit: int = 30, restrict: str | None = None) -> None:
    prof.dump_stats(str(path))
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).strip_dirs().sort_stats("cumulative")
    if restrict:
        stats.print_stats(restrict, limit)
    else:
        stats.print_stats(limit)
    text = out.getvalue()
    print(f"\n### {title} ({path.name})\n" + text[text.find("   ncalls"):].rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--table-type", default="COPY_ON_WRITE", choices=("COPY_ON_WRITE", "MERGE_ON_READ"))
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--no-udf-profiler", action="store_true")
    args = ap.parse_args(argv)

    import spark_writer
    from data import hudi_options, trips, updates

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    root = Path(args.data_dir) / f"profile-write-{args.rows}"
    remove(root)
    root.mkdir(parents=True)
    path = str(root / "table")
    spark = spark_session("hudi-duck-profile-write")
    df = trips(spark, args.rows).cache()
    df.count()
    upd = updates(spark, args.rows, args.fraction, 0).cache()
    upd.count()
    tag = f"{args.table_type.lower()}-{args.rows}"

    t0 = time.perf_counter()
    df.write.parquet(str(root / "plain_parquet"))
    print(f"df.write.parquet: {time.perf_counter() - t0:.2f}s")

    udf_profiler = False
    if not args.no_udf_profiler:
        try:
            spark.conf.set("spark.sql.pyspark.udf.profiler", "perf")
            udf_profiler = True
        except Exception as exc:  # pragma: no cover - depends on the Spark version
            print(f"(no UDF profiler: {exc})")

    def run(title: str, write):
        if udf_profiler:
            try:
                spark.profile.clear()
            except Exception:
                pass
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        result = write()
        prof.disable()
        print(f"\n## {title}: {time.perf_counter() - t0:.2f}s  {result!r}")
        show(prof, f"driver: {title}", RESULTS_DIR / f"profile-write-driver-{title.split()[0]}-{tag}.prof",
             restrict=r"spark_writer|hudi_duck|java_gateway.py.*send_command|sql/dataframe.py|sql/classic")
        if udf_profiler:
            try:
                out = io.StringIO()
                old = sys.stdout
                sys.stdout = out
                try:
                    spark.profile.show(type="perf")
                finally:
                    sys.stdout = old
                text = out.getvalue()
                # keep each UDF's header and its top lines
                kept, lines = [], 0
                for line in text.splitlines():
                    if line.startswith("=") or "Profile of UDF" in line or "ncalls" in line:
                        lines = 0
                    if lines < 28:
                        kept.append(line)
                    lines += 1
                print(f"\n### executors (Python UDF profiler): {title}\n" + "\n".join(kept))
                dump = RESULTS_DIR / f"profile-write-udf-{title.split()[0]}-{tag}"
                spark.profile.dump(str(dump), type="perf")
            except Exception as exc:
                print(f"(UDF profile unavailable: {exc})")

    run("bulk_insert", lambda: spark_writer.write(df, path, hudi_options("prof", args.table_type, "bulk_insert")))
    run("upsert", lambda: spark_writer.write(upd, path, hudi_options("prof", args.table_type, "upsert")))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
