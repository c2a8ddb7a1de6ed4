"""One writer of the concurrency tests, run as its own process:

    python tests/concurrent_writer.py spec.json

The core's write path as the Spark client drives it (recovery, a transaction with the
write's concurrency control, data files by the write handles, commit), without Spark:
the Spark layer only distributes the data-file writing. ``spec.json``:

* ``table``: base path; ``options``: Hudi write options (concurrency, heartbeats, lock);
* ``tag``: prefix of the new record keys; ``target``: ``new`` (inserts into a new file
  group) or ``update`` (the rows of the table's first file group, rewritten: a merge on
  copy-on-write, a log file on merge-on-read);
* ``started`` / ``go``: files to create once the data files are written, and to wait for
  before committing (so tests interleave writers deterministically);
* ``result``: where the outcome goes (``ok``, ``instant``, ``error_type``, ``error``).

With ``service`` (``compaction`` or ``clustering``) and ``instant``, the job runs that
scheduled table service instead (:func:`run_service`), held the same way.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def _rows(table, tag: str, target: str):
    from hudi_duck.core.schema.meta_fields import META_FIELDS, RECORD_KEY

    first = sorted((s for s in table.file_system_view.latest_slices() if s.base_file is not None), key=lambda s: s.file_id)[0]
    rows = pq.read_table(Path(table.base_uri) / first.base_file.path)
    data = rows.drop_columns([c for c in META_FIELDS if c != RECORD_KEY])
    if target == "new":
        keys = pc.binary_join_element_wise(pa.scalar(f"{tag}-"), data.column(RECORD_KEY).cast(pa.string()), "")
        data = data.set_column(data.schema.get_field_index(RECORD_KEY), RECORD_KEY, keys)
    return first, data


def write(spec: dict) -> dict:
    from hudi_duck.core.concurrency import recovery
    from hudi_duck.core.concurrency.control import WriteConcurrency
    from hudi_duck.core.concurrency.settings import ConcurrencySettings
    from hudi_duck.core.merge.rules import MergeMode
    from hudi_duck.core.services.compaction import compaction_file_groups
    from hudi_duck.core.table.table import HudiTable
    from hudi_duck.core.timeline.commit_metadata import CommitMetadata
    from hudi_duck.core.timeline.instant import Action
    from hudi_duck.core.timeline.transaction import Transaction
    from hudi_duck.core.write.handles import TaskInfo, WriteContext, append_log, create_files, merge_file

    settings = ConcurrencySettings.from_options(spec.get("options", {}))
    table = HudiTable(spec["table"])
    concurrency = WriteConcurrency(table.storage, settings)
    with concurrency.locked("rolling back failed writes"):
        recovered = recovery.recover(table.storage, table.config, table.timeline, settings)
    table = HudiTable(spec["table"])
    action = Action.DELTA_COMMIT if table.config.is_mor else Action.COMMIT
    first, rows = _rows(table, spec["tag"], spec["target"])
    txn = Transaction.start(table.timeline, action, concurrency=concurrency)
    outcome = {"instant": txn.requested_time, "rolled_back": recovered.rolled_back, "warnings": recovered.warnings}
    with txn:
        txn.begin(CommitMetadata(operation_type="UPSERT"))
        ctx = WriteContext(
            base_uri=table.base_uri,
            instant_time=txn.requested_time,
            avro_schema=table.avro_schema,
            merge_mode=MergeMode.COMMIT_TIME_ORDERING,
            ordering_field=None,
            is_mor=table.config.is_mor,
        )
        task = TaskInfo(0, 1, 0)
        if spec["target"] == "new":
            stats = create_files(ctx, first.partition_path, rows, task)
        elif table.config.is_mor:
            # as the Spark writer does: a pending compaction opened a new slice, the log belongs to it
            compacting = compaction_file_groups(table, log_compaction=False)
            base_instant = compacting.get((first.partition_path, first.file_id), first.base_instant_time)
            stats = append_log(ctx, first.partition_path, first.file_id, base_instant, first.base_file.file_name, rows, task)
        else:
            stats = merge_file(
                ctx, first.partition_path, first.file_id, first.base_file.path, first.base_instant_time, rows, task
            )
        _hold(spec, txn.requested_time)
        txn.commit(CommitMetadata.of(stats, extra_metadata={"schema": table.avro_schema}, operation_type="UPSERT"))
    outcome["ok"] = True
    outcome["keys"] = rows.column("_hoodie_record_key").cast(pa.string()).to_pylist()
    return outcome


def _hold(spec: dict, instant_time: str) -> None:
    """Say the instant's data files are written (``started``), then wait for ``go``."""
    if spec.get("started"):
        ready = Path(spec["started"] + ".tmp")
        ready.write_text(instant_time)
        ready.rename(spec["started"])
    if spec.get("go"):
        deadline = time.monotonic() + spec.get("wait_seconds", 120)
        while not Path(spec["go"]).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {spec['go']}")
            time.sleep(0.05)


def run_service(spec: dict) -> dict:
    """Run the scheduled compaction or clustering ``spec["instant"]`` as a table service job
    does (its own heartbeat, lock and conflict check from ``options``), holding it in flight
    once its data files are written. ``start`` (optional): a file to wait for before
    claiming the instant, so that two jobs start at the same moment."""
    from hudi_duck.core.concurrency.control import WriteConcurrency
    from hudi_duck.core.concurrency.settings import ConcurrencySettings
    from hudi_duck.core.config.write_settings import FileSettings
    from hudi_duck.core.services import clustering, compaction
    from hudi_duck.core.table.table import HudiTable
    from hudi_duck.core.write.handles import TaskInfo

    settings = ConcurrencySettings.from_options(spec.get("options", {}))
    instant = spec["instant"]
    if spec.get("start"):
        while not Path(spec["start"]).exists():
            time.sleep(0.005)
    table = HudiTable(spec["table"])
    concurrency = WriteConcurrency(table.storage, settings)
    if spec["service"] == "compaction":

        def compact(operations, ctx):
            stats = [compaction.compact_operation(table, ctx, op, TaskInfo(), instant) for op in operations]
            _hold(spec, instant)
            return stats

        compaction.run_compaction(table, instant, FileSettings(), compact, concurrency=concurrency)
    else:

        def cluster(groups, ctx, sort_columns):
            stats = [s for g in groups for s in clustering.cluster_group(table, ctx, g, TaskInfo(), instant, sort_columns)]
            _hold(spec, instant)
            return stats

        clustering.run_clustering(table, instant, clustering.ClusteringSettings(), FileSettings(), cluster, concurrency=concurrency)
    return {"ok": True, "instant": instant}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    try:
        outcome = run_service(spec) if spec.get("service") else write(spec)
    except Exception as exc:
        outcome = {"ok": False, "error_type": type(exc).__name__, "error": str(exc), "trace": traceback.format_exc()}
    Path(spec["result"]).write_text(json.dumps(outcome))


if __name__ == "__main__":
    main()
