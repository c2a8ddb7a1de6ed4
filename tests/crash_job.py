"""One table action, run as its own process, so a crash test can kill it at a named phase.

``python crash_job.py SPEC.json`` runs the action the spec names on the table at
``spec["path"]``; with ``HUDI_DUCK_KILL_AT`` set, the core kills the process at that
phase (``hudi_duck.core.faults``). The same functions run in the test process to
prepare tables and to repair them after a crash, so the crashed run and the repair are
the same code. ``--serve`` and ``--spark-serve`` run many such jobs, each in a process
forked from one that has loaded everything (and, for Spark, holds a session).

Writes go through the core's lifecycle and write handles directly (the Spark writer
drives exactly these, distributing the handles to executors): records are located in
their file groups by their base files' keys, updates merge (copy-on-write) or append
(merge-on-read), new keys create file groups. Tables have a record key ``id``, a
partition field ``part`` and an ordering field ``ts``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_duck.core.config.table_config import Keys, TableConfig
from hudi_duck.core.merge.mode import EVENT_TIME_STRATEGY_ID, OVERWRITE_WITH_LATEST_PAYLOAD
from hudi_duck.core.schema.avro_arrow import arrow_to_avro, avro_json
from hudi_duck.core.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from hudi_duck.core.services import archival, clean, clustering, compaction, inline, savepoint
from hudi_duck.core.services import rollback as rollbacks
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.commit_metadata import CommitMetadata
from hudi_duck.core.timeline.instant import Action
from hudi_duck.core.timeline.plans import RequestedReplaceMetadata
from hudi_duck.core.timeline.transaction import Transaction
from hudi_duck.core.config.write_settings import FileSettings
from hudi_duck.core.write.handles import (
    DELETE_FLAG,
    HARD_DELETE_FLAG,
    TaskInfo,
    WriteContext,
    append_log,
    create_files,
    merge_file,
)

SCHEMA = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()), ("val", pa.string())])
AVRO = avro_json(arrow_to_avro(SCHEMA, "crash"))
COLUMNS = tuple(SCHEMA.names)
OPERATIONS = {
    "insert": "INSERT",
    "upsert": "UPSERT",
    "delete": "DELETE",
    "bulk_insert": "BULK_INSERT",
    "insert_overwrite": "INSERT_OVERWRITE",
}

#: service settings small enough for a handful of commits
COMPACTION = compaction.CompactionSettings(max_delta_commits=1)
CLUSTERING = clustering.ClusteringSettings()
CLEANING = clean.CleanSettings(commits_retained=1)
ARCHIVAL = archival.ArchivalSettings(min_commits=2, max_commits=3)


def create_table(path: str, table_type: str) -> None:
    """A new, empty table version 6 (what a first write's ``hoodie.properties`` holds)."""
    props = {
        Keys.NAME: "crash",
        Keys.TYPE: table_type,
        Keys.VERSION: "6",
        Keys.TIMELINE_LAYOUT_VERSION: "1",
        Keys.ARCHIVELOG_FOLDER: "archived",
        Keys.RECORDKEY_FIELDS: "id",
        Keys.PRECOMBINE_FIELD: "ts",
        Keys.PARTITION_FIELDS: "part",
        Keys.KEY_GENERATOR_CLASS: "org.apache.hudi.keygen.SimpleKeyGenerator",
        Keys.HIVE_STYLE_PARTITIONING: "false",
        Keys.URL_ENCODE_PARTITIONING: "false",
        Keys.CREATE_SCHEMA: AVRO,
    }
    if table_type == "MERGE_ON_READ":
        props[Keys.PAYLOAD_CLASS] = OVERWRITE_WITH_LATEST_PAYLOAD
        props[Keys.RECORD_MERGER_STRATEGY] = EVENT_TIME_STRATEGY_ID
    TableConfig(props=props).initialize_table(Storage(path))


def _incoming(rows: list[dict[str, Any]], delete: bool) -> pa.Table:
    data = pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows], schema=SCHEMA)
    flags = pa.array([delete] * len(rows), pa.bool_())
    return (
        data.append_column(RECORD_KEY, data.column("id"))
        .append_column(PARTITION_PATH, data.column("part"))
        .append_column(DELETE_FLAG, flags)
        .append_column(HARD_DELETE_FLAG, flags)
    )


def _context(table: HudiTable, instant_time: str) -> WriteContext:
    merge = table.merge_config
    return WriteContext(
        base_uri=table.base_uri,
        instant_time=instant_time,
        avro_schema=AVRO,
        merge_mode=merge.mode,
        ordering_field="ts",
        is_mor=table.config.is_mor,
        soft_deletes_ordered=merge.soft_deletes_ordered,
    )


def _locate(table: HudiTable, partition: str) -> dict[str, Any]:
    """Record key -> the latest file slice holding it (keys live in their base files)."""
    where = {}
    for s in table.file_system_view.latest_slices(partitions=[partition]):
        if s.base_file is None:
            continue
        keys = pq.read_table(Path(table.base_uri) / s.base_file.path, columns=[RECORD_KEY]).column(RECORD_KEY)
        for key in keys.to_pylist():
            where[key] = s
    return where


def write(path: str, op: str, rows: list[dict[str, Any]]) -> str:
    """One write of ``rows`` with operation ``op``; returns its instant time.

    As every writer does first, writes a previous writer left pending are rolled back."""
    table = HudiTable(path)
    rollbacks.rollback_failed_writes(table.storage, table.config, table.timeline)
    table = HudiTable(path)
    replace = op == "insert_overwrite"
    action = Action.REPLACE_COMMIT if replace else (Action.DELTA_COMMIT if table.config.is_mor else Action.COMMIT)
    plan = RequestedReplaceMetadata(operation_type=OPERATIONS[op], clustering_plan=None) if replace else None
    incoming = _incoming(rows, delete=op == "delete")
    task = TaskInfo()
    with Transaction.start(table.timeline, action, plan) as txn:
        txn.begin(CommitMetadata(operation_type=OPERATIONS[op]))
        ctx = _context(table, txn.requested_time)
        stats, replaced = [], {}
        for partition in sorted(set(incoming.column(PARTITION_PATH).to_pylist())):
            batch = incoming.filter(pc.equal(incoming.column(PARTITION_PATH), partition))
            if replace:
                slices = table.file_system_view.latest_slices(partitions=[partition])
                replaced[partition] = sorted(s.file_id for s in slices)
            if op in ("insert", "bulk_insert", "insert_overwrite"):
                stats += create_files(ctx, partition, batch, task)
                continue
            stats += _update(table, ctx, partition, batch, task, allow_inserts=op == "upsert")
        metadata = CommitMetadata.of(
            stats,
            extra_metadata={"schema": AVRO},
            operation_type=OPERATIONS[op],
            **({"partition_to_replace_file_ids": replaced} if replace else {}),
        )
        txn.commit(metadata)
    return txn.requested_time


def _update(table: HudiTable, ctx: WriteContext, partition: str, batch: pa.Table, task: TaskInfo, allow_inserts: bool) -> list:
    where = _locate(table, partition)
    keys = batch.column(RECORD_KEY).to_pylist()
    stats = []
    groups: dict[str, list[int]] = {}
    new_rows = []
    for row, key in enumerate(keys):
        if key in where:
            groups.setdefault(where[key].file_id, []).append(row)
        else:
            new_rows.append(row)
    slices = {s.file_id: s for s in where.values()}
    for file_id, rows in sorted(groups.items()):
        s = slices[file_id]
        part = batch.take(pa.array(rows, pa.int64()))
        if ctx.is_mor:
            stats += append_log(ctx, partition, file_id, s.base_instant_time, s.base_file.file_name, part, task)
        else:
            stats += merge_file(ctx, partition, file_id, s.base_file.path, s.base_instant_time, part, task)
    if allow_inserts and new_rows:
        stats += create_files(ctx, partition, batch.take(pa.array(new_rows, pa.int64())), task)
    return stats


# -- table services --------------------------------------------------------------------------


def _compact_runner(table: HudiTable, instant_time: str):
    def run(operations, ctx):
        return [compaction.compact_operation(table, ctx, op, TaskInfo(), instant_time) for op in operations]

    return run


def _cluster_runner(table: HudiTable, instant_time: str):
    def run(groups, ctx, sort_columns):
        stats = []
        for group in groups:
            stats += clustering.cluster_group(table, ctx, group, TaskInfo(), instant_time, sort_columns)
        return stats

    return run


def compact(path: str) -> list[str]:
    """Run compactions left pending, else schedule one and run it (as inline compaction does)."""
    table = HudiTable(path)
    pending = list(table.timeline.pending_compaction_times())
    if not pending:
        time_ = table.timeline.next_instant_time()
        if compaction.schedule_compaction(table, COMPACTION, time_) is None:
            return []
        pending = [time_]
    for time_ in pending:
        table = HudiTable(path)
        compaction.run_compaction(table, time_, FileSettings(), _compact_runner(table, time_))
    return pending


def cluster(path: str) -> list[str]:
    """Run clusterings left pending, else schedule one and run it."""
    table = HudiTable(path)
    pending = [i.requested_time for i in table.timeline.pending_clustering()]
    if not pending:
        time_ = table.timeline.next_instant_time()
        if clustering.schedule_clustering(table, CLUSTERING, time_) is None:
            return []
        pending = [time_]
    for time_ in pending:
        table = HudiTable(path)
        clustering.run_clustering(table, time_, CLUSTERING, FileSettings(), _cluster_runner(table, time_))
    return pending


def run_clean(path: str) -> str | None:
    return clean.run_clean(HudiTable(path), CLEANING)


def rollback(path: str) -> None:
    """Roll back the latest completed write."""
    rollbacks.rollback_instant(HudiTable(path))


def finish_rollbacks(path: str) -> list[str]:
    table = HudiTable(path)
    return rollbacks.complete_pending_rollbacks(table.storage, table.config, table.timeline)


def restore(path: str, savepoint_time: str) -> None:
    savepoint.restore_to_savepoint(HudiTable(path), savepoint_time)


def archive(path: str) -> list[str]:
    return archival.archive(HudiTable(path), ARCHIVAL)


class LocalEngine:
    """Runs scheduled compactions and clusterings in this process (the inline services' engine)."""

    def __init__(self, path: str):
        self.path = path

    def compact(self, instant_time: str) -> None:
        table = HudiTable(self.path)
        compaction.run_compaction(table, instant_time, FileSettings(), _compact_runner(table, instant_time))

    def cluster(self, instant_time: str) -> None:
        table = HudiTable(self.path)
        clustering.run_clustering(table, instant_time, CLUSTERING, FileSettings(), _cluster_runner(table, instant_time))


#: inline services of the writer loop: compaction every 2 delta commits, clean keeping 2 commits, archival
WRITER_SERVICES = inline.ServiceSettings(
    compaction=compaction.CompactionSettings(max_delta_commits=2),
    clean=clean.CleanSettings(commits_retained=2),
    archival=archival.ArchivalSettings(min_commits=3, max_commits=4),
    compact_inline=True,
)


def writer_loop(path: str, batches: list[list[dict[str, Any]]]) -> None:
    """Upsert each batch, run the inline services, report ``{"commit": k, "ran": [...]}`` on
    stdout and wait for a line on stdin before the next commit."""
    for k, rows in enumerate(batches, start=1):
        committed = write(path, "upsert", rows)
        services = inline.run_inline_services(lambda: HudiTable(path), WRITER_SERVICES, LocalEngine(path), committed)
        sys.stdout.write(json.dumps({"commit": k, "ran": services.ran}) + "\n")
        sys.stdout.flush()
        if k < len(batches) and not sys.stdin.readline():
            return


#: options of the Spark writer for the tables of these jobs
SPARK_OPTIONS = {
    "hoodie.table.name": "crash",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
}


def spark_write(spark, path: str, op: str, rows: list[dict[str, Any]], table_type: str) -> Any:
    """One write with the Spark writer (``spark_writer.write``)."""
    import spark_writer

    frame = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], "id string, part string, ts long, val string")
    options = dict(SPARK_OPTIONS, **{"hoodie.datasource.write.operation": op, "hoodie.datasource.write.table.type": table_type})
    return spark_writer.write(frame, path, options)


def spark_serve() -> None:
    """Like :func:`serve`, for Spark writes: this process starts one local[1] session and forks
    one process per job from it, a driver that reaches the same JVM over gateway connections
    of its own. A SIGKILL of that driver is the crash of a Spark writer's driver (its Python,
    where every commit step runs); the JVM and its executors stay up for the next job. Each
    job writes its end to ``job["result"]``: ``{"instant": t}`` or ``{"error": message}``."""
    os.environ["PYSPARK_PIN_THREAD"] = "false"  # a pool of gateway connections a child can leave behind
    os.environ.setdefault("HUDI_DUCK_SPARK_DRIVER_MEMORY", "1g")
    replies = os.fdopen(os.dup(1), "w")  # the answers; whatever Spark prints goes to stderr
    os.dup2(2, 1)
    from spark_writer.session import local_session

    spark = local_session(cores="1", shuffle_partitions=2, progress=False)
    spark.sparkContext.setLogLevel("ERROR")
    _spark_warm_up(spark)
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _spark_child(spark, job)
        _, status = os.waitpid(pid, 0)
        end = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}
        replies.write(json.dumps(end) + "\n")
        replies.flush()
    spark.stop()


def _spark_warm_up(spark) -> None:
    """One write before any job is forked: the executors' check, the imports and the JVM's
    compiled code then serve every job instead of being redone in each."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        row = {"id": "w", "part": "p0", "ts": 1, "val": "w"}
        spark_write(spark, os.path.join(folder, "t"), "upsert", [row], "MERGE_ON_READ")


def _spark_child(spark, job: dict[str, Any]) -> None:
    """A forked Spark driver: fresh gateway connections, the kill point armed on the driver
    (``kill_at``) or on the executors' Python workers (``executor_kill_at``: workers take
    the variable from the context's environment with each job), then the write."""
    import collections
    import importlib
    import traceback

    from hudi_duck.core import faults

    code, outcome = 0, {}
    try:
        spark.sparkContext._gateway._gateway_client.deque = collections.deque()
        if job.get("kill_at"):
            os.environ[faults.KILL_AT_VARIABLE] = job["kill_at"]
        if job.get("executor_kill_at"):
            spark.sparkContext.environment[faults.KILL_AT_VARIABLE] = job["executor_kill_at"]
        importlib.reload(faults)
        spec = job["spec"]
        result = spark_write(spark, spec["path"], spec["action"], spec["rows"], spec["table_type"])
        outcome = {"instant": result.instant_time}
    except BaseException as exc:  # noqa: BLE001 - reported in the result
        traceback.print_exc()
        outcome, code = {"error": str(exc)}, 1
    finally:
        try:
            Path(job["result"]).write_text(json.dumps(outcome))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


def run(spec: dict[str, Any]) -> Any:
    """The action a spec names (see the module docstring)."""
    path, action = spec["path"], spec["action"]
    if action in OPERATIONS:
        return write(path, action, spec["rows"])
    if action == "compaction":
        return compact(path)
    if action == "clustering":
        return cluster(path)
    if action == "clean":
        return run_clean(path)
    if action == "rollback":
        return rollback(path)
    if action == "restore":
        return restore(path, spec["savepoint"])
    if action == "archival":
        return archive(path)
    raise ValueError(f"unknown action {action!r}")


def warm_up() -> None:
    """Run every action once on throwaway tables, so that what the actions import on first
    use (pandas, time zones ...) is loaded before jobs are forked from this process."""
    import tempfile

    row = {"id": "w", "part": "p0", "ts": 1, "val": "w"}
    with tempfile.TemporaryDirectory() as folder:
        for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            path = os.path.join(folder, table_type)
            create_table(path, table_type)
            for op in ("insert", "upsert", "bulk_insert", "upsert", "delete", "insert_overwrite"):
                write(path, op, [row])
            cluster(path)
            if table_type == "MERGE_ON_READ":
                write(path, "upsert", [row])
                compact(path)
            run_clean(path)
            rollback(path)
            archive(path)


def serve() -> None:
    """Run jobs read from stdin (one JSON line each: ``{"spec": ..., "kill_at": ...}``), each in
    a process forked from this one, which has imported everything already; write each job's
    end (``{"signal": n}`` or ``{"exit": n}``) to stdout. Saves an interpreter start per kill."""
    warm_up()
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(job)
        _, status = os.waitpid(pid, 0)
        end = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}
        sys.stdout.write(json.dumps(end) + "\n")
        sys.stdout.flush()


def _child(job: dict[str, Any]) -> None:
    """A forked job: arm the kill point (the variable is read when ``faults`` loads), run."""
    import importlib
    import traceback

    from hudi_duck.core import faults

    code = 0
    try:
        os.environ[faults.KILL_AT_VARIABLE] = job["kill_at"]
        importlib.reload(faults)
        run(job["spec"])
    except BaseException:  # noqa: BLE001 - reported as the exit status
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    elif sys.argv[1:] == ["--spark-serve"]:
        spark_serve()
    elif sys.argv[1:2] == ["--writer"]:
        spec = json.loads(Path(sys.argv[2]).read_text())
        writer_loop(spec["path"], spec["batches"])
    else:
        run(json.loads(Path(sys.argv[1]).read_text()))
