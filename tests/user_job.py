"""A PySpark job as users write it: its own SparkSession, then spark_writer.write.

Run by the cluster tests in a subprocess (PySpark takes the executors' Python from
PYSPARK_PYTHON when a SparkContext starts, and one process holds one context at a time):

    python tests/user_job.py spec.json

``spec.json``: ``{"master": ..., "conf": {...}, "result": "out.json", "runs": [run, ...]}``;
each run: ``name``, ``pyspark_python``, ``table``, ``rows`` ("trips" or "update"),
optionally ``local_session`` (use ``spark_writer.session.local_session`` instead of the
builder) and ``slow_stage`` (run a stage long enough for Spark's console progress bar).
Each run's outcome (``ok``, ``error_type``, ``error``, ``instants``) goes to ``result``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time


def _session(spec: dict, run: dict):
    from pyspark.sql import SparkSession

    if run.get("local_session"):
        from spark_writer.session import local_session

        return local_session(app_name=run["name"], cores="2", shuffle_partitions=2)
    builder = SparkSession.builder.master(spec["master"]).appName(run["name"])
    for key, value in spec.get("conf", {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _frames(spark, rows: str):
    from hudi_duck.demo import COLUMNS, TRIPS

    if rows == "trips":
        return [spark.createDataFrame(TRIPS, COLUMNS), spark.createDataFrame([(*TRIPS[0][:4], 99.0, TRIPS[0][5])], COLUMNS)]
    return [spark.createDataFrame([(*TRIPS[1][:4], 50.0, TRIPS[1][5])], COLUMNS)]


def _run(spec: dict, run: dict) -> dict:
    import spark_writer
    from hudi_duck.demo import OPTIONS

    os.environ["PYSPARK_PYTHON"] = run["pyspark_python"]
    spark = _session(spec, run)
    spark.sparkContext.setLogLevel("ERROR")
    outcome: dict = {"name": run["name"], "ok": True, "instants": []}
    try:
        if run.get("slow_stage"):
            spark.sparkContext.parallelize(range(2), 2).map(lambda x: time.sleep(2) or x).collect()
        for frame in _frames(spark, run["rows"]):
            outcome["instants"].append(spark_writer.write(frame, run["table"], OPTIONS).instant_time)
    except Exception as exc:  # noqa: BLE001 - the outcome is what the test looks at
        outcome.update(ok=False, error_type=type(exc).__name__, error=str(exc))
    finally:
        spark.stop()
    return outcome


def main(spec_path: str) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logging.getLogger("spark_writer").setLevel(logging.INFO)
    with open(spec_path) as f:
        spec = json.load(f)
    results = [_run(spec, run) for run in spec["runs"]]
    with open(spec["result"], "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
