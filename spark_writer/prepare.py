"""Preparing incoming records on executors: keys, delete flags, precombine."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudi_duck.core.keygen import key_generator_from_write_options
from hudi_duck.core.schema.meta_fields import (
    IS_DELETED,
    META_FIELDS,
    PARTITION_PATH,
    RECORD_KEY,
)
from hudi_duck.core.write.handles import DELETE_FLAG, HARD_DELETE_FLAG

from .config import WriteConfig

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

    Ties (and tables without an ordering field) keep the record that came
    later in the input, as Hudi's ``preCombine`` keeps the newer one.
    """
    keys = [RECORD_KEY] if global_index else [RECORD_KEY, PARTITION_PATH]
    ordering = cfg.precombine_field
    with_seq = df.withColumn(SEQ, F.monotonically_increasing_id())
    order = [F.col(SEQ).desc()]
    if ordering:
        order.insert(0, F.col(ordering).desc_nulls_last())
    window = Window.partitionBy(*keys).orderBy(*order)
    ranked = with_seq.withColumn("_hd_rank", F.row_number().over(window))
    return ranked.filter(F.col("_hd_rank") == 1).drop("_hd_rank", SEQ)
