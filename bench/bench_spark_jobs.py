"""Spark jobs and tasks per tiny write: the fixed cost every small write pays, whatever its size.

    python bench/bench_spark_jobs.py                # 6-row writes into a COW and a MOR table
    python bench/bench_spark_jobs.py --partitions 4 # the session's shuffle partitions / default parallelism

Each Spark job (and each Python task) costs a fixed part of a second on a local session, so a
write of a few rows is dominated by how many it runs. The counts are deterministic (same Spark,
same options); the seconds depend on the machine and its load (printed with them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import remove, spark_session  # noqa: E402

OPTIONS = {
    "hoodie.table.name": "jobs",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
}


def rows(n: int, first: int = 0, ts: int = 1) -> list[tuple]:
    return [(f"k{i}", f"p{i % 2}", ts, f"v{i}") for i in range(first, first + n)]


def writes() -> list[tuple[str, list[tuple]]]:
    """An insert creating the table, upserts of 6 rows (3 new), a delete, and the other operations."""
    return (
        [("insert", rows(6))]
        + [("upsert", rows(6, 3, k + 2)) for k in range(3)]
        + [("delete", rows(1)), ("insert", rows(2, 40)), ("insert_overwrite", rows(2, 50)), ("bulk_insert", rows(2, 60))]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=2, help="shuffle partitions and default parallelism")
    args = ap.parse_args(argv)

    import spark_writer

    spark = spark_session("hudi-duck-bench-jobs", shuffle_partitions=args.partitions)
    context = spark.sparkContext._jsc.sc()
    status = context.statusStore()

    def next_job() -> int:
        return context.dagScheduler().nextJobId()

    def tasks(first: int, end: int) -> int:
        return sum(status.job(j).numTasks() - status.job(j).numSkippedTasks() for j in range(first, end))

    root = Path(tempfile.mkdtemp(prefix="hudi-duck-jobs-"))
    print(f"load {os.getloadavg()[0]:.2f}, Spark {spark.version}, {args.partitions} partitions\n")
    print("| table | operation | jobs | tasks | seconds |\n|---|---|---:|---:|---:|")
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        path = str(root / table_type)
        for operation, batch in writes():
            frame = spark.createDataFrame(batch, "id string, part string, ts long, val string")
            options = dict(OPTIONS, **{
                "hoodie.datasource.write.operation": operation, "hoodie.datasource.write.table.type": table_type,
            })
            first, started = next_job(), time.perf_counter()
            spark_writer.write(frame, path, options)
            seconds, end = time.perf_counter() - started, next_job()
            print(f"| {table_type} | {operation} | {end - first} | {tasks(first, end)} | {seconds:.2f} |")
    print(f"\nload {os.getloadavg()[0]:.2f}")
    spark.stop()
    remove(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
