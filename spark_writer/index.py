"""Index lookup ("tagging"): which existing file group each incoming record updates.

* SIMPLE / GLOBAL_SIMPLE: join with the record keys of the latest base files;
* BLOOM / GLOBAL_BLOOM: prune candidate files by min/max key and the footer's
  bloom filter, then confirm against the file's keys;
* BUCKET: the file group follows from the key's hash.

Only file listings and per-file key ranges reach the driver; keys stay on
executors. GLOBAL variants match on the key alone; a key that moves partition
is deleted from its old file group and inserted into the new partition when
``hoodie.*.update.partition.path`` is true, else updated where it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hudi_duck.core.file_group.base_file import read_base_file_footer, read_record_keys
from hudi_duck.core.index import bucket as bucket_index
from hudi_duck.core.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.write.handles import DELETE_FLAG, HARD_DELETE_FLAG

from . import ordering as ordering_rule
from .config import WriteConfig
from .key_filter import KeyFilter

FILE_ID = "_hd_file_id"
PREV_COMMIT = "_hd_prev_commit"

_LOCATION_SCHEMA = T.StructType(
    [
        T.StructField("_loc_key", T.StringType(), False),
        T.StructField("_loc_partition", T.StringType(), False),
        T.StructField("_loc_file_id", T.StringType(), False),
        T.StructField("_loc_instant", T.StringType(), False),
    ]
)


@dataclass(frozen=True)
class BaseFileRef:
    partition_path: str
    file_id: str
    instant: str
    path: str


def latest_base_files(table: HudiTable, partitions: list[str] | None) -> list[BaseFileRef]:
    """The latest committed base file of every visible file group."""
    view = table.file_system_view
    known = set(view.partitions)
    wanted = view.partitions if partitions is None else sorted({p for p in partitions if p in known})
    refs = []
    for s in view.latest_slices(partitions=wanted, read_optimized=True):
        if s.base_file is not None:
            refs.append(BaseFileRef(s.partition_path, s.file_id, s.base_instant_time, s.base_file.path))
    return refs


def _files_frame(spark: SparkSession, refs: list[BaseFileRef]) -> DataFrame:
    schema = T.StructType(
        [
            T.StructField("partition", T.StringType(), False),
            T.StructField("file_id", T.StringType(), False),
            T.StructField("instant", T.StringType(), False),
            T.StructField("path", T.StringType(), False),
        ]
    )
    rows = [(r.partition_path, r.file_id, r.instant, r.path) for r in refs]
    return _spread(spark, rows, schema, max(1, min(len(rows), spark.sparkContext.defaultParallelism * 2)))


def _spread(spark: SparkSession, rows: list[tuple], schema: T.StructType, tasks: int) -> DataFrame:
    """A driver-side list as a frame of ``tasks`` partitions, sliced where it is made: a
    ``repartition`` of a local frame would cost a shuffle stage on every write."""
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, tasks), schema)


def uses_key_filter(cfg: WriteConfig, operation: str) -> bool:
    """Does locating the records read every base-file key (the simple indexes), so that a filter
    of the incoming keys (:mod:`spark_writer.key_filter`) saves handing most of them to Spark?"""
    tags = operation in ("upsert", "delete") or (operation == "insert" and cfg["hoodie.datasource.write.insert.drop.duplicates"])
    return tags and cfg.index_type in ("SIMPLE", "GLOBAL_SIMPLE")


#: keys a task reading base files hands Spark in one Arrow batch: the keys of many small base
#: files go together (a batch per file cost more than reading a ten-row file), a large file's alone
KEYS_PER_BATCH = 1 << 16


def _read_keys_fn(base_uri: str, storage_options: dict, key_generator=None, key_filter: KeyFilter | None = None):
    schema = pa.schema([(f.name, pa.string(), False) for f in _LOCATION_SCHEMA.fields])

    def located(files: list[tuple[pa.Array, str, str, str]]) -> pa.RecordBatch:
        """One batch of the keys of ``files`` with each file's location; only the keys the incoming
        keys' filter may hold (one pass of the filter over them all)."""
        keys = pa.concat_arrays([k for k, *_ in files]) if len(files) > 1 else files[0][0]
        owner = np.repeat(np.arange(len(files), dtype=np.int32), [len(k) for k, *_ in files])
        if key_filter is not None:
            wanted = key_filter.might_contain(keys)
            keys, owner = keys.filter(pa.array(wanted)), owner[wanted]
        indices = pa.array(owner, pa.int32())
        columns = [
            pa.DictionaryArray.from_arrays(indices, pa.array([f[i] for f in files], pa.string())).cast(pa.string())
            for i in (1, 2, 3)
        ]
        return pa.RecordBatch.from_arrays([keys, *columns], schema=schema)

    def read_keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        storage = Storage(base_uri, storage_options)
        pending: list[tuple[pa.Array, str, str, str]] = []
        held = 0
        for batch in batches:
            for partition, file_id, instant, path in zip(*(batch.column(i).to_pylist() for i in range(4))):
                keys = read_record_keys(storage, path, key_generator).cast(pa.string())
                pending.append((keys, partition, file_id, instant))
                held += len(keys)
                if held >= KEYS_PER_BATCH:
                    yield located(pending)
                    pending, held = [], 0
        if pending:
            yield located(pending)

    return read_keys


def _existing_locations_simple(
    spark, table: HudiTable, refs: list[BaseFileRef], storage_options, key_filter: KeyFilter | None = None
) -> DataFrame:
    """Every key of the base files (only those the incoming keys' filter may hold, given one)."""
    virtual = None if table.config.populate_meta_fields else table.key_generator
    read_keys = _read_keys_fn(table.base_uri, storage_options, virtual, key_filter)
    return _files_frame(spark, refs).mapInArrow(read_keys, _LOCATION_SCHEMA)


def _existing_locations_bloom(spark, table: HudiTable, refs: list[BaseFileRef], incoming: DataFrame, cfg: WriteConfig, storage_options, global_index: bool) -> DataFrame:
    """Candidate files per key from min/max ranges, then bloom filter + exact check."""
    base_uri = table.base_uri

    range_schema = T.StructType(
        [
            T.StructField("partition", T.StringType(), False),
            T.StructField("file_id", T.StringType(), False),
            T.StructField("instant", T.StringType(), False),
            T.StructField("path", T.StringType(), False),
            T.StructField("min_key", T.StringType(), True),
            T.StructField("max_key", T.StringType(), True),
        ]
    )

    def read_ranges(batches):
        storage = Storage(base_uri, storage_options)
        for batch in batches:
            rows = list(zip(*(batch.column(i).to_pylist() for i in range(4))))
            mins, maxs = [], []
            for _, _, _, path in rows:
                footer = read_base_file_footer(storage, path)
                mins.append(footer["min_record_key"])
                maxs.append(footer["max_record_key"])
            cols = list(zip(*rows)) if rows else [[], [], [], []]
            yield pa.RecordBatch.from_arrays(
                [pa.array(list(c), pa.string()) for c in cols] + [pa.array(mins, pa.string()), pa.array(maxs, pa.string())],
                names=[f.name for f in range_schema.fields],
            )

    ranges = _files_frame(spark, refs).mapInArrow(read_ranges, range_schema)
    if not cfg["hoodie.bloom.index.prune.by.ranges"]:
        ranges = ranges.withColumn("min_key", F.lit(None).cast("string")).withColumn("max_key", F.lit(None).cast("string"))
    keys = incoming.select(F.col(RECORD_KEY).alias("k"), F.col(PARTITION_PATH).alias("p")).distinct()
    # Hudi's min/max keys follow Java's UTF-16 order; Spark compares UTF-8 bytes.
    # The two orders only disagree for keys with characters at or above U+E000,
    # which are therefore never pruned by range.
    unordered = F.col("k").rlike("[\\x{E000}-\\x{10FFFF}]")
    in_range = unordered | (
        (F.col("min_key").isNull() | (F.col("k") >= F.col("min_key")))
        & (F.col("max_key").isNull() | (F.col("k") <= F.col("max_key")))
    )
    condition = in_range if global_index else (in_range & (F.col("p") == F.col("partition")))
    candidates = keys.join(F.broadcast(ranges), condition, "inner").select("k", "partition", "file_id", "instant", "path")

    def check_candidates(batches):
        storage = Storage(base_uri, storage_options)
        pending: dict[tuple, list[str]] = {}
        for batch in batches:
            for k, partition, file_id, instant, path in zip(*(batch.column(i).to_pylist() for i in range(5))):
                pending.setdefault((partition, file_id, instant, path), []).append(k)
        for (partition, file_id, instant, path), candidate_keys in pending.items():
            footer = read_base_file_footer(storage, path)
            bloom = footer["bloom_filter"]
            if bloom is None:
                maybe = candidate_keys
            else:
                hits = bloom.might_contain_all(candidate_keys)
                maybe = [k for k, hit in zip(candidate_keys, hits) if hit]
            if not maybe:
                continue
            actual = set(read_record_keys(storage, path, metadata=footer["parquet_metadata"]).to_pylist())
            found = [k for k in maybe if k in actual]
            n = len(found)
            yield pa.RecordBatch.from_arrays(
                [pa.array(found, pa.string()), pa.array([partition] * n, pa.string()), pa.array([file_id] * n, pa.string()), pa.array([instant] * n, pa.string())],
                schema=pa.schema([(f.name, pa.string(), False) for f in _LOCATION_SCHEMA.fields]),
            )

    return candidates.repartition("file_id").mapInArrow(check_candidates, _LOCATION_SCHEMA)


def _existing_locations_record_index(spark, table: HudiTable, incoming: DataFrame, storage_options) -> DataFrame:
    """Locations of the incoming keys from the metadata table's record index: keys go to
    the task of the record-index file group they map to, which reads only that file
    group's entries for them (``HoodieRecordIndex.tagLocation``)."""
    from hudi_duck.core.metadata.files_reader import MetadataTable
    from hudi_duck.core.metadata.layout import RECORD_INDEX, file_group_index

    if RECORD_INDEX.name not in table.config.metadata_partitions:
        raise ValueError(
            f"{table.base_uri}: hoodie.index.type=RECORD_INDEX but the table has no record index "
            "(hoodie.metadata.record.index.enable=true builds it)"
        )
    count = len(MetadataTable(table.storage).view.latest_slices(partitions=[RECORD_INDEX.name]))
    instants = {
        (s.partition_path, s.file_id): s.base_instant_time for s in table.file_system_view.latest_slices()
    }
    base_uri = table.base_uri
    grouped_schema = T.StructType([T.StructField("k", T.StringType(), False), T.StructField("g", T.IntegerType(), False)])

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = batch.column(0).to_pylist()
            groups = [file_group_index(k, count) for k in keys]
            yield pa.RecordBatch.from_arrays([pa.array(keys, pa.string()), pa.array(groups, pa.int32())], names=["k", "g"])

    def look_up(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_duck.core.metadata.indexes import lookup_record_index

        keys = [k for batch in batches for k in batch.column(0).to_pylist()]
        if not keys:
            return
        found = lookup_record_index(MetadataTable(Storage(base_uri, storage_options)), keys)
        rows = [
            (key, loc.partition_path, loc.file_id, instants[(loc.partition_path, loc.file_id)])
            for key, loc in found.items()
            if (loc.partition_path, loc.file_id) in instants
        ]
        cols = list(zip(*rows)) if rows else [[], [], [], []]
        yield pa.RecordBatch.from_arrays(
            [pa.array(list(c), pa.string()) for c in cols],
            schema=pa.schema([(f.name, pa.string(), False) for f in _LOCATION_SCHEMA.fields]),
        )

    keys = incoming.select(F.col(RECORD_KEY).alias("k")).distinct()
    assigned = keys.mapInArrow(assign, grouped_schema)
    return assigned.repartition(max(1, count), "g").select("k").mapInArrow(look_up, _LOCATION_SCHEMA)


def distinct_rows(frame: DataFrame) -> list[tuple]:
    """The distinct rows of ``frame``, sorted.

    Each task lists the distinct rows of its batches (Arrow's group-by) and the driver merges
    the lists: one Spark job, where a ``distinct`` costs a shuffle and, under adaptive
    execution, a job per stage."""
    names = frame.columns

    def unique(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        seen: set[tuple] = set()
        for batch in batches:
            found = pa.Table.from_batches([batch]).group_by(names, use_threads=False).aggregate([])
            rows = zip(*(found.column(n).to_pylist() for n in names))
            new = [row for row in rows if row not in seen]
            if new:
                seen.update(new)
                yield pa.RecordBatch.from_pylist([dict(zip(names, row)) for row in new], schema=batch.schema)

    return sorted({tuple(r) for r in frame.mapInArrow(unique, frame.schema).collect()})


def partition_paths(records: DataFrame) -> list[str]:
    """The partition paths of the records, sorted (one Spark job: :func:`distinct_rows`)."""
    return [p for (p,) in distinct_rows(records.select(PARTITION_PATH))]


#: (partition path, file id or None, previous commit or None, records, deletes)
LocationCount = tuple[str, "str | None", "str | None", int, int]
_COUNTED = (PARTITION_PATH, FILE_ID, PREV_COMMIT)


def location_counts(tagged: DataFrame, key_filter: KeyFilter | None = None) -> tuple[list[LocationCount], int]:
    """Records and deletes per (partition, file group, previous commit) of tagged records,
    sorted (inserts, with no file group, first in their partition); and how many records have
    a key the incoming keys' filter lacks (the records were located with it: any such record
    means the input changed since it was checked).

    Each task counts its rows with Arrow's group-by and the driver adds the tasks' counts
    up: one Spark job, where a ``groupBy`` costs a shuffle and a job per stage."""
    sums = ("records", "deletes", "unfiltered")
    schema = T.StructType(
        [T.StructField(c, T.StringType(), True) for c in _COUNTED] + [T.StructField(c, T.LongType(), False) for c in sums]
    )

    def count_batch(batch: pa.RecordBatch) -> pa.Table:
        table = pa.Table.from_batches([batch])
        if key_filter is None:
            unfiltered = pa.nulls(batch.num_rows, pa.bool_())
        else:
            unfiltered = pa.array(~key_filter.might_contain(batch.column(RECORD_KEY)))
        table = table.append_column("_unfiltered", unfiltered)
        counted = table.group_by(list(_COUNTED), use_threads=False).aggregate(
            [([], "count_all"), (DELETE_FLAG, "sum"), ("_unfiltered", "sum")]
        )
        columns = {c: counted.column(c) for c in _COUNTED}
        return pa.table(
            {
                **columns,
                "records": counted.column("count_all"),
                "deletes": counted.column(f"{DELETE_FLAG}_sum"),
                "unfiltered": counted.column("_unfiltered_sum"),
            }
        )

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partials = [count_batch(b) for b in batches if b.num_rows]
        if not partials:
            return
        totals = pa.concat_tables(partials).group_by(list(_COUNTED), use_threads=False).aggregate(
            [(c, "sum") for c in sums]
        )
        yield pa.RecordBatch.from_arrays(
            [totals.column(c).combine_chunks() for c in _COUNTED]
            + [pc.fill_null(totals.column(f"{c}_sum"), 0).cast(pa.int64()).combine_chunks() for c in sums],
            names=[f.name for f in schema.fields],
        )

    summed: dict[tuple, list[int]] = {}
    unfiltered = 0
    needed = [*_COUNTED, DELETE_FLAG] + ([RECORD_KEY] if key_filter is not None else [])
    for row in tagged.select(*needed).mapInArrow(count, schema).collect():
        totals = summed.setdefault((row[0], row[1], row[2]), [0, 0])
        totals[0] += int(row[3])
        totals[1] += int(row[4])
        unfiltered += int(row[5])
    ordered = sorted(summed, key=lambda k: (k[0], k[1] is not None, k[1] or "", k[2] is not None, k[2] or ""))
    return [(p, f, c, *summed[(p, f, c)]) for p, f, c in ordered], unfiltered


def tag_locations(
    spark: SparkSession,
    incoming: DataFrame,
    table: HudiTable | None,
    cfg: WriteConfig,
    storage_options: dict,
    partitions: list[str],
    key_filter: KeyFilter | None = None,
) -> DataFrame:
    """Add ``_hd_file_id`` and ``_hd_prev_commit`` (null: an insert). ``key_filter``: of the
    incoming keys, for the simple indexes (:func:`uses_key_filter`)."""
    index = cfg.index_type
    if index == "BUCKET":
        return _tag_bucket(spark, incoming, table, cfg, partitions)
    global_index = cfg.is_global_index
    untagged = incoming.withColumn(FILE_ID, F.lit(None).cast("string")).withColumn(PREV_COMMIT, F.lit(None).cast("string"))
    if table is None:
        return untagged
    refs = latest_base_files(table, None if global_index else partitions)
    if not refs:
        return untagged
    if index == "RECORD_INDEX":
        locations = _existing_locations_record_index(spark, table, incoming, storage_options)
    elif index in ("BLOOM", "GLOBAL_BLOOM"):
        locations = _existing_locations_bloom(spark, table, refs, incoming, cfg, storage_options, global_index)
    else:
        locations = _existing_locations_simple(spark, table, refs, storage_options, key_filter)
    if not global_index:
        condition = (F.col(RECORD_KEY) == F.col("_loc_key")) & (F.col(PARTITION_PATH) == F.col("_loc_partition"))
        joined = incoming.join(locations, condition, "left")
        return joined.withColumn(FILE_ID, F.col("_loc_file_id")).withColumn(PREV_COMMIT, F.col("_loc_instant")).drop(
            *[f.name for f in _LOCATION_SCHEMA.fields]
        )
    joined = incoming.join(locations, F.col(RECORD_KEY) == F.col("_loc_key"), "left")
    moved = F.col("_loc_partition").isNotNull() & (F.col("_loc_partition") != F.col(PARTITION_PATH))
    loc_cols = [f.name for f in _LOCATION_SCHEMA.fields]
    if not cfg.update_partition_path:
        # the record stays in its file group; its data moves with it
        stayed = joined.withColumn(PARTITION_PATH, F.coalesce(F.col("_loc_partition"), F.col(PARTITION_PATH)))
        return stayed.withColumn(FILE_ID, F.col("_loc_file_id")).withColumn(PREV_COMMIT, F.col("_loc_instant")).drop(*loc_cols)
    event_time = cfg.event_time_ordering and cfg.precombine_field and "." not in cfg.precombine_field
    if event_time or table.config.is_mor:
        ordering = cfg.precombine_field if event_time else None
        return _tag_global_merged(spark, incoming, joined, table, storage_options, ordering)
    same = joined.filter(~moved).withColumn(FILE_ID, F.col("_loc_file_id")).withColumn(PREV_COMMIT, F.col("_loc_instant"))
    moved_rows = joined.filter(moved)
    inserts = (
        moved_rows.filter(~F.col(DELETE_FLAG))
        .withColumn(FILE_ID, F.lit(None).cast("string"))
        .withColumn(PREV_COMMIT, F.lit(None).cast("string"))
    )
    removals = (
        moved_rows.withColumn(PARTITION_PATH, F.col("_loc_partition"))
        .withColumn(FILE_ID, F.col("_loc_file_id"))
        .withColumn(PREV_COMMIT, F.col("_loc_instant"))
        .withColumn(DELETE_FLAG, F.lit(True))
        .withColumn(HARD_DELETE_FLAG, F.lit(True))
    )
    return same.drop(*loc_cols).unionByName(inserts.drop(*loc_cols)).unionByName(removals.drop(*loc_cols))


EXISTING_FILE_ID = "_hd_ex_file_id"
EXISTING_INSTANT = "_hd_ex_instant"


def _existing_records(spark, table: HudiTable, groups: list[tuple[str, str]], schema: T.StructType, storage_options) -> DataFrame:
    """The latest records (base merged with logs) of file groups, in the incoming records'
    schema plus their file group and its base instant."""
    from pyspark.sql.pandas.types import to_arrow_schema

    timezone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    try:
        arrow_schema = to_arrow_schema(schema, timezone=timezone)
    except TypeError:  # Spark < 4
        arrow_schema = to_arrow_schema(schema)
    internal = (RECORD_KEY, PARTITION_PATH, DELETE_FLAG, HARD_DELETE_FLAG)
    data_schema = pa.schema([f for f in arrow_schema if f.name not in internal])
    out_schema = pa.schema(list(arrow_schema) + [pa.field(EXISTING_FILE_ID, pa.string()), pa.field(EXISTING_INSTANT, pa.string())])
    spark_schema = T.StructType(
        list(schema.fields)
        + [T.StructField(EXISTING_FILE_ID, T.StringType(), True), T.StructField(EXISTING_INSTANT, T.StringType(), True)]
    )
    base_uri = table.base_uri

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_duck.core.file_group.reader import read_slice
        from hudi_duck.core.schema.evolution import align_to_schema
        from hudi_duck.core.table.read_plan import plan_snapshot

        current = HudiTable(base_uri, storage_options)
        plans: dict = {}
        for batch in batches:
            for partition, file_id in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                if partition not in plans:
                    plans[partition] = plan_snapshot(current, partitions=[partition])
                plan = plans[partition]
                for s in plan.slices:
                    if s.file_id != file_id:
                        continue
                    rows = read_slice(plan.context(), s)
                    n = rows.num_rows
                    if not n:
                        continue
                    data = align_to_schema(rows, data_schema, f"{partition}/{file_id}")
                    extra = {
                        RECORD_KEY: plan.context().keys(rows).cast(pa.string()),
                        PARTITION_PATH: pa.array([partition] * n, pa.string()),
                        DELETE_FLAG: pa.array([False] * n, pa.bool_()),
                        HARD_DELETE_FLAG: pa.array([False] * n, pa.bool_()),
                        EXISTING_FILE_ID: pa.array([file_id] * n, pa.string()),
                        EXISTING_INSTANT: pa.array([s.base_instant_time] * n, pa.string()),
                    }
                    arrays = [extra[f.name] if f.name in extra else data.column(f.name) for f in out_schema]
                    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
                    yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)

    schema = T.StructType([T.StructField("partition", T.StringType(), False), T.StructField("file_id", T.StringType(), False)])
    frame = _spread(spark, groups, schema, max(1, min(len(groups), spark.sparkContext.defaultParallelism)))
    return frame.mapInArrow(read, spark_schema)


def _tag_global_merged(spark, incoming: DataFrame, joined: DataFrame, table: HudiTable, storage_options, ordering: str | None) -> DataFrame:
    """Global index, ``update.partition.path`` true, event-time ordering (``ordering``; None:
    commit-time, the incoming record always wins) or merge-on-read: as Hudi's
    ``HoodieIndexUtils.mergeForPartitionUpdatesIfNeeded``, a located record is first
    merged with the key's latest record when it moved partition (copy-on-write), or
    always on merge-on-read tables (base files may hold keys deleted in logs, so a key
    can be located in several file groups):

    * the key has no live record (deleted in a log): the incoming record is a new record;
    * incoming deletes (soft or hard) go to where the key's record is;
    * the incoming record wins (ordering >=): an update where the key is, or, if it
      moved partition, a delete there plus an insert into the new partition;
    * the existing record wins: it is written again where it is (same data).
    """
    names = incoming.columns
    # computed once: every branch below starts from these rows (else each recomputes the lookup)
    joined = joined.localCheckpoint(eager=True)
    located = F.col("_loc_file_id").isNotNull()
    moved_from_location = F.col("_loc_partition") != F.col(PARTITION_PATH)
    needs_lookup = located if table.config.is_mor else (located & moved_from_location)
    plain = (
        joined.filter(~needs_lookup)
        .withColumn(FILE_ID, F.col("_loc_file_id"))
        .withColumn(PREV_COMMIT, F.col("_loc_instant"))
    )
    lookup = joined.filter(needs_lookup)
    groups = [(r[0], r[1]) for r in lookup.select("_loc_partition", "_loc_file_id").distinct().collect()]
    if not groups:
        return plain.select(*names, FILE_ID, PREV_COMMIT)
    ex_name = {c: f"_hd_ex{i}" for i, c in enumerate(names)}
    existing = _existing_records(spark, table, groups, incoming.schema, storage_options)
    existing = existing.select(*[F.col(c).alias(ex_name[c]) for c in names], EXISTING_FILE_ID, EXISTING_INSTANT)
    # one row per incoming record (the location join repeats a key found in several file groups)
    pending = lookup.select(*names).dropDuplicates([RECORD_KEY])
    j = pending.join(existing, F.col(RECORD_KEY) == F.col(ex_name[RECORD_KEY]), "left").localCheckpoint(eager=True)
    found = F.col(ex_name[RECORD_KEY]).isNotNull()
    existing_partition = F.col(ex_name[PARTITION_PATH])
    moved = existing_partition != F.col(PARTITION_PATH)
    if ordering is None:
        incoming_wins = F.lit(True)
    else:
        # DefaultHoodieRecordPayload.combineAndGetUpdateValue: a stored null loses, else incoming >= stored
        rule = ordering_rule.rule_for(incoming, ordering)
        incoming_wins = ~ordering_rule.greater(F.col(ex_name[ordering]), F.col(ordering), rule)

    def at_existing(df: DataFrame) -> DataFrame:
        return df.withColumn(FILE_ID, F.col(EXISTING_FILE_ID)).withColumn(PREV_COMMIT, F.col(EXISTING_INSTANT))

    def unlocated(df: DataFrame) -> DataFrame:
        return df.withColumn(FILE_ID, F.lit(None).cast("string")).withColumn(PREV_COMMIT, F.lit(None).cast("string"))

    updates = j.filter(found & ~F.col(DELETE_FLAG))
    moved_winners = updates.filter(incoming_wins & moved)
    parts = [
        plain,
        unlocated(j.filter(~found)),
        at_existing(j.filter(found & F.col(DELETE_FLAG)).withColumn(PARTITION_PATH, existing_partition)),
        at_existing(updates.filter(incoming_wins & ~moved)),
        unlocated(moved_winners),
        at_existing(
            moved_winners.withColumn(PARTITION_PATH, existing_partition)
            .withColumn(DELETE_FLAG, F.lit(True))
            .withColumn(HARD_DELETE_FLAG, F.lit(True))
        ),
        at_existing(
            updates.filter(~incoming_wins).select(*[F.col(ex_name[c]).alias(c) for c in names], EXISTING_FILE_ID, EXISTING_INSTANT)
        ),
    ]
    out = None
    for part in parts:
        part = part.select(*names, FILE_ID, PREV_COMMIT)
        out = part if out is None else out.unionByName(part)
    return out


def _bucket_of(hash_fields: list[str], num_buckets: int):
    """A vectorised UDF: the bucket of each key, a batch at a time (a row-at-a-time UDF
    costs microseconds a record, computed again by every job that reads the tagged rows)."""
    import pandas as pd

    def bucket_of(keys):
        ids = bucket_index.bucket_ids(pa.Array.from_pandas(keys, type=pa.string()), hash_fields, num_buckets)
        return pd.Series(ids.to_numpy(zero_copy_only=False))

    # Series -> Series: a scalar pandas UDF (the hints are objects: this module's annotations are strings)
    bucket_of.__annotations__ = {"keys": pd.Series, "return": pd.Series}
    return F.pandas_udf(bucket_of, "int")


#: Up to this many (partition, bucket) pairs, every pair of the records' partitions gets a row in the
#: tagging map without looking at the records; past it the pairs the records fall in are collected.
ENUMERATED_BUCKET_PAIRS = 1 << 16


def _enumerates_bucket_pairs(num_buckets: int, partitions: list[str]) -> bool:
    return len(partitions) * num_buckets <= ENUMERATED_BUCKET_PAIRS


def tags_in_one_read(cfg: WriteConfig, partitions: list[str]) -> bool:
    """Whether tagging records of ``partitions`` reads them only once (into the tagged records):
    the simple index joins them with the table's keys, the bucket index maps every bucket of the
    partitions without a pass of its own. Other indexes read the records to look them up first."""
    if cfg.index_type == "SIMPLE":
        return True
    return cfg.index_type == "BUCKET" and _enumerates_bucket_pairs(int(cfg["hoodie.bucket.index.num.buckets"]), partitions)


def _tag_bucket(spark, incoming: DataFrame, table: HudiTable | None, cfg: WriteConfig, partitions: list[str]) -> DataFrame:
    """File group of each record from its bucket; new buckets get new file groups.

    The map from (partition, bucket) to file group is built on the driver and broadcast. For the
    usual sizes it holds every bucket of the records' partitions (``partitions``), so tagging
    costs no pass over the records; a map that would be too large holds only the pairs found."""
    num_buckets = int(cfg["hoodie.bucket.index.num.buckets"])
    hash_fields = [f.strip() for f in (cfg.get("hoodie.bucket.index.hash.field") or ",".join(cfg.record_key_fields)).split(",") if f.strip()]
    existing: dict[tuple[str, int], tuple[str, str]] = {}
    if table is not None:
        known = set(table.file_system_view.partitions)
        for s in table.file_system_view.latest_slices(partitions=[p for p in partitions if p in known]):
            bucket = bucket_index.bucket_of_file_id(s.file_id)
            if bucket is not None:
                existing[(s.partition_path, bucket)] = (s.file_id, s.base_instant_time)

    with_bucket = incoming.withColumn("_hd_bucket_id", _bucket_of(hash_fields, num_buckets)(F.col(RECORD_KEY)))
    if _enumerates_bucket_pairs(num_buckets, partitions):
        pairs = [(p, b) for p in partitions for b in range(num_buckets)]
    else:
        pairs = distinct_rows(with_bucket.select(PARTITION_PATH, "_hd_bucket_id"))
    rows = []
    for partition, bucket in pairs:
        if (partition, bucket) in existing:
            file_id, instant = existing[(partition, bucket)]
        else:
            file_id, instant = bucket_index.new_bucket_file_id(bucket), None
        rows.append((partition, bucket, file_id, instant))
    mapping = spark.createDataFrame(
        rows,
        T.StructType(
            [
                T.StructField("_b_partition", T.StringType(), False),
                T.StructField("_b_bucket", T.IntegerType(), False),
                T.StructField(FILE_ID, T.StringType(), False),
                T.StructField(PREV_COMMIT, T.StringType(), True),
            ]
        ),
    )
    condition = (F.col(PARTITION_PATH) == F.col("_b_partition")) & (F.col("_hd_bucket_id") == F.col("_b_bucket"))
    return with_bucket.join(F.broadcast(mapping), condition, "left").drop("_b_partition", "_b_bucket", "_hd_bucket_id")
