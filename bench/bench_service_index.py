"""What the driver reads of the data files while a clustering and a compaction keep the
metadata table's column stats and record index.

    python bench/bench_service_index.py               # 40,000 rows in 4 partitions, MOR
    python bench/bench_service_index.py --rows 200000

A MOR table with column stats and the record index gets an insert and an upsert (log files),
then a standalone compaction and a standalone clustering (sorted by ``v``: every file group
is rewritten). A spy on the driver's storage counts the data files (base and log files,
outside ``.hoodie``) the driver opens or reads during each service (before, the driver read
the footers of the files a service wrote and, for the record index, the key column of the
new and of the replaced base files). The counts are deterministic; the seconds depend on the machine and its load (printed).
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
    "hoodie.table.name": "svcidx",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.clustering.plan.strategy.sort.columns": "v",
}


class DriverReads:
    """Counts the driver's reads of data files through the core's storage."""

    def __init__(self) -> None:
        self.files: set[str] = set()

    def install(self) -> None:
        from hudi_duck.core.storage.storage import Storage

        spy = self
        for name in ("open", "read", "read_range"):
            original = getattr(Storage, name)

            def wrapped(storage, rel, *args, _original=original, **kwargs):
                uri = storage.uri(rel)
                if "/.hoodie" not in uri and (".parquet" in uri or ".log." in uri):
                    spy.files.add(uri)
                return _original(storage, rel, *args, **kwargs)

            setattr(Storage, name, wrapped)

    def take(self) -> int:
        out = len(self.files)
        self.files = set()
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    args = parser.parse_args()
    import spark_writer

    spark = spark_session("bench_service_index")
    reads = DriverReads()
    reads.install()
    path = os.path.join(tempfile.mkdtemp(prefix="bench_svcidx_"), "t")
    try:
        def frame(first: int, n: int, ts: int):
            return spark.createDataFrame(
                [(f"k{i:08d}", f"p{i % 4}", ts, (i * 7919) % 100_003) for i in range(first, first + n)],
                "id string, part string, ts long, v long",
            )

        spark_writer.write(frame(0, args.rows, 1), path, {**OPTIONS, "hoodie.datasource.write.operation": "insert"})
        spark_writer.write(frame(0, args.rows // 4, 2), path, OPTIONS)
        reads.take()
        print(f"rows={args.rows} load={os.getloadavg()[0]:.1f}")
        for name, run in (("compaction", spark_writer.compact), ("clustering", spark_writer.cluster)):
            started = time.perf_counter()
            done = run(spark, path, OPTIONS)
            seconds = time.perf_counter() - started
            print(f"{name} {done}: the driver read {reads.take()} data files; {seconds:.1f}s")
    finally:
        remove(os.path.dirname(path))
        spark.stop()


if __name__ == "__main__":
    main()
