"""Preparing incoming records on executors: keys, delete flags, precombine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudi_duck.core.errors import KeyGeneratorError, WriteError
from hudi_duck.core.keygen import key_generator_from_write_options
from hudi_duck.core.merge.incoming import null_ordering_refusal
from hudi_duck.core.schema.meta_fields import (
    IS_DELETED,
    META_FIELDS,
    PARTITION_PATH,
    RECORD_KEY,
)
from hudi_duck.core.write.handles import DELETE_FLAG, HARD_DELETE_FLAG

from . import ordering as ordering_rule
from .config import WriteConfig
from .key_filter import USEFUL_FILL, KeyFilter, KeyFilterBuilder

SEQ = "_hd_seq"


def strip_meta_columns(df: DataFrame) -> DataFrame:
    """Incoming meta columns (e.g. from reading a Hudi table) are recomputed."""
    drop = [c for c in df.columns if c in META_FIELDS]
    return df.drop(*drop) if drop else df


class KeyAssigner:
    """Appends ``_hoodie_record_key`` and ``_hoodie_partition_path`` to record batches.

    Runs on executors; built lazily from the first batch's schema. Auto-generated
    keys (no record key field) are ``<instant>_<task>_<row>``, unique per write.
    """

    def __init__(self, options: dict[str, str], auto_keys: bool, instant_time: str, task_id: int):
        self.options = options
        self.auto_keys = auto_keys
        self.instant_time = instant_time
        self.task_id = task_id
        self.generator = None
        self.row = 0

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.generator is None:
            self.generator = key_generator_from_write_options(self.options, batch.schema)
        if self.auto_keys:
            prefix = f"{self.instant_time}_{self.task_id}_"
            keys = pa.array([f"{prefix}{self.row + i}" for i in range(batch.num_rows)], pa.string())
            self.row += batch.num_rows
        else:
            keys = self.generator.record_keys(batch)
        paths = self.generator.partition_paths(batch)
        return pa.RecordBatch.from_arrays(
            list(batch.columns) + [keys.cast(pa.string()), paths.cast(pa.string())],
            names=list(batch.schema.names) + [RECORD_KEY, PARTITION_PATH],
        )


def key_assigner_factory(cfg: WriteConfig, instant_time: str):
    """A picklable callable that builds a ``KeyAssigner`` for the current Spark task."""
    options = cfg.hoodie_options()
    auto_keys = not cfg.record_key_fields

    def make() -> KeyAssigner:
        from pyspark import TaskContext

        task = TaskContext.get()
        return KeyAssigner(options, auto_keys, instant_time, task.partitionId() if task is not None else 0)

    return make


def with_keys(df: DataFrame, cfg: WriteConfig, instant_time: str) -> DataFrame:
    """Add ``_hoodie_record_key`` and ``_hoodie_partition_path`` (core key generator)."""
    out_schema = T.StructType(
        list(df.schema.fields)
        + [T.StructField(RECORD_KEY, T.StringType(), False), T.StructField(PARTITION_PATH, T.StringType(), False)]
    )
    make = key_assigner_factory(cfg, instant_time)

    def add_keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        assign = make()
        for batch in batches:
            yield assign(batch)

    return df.mapInArrow(add_keys, out_schema)


def with_delete_flags(df: DataFrame, hard_delete: bool) -> DataFrame:
    """``_hd_is_delete``: the delete operation, or ``_hoodie_is_deleted = true`` (soft)."""
    if hard_delete:
        return df.withColumn(DELETE_FLAG, F.lit(True)).withColumn(HARD_DELETE_FLAG, F.lit(True))
    flag = F.coalesce(F.col(IS_DELETED).cast("boolean"), F.lit(False)) if IS_DELETED in df.columns else F.lit(False)
    return df.withColumn(DELETE_FLAG, flag).withColumn(HARD_DELETE_FLAG, F.lit(False))


def precombine(df: DataFrame, cfg: WriteConfig, global_index: bool) -> DataFrame:
    """Collapse duplicates of a key to the record with the greatest ordering value.

    Hudi's ``preCombine`` keeps the greater ordering value under every payload
    (``merge.fold``: event-time folding without resets), compared as Java
    compares them (``spark_writer.ordering``); ties, and tables without an
    ordering field, keep the record that came later in the input.
    """
    keys = [RECORD_KEY] if global_index else [RECORD_KEY, PARTITION_PATH]
    ordering = cfg.precombine_field
    with_seq = numbered(df)
    order = [F.col(SEQ).desc()]
    if ordering:
        order = ordering_rule.order_desc(F.col(ordering), ordering_rule.rule_for(df, ordering)) + order
    window = Window.partitionBy(*keys).orderBy(*order)
    ranked = with_seq.withColumn("_hd_rank", F.row_number().over(window))
    return ranked.filter(F.col("_hd_rank") == 1).drop("_hd_rank", SEQ)


def numbered(df: DataFrame) -> DataFrame:
    """``SEQ``: each record's place in the input (partition, then row), which decides ties between a
    key's records; kept when already there (numbered before the input's partitions merged)."""
    return df if SEQ in df.columns else df.withColumn(SEQ, F.monotonically_increasing_id())


def combines(cfg: WriteConfig, operation: str) -> bool:
    """Does the operation precombine its records (Hudi's ``hoodie.combine.before.*`` options)?"""
    insert_like = cfg["hoodie.combine.before.insert"]
    return {
        "upsert": cfg["hoodie.combine.before.upsert"],
        "insert": insert_like or cfg["hoodie.datasource.write.insert.drop.duplicates"],
        "bulk_insert": insert_like,
        "delete": cfg["hoodie.combine.before.delete"],
        "insert_overwrite": insert_like,
        "insert_overwrite_table": insert_like,
    }.get(operation, False)


@dataclass(frozen=True)
class CheckedInput:
    """What the input check learnt while keying every record, when reading the input again gives
    the same records: their partition paths, sorted (locating them then needs no job of its own to
    list them), and a filter of their keys for the simple index (``None``: not asked for, or it
    would keep most keys)."""

    partitions: list[str]
    key_filter: KeyFilter | None = None
    rows: int | None = None  # records in the input
    #: the check's tasks: the input's partitions, or the cores when it has more
    tasks: int | None = None


def refuse_unwritable_records(
    df: DataFrame, cfg: WriteConfig, operation: str, is_mor: bool, path: str, key_filter: bool = False
) -> CheckedInput | None:
    """Refuse, before an instant starts, records Hudi refuses: a null ordering value where Hudi
    would reject it, and records its key generator cannot key (a null or empty record key field;
    for several fields, all of them).

    One scan of the input for both (each task stops at its first problem of each kind): a write
    of a few rows is dominated by Spark jobs, so the checks share one. Counting and naming an
    example take more jobs, but only when the write is refused.

    Returns the records' partition paths (and, with ``key_filter``, a filter of their keys) when
    the scan keyed them (the key generator gives each record's path with its key) and reading the
    input again gives the same records; ``None`` otherwise (the records are listed where they are
    tagged, as Hudi's simple index lists them)."""
    ordering_field = _checked_ordering_field(df, cfg, operation, is_mor)
    check_keys = bool(cfg.record_key_fields) and operation != "delete_partition"
    if ordering_field is None and not check_keys:
        return None
    options = cfg.hoodie_options()

    def problems(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        generator = None
        found_key = found_ordering = False
        listed: set[str] = set()
        keys_seen = KeyFilterBuilder() if key_filter else None
        rows = 0
        for batch in batches:
            rows += batch.num_rows
            if ordering_field is not None and not found_ordering and batch.column(_ORDERING_CHECKED).null_count:
                found_ordering = True
                yield pa.RecordBatch.from_pydict({"kind": ["ordering"], "problem": [""]})
            if check_keys and not found_key:
                if generator is None:
                    generator = key_generator_from_write_options(options, batch.schema)
                try:
                    keys = generator.record_keys(batch)
                    if keys_seen is not None:
                        keys_seen.add(keys)
                    new = [p for p in pc.unique(generator.partition_paths(batch).cast(pa.string())).to_pylist() if p not in listed]
                except KeyGeneratorError as exc:
                    found_key = True
                    yield pa.RecordBatch.from_pydict({"kind": ["key"], "problem": [str(exc)]})
                else:
                    if new:
                        listed.update(new)
                        yield pa.RecordBatch.from_pydict({"kind": ["partition"] * len(new), "problem": new})
            if found_key == check_keys and found_ordering == (ordering_field is not None):
                return
        if keys_seen is not None:
            yield pa.RecordBatch.from_pydict({"kind": ["keys"], "problem": [keys_seen.build().to_text()]})
        yield pa.RecordBatch.from_pydict({"kind": ["rows"], "problem": [str(rows)]})

    # only the key, partition and ordering columns cross to Python; each task reports at most one
    # problem of each kind, so one job over all partitions (a ``limit`` would run partitions in
    # growing waves, one job each)
    result = T.StructType([T.StructField("kind", T.StringType()), T.StructField("problem", T.StringType())])
    # at most one task per core (``coalesce``: no shuffle, every core still busy; an input of fewer
    # partitions keeps them): each task's Python worker pass costs tens of milliseconds, which a 16-
    # or 64-partition input of a small upsert would pay 16 or 64 times over. (The input's own
    # partition count is not asked for: ``df.rdd`` runs the shuffles of an adaptive plan.)
    cores = df.sparkSession.sparkContext.defaultParallelism
    checked = _checked_columns(df, cfg, ordering_field).coalesce(max(1, cores))
    found = checked.mapInArrow(problems, result).collect()
    if any(row[0] == "ordering" for row in found):
        _raise_null_ordering(df, cfg, operation, is_mor, ordering_field, path)
    keys = [row[1] for row in found if row[0] == "key"]
    if keys:
        fields = ",".join(cfg.record_key_fields)
        raise WriteError(
            f"{path}: a record has no record key in hoodie.datasource.write.recordkey.field={fields}: "
            f"{keys[0]} Fill the field or drop those records; nothing was written."
        )
    if not (check_keys and deterministic(df)):
        return None
    partitions = sorted({row[1] for row in found if row[0] == "partition"})
    counts = [int(row[1]) for row in found if row[0] == "rows"]
    size = {"rows": sum(counts), "tasks": len(counts)}
    if not key_filter:
        return CheckedInput(partitions, **size)
    union = KeyFilter.empty()
    for row in found:
        if row[0] == "keys":
            union = union.union(KeyFilter.from_text(row[1]))
    return CheckedInput(partitions, union if union.fill <= USEFUL_FILL else None, **size)


#: rows a task of an upsert's input keys and hands on before more tasks than cores pay off
ROWS_PER_INPUT_TASK = 250_000


def in_fewer_tasks(df: DataFrame, checked: CheckedInput, cores: int, numbering: bool) -> DataFrame:
    """``df`` in at most :func:`input_tasks` partitions (``coalesce``: no shuffle; an input of
    fewer partitions keeps them). A coalesce of cached partitions need not keep their order, so
    with ``numbering`` (the records will be precombined) they are numbered first."""
    if checked.tasks < max(1, cores):
        return df  # (its check ran a task per partition: no more partitions than cores)
    return (numbered(df) if numbering else df).coalesce(input_tasks(checked.rows, cores))


def input_tasks(rows: int, cores: int) -> int:
    """Spark tasks for keying and locating the input: the cores (or one per
    ``ROWS_PER_INPUT_TASK`` rows, when that is more), never more than the input has.

    Each task runs a Python worker pass, a fixed cost of tens of milliseconds: a micro-batch of a
    few thousand rows from a 16- or 64-partition source pays it 16 or 64 times for no parallelism the
    cores can give. Merging partitions (``coalesce``, no shuffle) keeps every core busy."""
    return max(1, cores, -(-rows // ROWS_PER_INPUT_TASK))


def deterministic(df: DataFrame) -> bool:
    """Does reading ``df`` again give the same rows? (``rand()``, ``uuid()`` ... say no; so does
    a plan Spark cannot tell about.)"""
    try:
        return bool(df._jdf.queryExecution().analyzed().deterministic())
    except Exception:  # noqa: BLE001 - no JVM plan to ask (e.g. Spark Connect): assume not
        return False


def _null_ordering_reason(cfg: WriteConfig, operation: str, is_mor: bool) -> str | None:
    return null_ordering_refusal(
        operation,
        combines=combines(cfg, operation),
        event_time=cfg.event_time_ordering,
        is_mor=is_mor,
        bucket_index=cfg.index_type == "BUCKET",
    )


def _checked_ordering_field(df: DataFrame, cfg: WriteConfig, operation: str, is_mor: bool) -> str | None:
    """The ordering field whose nulls Hudi would refuse in this write, if it may hold nulls."""
    field_name = cfg.precombine_field
    if not field_name or operation in ("delete", "delete_partition"):
        return None
    ordering_rule.rule_for(df, field_name)  # a type Hudi can order by
    if _null_ordering_reason(cfg, operation, is_mor) is None:
        return None
    return field_name if df.select(F.col(field_name)).schema.fields[0].nullable else None


def _raise_null_ordering(df: DataFrame, cfg: WriteConfig, operation: str, is_mor: bool, field_name: str, path: str):
    nulls = df.filter(F.col(field_name).isNull())
    count = nulls.count()
    example = _example_key(nulls.limit(1), cfg)
    reason = _null_ordering_reason(cfg, operation, is_mor)
    raise WriteError(
        f"{path}: {count} record(s) have a null ordering value in precombine field {field_name!r} "
        f"(hoodie.datasource.write.precombine.field), e.g. {example}; {reason} "
        f"(\"Ordering value is null\"). Fill the field or drop those records; nothing was written."
    )


_ORDERING_CHECKED = "_hd_ordering_checked"


def _checked_columns(df: DataFrame, cfg: WriteConfig, ordering_field: str | None) -> DataFrame:
    """The key columns (or ``df`` whole), plus the ordering value when its nulls are checked."""
    if ordering_field is None:
        return key_columns(df, cfg)
    return key_columns(df.withColumn(_ORDERING_CHECKED, F.col(ordering_field)), cfg, also=(_ORDERING_CHECKED,))


def key_columns(df: DataFrame, cfg: WriteConfig, also: tuple[str, ...] = ()) -> DataFrame:
    """The columns the key generator reads (record key and partition fields) and ``also``, or
    ``df`` whole when a field is not a plain top-level column name."""
    names = [f.split(":", 1)[0].split(".", 1)[0] for f in list(cfg.record_key_fields) + list(cfg.partition_fields)]
    wanted = list(dict.fromkeys([*(n for n in names if n), *also]))
    if not wanted or any(n not in df.columns for n in wanted):
        return df
    return df.select(*[F.col("`" + n.replace("`", "``") + "`") for n in wanted])


def _example_key(one: DataFrame, cfg: WriteConfig) -> str:
    """The record key (and partition path) of one record, for error messages."""
    if not cfg.record_key_fields:
        return "a record without record key (keys are generated)"
    try:
        row = with_keys(strip_meta_columns(one), cfg, "0").select(RECORD_KEY, PARTITION_PATH).first()
    except Exception:  # the key itself is broken: name the key fields instead
        return f"a record with key fields {','.join(cfg.record_key_fields)}"
    if row is None:
        return "a record"
    partition = f" in partition {row[1]!r}" if row[1] else ""
    return f"record key {row[0]!r}{partition}"
