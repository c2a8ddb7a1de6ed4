"""The write client: one Hudi write (an instant) from a DataFrame, driven from the driver.

Protocol (as Apache Hudi does it):

1. refuse bad options / schemas before touching the table; create it if new;
2. roll back writes a previous writer left pending (whose heartbeat expired), drop
   unreadable plans and leftovers (``hudi_duck.core.concurrency.recovery``);
3. ``<t>.<action>.requested`` → records keyed, precombined and tagged with
   their file groups on executors → ``.inflight`` with the workload profile;
4. executors write data files (with markers) and return write stats;
5. ``<t>.<action>`` with the stats and the schema completes the instant (under
   optimistic concurrency control: under the table lock, after the conflict check).

If anything fails in between, the files this write made are rolled back at
once (or by the next writer, if this process died), so committed data is never
lost or changed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudi_duck.core.config.table_config import PROPERTIES_FILE, Keys, TableConfig
from hudi_duck.core.errors import HudiError, KeyGeneratorError, SchemaError, TableServiceError, WriteError
from hudi_duck.core.keygen import key_generator_from_write_options
from hudi_duck.core.metadata.writer import MetadataTable, attach_written_indexes, index_columns
from hudi_duck.core.merge.mode import EVENT_TIME_STRATEGY_ID, OVERWRITE_WITH_LATEST_PAYLOAD
from hudi_duck.core.schema.avro_arrow import (
    arrow_to_avro,
    avro_json,
    normalize_to_avro_types,
)
from hudi_duck.core.schema.evolution import evolve_write_schema
from hudi_duck.core.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from hudi_duck.core.services import compaction
from hudi_duck.core.concurrency import recovery
from hudi_duck.core.concurrency.control import WriteConcurrency
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.commit_metadata import CommitMetadata, WriteStat
from hudi_duck.core.timeline.instant import Action
from hudi_duck.core.timeline.transaction import Transaction
from hudi_duck.core.timeline.plans import RequestedReplaceMetadata
from hudi_duck.core.write.handles import DELETE_FLAG, WriteContext

from . import executor, index, partitioner, preflight, prepare
from .config import WriteConfig, parse_options

#: the write task of a record's bucket (see ``WorkloadPlan.task_of_buckets``)
_TASK = "_hd_task"

log = logging.getLogger("spark_writer")


def _to_tasks(assigned: DataFrame, tasks: int) -> DataFrame:
    """Each row to the task in its ``_TASK`` column. ``repartitionById`` (Spark 4.1+) does it without
    a job; before it, a range partitioning on the task number gives the same split after a sampling job."""
    if hasattr(assigned, "repartitionById"):
        return assigned.repartitionById(tasks, _TASK)
    return assigned.repartitionByRange(tasks, _TASK)

OPERATION_TYPES = {
    "upsert": "UPSERT",
    "insert": "INSERT",
    "bulk_insert": "BULK_INSERT",
    "delete": "DELETE",
    "delete_partition": "DELETE_PARTITION",
    "insert_overwrite": "INSERT_OVERWRITE",
    "insert_overwrite_table": "INSERT_OVERWRITE_TABLE",
}
REPLACE_OPERATIONS = ("insert_overwrite", "insert_overwrite_table", "delete_partition")


@dataclass
class WriteResult:
    """What a write did (returned to the job; renders nicely in notebooks)."""

    table_path: str
    instant_time: str
    action: str
    operation: str
    num_writes: int = 0
    num_inserts: int = 0
    num_updates: int = 0
    num_deletes: int = 0
    files_written: int = 0
    partitions: int = 0
    replaced_file_groups: int = 0
    rolled_back: list[str] = field(default_factory=list)
    #: table services that ran after the commit, and the failures reported instead of raised
    services: list[str] = field(default_factory=list)
    service_errors: list[str] = field(default_factory=list)
    #: problems after the commit landed that did not undo it (e.g. markers left behind)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def __repr__(self) -> str:
        return (
            f"WriteResult({self.operation} {self.action} {self.instant_time} on {self.table_path}: "
            f"{self.num_inserts} inserts, {self.num_updates} updates, {self.num_deletes} deletes in "
            f"{self.files_written} files / {self.partitions} partitions, {self.seconds:.1f}s)"
        )


def _spark_to_arrow_schema(df: DataFrame) -> pa.Schema:
    try:
        from pyspark.sql.pandas.types import to_arrow_schema

        # TimestampType needs the session time zone (what mapInArrow batches carry)
        timezone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
        try:
            return to_arrow_schema(df.schema, timezone=timezone)
        except TypeError:  # Spark < 4: no timezone argument
            return to_arrow_schema(df.schema)
    except Exception as exc:  # pragma: no cover - depends on the Spark build
        raise SchemaError(f"cannot map the DataFrame schema to Arrow: {exc!r}") from exc


class WriteClient:
    """Writes DataFrames into one Hudi table (table version 6)."""

    def __init__(self, spark: SparkSession, path: str, cfg: WriteConfig, storage_options: dict | None = None):
        self.spark = spark
        self.cfg = cfg
        self.storage_options = dict(storage_options or {})
        self.storage = Storage(path, self.storage_options)
        self.path = self.storage.base_uri
        #: what the current write's tasks returned (stats, index records)
        self._written: executor.WriteOutput | None = None

    # -- table -----------------------------------------------------------------------
    def table_exists(self) -> bool:
        return self.storage.exists(PROPERTIES_FILE)

    def open_table(self) -> HudiTable:
        return HudiTable(self.path, self.storage_options)

    def _new_table_config(self, data_schema: pa.Schema) -> TableConfig:
        cfg = self.cfg
        generator = key_generator_from_write_options(cfg.hoodie_options(), data_schema)

        def create_schema_style(node: Any) -> Any:
            # Hudi stores the create schema as spark-avro's SchemaConverters makes it (as the
            # v6 fixtures show): nullable unions as [T, "null"] and no null defaults
            if isinstance(node, list):
                if len(node) == 2 and node[0] == "null":
                    return [create_schema_style(node[1]), "null"]
                return [create_schema_style(n) for n in node]
            if isinstance(node, dict):
                return {k: create_schema_style(v) for k, v in node.items() if not (k == "default" and v is None)}
            return node

        props: dict[str, str] = {
            Keys.NAME: cfg.table_name,
            Keys.TYPE: cfg.table_type,
            Keys.VERSION: "6",
            Keys.TIMELINE_LAYOUT_VERSION: "1",
            Keys.ARCHIVELOG_FOLDER: "archived",
            Keys.HIVE_STYLE_PARTITIONING: str(cfg["hoodie.datasource.write.hive_style_partitioning"]).lower(),
            Keys.URL_ENCODE_PARTITIONING: str(cfg["hoodie.datasource.write.partitionpath.urlencode"]).lower(),
            Keys.DROP_PARTITION_COLUMNS: str(cfg["hoodie.datasource.write.drop.partition.columns"]).lower(),
            Keys.CREATE_SCHEMA: avro_json(create_schema_style(arrow_to_avro(data_schema, cfg.table_name))),
            Keys.DATABASE_NAME: cfg.get("hoodie.database.name") or "default",
        }
        props.update(generator.table_properties())
        if cfg.record_key_fields:
            props[Keys.RECORDKEY_FIELDS] = ",".join(cfg.record_key_fields)
        if cfg.precombine_field:
            props[Keys.PRECOMBINE_FIELD] = cfg.precombine_field
        if not cfg["hoodie.populate.meta.fields"]:
            props[Keys.POPULATE_META_FIELDS] = "false"
        if cfg["hoodie.table.timeline.timezone"] == "UTC":
            props[Keys.TIMELINE_TIMEZONE] = "UTC"
        if cfg.is_mor:
            props[Keys.PAYLOAD_CLASS] = cfg.payload_class
            props[Keys.RECORD_MERGER_STRATEGY] = EVENT_TIME_STRATEGY_ID
        elif cfg.payload_class != OVERWRITE_WITH_LATEST_PAYLOAD:
            props[Keys.PAYLOAD_CLASS] = cfg.payload_class
        return TableConfig(props=props)

    def check_compatible(self, table: HudiTable) -> None:
        """The options must describe the table that exists (keys, partitioning, type)."""
        tc, cfg = table.config, self.cfg
        if tc.version != 6:
            raise WriteError(f"{self.path}: spark_writer writes table version 6, the table is version {tc.version}")
        problems = []
        if cfg.raw.get("hoodie.datasource.write.table.type") and tc.table_type.value != cfg.table_type:
            problems.append(f"table type {cfg.table_type} (table is {tc.table_type.value})")
        if cfg.record_key_fields and tc.record_key_fields and cfg.record_key_fields != tc.record_key_fields:
            problems.append(
                f"record key {','.join(cfg.record_key_fields)} (table uses {','.join(tc.record_key_fields)})"
            )
        # CustomKeyGenerator specs (``field:SIMPLE``) are stored without their types in v6
        wanted_fields = [f.split(":", 1)[0] for f in cfg.partition_fields]
        table_fields = [f.split(":", 1)[0] for f in tc.partition_fields]
        if "hoodie.datasource.write.partitionpath.field" in cfg.raw and wanted_fields != table_fields:
            problems.append(
                f"partition fields {','.join(cfg.partition_fields) or '(none)'} "
                f"(table uses {','.join(tc.partition_fields) or '(none)'})"
            )
        if cfg.raw.get("hoodie.table.name") and cfg.table_name != tc.name:
            problems.append(f"table name {cfg.table_name} (table is {tc.name})")
        for option, key in (
            ("hoodie.datasource.write.hive_style_partitioning", Keys.HIVE_STYLE_PARTITIONING),
            ("hoodie.datasource.write.partitionpath.urlencode", Keys.URL_ENCODE_PARTITIONING),
        ):
            if option in cfg.raw and str(cfg[option]).lower() != str(tc.get(key, "false")).lower():
                problems.append(f"{option}={cfg.raw[option]} (table has {tc.get(key, 'false')})")
        if problems:
            raise WriteError(
                f"{self.path}: the write options contradict the existing table: " + "; ".join(problems)
            )

    def effective_config(self, table: HudiTable | None) -> WriteConfig:
        """Options completed from ``hoodie.properties`` of an existing table."""
        if table is None:
            return self.cfg
        tc = table.config
        merged = dict(self.cfg.raw)
        merged.update(self.cfg.keygen_options)
        merged.setdefault("hoodie.datasource.write.table.type", tc.table_type.value)
        if tc.record_key_fields:
            merged.setdefault("hoodie.datasource.write.recordkey.field", ",".join(tc.record_key_fields))
        merged.setdefault("hoodie.datasource.write.partitionpath.field", ",".join(tc.partition_fields_spec))
        if tc.ordering_fields:
            merged.setdefault("hoodie.datasource.write.precombine.field", tc.ordering_fields[0])
        merged.setdefault("hoodie.datasource.write.hive_style_partitioning", str(tc.hive_style_partitioning).lower())
        merged.setdefault("hoodie.datasource.write.partitionpath.urlencode", str(tc.url_encode_partitioning).lower())
        if tc.key_generator_class:
            merged.setdefault("hoodie.datasource.write.keygenerator.class", tc.key_generator_class)
        if tc.payload_class:
            merged.setdefault("hoodie.datasource.write.payload.class", tc.payload_class)
        for key, value in tc.props.items():
            if key.startswith("hoodie.keygen.") and key not in merged:
                merged[key] = value
        if not tc.populate_meta_fields:
            merged.setdefault("hoodie.populate.meta.fields", "false")
        return parse_options(merged)

    # -- schema ----------------------------------------------------------------------------
    def writer_schema(self, df: DataFrame, table: HudiTable | None) -> tuple[pa.Schema, str]:
        incoming = normalize_to_avro_types(_spark_to_arrow_schema(prepare.strip_meta_columns(df)), self.cfg.table_name)
        if table is None or table.timeline.latest_completed_write is None:
            schema = incoming
        else:
            try:
                schema = evolve_write_schema(
                    table.data_schema, incoming, reconcile=bool(self.cfg["hoodie.datasource.write.reconcile.schema"])
                )
            except SchemaError as exc:
                raise WriteError(f"{self.path}: incompatible schema, nothing was written: {exc}") from exc
        return schema, avro_json(arrow_to_avro(schema, self.cfg.table_name))

    # -- the write ---------------------------------------------------------------------------------
    def write(self, df: DataFrame, mode: str = "append") -> WriteResult:
        started = time.perf_counter()
        if mode not in ("append", "overwrite"):
            raise WriteError(f"mode must be 'append' or 'overwrite', not {mode!r}")
        if not isinstance(df, DataFrame):
            raise WriteError("write() needs a pyspark.sql.DataFrame")
        preflight.check_executors(self.spark, self.path)
        exists = self.table_exists()
        if exists:
            table = self.open_table()
            if mode == "overwrite" and not self._compatible_for_overwrite(table):
                log.warning("overwrite with a different table layout: deleting %s", self.path)
                self.storage.delete("", recursive=True)
                exists, table = False, None
            else:
                self.check_compatible(table)
        replace_folder = False
        if not exists:
            holds_files = self.storage.exists("") and any(not f.name.startswith(".") for f in self.storage.list(""))
            if holds_files and mode == "append":
                raise WriteError(
                    f"{self.path} exists and holds files but is not a Hudi table (no {PROPERTIES_FILE}); "
                    "write to an empty or new folder"
                )
            # SaveMode.Overwrite replaces the folder: its files go once the input is accepted
            replace_folder = holds_files
            table = None
        cfg = self.effective_config(table)
        self.cfg = cfg
        operation = cfg.operation
        if mode == "overwrite" and table is not None:
            operation = "insert_overwrite_table"
        data_schema, avro_schema = self.writer_schema(df, table)
        self._check_fields(df, cfg, data_schema)
        is_mor = table.config.is_mor if table is not None else cfg.is_mor
        try:  # these read the input: an error of the job's own code there reaches the user whole
            checked = prepare.refuse_unwritable_records(
                prepare.strip_meta_columns(df), cfg, operation, is_mor, self.path, key_filter=index.uses_key_filter(cfg, operation)
            )
        except HudiError:
            raise
        except Exception as exc:
            raise _clear_error(exc, self.path) from exc
        if replace_folder:
            log.warning("overwrite of %s, a folder that is not a Hudi table: deleting its files", self.path)
            self.storage.delete("", recursive=True)
        if table is None:
            config = self._new_table_config(data_schema)
            config.initialize_table(self.storage)
            table = self.open_table()
        metadata_table = MetadataTable(table.storage)
        if not cfg.metadata_settings.enabled:
            # before anything else touches it, so a broken metadata table cannot block the write
            metadata_table.prepare_write(cfg.metadata_settings)
            table = self.open_table()
        concurrency = WriteConcurrency(table.storage, cfg.concurrency_settings)
        with concurrency.locked("rolling back failed writes"):
            recovered = recovery.recover(table.storage, table.config, table.timeline, cfg.concurrency_settings)
        rolled_back = recovered.rolled_back
        if rolled_back or recovered.warnings:
            log.info("rolled back writes a previous writer left pending: %s", ", ".join(rolled_back))
            table = self.open_table()
        if cfg.metadata_settings.enabled:
            metadata_table.prepare_write(cfg.metadata_settings)
            table = self.open_table()
        action = Action.REPLACE_COMMIT if operation in REPLACE_OPERATIONS else (
            Action.DELTA_COMMIT if table.config.is_mor else Action.COMMIT
        )
        txn = Transaction.start(table.timeline, action, self._requested_plan(action, operation), concurrency=concurrency)
        instant_time = txn.requested_time
        log.info("%s %s: started a %s on %s", operation, instant_time, action, self.path)
        self._written = None
        try:
            with txn:  # any failure before the commit landed rolls the instant back
                stats, replaced = self._execute(df, table, cfg, operation, instant_time, avro_schema, txn.begin, checked)
                log.info("%s %s: committing %d files ...", operation, instant_time, len(stats))
                metadata = CommitMetadata.of(
                    stats,
                    compacted=False,
                    extra_metadata={"schema": avro_schema},
                    operation_type=OPERATION_TYPES[operation],
                    partition_to_replace_file_ids=replaced if action == Action.REPLACE_COMMIT else None,
                )
                self._hand_over_indexes(txn)
                txn.commit(metadata)
        except BaseException as exc:
            raise _clear_error(exc, self.path) from exc
        finally:
            if self._written is not None:
                self._written.release()
                self._written = None
        result = self._result(table, instant_time, action, operation, stats, replaced, rolled_back)
        result.warnings = recovered.warnings + list(txn.warnings)
        self._run_inline_services(cfg, result, started)
        result.seconds = time.perf_counter() - started
        log.info("%r", result)
        return result

    def _index_columns(self, table: HudiTable, avro_schema: str) -> tuple[str, ...] | None:
        """Columns the write tasks keep ``column_stats`` records of (``None``: the metadata
        table keeps no column stats)."""
        settings = self.cfg.metadata_settings
        if not settings.enabled or not settings.indexes.column_stats:
            return None
        return tuple(index_columns(table.storage, table.config, settings.indexes, schema_json=avro_schema))

    def _hand_over_indexes(self, txn: Transaction) -> None:
        """The index records the tasks made go to the metadata table's delta commit of the instant."""
        written = self._written
        if written is None:
            return
        from .metadata_index import written_indexes

        attach_written_indexes(txn, written_indexes(written))

    def _run_inline_services(self, cfg: WriteConfig, result: WriteResult, started: float) -> None:
        """Services after the commit: a failure never undoes the write. It is raised as a
        ``TableServiceError`` carrying this write's result, or reported in
        ``result.service_errors`` (see ``hudi_duck.core.services.inline``)."""
        from . import services

        try:
            outcome = services.inline_services(self.spark, self.path, cfg, self.storage_options, result.instant_time)
        except TableServiceError as exc:
            result.seconds = time.perf_counter() - started
            exc.result = result
            log.error("%s: %s", self.path, exc)
            raise
        result.services = outcome.ran
        result.service_errors = outcome.errors

    def _compatible_for_overwrite(self, table: HudiTable) -> bool:
        try:
            self.check_compatible(table)
            return True
        except WriteError:
            return False

    def _check_fields(self, df: DataFrame, cfg: WriteConfig, data_schema: pa.Schema) -> None:
        names = set(data_schema.names)
        for field_name in cfg.record_key_fields:
            if field_name.split(".")[0] not in names:
                raise WriteError(f"record key field {field_name!r} is not a column of the data ({sorted(names)})")
        if cfg.precombine_field and cfg.precombine_field.split(".")[0] not in names:
            raise WriteError(
                f"precombine field {cfg.precombine_field!r} (hoodie.datasource.write.precombine.field) is not a "
                "column of the data"
            )
        for field_name in cfg.partition_fields:
            name = field_name.split(":")[0]
            if name.split(".")[0] not in names:
                raise WriteError(f"partition field {name!r} is not a column of the data")
        try:
            key_generator_from_write_options(cfg.hoodie_options(), data_schema)
        except KeyGeneratorError as exc:
            raise WriteError(str(exc)) from exc

    def _requested_plan(self, action: str, operation: str) -> RequestedReplaceMetadata | None:
        """``.replacecommit.requested`` names the operation (no clustering plan); other
        requested writes are empty."""
        if action != Action.REPLACE_COMMIT:
            return None
        return RequestedReplaceMetadata(operation_type=OPERATION_TYPES[operation], clustering_plan=None)

    def write_context(self, table: HudiTable, cfg: WriteConfig, instant_time: str, avro_schema: str) -> WriteContext:
        merge = cfg.merge
        return WriteContext(
            base_uri=self.path,
            instant_time=instant_time,
            avro_schema=avro_schema,
            merge_mode=merge.mode,
            soft_deletes_ordered=merge.soft_deletes_ordered,
            ordering_field=cfg.precombine_field,
            is_mor=table.config.is_mor,
            storage_options=self.storage_options,
            populate_meta_fields=table.config.populate_meta_fields,
            files=cfg.file_settings,
            virtual_key_table={} if table.config.populate_meta_fields else dict(table.config.props),
            column_stats_columns=self._index_columns(table, avro_schema),
            record_index=cfg.metadata_settings.enabled and cfg.metadata_settings.indexes.record_index,
            located_by_record_index=cfg.index_type == "RECORD_INDEX",
        )

    def _execute(self, df, table, cfg, operation, instant_time, avro_schema, to_inflight, checked=None):
        """Run the data part of the write; returns (write stats, replaced file ids).

        ``to_inflight`` is called with the workload profile before any data file is written.
        ``checked``: what the checks of the input learnt (its partition paths, a filter of its keys).
        """
        listed = checked.partitions if checked is not None else None
        key_filter = checked.key_filter if checked is not None else None
        ctx = self.write_context(table, cfg, instant_time, avro_schema)
        if operation == "delete_partition":
            stats, replaced = self._delete_partitions(table, cfg)
            to_inflight(_profile_from_counts([], {}, operation))
            return stats, replaced
        records = prepare.strip_meta_columns(df)
        if operation == "bulk_insert" and cfg.index_type != "BUCKET" and self._bulk_insert_unsorted(cfg):
            # one pass: each task derives keys and writes its files
            to_inflight(_profile_from_counts([], {}, operation))
            return self._bulk_insert(records, ctx, cfg, prepare.key_assigner_factory(cfg, instant_time)), {}
        if checked is not None and checked.rows is not None and operation != "bulk_insert":
            cores = self.spark.sparkContext.defaultParallelism
            records = prepare.in_fewer_tasks(records, checked, cores, numbering=prepare.combines(cfg, operation))
        records = prepare.with_keys(records, cfg, instant_time)
        records = prepare.with_delete_flags(records, hard_delete=operation == "delete")
        if operation == "bulk_insert" and cfg.index_type != "BUCKET":
            if cfg["hoodie.combine.before.insert"]:
                records = prepare.precombine(records, cfg, cfg.is_global_index)
            to_inflight(_profile_from_counts([], {}, operation))
            return self._bulk_insert(records, ctx, cfg), {}
        # (bulk_insert into a bucket-indexed table writes each record into its bucket's file group)
        if prepare.combines(cfg, operation):
            records = prepare.precombine(records, cfg, cfg.is_global_index)
            if cfg.is_global_index:  # a key's records in several partitions collapse into one of them
                listed = None
        # keyed once when read twice (keys come from Python): by listing the partitions and tagging, or by
        # an index that reads them twice; the simple index, and the bucket index over listed partitions,
        # read them once, into the tagged records' cache
        reread = listed is None or not index.tags_in_one_read(cfg, listed)
        if reread:
            records = records.persist()
        try:
            return self._locate_and_write(records, table, cfg, operation, instant_time, ctx, to_inflight, listed, key_filter)
        finally:
            if reread:
                records.unpersist()

    def _locate_and_write(self, records, table, cfg, operation, instant_time, ctx, to_inflight, listed=None, key_filter=None):
        """Tag records with their file groups, plan the buckets, write them; returns (write stats, replaced)."""
        phase = time.perf_counter()
        log.info("%s %s: locating records (%s index) ...", operation, instant_time, cfg.index_type)
        partitions = index.partition_paths(records) if listed is None else listed
        replaced: dict[str, list[str]] = {}
        if operation in ("insert_overwrite", "insert_overwrite_table"):
            replaced = self._file_groups_to_replace(table, partitions if operation == "insert_overwrite" else None)
            if cfg.index_type == "BUCKET":
                # new file groups named after their buckets (the replaced ones are not looked at)
                tagged = index.tag_locations(self.spark, records, None, cfg, self.storage_options, partitions)
            else:
                tagged = records.withColumn(index.FILE_ID, F.lit(None).cast("string")).withColumn(
                    index.PREV_COMMIT, F.lit(None).cast("string")
                )
            small = False
        elif operation == "insert" and cfg.index_type != "BUCKET":
            tagged = records.withColumn(index.FILE_ID, F.lit(None).cast("string")).withColumn(
                index.PREV_COMMIT, F.lit(None).cast("string")
            )
            if cfg["hoodie.datasource.write.insert.drop.duplicates"]:
                existing = index.tag_locations(self.spark, records, table, cfg, self.storage_options, partitions, key_filter)
                tagged = existing.filter(F.col(index.FILE_ID).isNull())
            small = True
        else:
            tagged = index.tag_locations(self.spark, records, table, cfg, self.storage_options, partitions, key_filter)
            small = cfg.index_type != "BUCKET"
        tagged = tagged.persist()
        try:
            counts, unfiltered = index.location_counts(tagged, key_filter)
            if listed is not None:
                self._check_listed_partitions(listed, counts)
            if unfiltered:
                raise self._changed_input(f"{unfiltered} record keys were not there when it was checked")
            located = sum(c[3] for c in counts if c[1])
            log.info(
                "%s %s: %d records, %d in existing file groups, located in %.1fs; writing files ...",
                operation, instant_time, sum(c[3] for c in counts), located, time.perf_counter() - phase,
            )
            self._reject_updates_under_clustering(table, counts)
            plan = partitioner.plan_workload(
                None if replaced or operation == "insert_overwrite_table" else table,
                cfg,
                counts,
                table.config.is_mor,
                small_file_handling=small,
            )
            to_inflight(_profile_from_counts(counts, plan, operation))
            phase = time.perf_counter()
            stats = self._write_buckets(tagged, plan, ctx, cfg.parallelism(operation))
            log.info("%s %s: wrote %d files in %.1fs", operation, instant_time, len(stats), time.perf_counter() - phase)
        finally:
            tagged.unpersist()
        return stats, replaced

    def _check_listed_partitions(self, listed: list[str], counts) -> None:
        """The index looked only in the partitions the input's check listed: a record of another
        partition (the input gave other rows when read again) could not have been located, and
        writing it as new would duplicate its key. Refused before any data file is written."""
        known = set(listed)
        unlisted = sorted({partition for partition, *_ in counts if partition not in known})
        if unlisted:
            shown = ", ".join(repr(p) for p in unlisted[:5]) + (" ..." if len(unlisted) > 5 else "")
            raise self._changed_input(f"records in partitions {shown} were not there when it was checked")

    def _changed_input(self, what: str) -> WriteError:
        """The input was located by what its check saw (partitions, a filter of its keys) and read
        again differently: its records could not be located, and nothing is written."""
        return WriteError(
            f"{self.path}: the input DataFrame gave other records when read again ({what}); its records could "
            "not be located. Persist or checkpoint it (df.localCheckpoint()) before writing; nothing was written."
        )

    def _reject_updates_under_clustering(self, table: HudiTable, counts) -> None:
        """Hudi's default update strategy (SparkRejectUpdateStrategy): no updates to file groups being clustered."""
        clustering = compaction.clustering_file_groups(table)
        if not clustering:
            return
        for partition, file_id, _, _, _ in counts:
            owner = clustering.get((partition, file_id)) if file_id else None
            if owner:
                raise WriteError(
                    f"{self.path}: records update file group {file_id} (partition {partition!r}), which the pending "
                    f"clustering {owner} rewrites; run or roll back that clustering first "
                    "(hoodie.clustering.updates.strategy rejects such updates, as Hudi does by default)"
                )

    def _write_buckets(
        self, tagged: DataFrame, plan: partitioner.WorkloadPlan, ctx: WriteContext, parallelism: int = 0
    ) -> list[WriteStat]:
        if not plan.buckets:
            return []
        buckets = plan.by_id
        tasks = write_tasks(len(buckets), parallelism, self.spark.sparkContext.defaultParallelism)
        task_of = plan.task_of_buckets(tasks)
        update_rows = [
            (b.partition_path, b.file_id, b.bucket_id, task_of[b.bucket_id]) for b in plan.buckets if b.file_id is not None
        ]
        spark = self.spark
        mapping = spark.createDataFrame(
            update_rows,
            T.StructType(
                [
                    T.StructField("_m_partition", T.StringType(), False),
                    T.StructField("_m_file_id", T.StringType(), False),
                    T.StructField(executor.BUCKET, T.IntegerType(), False),
                    T.StructField(_TASK, T.IntegerType(), False),
                ]
            ),
        ) if update_rows else None
        ranges = spark.createDataFrame(
            [(r.partition_path, r.low, r.high, r.bucket_id, task_of[r.bucket_id]) for r in plan.insert_ranges],
            T.StructType(
                [
                    T.StructField("_r_partition", T.StringType(), False),
                    T.StructField("_r_low", T.DoubleType(), False),
                    T.StructField("_r_high", T.DoubleType(), False),
                    T.StructField(executor.BUCKET, T.IntegerType(), False),
                    T.StructField(_TASK, T.IntegerType(), False),
                ]
            ),
        ) if plan.insert_ranges else None
        parts = []
        located = tagged.filter(F.col(index.FILE_ID).isNotNull())
        if mapping is not None:
            condition = (F.col(PARTITION_PATH) == F.col("_m_partition")) & (F.col(index.FILE_ID) == F.col("_m_file_id"))
            parts.append(located.join(F.broadcast(mapping), condition, "inner").drop("_m_partition", "_m_file_id"))
        inserts = tagged.filter(F.col(index.FILE_ID).isNull() & ~F.col(DELETE_FLAG))
        if ranges is not None:
            unit = F.pmod(F.xxhash64(F.col(RECORD_KEY)), F.lit(1_000_000_007)).cast("double") / F.lit(1_000_000_007.0)
            inserts = inserts.withColumn("_hd_r", unit)
            condition = (
                (F.col(PARTITION_PATH) == F.col("_r_partition"))
                & (F.col("_hd_r") >= F.col("_r_low"))
                & (F.col("_hd_r") < F.col("_r_high"))
            )
            parts.append(inserts.join(F.broadcast(ranges), condition, "inner").drop("_r_partition", "_r_low", "_r_high", "_hd_r"))
        if not parts:
            return []
        assigned = parts[0]
        for other in parts[1:]:
            assigned = assigned.unionByName(other)
        # each bucket's rows to the task the plan gave it, grouped by bucket within the task
        ordered = _to_tasks(assigned, tasks).sortWithinPartitions(executor.BUCKET).drop(_TASK)
        out = ordered.mapInArrow(executor.write_buckets_fn(ctx, buckets), executor.WRITE_SCHEMA)
        return self._collect(out, ctx)

    def _collect(self, out: DataFrame, ctx: WriteContext) -> list[WriteStat]:
        """Run the tasks of ``out``; their stats come back, their index records are kept for the commit."""
        self._written = executor.collect_written(out, ctx.record_index, ctx.column_stats_columns)
        return self._written.stats

    @staticmethod
    def _bulk_insert_unsorted(cfg: WriteConfig) -> bool:
        """bulk_insert that needs no key before writing (no sort by key, no dedup)."""
        return cfg["hoodie.bulkinsert.sort.mode"] == "NONE" and not cfg["hoodie.combine.before.insert"]

    def _bulk_insert(self, records: DataFrame, ctx: WriteContext, cfg: WriteConfig, make_keys=None) -> list[WriteStat]:
        """``make_keys``: records carry no keys yet (sort mode NONE); each task derives them."""
        log.info("bulk_insert %s: writing files ...", ctx.instant_time)
        parallelism = cfg.parallelism("bulk_insert")
        mode = cfg["hoodie.bulkinsert.sort.mode"]
        if mode == "GLOBAL_SORT":
            records = records.orderBy(PARTITION_PATH, RECORD_KEY)
        elif mode == "PARTITION_PATH_REPARTITION":
            records = records.repartition(parallelism or records.rdd.getNumPartitions(), PARTITION_PATH)
        elif parallelism > 0:
            records = records.repartition(parallelism)
        if mode == "PARTITION_SORT":
            records = records.sortWithinPartitions(PARTITION_PATH, RECORD_KEY)
        phase = time.perf_counter()
        out = records.mapInArrow(executor.bulk_insert_fn(ctx, make_keys), executor.WRITE_SCHEMA)
        stats = self._collect(out, ctx)
        log.info("bulk_insert %s: wrote %d files in %.1fs", ctx.instant_time, len(stats), time.perf_counter() - phase)
        return stats

    def _file_groups_to_replace(self, table: HudiTable, partitions: list[str] | None) -> dict[str, list[str]]:
        view = table.file_system_view
        wanted = view.partitions if partitions is None else [p for p in partitions if p in set(view.partitions)]
        replaced: dict[str, list[str]] = {}
        for s in view.latest_slices(partitions=wanted):
            replaced.setdefault(s.partition_path, []).append(s.file_id)
        return replaced

    def _delete_partitions(self, table: HudiTable, cfg: WriteConfig):
        raw = cfg.get("hoodie.datasource.write.partitions.to.delete")
        if not raw:
            raise WriteError("delete_partition needs hoodie.datasource.write.partitions.to.delete (comma separated)")
        wanted = [p.strip() for p in str(raw).split(",") if p.strip()]
        known = set(table.file_system_view.partitions)
        missing = [p for p in wanted if p not in known and p != "*"]
        if missing:
            raise WriteError(f"partitions to delete do not exist in {self.path}: {missing}")
        targets = sorted(known) if "*" in wanted else wanted
        return [], self._file_groups_to_replace(table, targets)

    def _result(self, table, instant_time, action, operation, stats, replaced, rolled_back) -> WriteResult:
        return WriteResult(
            table_path=self.path,
            instant_time=instant_time,
            action=action,
            operation=operation,
            num_writes=sum(s.num_writes or 0 for s in stats),
            num_inserts=sum(s.num_inserts or 0 for s in stats),
            num_updates=sum(s.num_update_writes or 0 for s in stats),
            num_deletes=sum(s.num_deletes or 0 for s in stats),
            files_written=len(stats),
            partitions=len({s.partition_path for s in stats}),
            replaced_file_groups=sum(len(v) for v in replaced.values()),
            rolled_back=rolled_back,
        )


def write_tasks(buckets: int, parallelism: int, cores: int) -> int:
    """Spark tasks that write ``buckets`` file groups: each task writes its buckets one after the other.

    Every task starts a Python worker pass over its rows, which costs far more than a JVM task: one
    task per bucket (as Hudi's Java partitioner does) makes a write of hundreds of small file groups
    spend most of its time starting tasks. ``hoodie.upsert.shuffle.parallelism`` (and its insert /
    delete siblings) caps the tasks when set; otherwise twice the cores keep every core busy while
    buckets of unequal size even out.
    """
    limit = parallelism if parallelism > 0 else 2 * max(1, cores)
    return max(1, min(buckets, limit))


def _profile_from_counts(counts, plan, operation: str) -> CommitMetadata:
    """The ``.inflight`` workload profile, as Hudi writes it: per partition an insert
    stat first (file id ``""``, even with no inserts), then one stat per updated file group."""
    profile: dict[str, list[WriteStat]] = {}
    for partition, file_id, prev_commit, records, deletes in counts:
        stats = profile.get(partition)
        if stats is None:
            stats = profile[partition] = [WriteStat(file_id="", prev_commit="null")]
        if file_id is None:
            stats[0].num_inserts += records - deletes
        else:
            stats.append(
                WriteStat(
                    file_id=file_id,
                    prev_commit=prev_commit or "null",
                    num_update_writes=records - deletes,
                    num_deletes=deletes,
                )
            )
    return CommitMetadata(partition_to_write_stats=profile, operation_type=OPERATION_TYPES[operation])


def _clear_error(exc: BaseException, path: str) -> BaseException:
    """Turn an executor traceback into the few lines the user needs: the worker's own exception, and what to do."""
    if isinstance(exc, HudiError):
        return exc
    text = str(exc)
    for marker in ("KeyGeneratorError: ", "WriteError: ", "SchemaError: ", "HudiError: "):
        if marker in text:
            message = text.split(marker, 1)[1].strip().splitlines()[0]
            return WriteError(f"{path}: write failed, nothing was committed: {message}")
    if isinstance(exc, KeyboardInterrupt):
        return exc
    cause = preflight.describe(exc)
    advice = preflight.advice(cause)
    return WriteError(f"{path}: write failed, nothing was committed: {cause}" + (f"\n{advice}" if advice else ""))
