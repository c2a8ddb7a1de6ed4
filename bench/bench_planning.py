"""Planning benchmark: how long a snapshot takes to plan, listing storage vs the metadata table, vs hudi-rs.

    python bench/bench_planning.py --build-only         # once: builds both tables (minutes), then reuses them
    python bench/bench_planning.py                      # local + loopback S3, 3 repetitions
    python bench/bench_planning.py --no-s3 --repeat 5

Tables (built once into ``--data-dir``, reused while their ``manifest.json`` is there):

* **wide**: a MOR table written by ``spark_writer`` (metadata table on, Hudi's default):
  bulk_insert of ``--wide-rows`` rows into ``--wide-partitions`` partitions from ``--wide-tasks``
  Spark tasks (one file group per task and partition), then two upserts of 2% of the keys
  (log files in some of the file groups);
* **scale**: a COW table with ``--scale-commits`` commits of ``--scale-groups`` new file groups each
  (5,000 file groups, 500 commits by default, in 100 partitions). The first commit is a
  ``spark_writer`` bulk_insert; the others are written in this process with the core's write
  pieces (a ``Transaction`` per commit, the create handle per file group, the metadata table kept
  in step by its commit participant and its services run before every commit, as a writer does).
  Data-table archival is left out so that the active timeline holds all the commits.

Every measurement runs in a fresh process (no plan cache, no fsspec instances), which times only
the planning call and reports the file slices it planned. What a process keeps for the next one
(``core/storage/kept.py``) is the commit summaries (``core/timeline/summary_store.py``: the decoded
commit files, known by their ``stat``) and the digests of plans whose files were checked clean
(``core/table/checked_plans.py``); an unmeasured plan before the runs keeps them, and the case "nothing
kept" plans as a process that finds nothing kept (the first query after a cache was
cleared, or a process without a cache):

* ``hudi-duck``: ``planner.plan_sql('snapshot', ...)`` in a process with a connection made by
  ``hudi_duck.connect()`` (what ``hudi_snapshot`` does at bind time:
  open the table, plan, render the SQL), ``metadata_enable`` true (Hudi's default: the file listing
  comes from the metadata table's ``files`` partition) or false (``hoodie.metadata.enable=false``:
  partitions and files listed from storage);
* ``hudi-rs``: ``HudiTableBuilder.from_base_uri(..).build().get_file_slices()``.

On S3 the table is uploaded to a moto server on loopback and read through s3fs (hudi-duck) or
object_store (hudi-rs) with the endpoint as a storage option. The S3 requests of each run are
counted by the server (by kind: LIST, GET, HEAD). On local disk the directories opened and the
files read under the table are counted with ``strace`` in a separate run (not timed).

Every case's set of file slices (partition, file id, base file, log files) is checked against
hudi-rs's in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    ROOT,
    Samples,
    count_files,
    dir_size,
    environment,
    fmt_ratio,
    fmt_s,
    remove,
    table,
    write_results,
)

SCALE_TARGET = 0.5  # hudi-duck planning / hudi-rs get_file_slices on the scale table
BUCKET = "lake"


# -- building the tables ----------------------------------------------------------------------------
def build_wide(root: Path, rows: int, partitions: int, tasks: int) -> dict[str, Any]:
    """MOR, spark_writer: bulk_insert (one file group per task and partition), two upserts into logs."""
    from common import spark_session
    from data import hudi_options, trips, updates
    from pyspark.sql import functions as F

    import spark_writer

    spark = spark_session("hudi-duck-bench-planning-wide")
    city = F.format_string("c%03d", F.pmod(F.xxhash64("uuid"), F.lit(partitions)).cast("int"))
    path = str(root / "wide")
    remove(path)
    t0 = time.perf_counter()
    opts = hudi_options("bench_wide", "MERGE_ON_READ", "bulk_insert", **{"hoodie.bulkinsert.shuffle.parallelism": str(tasks)})
    commits = [repr(spark_writer.write(trips(spark, rows, tasks).withColumn("city", city), path, opts))]
    print(f"wide: bulk_insert done in {time.perf_counter() - t0:.0f}s", flush=True)
    for round_ in range(2):
        upd = updates(spark, rows, 0.02, round_).withColumn("city", city)
        commits.append(repr(spark_writer.write(upd, path, hudi_options("bench_wide", "MERGE_ON_READ", "upsert"))))
        print(f"wide: upsert {round_ + 1} done at {time.perf_counter() - t0:.0f}s", flush=True)
    spark.stop()
    return {
        "path": path, "rows": rows, "partitions": partitions, "tasks": tasks, "commits": commits,
        "build_s": time.perf_counter() - t0, "bytes": dir_size(path),
        "parquet_files": count_files(path, ".parquet"), "log_files": count_files(path, ".log"),
    }


def _scale_rows(schema, commit: int, city: str, n: int):
    """``n`` rows of the table's data schema for one new file group (keys unique per commit)."""
    import datetime

    import pyarrow as pa

    from hudi_duck.core.schema.meta_fields import RECORD_KEY

    keys = [f"s{commit:05d}-{city}-{r:03d}" for r in range(n)]
    columns = []
    for field in schema:
        if field.name == "uuid":
            values = keys
        elif field.name == "city":
            values = [city] * n
        elif pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            values = [f"{field.name}-{r}" for r in range(n)]
        elif pa.types.is_integer(field.type):
            values = [commit * 1000 + r for r in range(n)]
        elif pa.types.is_floating(field.type):
            values = [float(r) + 0.5 for r in range(n)]
        elif pa.types.is_date(field.type):
            values = [datetime.date(2024, 1, 1) + datetime.timedelta(days=r) for r in range(n)]
        else:
            raise ValueError(f"no generator for column {field.name} of type {field.type}")
        columns.append(pa.array(values, field.type))
    table_ = pa.Table.from_arrays(columns, schema=schema)
    return table_.append_column(RECORD_KEY, pa.array(keys, pa.string()))


def build_scale(root: Path, commits: int, groups: int, partitions: int, rows_per_group: int) -> dict[str, Any]:
    """COW: a spark_writer bulk_insert of ``groups`` file groups, then ``commits - 1`` commits of
    ``groups`` new file groups each, written with the core (see the module docstring)."""
    from common import spark_session
    from data import _columns, hudi_options
    from pyspark.sql import functions as F

    import spark_writer
    from hudi_duck.core.config.write_settings import FileSettings
    from hudi_duck.core.metadata.writer import MetadataSettings, MetadataTable
    from hudi_duck.core.table.table import HudiTable
    from hudi_duck.core.timeline.commit_metadata import CommitMetadata, WriteStat
    from hudi_duck.core.timeline.instant import Action
    from hudi_duck.core.timeline.transaction import Transaction
    from hudi_duck.core.write.handles import TaskInfo, WriteContext, create_files

    path = str(root / "scale")
    remove(path)
    t0 = time.perf_counter()
    spark = spark_session("hudi-duck-bench-planning-scale")
    df = spark.range(0, groups * rows_per_group, 1, 1).select(*_columns(), "id")
    df = df.withColumn("city", F.format_string("c%03d", (F.col("id") % groups).cast("int"))).drop("id")
    opts = hudi_options("bench_scale", "COPY_ON_WRITE", "bulk_insert", **{"hoodie.bulkinsert.shuffle.parallelism": "1"})
    spark_writer.write(df, path, opts)
    spark.stop()
    print(f"scale: commit 1 (spark_writer bulk_insert) done in {time.perf_counter() - t0:.0f}s", flush=True)
    files = FileSettings()
    settings = MetadataSettings()
    for commit in range(1, commits):
        table_ = HudiTable(path)
        MetadataTable(table_.storage).prepare_write(settings, None)
        table_ = HudiTable(path)
        txn = Transaction.start(table_.timeline, Action.COMMIT)
        ctx = WriteContext.for_table(table_, txn.requested_time, files)
        cities = [f"c{(commit * groups + j) % partitions:03d}" for j in range(groups)]
        profile = {
            f"city={c}": [WriteStat(file_id="", prev_commit="null", num_inserts=rows_per_group)] for c in cities
        }
        with txn:
            txn.begin(CommitMetadata(partition_to_write_stats=profile, operation_type="INSERT"))
            stats = []
            for j, c in enumerate(cities):
                rows = _scale_rows(ctx.data_schema, commit, c, rows_per_group)
                stats += create_files(ctx, f"city={c}", rows, TaskInfo(j, commit, commit * groups + j))
            txn.commit(CommitMetadata.of(stats, compacted=False, extra_metadata={"schema": ctx.avro_schema},
                                         operation_type="INSERT"))
        if commit % 25 == 0:
            print(f"scale: {commit + 1}/{commits} commits at {time.perf_counter() - t0:.0f}s", flush=True)
    return {
        "path": path, "commits": commits, "groups_per_commit": groups, "partitions": partitions,
        "rows_per_group": rows_per_group, "build_s": time.perf_counter() - t0, "bytes": dir_size(path),
        "parquet_files": count_files(path, ".parquet"),
    }


def ensure_table(args, name: str) -> dict[str, Any]:
    """The manifest of table ``name``, building it in a child process first when missing."""
    root = Path(args.data_dir) / "planning"
    manifest_path = root / f"{name}-manifest.json"
    if not args.rebuild and manifest_path.exists():
        return json.loads(manifest_path.read_text())
    print(f"building the {name} table in {root} (child process) ...", flush=True)
    subprocess.run([sys.executable, __file__, "--build", name, *_passed(args)], check=True)
    return json.loads(manifest_path.read_text())


def _passed(args) -> list[str]:
    return [
        "--data-dir", args.data_dir, "--wide-rows", str(args.wide_rows), "--wide-partitions", str(args.wide_partitions),
        "--wide-tasks", str(args.wide_tasks), "--scale-commits", str(args.scale_commits),
        "--scale-groups", str(args.scale_groups), "--scale-partitions", str(args.scale_partitions),
    ]


def run_build(args) -> None:
    root = Path(args.data_dir) / "planning"
    root.mkdir(parents=True, exist_ok=True)
    if args.build == "wide":
        manifest = build_wide(root, args.wide_rows, args.wide_partitions, args.wide_tasks)
    else:
        manifest = build_scale(root, args.scale_commits, args.scale_groups, args.scale_partitions, 10)
    (root / f"{args.build}-manifest.json").write_text(json.dumps(manifest, indent=2))
    print(f"built {args.build}: {manifest}", flush=True)



# -- one measurement, in a fresh process ------------------------------------------------------------
def _hudi_rs_options(s3: dict[str, Any]) -> dict[str, str]:
    """object_store's names for the s3fs options of the loopback server."""
    return {
        "aws_endpoint_url": s3["endpoint_url"], "aws_access_key_id": s3["key"], "aws_secret_access_key": s3["secret"],
        "aws_region": "us-east-1", "aws_allow_http": "true",
    }


def _plan_hudi_duck(url: str, s3: dict[str, Any], metadata: bool) -> tuple[float, list, str]:
    from hudi_duck.duck import planner

    options = {"s3": s3} if s3 else {}
    planner.clear_plan_cache()
    t0 = time.perf_counter()
    planner.plan_sql("snapshot", url, None, None, options, metadata_enable=metadata)
    seconds = time.perf_counter() - t0
    (cached,) = planner._PLANS.values()
    plan = cached.plan
    slices = [
        (s.partition_path, s.file_id, s.base_file.file_name if s.base_file else None, sorted(f.file_name for f in s.log_files))
        for s in plan.slices
    ]
    return seconds, slices, plan.listing


def _plan_hudi_rs(url: str, s3: dict[str, Any]) -> tuple[float, list, str]:
    from hudi import HudiTableBuilder

    t0 = time.perf_counter()
    builder = HudiTableBuilder.from_base_uri(url)
    if s3:
        builder = builder.with_storage_options(_hudi_rs_options(s3))
    file_slices = builder.build().get_file_slices()
    seconds = time.perf_counter() - t0
    slices = [(s.partition_path, s.file_id, s.base_file_name or None, sorted(s.log_file_names)) for s in file_slices]
    return seconds, slices, "hudi-rs"


def run_worker(args) -> int:
    """Plan once in this fresh process (``first``), then once more with hudi-duck's plan cache
    emptied (``again``: imports and the OS cache warm); write the timings and slices as JSON."""
    s3 = json.loads(args.s3_options) if args.s3_options else {}
    if args.worker == "hudi-duck":
        import hudi_duck
        import hudi_duck.duck.planner  # noqa: F401  (imported before timing)
        from hudi_duck.core.storage import kept

        # a query plans on a connection with the functions: made before timing, as hudi-rs is loaded
        connection = hudi_duck.connect()  # noqa: F841

        if args.metadata == "on-unkept":  # a process that finds nothing kept by an earlier one
            kept.use_store(None)
        plan = lambda: _plan_hudi_duck(args.url, s3, args.metadata != "off")  # noqa: E731
    else:
        import hudi  # noqa: F401

        plan = lambda: _plan_hudi_rs(args.url, s3)  # noqa: E731
    cpu = time.process_time()
    first, slices, listing = plan()
    first_cpu, cpu = time.process_time() - cpu, time.process_time()
    again, _, _ = plan()
    again_cpu = time.process_time() - cpu
    slices = sorted(slices, key=lambda s: (s[0], s[1]))
    digest = hashlib.sha1(json.dumps(slices).encode()).hexdigest()
    Path(args.out).write_text(json.dumps({
        "first": first, "again": again, "first_cpu": first_cpu, "again_cpu": again_cpu, "slices": len(slices), "digest": digest, "listing": listing,
        "log_files": sum(len(s[3]) for s in slices), "sample": slices[:3],
    }))
    return 0


# -- the loopback S3 server ------------------------------------------------------------------------
class S3Server:
    """moto's S3 server on loopback, counting the requests it serves by kind."""

    def __init__(self) -> None:
        import logging

        from moto import server as moto_server
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self.requests: list[str] = []
        original = DomainDispatcherApplication.__call__
        requests = self.requests

        def counting(app, environ, start_response):
            requests.append(_request_kind(environ))
            return original(app, environ, start_response)

        DomainDispatcherApplication.__call__ = counting
        self.server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.options = {
            "key": "bench-key", "secret": "bench-secret", "endpoint_url": f"http://{host}:{port}",
            "client_kwargs": {"region_name": "us-east-1"},
        }
        import boto3
        import s3fs

        boto3.client("s3", endpoint_url=self.options["endpoint_url"], aws_access_key_id=self.options["key"],
                     aws_secret_access_key=self.options["secret"], region_name="us-east-1").create_bucket(Bucket=BUCKET)
        self.fs = s3fs.S3FileSystem(**self.options, use_listings_cache=False)

    def upload(self, local: str, name: str) -> str:
        self.fs.put(local.rstrip("/") + "/", f"{BUCKET}/{name}/", recursive=True)
        return f"s3://{BUCKET}/{name}"

    def counts(self, since: int) -> dict[str, int]:
        out: dict[str, int] = {}
        for kind in self.requests[since:]:
            out[kind] = out.get(kind, 0) + 1
        return out

    def stop(self) -> None:
        self.server.stop()


def _request_kind(environ: dict[str, Any]) -> str:
    method = environ.get("REQUEST_METHOD", "")
    path = environ.get("PATH_INFO", "").strip("/")
    query = environ.get("QUERY_STRING", "")
    if method == "GET" and ("list-type" in query or "/" not in path):
        return "LIST"
    return method


# -- local file access, counted with strace --------------------------------------------------------
_OPEN = re.compile(r'open(?:at)?\((?:AT_FDCWD|\d+), "([^"]+)", ([A-Z_|]+)')
_STAT = re.compile(r'(?:newfstatat|statx|stat|lstat)\((?:AT_FDCWD, |\d+, )?"([^"]+)"')


def strace_counts(cmd: list[str], root: str) -> dict[str, int] | None:
    """Directories opened (listings), files opened and stat calls under ``root`` by ``cmd``."""
    if shutil.which("strace") is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".strace") as trace:
        subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,newfstatat,statx,stat,lstat", "-o", trace.name,
                        *cmd], check=True, capture_output=True)
        counts = {"dirs": 0, "files": 0, "stats": 0}
        root = root.rstrip("/")
        for line in Path(trace.name).read_text(errors="replace").splitlines():
            m = _OPEN.search(line)
            if m and m.group(1).startswith(root):
                counts["dirs" if "O_DIRECTORY" in m.group(2) else "files"] += 1
                continue
            m = _STAT.search(line)
            if m and m.group(1).startswith(root):
                counts["stats"] += 1
        return counts


# -- measuring ---------------------------------------------------------------------------------------
CASES = [("hudi-duck, metadata table", "hudi-duck", "on"),
         ("hudi-duck, metadata table, nothing kept", "hudi-duck", "on-unkept"),
         ("hudi-duck, listing", "hudi-duck", "off"),
         ("hudi-rs get_file_slices", "hudi-rs", "on")]


def worker_cmd(args, worker: str, url: str, metadata: str, s3: dict[str, Any] | None, out: str) -> list[str]:
    cmd = [sys.executable, __file__, "--worker", worker, "--url", url, "--metadata", metadata, "--out", out]
    if s3:
        cmd += ["--s3-options", json.dumps(s3)]
    return cmd


def run_case(args, worker: str, url: str, metadata: str, s3: dict[str, Any] | None) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(worker_cmd(args, worker, url, metadata, s3, out.name), check=True, cwd=str(ROOT))
        return json.loads(Path(out.name).read_text())


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def measure(args, manifests: dict[str, dict[str, Any]]) -> int:
    env = environment()
    load_before = _uptime()
    server = None if args.no_s3 or not args.s3_tables else S3Server()
    rows: list[list[Any]] = []
    raw: dict[str, Any] = {}
    agree = total = 0
    try:
        for name, manifest in manifests.items():
            local = manifest["path"]
            places = [("local", local, None)]
            if server is not None and name in args.s3_tables.split(","):
                t0 = time.perf_counter()
                url = server.upload(local, name)
                print(f"uploaded {name} to {url} in {time.perf_counter() - t0:.0f}s", flush=True)
                places.append(("S3 (moto, loopback)", url, server.options))
            for where, url, s3 in places:
                samples = {label: (Samples(f"{name} {where} {label} first"), Samples(f"{name} {where} {label} again"))
                           for label, _, _ in CASES}
                cpu = {label: (Samples(f"{name} {where} {label} first cpu"), Samples(f"{name} {where} {label} again cpu"))
                       for label, _, _ in CASES}
                results: dict[str, dict[str, Any]] = {}
                requests: dict[str, dict[str, int]] = {}
                # one unmeasured plan keeps the commit summaries in the cache, as any earlier query would
                run_case(args, "hudi-duck", url, "on", s3)
                for rep in range(args.repeat):
                    for label, worker, metadata in CASES[rep % len(CASES):] + CASES[:rep % len(CASES)]:
                        since = len(server.requests) if server is not None else 0
                        result = run_case(args, worker, url, metadata, s3)
                        if s3 is not None:
                            requests[label] = server.counts(since)  # two plans per run: halved below
                        first, again = samples[label]
                        first.seconds.append(result["first"])
                        again.seconds.append(result["again"])
                        cpu[label][0].seconds.append(result["first_cpu"])
                        cpu[label][1].seconds.append(result["again_cpu"])
                        results[label] = result
                        print(f"  {name} {where} {label}: {result['first']:.3f}s / {result['again']:.3f}s "
                              f"({result['slices']} slices)", flush=True)
                if s3 is None and not args.no_counts:
                    for label, worker, metadata in CASES:
                        with tempfile.NamedTemporaryFile(suffix=".json") as out:
                            counted = strace_counts(worker_cmd(args, worker, url, metadata, None, out.name), local)
                        if counted is not None:
                            requests[label] = counted
                oracle = results[CASES[-1][0]]
                rs_first, rs_again = samples[CASES[-1][0]]
                rs_cpu = cpu[CASES[-1][0]][0]
                for label, _, _ in CASES:
                    result = results[label]
                    same = result["digest"] == oracle["digest"]
                    total += 1
                    agree += same
                    first, again = samples[label]
                    counts = requests.get(label)
                    if counts and s3 is not None:
                        counted = ", ".join(f"{k} {v // 2}" for k, v in sorted(counts.items()))
                    elif counts:
                        counted = f"{counts['dirs'] // 2} dirs, {counts['files'] // 2} files, {counts['stats'] // 2} stats"
                    else:
                        counted = "-"
                    first_cpu = cpu[label][0]
                    rows.append([
                        name, where, label, result["slices"], result["log_files"], fmt_s(first.median), fmt_s(again.median),
                        fmt_s(first_cpu.median), fmt_ratio(first.median / rs_first.median),
                        fmt_ratio(again.median / rs_again.median), fmt_ratio(first_cpu.median / rs_cpu.median), counted,
                        "yes" if same else "NO",
                    ])
                    raw[f"{name} | {where} | {label}"] = {
                        "first": first.to_json(), "again": again.to_json(), "first_cpu": cpu[label][0].to_json(),
                        "again_cpu": cpu[label][1].to_json(), "requests_two_plans": counts,
                        "slices": result["slices"], "digest": result["digest"], "listing": result["listing"],
                        "same_as_hudi_rs": same,
                    }
    finally:
        if server is not None:
            server.stop()
    load_after = _uptime()
    mem_gb = env.get("mem_total_kb", 0) / 1024 / 1024
    print()
    print(f"machine: {os.cpu_count()} cores (nproc), {mem_gb:.1f} GiB RAM; load before: {load_before}")
    print(f"                                         load after:  {load_after}")
    for name, manifest in manifests.items():
        size = {k: v for k, v in manifest.items() if k not in ("commits", "path")}
        print(f"table {name}: {size}")
    print()
    print(table(
        ["table", "storage", "case", "file slices", "log files", "first s", "again s", "first CPU s",
         "first / hudi-rs", "again / hudi-rs", "CPU / hudi-rs", "listings, files / requests per plan",
         "same slices as hudi-rs"],
        rows,
    ))
    print()
    print(f"result checks: {agree}/{total} agree with hudi-rs")
    print("medians; first = the first plan in a fresh process (wall clock); again = a second plan in that process,")
    print("plan cache emptied; first CPU = CPU seconds of the first plan, all threads (steadier on a loaded machine)")
    if "scale" in manifests:
        rs = raw.get("scale | local | hudi-rs get_file_slices")
        for label in ("hudi-duck, metadata table", "hudi-duck, metadata table, nothing kept"):
            key = f"scale | local | {label}"
            if key in raw and rs:
                for what in ("first", "again", "first_cpu"):
                    ratio = raw[key][what]["median"] / rs[what]["median"]
                    print(f"scale table, local, {label}: {what} plan vs hudi-rs: {ratio:.2f}x (target <= {SCALE_TARGET}x)")
    path = write_results("planning", {"environment": env, "load_before": load_before, "load_after": load_after,
                                      "tables": manifests, "cases": raw, "agree": agree, "total": total})
    print(f"raw results: {path}")
    return 0 if agree == total else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    ap.add_argument("--repeat", type=int, default=3, help="fresh-process runs per case (median reported)")
    ap.add_argument("--rebuild", action="store_true", help="rewrite the tables")
    ap.add_argument("--build-only", action="store_true", help="build the tables and stop")
    ap.add_argument("--tables", default="wide,scale", help="which tables to measure (comma-separated)")
    ap.add_argument("--no-s3", action="store_true", help="local disk only")
    ap.add_argument("--s3-tables", default="wide", help="tables also measured on S3 (each is uploaded to the server)")
    ap.add_argument("--no-counts", action="store_true", help="skip the strace run counting local file access")
    ap.add_argument("--wide-rows", type=int, default=25_000)
    ap.add_argument("--wide-partitions", type=int, default=250)
    ap.add_argument("--wide-tasks", type=int, default=10)
    ap.add_argument("--scale-commits", type=int, default=500)
    ap.add_argument("--scale-groups", type=int, default=10, help="new file groups per commit")
    ap.add_argument("--scale-partitions", type=int, default=100)
    ap.add_argument("--build", choices=["wide", "scale"], help=argparse.SUPPRESS)
    ap.add_argument("--worker", choices=["hudi-duck", "hudi-rs"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--metadata", choices=["on", "on-unkept", "off"], default="on", help=argparse.SUPPRESS)
    ap.add_argument("--s3-options", default="", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.build:
        run_build(args)
        return 0
    if args.worker:
        return run_worker(args)
    manifests = {name: ensure_table(args, name) for name in args.tables.split(",") if name}
    if args.build_only:
        return 0
    return measure(args, manifests)


if __name__ == "__main__":
    sys.exit(main())
