"""Demo: write a Hudi table with Spark (locally), then query it from DuckDB.

    python -m hudi_duck.demo [table path]

Writes a merge-on-read trips table in three commits (insert, update, delete),
then reads it with ``hudi_snapshot``, ``hudi_incremental``, time travel and the
inspection functions. The writer's phases are logged to stderr as they happen.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile


DEFAULT_PATH = os.path.join(tempfile.gettempdir(), "hudi_duck_demo", "trips")
COLUMNS = "ts long, uuid string, rider string, driver string, fare double, city string"
TRIPS = [
    (1695159649087, "334e26e9-8355-45cc-97c6-c31daf0df330", "rider-A", "driver-K", 19.10, "san_francisco"),
    (1695091554788, "e96c4396-3fad-413a-a942-4cb36106d721", "rider-C", "driver-M", 27.70, "san_francisco"),
    (1695046462179, "9909a8b1-2d15-4d3d-8ec9-efc48c536a00", "rider-D", "driver-L", 33.90, "san_francisco"),
    (1695332066204, "1dced545-862b-4ceb-8b43-d2a568f6616b", "rider-E", "driver-O", 93.50, "san_francisco"),
    (1695516137016, "e3cf430c-889d-4015-bc98-59bdce1e530c", "rider-F", "driver-P", 34.15, "sao_paulo"),
    (1695376420876, "7a84095f-737f-40bc-b62f-6b69664712d2", "rider-G", "driver-Q", 43.40, "sao_paulo"),
    (1695173887231, "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04", "rider-I", "driver-S", 41.06, "chennai"),
    (1695115999911, "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", "rider-J", "driver-T", 17.85, "chennai"),
]
OPTIONS = {
    "hoodie.table.name": "trips",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}
log = logging.getLogger("hudi_duck.demo")


def show_progress() -> None:
    """Phase messages of the demo and of the writer on stderr (what a job gets from ``logging``)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    for name in ("spark_writer", "hudi_duck.demo"):
        logging.getLogger(name).setLevel(logging.INFO)


def prepare_path(path: str) -> None:
    """Start from an empty folder, but never delete anything except an earlier run's default table."""
    if not os.path.exists(path) or (os.path.isdir(path) and not os.listdir(path)):
        return
    if os.path.abspath(path) != os.path.abspath(DEFAULT_PATH):
        raise SystemExit(f"{path} already exists and is not empty; give the demo a new or empty folder")
    shutil.rmtree(path)


def write_table(spark, path: str):
    """Three commits: insert, update, delete; returns their WriteResults."""
    import spark_writer

    log.info("commit 1: inserting %d trips", len(TRIPS))
    first = spark_writer.write(spark.createDataFrame(TRIPS, COLUMNS), path, OPTIONS, mode="overwrite")
    log.info("commit 2: updating one fare")
    update = spark.createDataFrame([(1695159650000, TRIPS[2][1], "rider-D", "driver-L", 25.0, "san_francisco")], COLUMNS)
    second = spark_writer.write(update, path, OPTIONS)
    log.info("commit 3: deleting one trip")
    delete = spark.createDataFrame([(1695516137016, TRIPS[4][1], None, None, None, "sao_paulo")], COLUMNS)
    third = spark_writer.write(delete, path, {**OPTIONS, "hoodie.datasource.write.operation": "delete"})
    return first, second, third


def _print(title: str, relation) -> None:
    print(f"\n-- {title}")
    relation.show(max_width=160)


def query_table(path: str, first_instant: str) -> None:
    """What DuckDB users see of the table: snapshot, time travel, incremental and inspection functions."""
    import hudi_duck

    print("\nQuerying it from DuckDB (hudi_duck.connect())")
    con = hudi_duck.connect()
    _print("hudi_timeline", con.sql(f"SELECT requested_time, action, state, operation_type FROM hudi_timeline('{path}')"))
    _print(
        "latest snapshot",
        con.sql(f"SELECT _hoodie_commit_time, rider, fare, city FROM hudi_snapshot('{path}') ORDER BY rider"),
    )
    _print(
        "fares per city",
        con.sql(f"SELECT city, count(*) AS trips, round(sum(fare), 2) AS fares FROM hudi_snapshot('{path}') GROUP BY city ORDER BY city"),
    )
    _print(
        f"as of the first commit ({first_instant})",
        con.sql(f"SELECT rider, fare FROM hudi_snapshot('{path}', as_of := '{first_instant}') WHERE city = 'san_francisco' ORDER BY rider"),
    )
    _print(
        "incremental after the first commit",
        con.sql(f"SELECT _hoodie_commit_time, rider, fare FROM hudi_incremental('{path}', begin_time := '{first_instant}')"),
    )
    _print("hudi_file_slices", con.sql(f"SELECT partition_path, file_id, base_file, num_log_files FROM hudi_file_slices('{path}')"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = os.path.abspath(argv[0]) if argv else DEFAULT_PATH
    prepare_path(path)
    show_progress()

    from spark_writer.session import local_session

    print(f"Writing a Hudi table with a local Spark session to {path}", flush=True)
    spark = local_session(app_name="hudi-duck-demo")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        first, _, _ = write_table(spark, path)
    finally:
        log.info("stopping Spark")
        spark.stop()
    query_table(path, first.instant_time)
    print(f"\nThe table stays at {path}; query it with hudi_duck.connect() or any Apache Hudi reader.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
