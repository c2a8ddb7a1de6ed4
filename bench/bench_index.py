"""Index benchmark: upserts of a fraction of the keys located with RECORD_INDEX, SIMPLE and BLOOM.

    python bench/bench_index.py                       # 2M rows, 1% of the keys
    python bench/bench_index.py --rows 200000 --repeat 1
    python bench/bench_index.py --fractions 0.01 0.0001   # 1% and 0.01% (200 keys of 2M)

One copy-on-write table (bench/data.py trips, partitioned) is bulk-inserted with the
metadata table's record index enabled, so every upsert pays the same metadata-table
work whatever index locates its records. Then, per fraction and round, one upsert of
exactly ``rows * fraction`` existing keys per index type (order rotated between rounds,
each round updating other keys). Reported per fraction and index: best and median
seconds of the upsert and of its "locating records" phase (the index lookup, from the
writer's INFO log), rows written, and the load average (``uptime``) before each run.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DATA_DIR, Samples, environment, remove, rotated, spark_session, table, timed, write_results  # noqa: E402

INDEXES = ("RECORD_INDEX", "SIMPLE", "BLOOM")


class _LocateTimes(logging.Handler):
    """Collects the "located in N s" phase times the writer logs at INFO."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"located in ([0-9.]+)s", record.getMessage())
        if found:
            self.seconds.append(float(found.group(1)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.01], help="fractions 1/n of the keys to upsert")
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    args = ap.parse_args(argv)

    import spark_writer
    from data import hudi_options, trips, update_count, updates

    locate = _LocateTimes()
    writer_log = logging.getLogger("spark_writer")
    writer_log.addHandler(locate)
    writer_log.setLevel(logging.INFO)
    spark = spark_session("hudi-duck-bench-index")
    path = str(Path(args.data_dir) / f"index-{args.rows}" / "cow")
    remove(path)
    indexed = {"hoodie.metadata.record.index.enable": "true"}
    source = trips(spark, args.rows).cache()
    source.count()
    load = os.getloadavg()
    seconds, _ = timed(lambda: spark_writer.write(source, path, hudi_options("bench_index", "COPY_ON_WRITE", "bulk_insert", **indexed)))
    print(f"bulk_insert {args.rows} rows with the record index: {seconds:.1f} s (load {load[0]:.2f})")
    rows_out, cases = [], {}
    round_no = 0
    for fraction in args.fractions:
        results = {name: Samples(name) for name in INDEXES}
        for round_ in range(args.repeat):
            for name in rotated(list(INDEXES), round_):
                batch = updates(spark, args.rows, fraction, round_no).cache()
                count = batch.count()
                assert count == update_count(args.rows, fraction, round_no)
                round_no += 1
                options = hudi_options("bench_index", "COPY_ON_WRITE", "upsert", **indexed, **{"hoodie.index.type": name})
                load = os.getloadavg()
                took, result = timed(lambda: spark_writer.write(batch, path, options))
                batch.unpersist()
                results[name].seconds.append(took)
                results[name].info.setdefault("load_1min", []).append(load[0])
                results[name].info["rows"] = count
                results[name].info.setdefault("locate_s", []).append(locate.seconds[-1] if locate.seconds else None)
                located = results[name].info["locate_s"][-1]
                print(f"fraction {fraction} round {round_} {name}: {took:.1f} s (located in {located} s), {count} rows (load {load[0]:.2f})", flush=True)
        cases[str(fraction)] = {n: s.to_json() for n, s in results.items()}
        rows_out += [
            [
                fraction, name, f"{s.best:.1f}", f"{s.median:.1f}",
                f"{min(x for x in s.info['locate_s'] if x is not None):.1f}" if any(x is not None for x in s.info["locate_s"]) else "-",
                s.info["rows"], " ".join(f"{x:.2f}" for x in s.info["load_1min"]),
            ]
            for name, s in results.items()
        ]
    print(table(["fraction", "index", "best s", "median s", "best locate s", "rows upserted", "load (1 min) per run"], rows_out))
    out = write_results("index", {"rows": args.rows, "env": environment(), "cases": cases})
    print(f"results: {out}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
