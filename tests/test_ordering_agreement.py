"""One ordering and merge rule (``hudi_duck.core.merge``), the same winner on every path.

The same records go through every path that merges them:

* the core's fold (``fold_log_records`` / ``merge_with_base``);
* Spark: in-batch precombine (``spark_writer.prepare.precombine``) and the
  global index's merge of an incoming with an existing record
  (``spark_writer.ordering.greater``, as ``spark_writer.index`` uses it);
* the copy-on-write merge handle (``core.write.handles.merge_file``);
* merge-on-read: the append handle, our reader and hudi-rs, then compaction;
* SQL (``core.merge.sql``) in DuckDB;

and every case writes down the winner Apache Hudi's Java code gives, with
the line of Java that decides it. Random sequences (hypothesis) check the core
against a small transcription of Hudi's scanner and payload code and read
the files back with hudi-rs.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import hudi_rs_read

from hudi_duck.api import read_snapshot
from hudi_duck.core.config.table_config import Keys, TableConfig
from hudi_duck.core.config.write_settings import FileSettings
from hudi_duck.core.file_group.log_blocks import DeleteRecord, encode_delete_records
from hudi_duck.core.file_group.log_format import BlockType, HeaderKey, encode_block
from hudi_duck.core.file_group.naming import log_file_name
from hudi_duck.core.merge.fold import LogEntry, fold_log_records, merge_with_base, rank_log_entries
from hudi_duck.core.merge.incoming import null_ordering_refusal
from hudi_duck.core.merge.mode import (
    DEFAULT_PAYLOAD,
    EVENT_TIME_PAYLOAD,
    EVENT_TIME_STRATEGY_ID,
    OVERWRITE_WITH_LATEST_PAYLOAD,
    MergeMode,
    resolve_write_merge,
)
from hudi_duck.core.merge.ordering import (
    NATURAL,
    JavaClass,
    Kind,
    column_class,
    compare,
    delete_ordering,
    engine_ordering,
    ordering_values,
)
from hudi_duck.core.merge.sql import base_survives_sql, latest_log_records_sql
from hudi_duck.core.schema.avro_arrow import add_meta_fields_avro, arrow_to_avro, avro_json
from hudi_duck.core.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from hudi_duck.core.services import compaction
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.commit_metadata import CommitMetadata, WriteStat
from hudi_duck.core.timeline.instant import Action
from hudi_duck.core.write.handles import (
    DELETE_FLAG,
    HARD_DELETE_FLAG,
    TaskInfo,
    WriteContext,
    append_log,
    create_files,
    merge_file,
)

EVENT = MergeMode.EVENT_TIME_ORDERING
COMMIT = MergeMode.COMMIT_TIME_ORDERING
UTC = _dt.timezone.utc


# -- the cases: a stored record, then an incoming record of the same key ------------------------------------


@dataclass(frozen=True)
class Case:
    """``incoming`` arrives after ``stored``; ``winner`` is what Hudi's Java code keeps, and why."""

    name: str
    dtype: pa.DataType
    stored: Any
    incoming: Any
    winner: str  # "stored" | "incoming"
    why: str
    stored_dtype: pa.DataType | None = None  # the stored record's file type (schema evolution)
    #: hudi-rs (0.5) reads the same winner; it does not where it treats a null ordering value as 0
    hudi_rs: bool = True

    @property
    def key(self) -> str:
        return self.name


T0 = _dt.datetime(2024, 1, 1, tzinfo=UTC)

CASES = [
    Case("long-neg-stored", pa.int64(), -5, -6, "stored", "Long.compareTo: -5 > -6, needUpdatingPersistedRecord is false"),
    Case("long-neg-incoming", pa.int64(), -6, -5, "incoming", "Long.compareTo: -6 < -5"),
    Case("long-tie", pa.int64(), 7, 7, "incoming", "compareTo == 0: persisted.compareTo(incoming) <= 0, preCombine keeps the newer"),
    Case("long-zero-vs-neg", pa.int64(), 0, -1, "stored", "Long 0 is a value like any other (natural order is an Integer 0 on deletes only)"),
    Case("long-stored-null", pa.int64(), None, -7, "incoming", "persistedOrderingVal == null: the incoming record wins",
         hudi_rs=False),
    Case("long-stored-null-big", pa.int64(), None, 2**40, "incoming", "persistedOrderingVal == null: the incoming record wins"),
    Case("int-to-long", pa.int64(), 5, 4, "stored", "Avro promotes the stored int to long on read: Long 5 > Long 4", pa.int32()),
    Case("int-to-long-wide", pa.int64(), 2**31 - 1, 2**31, "incoming", "Long 2147483647 < Long 2147483648", pa.int32()),
    Case("int-neg", pa.int32(), -2, -3, "stored", "Integer.compareTo: -2 > -3"),
    Case("string-utf8-order", pa.string(), "\uff5e", "\U0001f600", "incoming",
         "Utf8.compareTo is byte order: F0 9F.. > EF BD.. (String.compareTo, UTF-16, would keep the stored)"),
    Case("string-accent", pa.string(), "\u00e9", "z", "stored", "Utf8 bytes: C3 A9 > 7A"),
    Case("string-prefix", pa.string(), "ab", "a", "stored", "Utf8: a prefix is smaller"),
    Case("string-empty", pa.string(), "", "", "incoming", "equal: the newer wins"),
    Case("decimal-neg", pa.decimal128(10, 2), decimal.Decimal("-0.01"), decimal.Decimal("0.00"), "incoming", "BigDecimal.compareTo: -0.01 < 0.00"),
    Case("decimal-stored", pa.decimal128(10, 2), decimal.Decimal("10.00"), decimal.Decimal("9.99"), "stored", "BigDecimal.compareTo: 10.00 > 9.99"),
    Case("decimal-tie", pa.decimal128(10, 2), decimal.Decimal("1.50"), decimal.Decimal("1.50"), "incoming", "BigDecimal.compareTo == 0"),
    Case("timestamp-micro", pa.timestamp("us", tz="UTC"), T0 + _dt.timedelta(microseconds=1), T0, "stored",
         "a timestamp orders by its Avro long (micros): 1 > 0"),
    Case("timestamp-before-epoch", pa.timestamp("us", tz="UTC"), _dt.datetime(1969, 12, 31, tzinfo=UTC), T0, "incoming",
         "Long micros: negative before the epoch"),
    Case("date", pa.date32(), _dt.date(2024, 3, 1), _dt.date(2024, 2, 29), "stored", "a date orders by its Avro int (epoch day)"),
    Case("double-zero-sign", pa.float64(), 0.0, -0.0, "stored", "Double.compareTo(0.0, -0.0) > 0 (engines call them equal)"),
    Case("double-neg-zero-stored", pa.float64(), -0.0, 0.0, "incoming", "Double.compareTo(-0.0, 0.0) < 0"),
    Case("double-nan", pa.float64(), math.nan, math.inf, "stored", "Double.compareTo: NaN is above +Infinity"),
    Case("double-nan-tie", pa.float64(), math.nan, math.nan, "incoming", "Double.compareTo: NaN equals NaN"),
    Case("double-neg", pa.float64(), -1.5, -2.5, "stored", "Double.compareTo: -1.5 > -2.5"),
    Case("float", pa.float32(), 1.5, 1.25, "stored", "Float.compareTo: 1.5 > 1.25"),
    Case("boolean", pa.bool_(), True, False, "stored", "Boolean.compareTo: true > false"),
    Case("boolean-up", pa.bool_(), False, True, "incoming", "Boolean.compareTo: false < true"),
]
TYPES = sorted({str(c.dtype) for c in CASES})


def cases_of(dtype: str) -> list[Case]:
    return [c for c in CASES if str(c.dtype) == dtype]


def _norm(value: Any) -> Any:
    """Values compared as rows come back (NaN equal to NaN, -0.0 apart from 0.0)."""
    if isinstance(value, float):
        return ("nan",) if value != value else (value, math.copysign(1.0, value))
    if isinstance(value, _dt.datetime):
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


# -- the pure rule -------------------------------------------------------------------------------------------


def _ordering(value: Any, dtype: pa.DataType):
    return ordering_values(pa.array([value], dtype), 1, "ord")[0]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_java_compare(case):
    stored = _ordering(case.stored, case.dtype)  # read with the reader schema (Avro promotes int to long)
    incoming = _ordering(case.incoming, case.dtype)
    incoming_wins = compare(incoming, stored) >= 0
    assert incoming_wins == (case.winner == "incoming"), case.why


def test_string_order_is_utf8_bytes_not_utf16():
    a, b = "\uff5e", "\U0001f600"
    assert (a.encode("utf-8") < b.encode("utf-8")) and (a.encode("utf-16-be") > b.encode("utf-16-be"))
    assert compare(_ordering(a, pa.string()), _ordering(b, pa.string())) < 0


@pytest.mark.parametrize(
    "value, wrapper, version, column, expected",
    [
        (0, "IntWrapper", 6, pa.int64(), "natural"),  # Integer 0: "natural order" (processNextDeletedRecord)
        (None, None, 6, pa.int64(), "natural"),  # no value: natural order
        (0, "LongWrapper", 6, pa.int64(), "compared"),  # Long 0 does not equal Integer 0
        (5, "IntWrapper", 6, pa.int64(), "foreign"),  # an int column widened to long: isSameClass fails
        (5, "IntWrapper", 6, pa.int32(), "compared"),
        (5, "LongWrapper", 6, pa.timestamp("us", tz="UTC"), "compared"),  # the payload's Long of a timestamp
        (T0, "TimestampMicrosWrapper", 6, pa.timestamp("us", tz="UTC"), "foreign"),  # java.sql.Timestamp vs Long
        (_dt.date(2024, 1, 1), "DateWrapper", 6, pa.date32(), "foreign"),  # LocalDate vs the scanner's Integer
        (decimal.Decimal("1.5"), "DecimalWrapper", 6, pa.decimal128(10, 2), "foreign"),  # BigDecimal vs Avro fixed
        ("a", "StringWrapper", 6, pa.string(), "foreign"),  # String vs Utf8 (Hudi 0.14)
        ("a", "StringWrapper", 8, pa.string(), "compared"),  # Hudi 1.x converts String to Utf8
        (1.5, "DoubleWrapper", 6, pa.float64(), "compared"),
        (True, "BooleanWrapper", 6, pa.bool_(), "compared"),
    ],
)
def test_delete_block_ordering_classes(value, wrapper, version, column, expected):
    ordering = delete_ordering(value, wrapper, version)
    if expected == "natural":
        assert ordering.kind is Kind.NATURAL
    else:
        assert ordering.kind is Kind.VALUE
        assert (ordering.java_class is column_class(column)) == (expected == "compared")


def test_write_merge_is_resolved_by_the_core():
    """``hoodie.record.merge.mode`` wins over the payload option; the payload class follows the mode."""
    assert resolve_write_merge(OVERWRITE_WITH_LATEST_PAYLOAD, None, "ts").mode is COMMIT
    assert resolve_write_merge(DEFAULT_PAYLOAD, None, "ts").mode is EVENT
    assert resolve_write_merge(OVERWRITE_WITH_LATEST_PAYLOAD, "EVENT_TIME_ORDERING", "ts").payload_class == DEFAULT_PAYLOAD
    assert resolve_write_merge(EVENT_TIME_PAYLOAD, "EVENT_TIME_ORDERING", "ts").payload_class == EVENT_TIME_PAYLOAD
    assert not resolve_write_merge(EVENT_TIME_PAYLOAD, None, "ts").soft_deletes_ordered
    assert resolve_write_merge("com.example.Mine", None, "ts").unsupported
    from spark_writer.config import parse_options

    cfg = parse_options({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                         "hoodie.datasource.write.precombine.field": "ts", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})
    assert cfg.merge == resolve_write_merge(OVERWRITE_WITH_LATEST_PAYLOAD, "EVENT_TIME_ORDERING", "ts")
    assert cfg.event_time_ordering and cfg.payload_class == DEFAULT_PAYLOAD


@pytest.mark.parametrize(
    "operation, combines, event_time, is_mor, bucket, refused",
    [
        ("upsert", True, False, False, False, True),  # BaseAvroPayload: "Ordering value is null"
        ("insert", True, False, False, False, True),  # insert.drop.duplicates / combine.before.insert
        ("bulk_insert", True, False, False, False, True),
        ("insert", False, False, False, False, False),  # no payload ordering value: stored as null
        ("insert_overwrite", False, True, True, False, False),
        ("upsert", False, True, False, False, True),  # the COW merge compares it: NullPointerException
        ("upsert", False, False, False, False, False),  # commit time, COW: never compared
        ("upsert", False, False, True, False, True),  # a log record Hudi's scanner cannot build
        ("insert", False, False, True, True, True),  # bucket index: inserts go to logs
        ("delete", True, True, True, False, False),  # keys only
    ],
)
def test_null_ordering_refusal_rule(operation, combines, event_time, is_mor, bucket, refused):
    reason = null_ordering_refusal(operation, combines=combines, event_time=event_time, is_mor=is_mor, bucket_index=bucket)
    assert (reason is not None) == refused


# -- a small transcription of Hudi's merge code (the model) ----------------------------------------------------


@dataclass
class Rec:
    """A record or delete as Hudi's scanner holds it: ordering value and whether it is a delete."""

    is_delete: bool
    ordering: Any  # an ``Ordering``
    tag: Any = None


def _natural(rec: Rec) -> bool:
    return rec.ordering.kind is Kind.NATURAL


def _class_of(rec: Rec, column: JavaClass | None) -> JavaClass | None:
    """A value's class; a null is a null of the column's type (and compares lowest)."""
    return column if rec.ordering.kind is Kind.NULL else rec.ordering.java_class


def _same_class(a: Rec, b: Rec, column: JavaClass | None) -> bool:
    """``ReflectionUtils.isSameClass``; a natural-order value (``Integer 0``) never compares."""
    if _natural(a) or _natural(b):
        return False
    return _class_of(a, column) is _class_of(b, column)


def _gt(a: Rec, b: Rec) -> bool:
    return compare(a.ordering, b.ordering) > 0


def model_scan(records: list[Rec], mode: MergeMode, column: JavaClass | None) -> Rec | None:
    """HoodieMergedLogRecordScanner: processNextRecord / processNextDeletedRecord, in scan order."""
    prev: Rec | None = None
    for rec in records:
        if prev is None or mode is COMMIT:
            prev = rec
        elif not rec.is_delete:
            # a record: a delete in natural order (or a value of another class) gives way; else the greater wins
            if prev.is_delete and _natural(prev):
                prev = rec
            elif not _same_class(prev, rec, column) or not _gt(prev, rec):
                prev = rec
        else:
            # a delete: the earlier record stays if its value is greater (same class, delete not natural)
            if prev.is_delete and _natural(prev):
                continue
            choose_prev = not _natural(rec) and _same_class(prev, rec, column) and _gt(prev, rec)
            if not choose_prev:
                prev = rec
    return prev


def model_final(base: Rec | None, logged: Rec | None, mode: MergeMode, column: JavaClass | None) -> Rec | None:
    """The base record against the scanned log record (``needUpdatingPersistedRecord``)."""
    if logged is None:
        return base
    if base is None or mode is COMMIT:
        return None if logged.is_delete else logged
    if not _same_class(base, logged, column) or not _gt(base, logged):
        return None if logged.is_delete else logged
    return base


# -- SQL: the same rule in DuckDB --------------------------------------------------------------------------------


def sql_winner(entries: list[LogEntry], values: list[Any], dtype: pa.DataType, base_value: Any, has_base: bool, mode: MergeMode):
    """Run the rendered SQL over one key's log records (and base): ("base" | row index | None)."""
    column = column_class(dtype)
    ranks = rank_log_entries(entries, mode, column)
    spec = engine_ordering("ord", dtype)
    ordinary = [v if (e.ordering.kind is Kind.VALUE and e.ordering.java_class is column) else None for e, v in zip(entries, values)]
    log = pa.table(
        {
            "k": pa.array(["k"] * len(entries), pa.string()),
            "seq": pa.array(range(len(entries)), pa.int64()),
            "ignored": pa.array([r.ignored for r in ranks], pa.bool_()),
            "reset": pa.array([r.reset for r in ranks], pa.bool_()),
            "is_delete": pa.array([e.is_delete for e in entries], pa.bool_()),
            "row": pa.array([e.row for e in entries], pa.int64()),
            "ord": pa.array(ordinary, dtype),
        }
    )
    base = pa.table({"k": pa.array(["k"] if has_base else [], pa.string()), "ord": pa.array([base_value] if has_base else [], dtype)})
    con = duckdb.connect()
    con.register("log_records", log)
    con.register("base_rows", base)
    latest = latest_log_records_sql("log_records", key="k", seq="seq", ignored="ignored", reset="reset", ordering="ord", spec=spec)
    survives = base_survives_sql(
        mode, base_ordering="b.ord", winner_ordering="w.ord", winner_reset="w.reset", winner_is_delete="w.is_delete", spec=spec
    )
    cursor = con.execute(latest)
    winner = cursor.fetchall()
    columns = [d[0] for d in cursor.description]
    w = dict(zip(columns, winner[0])) if winner else None
    base_alive = has_base and (
        w is None or con.execute(f"SELECT {survives} FROM base_rows b, ({latest}) w").fetchall()[0][0]
    )
    con.close()
    if base_alive:
        return "base"
    if w is None or w["is_delete"]:
        return None
    return w["row"]


# -- the core's paths, without Spark -----------------------------------------------------------------------


def _schema(dtype: pa.DataType) -> pa.Schema:
    return pa.schema([("id", pa.string()), ("ord", dtype), ("v", pa.string())])


class CoreTable:
    """A version 6 table written by the core's handles directly (one file group, one partition)."""

    def __init__(self, path: Path, dtype: pa.DataType, table_type: str, payload: str = DEFAULT_PAYLOAD, version: int = 6):
        self.path = str(path)
        self.schema = _schema(dtype)
        self.avro = avro_json(arrow_to_avro(self.schema, "t"))
        self.is_mor = table_type == "MERGE_ON_READ"
        self.payload = payload
        self.merge = resolve_write_merge(payload, None, "ord")
        self.instants = 0
        self.file_id: str | None = None
        self.base_instant: str | None = None
        props = {
            Keys.NAME: "t", Keys.TYPE: table_type, Keys.VERSION: str(version), Keys.TIMELINE_LAYOUT_VERSION: "1",
            Keys.ARCHIVELOG_FOLDER: "archived", Keys.RECORDKEY_FIELDS: "id", Keys.PRECOMBINE_FIELD: "ord",
            Keys.PAYLOAD_CLASS: payload, Keys.RECORD_MERGER_STRATEGY: EVENT_TIME_STRATEGY_ID,
            Keys.KEY_GENERATOR_CLASS: "org.apache.hudi.keygen.NonpartitionedKeyGenerator", Keys.PARTITION_FIELDS: "",
            Keys.CREATE_SCHEMA: self.avro,
        }
        TableConfig(props=props).initialize_table(Storage(self.path))

    def _instant(self) -> str:
        self.instants += 1
        return f"20240101{self.instants:09d}"

    def _commit(self, instant: str, stats: list[WriteStat], action: str | None = None) -> None:
        timeline = HudiTable(self.path).timeline
        action = action or (Action.DELTA_COMMIT if self.is_mor else Action.COMMIT)
        requested = timeline.create_requested(instant, action, b"")
        inflight = timeline.transition_to_inflight(requested, CommitMetadata().to_bytes())
        metadata = CommitMetadata(partition_to_write_stats={"": stats}, extra_metadata={"schema": self.avro}, operation_type="UPSERT")
        timeline.complete(inflight, metadata.to_bytes())

    def _batch(self, rows: list[dict]) -> pa.Table:
        table = pa.Table.from_pylist([{k: r.get(k) for k in ("id", "ord", "v")} for r in rows], schema=self.schema)
        return (
            table.append_column(RECORD_KEY, pa.array([r["id"] for r in rows], pa.string()))
            .append_column(PARTITION_PATH, pa.array([""] * len(rows), pa.string()))
            .append_column(DELETE_FLAG, pa.array([bool(r.get("delete")) for r in rows], pa.bool_()))
            .append_column(HARD_DELETE_FLAG, pa.array([r.get("delete") == "hard" for r in rows], pa.bool_()))
        )

    def _context(self, instant: str) -> WriteContext:
        return WriteContext(
            base_uri=self.path, instant_time=instant, avro_schema=self.avro, merge_mode=self.merge.mode,
            ordering_field="ord", is_mor=self.is_mor, soft_deletes_ordered=self.merge.soft_deletes_ordered,
        )

    def evolve(self, dtype: pa.DataType) -> None:
        """The ordering column widens (e.g. int to long), as a later write's schema does."""
        self.schema = _schema(dtype)
        self.avro = avro_json(arrow_to_avro(self.schema, "t"))

    def write(self, rows: list[dict]) -> str:
        """rows: {"id", "ord", "v", "delete": None | "soft" | "hard"}; the first write creates the base file."""
        instant = self._instant()
        ctx, batch = self._context(instant), self._batch(rows)
        if self.file_id is None:
            stats = create_files(ctx, "", batch, TaskInfo())
            self.file_id, self.base_instant = stats[0].file_id, instant
            self._base_path = stats[0].path
        elif self.is_mor:
            stats = append_log(ctx, "", self.file_id, self.base_instant, self._base_path, batch, TaskInfo())
        else:
            stats = merge_file(ctx, "", self.file_id, self._base_path, self.base_instant, batch, TaskInfo())
            self._base_path, self.base_instant = stats[0].path, instant
        self._commit(instant, stats)
        return instant

    def delete_block(self, key: str, value: Any, wrapper: str | None) -> str:
        """A delete block written with a chosen ordering wrapper (as other writers and versions leave them)."""
        instant = self._instant()
        header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: avro_json(add_meta_fields_avro(self.avro))}
        record = DeleteRecord(key, "", value, wrapper)
        content = encode_block(BlockType.DELETE_BLOCK, header, encode_delete_records([record]))
        name = log_file_name(self.file_id, self.base_instant, 90 + self.instants, "0-0-0")
        (Path(self.path) / name).write_bytes(content)
        stat = WriteStat.for_log(file_id=self.file_id, path=name, prev_commit=self.base_instant, num_deletes=1, partition_path="")
        self._commit(instant, [stat])
        return instant

    def compact(self) -> None:
        table = HudiTable(self.path)
        instant = self._instant()
        compaction.schedule_compaction(table, compaction.CompactionSettings(strategy=compaction.UNBOUNDED_STRATEGY), instant)
        table = HudiTable(self.path)

        def run(operations, ctx):
            return [compaction.compact_operation(table, self._context(instant), op, TaskInfo(), instant) for op in operations]

        compaction.run_compaction(table, instant, FileSettings(), run)

    def rows(self) -> dict[str, tuple]:
        table = read_snapshot(self.path).read_all()
        return {r["id"]: (r["v"], _norm(r["ord"])) for r in table.to_pylist()}

    def hudi_rs_rows(self) -> dict[str, tuple]:
        return {r["id"]: (r["v"], _norm(r["ord"])) for r in hudi_rs_read(self.path).to_pylist()}


def _expected(cases: list[Case]) -> dict[str, tuple]:
    out = {}
    for c in cases:
        value = c.incoming if c.winner == "incoming" else c.stored
        out[c.key] = (c.winner, _norm(value))
    return out


def _stored_rows(cases: list[Case]) -> list[dict]:
    return [{"id": c.key, "ord": c.stored, "v": "stored"} for c in cases]


def _incoming_rows(cases: list[Case]) -> list[dict]:
    return [{"id": c.key, "ord": c.incoming, "v": "incoming"} for c in cases]


def _write_stored(table: CoreTable, cases: list[Case]) -> None:
    evolving = [c for c in cases if c.stored_dtype is not None]
    if evolving:
        table.evolve(evolving[0].stored_dtype)
    table.write(_stored_rows(cases))
    if evolving:
        table.evolve(evolving[0].dtype)


@pytest.mark.parametrize("dtype", TYPES)
def test_core_paths_agree_with_java(tmp_path, dtype):
    """COW merge handle, MOR append + reader (and hudi-rs), compaction, in-batch fold and SQL."""
    cases = cases_of(dtype)
    arrow_type = cases[0].dtype
    want = _expected(cases)

    cow = CoreTable(tmp_path / "cow", arrow_type, "COPY_ON_WRITE")
    _write_stored(cow, cases)
    cow.write(_incoming_rows(cases))
    assert cow.rows() == want, "copy-on-write merge handle"

    mor = CoreTable(tmp_path / "mor", arrow_type, "MERGE_ON_READ")
    _write_stored(mor, cases)
    mor.write(_incoming_rows(cases))
    assert mor.rows() == want, "merge-on-read reader"
    theirs = mor.hudi_rs_rows()
    assert {c.key: theirs.get(c.key) for c in cases if c.hudi_rs} == {c.key: want[c.key] for c in cases if c.hudi_rs}, (
        "hudi-rs reading the same files"
    )
    mor.compact()
    assert mor.rows() == want, "after compaction"

    column = column_class(arrow_type)
    for c in cases:
        stored = _ordering(c.stored, arrow_type)
        incoming = _ordering(c.incoming, arrow_type)
        # in-batch precombine: both records in one batch (nulls are refused there)
        if c.stored is not None:
            states = fold_log_records([LogEntry("k", False, stored, 0), LogEntry("k", False, incoming, 1)], EVENT, column)
            assert states["k"].row == (1 if c.winner == "incoming" else 0), (c.name, c.why)
        # a log record against the base record, in SQL
        entries = [LogEntry("k", False, incoming, 0)]
        got = sql_winner(entries, [c.incoming], arrow_type, c.stored, True, EVENT)
        assert got == ("base" if c.winner == "stored" else 0), (c.name, c.why)


# -- deletes: the delete operation, soft deletes, delete blocks -------------------------------------------------


@dataclass
class DeleteCase:
    name: str
    dtype: pa.DataType
    base: Any
    steps: list  # ("record", value) | ("soft", value) | ("hard",) | ("block", value, wrapper)
    survivor: str | None  # "base" | "record" | None (deleted)
    why: str
    table_type: str = "MERGE_ON_READ"
    payload: str = DEFAULT_PAYLOAD
    version: int = 6
    hudi_rs: bool = True  # hudi-rs follows the same rule for this case


DELETE_CASES = [
    DeleteCase("natural-order-delete", pa.int64(), 5, [("block", 0, "IntWrapper")], None,
               "IntWrapper(0) is natural order: deleteOrderingVal.equals(0), the delete wins"),
    DeleteCase("hard-delete-cow", pa.int64(), 5, [("hard",)], None,
               "the delete operation's EmptyHoodieRecordPayload: combineAndGetUpdateValue returns empty", "COPY_ON_WRITE"),
    DeleteCase("hard-delete-mor", pa.int64(), 5, [("hard",)], None, "written as IntWrapper(0): natural order"),
    DeleteCase("soft-delete-lower-cow", pa.int64(), 5, [("soft", 4)], "base",
               "DefaultHoodieRecordPayload compares a _hoodie_is_deleted record like any: 5 > 4", "COPY_ON_WRITE"),
    DeleteCase("soft-delete-tie-cow", pa.int64(), 5, [("soft", 5)], None, "5 <= 5: the soft delete applies", "COPY_ON_WRITE"),
    DeleteCase("soft-delete-lower-event-time-payload", pa.int64(), 5, [("soft", 4)], None,
               "EventTimeAvroPayload.combineAndGetUpdateValue deletes before comparing", "COPY_ON_WRITE", EVENT_TIME_PAYLOAD),
    DeleteCase("soft-delete-lower-mor", pa.int64(), 5, [("soft", 4)], "base",
               "a delete block's LongWrapper(4) below the base's 5 (Hudi 1.x file group reader; 0.14's scanner has no record to compare and deletes)"),
    DeleteCase("record-then-lower-delete", pa.int64(), 1, [("record", 6), ("block", 4, "LongWrapper")], "record",
               "processNextDeletedRecord: isSameClass(Long, Long) and 6 > 4: the record stays"),
    DeleteCase("record-then-int-delete-after-widening", pa.int64(), 1, [("record", 6), ("block", 4, "IntWrapper")], None,
               "an IntWrapper in a long column: isSameClass(Long, Integer) is false, the delete wins", hudi_rs=False),
    DeleteCase("natural-delete-then-lower-record", pa.int64(), 5, [("block", 0, "IntWrapper"), ("record", 3)], "base",
               "the record after a natural-order delete wins the log; then 5 > 3 against the base"),
    DeleteCase("natural-delete-swallows-next-delete", pa.int64(), 5, [("block", 0, "IntWrapper"), ("block", 4, "LongWrapper")], None,
               "a delete after a natural-order delete keeps the natural one (the base is deleted)"),
    DeleteCase("string-delete-v6", pa.string(), "a", [("record", "m"), ("block", "c", "StringWrapper")], None,
               "Hudi 0.14: String (wrapper) vs Utf8 (record): isSameClass is false, the delete wins", hudi_rs=False),
    DeleteCase("string-delete-v8", pa.string(), "a", [("record", "m"), ("block", "c", "StringWrapper")], "record",
               "Hudi 1.x turns the String into Utf8: m > c, the record stays", version=8, hudi_rs=False),
    DeleteCase("timestamp-micros-wrapper", pa.timestamp("us", tz="UTC"), T0, [("record", T0 + _dt.timedelta(days=1)), ("block", T0, "TimestampMicrosWrapper")], None,
               "java.sql.Timestamp vs the record's Long: isSameClass is false, the delete wins", hudi_rs=False),
    DeleteCase("timestamp-long-wrapper", pa.timestamp("us", tz="UTC"), T0, [("soft", T0 + _dt.timedelta(days=1)), ("record", T0 + _dt.timedelta(days=2))], "record",
               "a soft delete of a timestamp carries the payload's Long (LongWrapper); the later greater record wins"),
]


def _delete_rows(key: str, step: tuple) -> list[dict]:
    kind = step[0]
    if kind == "record":
        return [{"id": key, "ord": step[1], "v": "record"}]
    if kind == "soft":
        return [{"id": key, "ord": step[1], "v": "soft", "delete": "soft"}]
    return [{"id": key, "ord": None, "v": "hard", "delete": "hard"}]


@pytest.mark.parametrize("case", [c for c in DELETE_CASES if c.version == 6], ids=lambda c: c.name)
def test_deletes_agree_with_java(tmp_path, case):
    """Written by the handles (and other writers' delete blocks), read by us, hudi-rs, and compacted."""
    table = CoreTable(tmp_path / "t", case.dtype, case.table_type, case.payload, case.version)
    table.write([{"id": "k", "ord": case.base, "v": "base"}])
    for step in case.steps:
        if step[0] == "block":
            table.delete_block("k", step[1], step[2])
        else:
            table.write(_delete_rows("k", step))
    rows = table.rows()
    assert rows.get("k", (None,))[0] == case.survivor, case.why
    if case.hudi_rs:
        assert table.hudi_rs_rows().get("k", (None,))[0] == case.survivor, f"hudi-rs: {case.why}"
    if table.is_mor:
        table.compact()
        assert table.rows().get("k", (None,))[0] == case.survivor, f"compaction: {case.why}"


def _case_entries(case: DeleteCase) -> tuple[list[LogEntry], list[Any]]:
    entries, values = [], []
    for i, step in enumerate(case.steps):
        kind = step[0]
        if kind == "block":
            entries.append(LogEntry("k", True, delete_ordering(step[1], step[2], case.version), None))
            values.append(step[1])
        elif kind == "record":
            entries.append(LogEntry("k", False, _ordering(step[1], case.dtype), i))
            values.append(step[1])
        elif kind == "soft":
            entries.append(LogEntry("k", True, _ordering(step[1], case.dtype), None))
            values.append(step[1])
        else:
            entries.append(LogEntry("k", True, NATURAL, None))
            values.append(None)
    return entries, values


@pytest.mark.parametrize("case", [c for c in DELETE_CASES if c.table_type == "MERGE_ON_READ"], ids=lambda c: c.name)
def test_deletes_in_the_fold_model_and_sql(case):
    """The core's fold, the transcription of Hudi's scanner, and SQL give the same survivor."""
    entries, values = _case_entries(case)
    column = column_class(case.dtype)
    base = _ordering(case.base, case.dtype)
    states = fold_log_records(entries, EVENT, column)
    outcome = merge_with_base(pa.array(["k"]), pa.array([case.base], case.dtype), states, EVENT)
    core = "base" if not outcome.dropped_base_rows else ("record" if outcome.winning_log_rows else None)
    scanned = model_scan([Rec(e.is_delete, e.ordering, e.row) for e in entries], EVENT, column)
    final = model_final(Rec(False, base, "base"), scanned, EVENT, column)
    modelled = None if final is None else ("base" if final.tag == "base" else "record")
    sql = sql_winner(entries, values, case.dtype, case.base, True, EVENT)
    in_sql = "base" if sql == "base" else (None if sql is None else "record")
    assert core == modelled == in_sql == case.survivor, case.why


# -- random sequences: the core against the model, read back by hudi-rs --------------------------------------

KEYS = st.sampled_from(["a", "b"])
#: later writes carry no null ordering values: the writer refuses them (``merge.incoming``)
UPSERT = st.one_of(
    st.tuples(st.just("record"), KEYS, st.integers(-3, 3)),
    st.tuples(st.just("soft"), KEYS, st.integers(-3, 3)),
)
#: the ``delete`` operation: keys only (Hudi never mixes it with records in one batch)
DELETE = st.tuples(st.just("hard"), KEYS, st.none())


def _model_table(commits: list[list[tuple]], is_mor: bool, mode: MergeMode) -> dict[str, Any]:
    """Key -> surviving ordering value, by the transcription of Hudi's code."""
    column = JavaClass.LONG
    if not is_mor:
        stored: dict[str, Rec] = {}
        for commit in commits:
            for kind, key, value in commit:
                incoming = Rec(kind != "record", NATURAL if kind == "hard" else _ordering(value, pa.int64()), value)
                if key not in stored:
                    if kind == "record":
                        stored[key] = incoming
                    continue
                result = model_final(stored[key], incoming, mode, column)
                if result is None:
                    del stored[key]
                else:
                    stored[key] = result
        return {k: r.tag for k, r in stored.items()}
    base = {key: Rec(False, _ordering(value, pa.int64()), value) for kind, key, value in commits[0] if kind == "record"}
    logs: dict[str, list[Rec]] = {}
    for commit in commits[1:]:
        for kind, key, value in commit:
            ordering = NATURAL if kind == "hard" or (kind == "soft" and value is None) else _ordering(value, pa.int64())
            logs.setdefault(key, []).append(Rec(kind != "record", ordering, value))
    out = {}
    for key in set(base) | set(logs):
        final = model_final(base.get(key), model_scan(logs.get(key, []), mode, column), mode, column)
        if final is not None:
            out[key] = final.tag
    return out


def _commits_strategy():
    def batch(step):
        return st.lists(step, min_size=1, max_size=2, unique_by=lambda s: s[1])

    # the first write inserts (a null ordering value is stored: inserts do not combine)
    first = batch(st.tuples(st.just("record"), KEYS, st.one_of(st.none(), st.integers(-3, 3))))
    later = st.one_of(batch(UPSERT), batch(UPSERT), batch(DELETE))
    return st.tuples(first, st.lists(later, min_size=1, max_size=3)).map(lambda t: [t[0]] + t[1])


def _values(commit: list[tuple]) -> list[Any]:
    return [value for _, _, value in commit]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("payload", [DEFAULT_PAYLOAD, OVERWRITE_WITH_LATEST_PAYLOAD])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=_commits_strategy())
def test_random_sequences_match_hudi(tmp_path_factory, table_type, payload, commits):
    path = tmp_path_factory.mktemp("seq")
    table = CoreTable(path / "t", pa.int64(), table_type, payload)
    for commit in commits:
        table.write([{"id": key, "ord": value, "v": f"{kind}", "delete": None if kind == "record" else kind} for kind, key, value in commit])
    mode = resolve_write_merge(payload, None, "ord").mode
    want = _model_table(commits, table_type == "MERGE_ON_READ", mode)
    got = {k: v[1] for k, v in table.rows().items()}
    assert got == want, commits
    if all(value is not None for value in _values(commits[0])):  # hudi-rs reads a null ordering value as 0
        assert {k: v[1] for k, v in table.hudi_rs_rows().items()} == want, ("hudi-rs", commits)
    if table.is_mor:
        table.compact()
        assert {k: v[1] for k, v in table.rows().items()} == want, ("compaction", commits)
    shutil.rmtree(path, ignore_errors=True)


ENTRY = st.one_of(
    st.tuples(st.just("record"), st.one_of(st.none(), st.integers(-3, 3))),
    st.tuples(st.just("delete"), st.sampled_from([None, ("IntWrapper", 0), ("IntWrapper", 2), ("LongWrapper", 0), ("LongWrapper", -1), ("LongWrapper", 2)])),
)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(ENTRY, max_size=6), base=st.one_of(st.none(), st.integers(-3, 3)), has_base=st.booleans(),
       mode=st.sampled_from([EVENT, COMMIT]))
def test_rank_fold_equals_scanner_model_and_sql(steps, base, has_base, mode):
    """Ranks (the rule as data) give the scanner's winner, in Python and in SQL, for any log."""
    entries, values = [], []
    for i, (kind, payload) in enumerate(steps):
        if kind == "record":
            entries.append(LogEntry("k", False, _ordering(payload, pa.int64()), i))
            values.append(payload)
        else:
            ordering = delete_ordering(payload[1], payload[0]) if payload else NATURAL
            entries.append(LogEntry("k", True, ordering, None))
            values.append(payload[1] if payload else None)
    column = JavaClass.LONG
    states = fold_log_records(entries, mode, column)
    base_array = pa.array(["k"] if has_base else [], pa.string())
    outcome = merge_with_base(base_array, pa.array([base] if has_base else [], pa.int64()), states, mode)
    core = "base" if has_base and not outcome.dropped_base_rows else (outcome.winning_log_rows[0] if outcome.winning_log_rows else None)
    base_rec = Rec(False, _ordering(base, pa.int64()), "base") if has_base else None
    final = model_final(base_rec, model_scan([Rec(e.is_delete, e.ordering, e.row) for e in entries], mode, column), mode, column)
    modelled = None if final is None else final.tag
    assert core == modelled, (steps, base, has_base)
    assert sql_winner(entries, values, pa.int64(), base, has_base, mode) == core, (steps, base, has_base)


# -- Spark: in-batch precombine, the global index's merge, and whole writes --------------------------------------


def _spark_pairs(spark, dtype: pa.DataType, pairs: list[tuple[str, Any, Any]]):
    from pyspark.sql.pandas.types import from_arrow_type

    spark_type = from_arrow_type(dtype)
    from pyspark.sql import types as T

    schema = T.StructType(
        [T.StructField(RECORD_KEY, T.StringType()), T.StructField(PARTITION_PATH, T.StringType()),
         T.StructField("ord", spark_type), T.StructField("v", T.StringType())]
    )
    rows = []
    for key, stored, incoming in pairs:
        rows.append((key, "", stored, "stored"))
        rows.append((key, "", incoming, "incoming"))
    return spark.createDataFrame(rows, schema).coalesce(1)


@pytest.mark.parametrize("dtype", TYPES)
def test_spark_renderings_agree_with_java(small_spark, dtype):
    from pyspark.sql import functions as F

    from spark_writer import ordering as spark_ordering
    from spark_writer import prepare
    from spark_writer.config import parse_options

    cases = cases_of(dtype)
    arrow_type = cases[0].dtype
    cfg = parse_options({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                         "hoodie.datasource.write.precombine.field": "ord"})
    # in-batch precombine: a batch holds both records (nulls never get here: they are refused)
    batch = [c for c in cases if c.stored is not None]
    if batch:
        df = _spark_pairs(small_spark, arrow_type, [(c.key, c.stored, c.incoming) for c in batch])
        winners = {r[RECORD_KEY]: r["v"] for r in prepare.precombine(df, cfg, global_index=False).collect()}
        assert winners == {c.key: c.winner for c in batch}
    # the global index's merge: does the incoming record win against the existing one?
    df = _spark_pairs(small_spark, arrow_type, [(c.key, c.stored, c.incoming) for c in cases])
    paired = (
        df.filter(F.col("v") == "stored").select(RECORD_KEY, F.col("ord").alias("existing"))
        .join(df.filter(F.col("v") == "incoming").select(RECORD_KEY, "ord"), RECORD_KEY)
    )
    rule = spark_ordering.rule_for(paired, "ord")
    decided = paired.select(RECORD_KEY, (~spark_ordering.greater(F.col("existing"), F.col("ord"), rule)).alias("wins"))
    assert {r[0]: r[1] for r in decided.collect()} == {c.key: c.winner == "incoming" for c in cases}


E2E_DDL = "id string, p string, ts long, v string, _hoodie_is_deleted boolean"


def _e2e_options(table_type: str, operation: str, **extra: str) -> dict[str, str]:
    options = {
        "hoodie.table.name": "agree",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.payload.class": DEFAULT_PAYLOAD,
        "hoodie.datasource.write.operation": operation,
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
    }
    options.update(extra)
    return options


def _frame(spark, rows: list[tuple]):
    return spark.createDataFrame([(*r, *(False,) * (5 - len(r))) if len(r) < 5 else r for r in rows], E2E_DDL).coalesce(1)


def _read(path: str, hudi_rs: bool = False) -> dict[str, tuple]:
    table = hudi_rs_read(path) if hudi_rs else read_snapshot(path).read_all()
    return {r["id"]: (r["p"], r["ts"], r["v"]) for r in table.to_pylist()}


def _timeline_and_files(path: str) -> tuple[list[str], list[str]]:
    root = Path(path)
    timeline = sorted(p.name for p in (root / ".hoodie").iterdir() if p.is_file())
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    return timeline, files


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_writes_reads_and_compaction_agree(small_spark, tmp_path, table_type):
    """Stored nulls, negatives, ties, a losing soft delete and in-batch duplicates, through whole writes."""
    import spark_writer

    path = str(tmp_path / "t")
    inserted = [("k_null", "a", None, "stored"), ("k_neg", "a", -5, "stored"), ("k_tie", "a", 3, "stored"),
                ("k_big", "b", 10, "stored"), ("k_soft", "b", 4, "stored"), ("k_dup", "b", 0, "stored")]
    # inserts do not combine: Hudi builds no payload with the ordering value, the null is stored
    spark_writer.write(_frame(small_spark, inserted), path, _e2e_options(table_type, "insert"))
    upserts = [("k_null", "a", -7, "incoming"), ("k_neg", "a", -6, "incoming"), ("k_tie", "a", 3, "incoming"),
               ("k_big", "b", 2, "incoming"), ("k_soft", "b", 1, "incoming", True),
               ("k_dup", "b", 5, "incoming"), ("k_dup", "b", -1, "late")]
    spark_writer.write(_frame(small_spark, upserts), path, _e2e_options(table_type, "upsert"))
    want = {
        "k_null": ("a", -7, "incoming"),  # persistedOrderingVal == null
        "k_neg": ("a", -5, "stored"),  # -5 > -6
        "k_tie": ("a", 3, "incoming"),  # equal: the incoming record
        "k_big": ("b", 10, "stored"),  # 10 > 2
        "k_soft": ("b", 4, "stored"),  # a soft delete at 1 loses to 4 (DefaultHoodieRecordPayload)
        "k_dup": ("b", 5, "incoming"),  # preCombine in the batch: 5 > -1
    }
    assert _read(path) == want
    theirs = _read(path, hudi_rs=True)
    assert {k: v for k, v in theirs.items() if k != "k_null"} == {k: v for k, v in want.items() if k != "k_null"}
    if table_type == "MERGE_ON_READ":
        assert spark_writer.compact(small_spark, path)
        assert _read(path) == want, "after compaction"


def test_global_index_merge_agrees(small_spark, tmp_path):
    """A key moving partition: the stored null loses, a greater stored value keeps the record where it is."""
    import spark_writer

    path = str(tmp_path / "g")
    extra = {"hoodie.index.type": "GLOBAL_SIMPLE", "hoodie.simple.index.update.partition.path": "true"}
    spark_writer.write(_frame(small_spark, [("g_null", "a", None, "stored"), ("g_low", "a", 5, "stored")]), path,
                       _e2e_options("COPY_ON_WRITE", "insert", **extra))
    spark_writer.write(_frame(small_spark, [("g_null", "b", -3, "incoming"), ("g_low", "b", 2, "incoming")]), path,
                       _e2e_options("COPY_ON_WRITE", "upsert", **extra))
    assert _read(path) == {
        "g_null": ("b", -3, "incoming"),  # persisted null: the incoming record wins and moves to b
        "g_low": ("a", 5, "stored"),  # 5 > 2: the stored record stays in a (mergeForPartitionUpdatesIfNeeded)
    }


def test_null_ordering_is_refused_before_any_instant(small_spark, tmp_path):
    import spark_writer
    from hudi_duck.core.errors import WriteError

    fresh = str(tmp_path / "fresh")
    rows = [("n1", "a", None, "x"), ("n2", "a", 1, "y")]
    with pytest.raises(WriteError, match=r"null ordering value in precombine field 'ts'.*record key 'n1'") as info:
        spark_writer.write(_frame(small_spark, rows), fresh, _e2e_options("COPY_ON_WRITE", "upsert"))
    assert "Traceback" not in str(info.value) and len(str(info.value)) < 600
    assert not Path(fresh).exists() or not (Path(fresh) / ".hoodie").exists(), "no table for a refused write"

    path = str(tmp_path / "t")
    spark_writer.write(_frame(small_spark, [("k1", "a", 1, "x")]), path, _e2e_options("MERGE_ON_READ", "upsert"))
    before = _timeline_and_files(path)
    refused = [
        ("upsert", {}),  # hoodie.combine.before.upsert (default true)
        ("upsert", {"hoodie.combine.before.upsert": "false"}),  # into a log: unreadable for Hudi's scanner
        ("insert", {"hoodie.datasource.write.insert.drop.duplicates": "true"}),
        ("bulk_insert", {"hoodie.combine.before.insert": "true"}),
    ]
    for operation, extra in refused:
        with pytest.raises(WriteError, match="precombine field 'ts'"):
            spark_writer.write(_frame(small_spark, rows), path, _e2e_options("MERGE_ON_READ", operation, **extra))
        assert _timeline_and_files(path) == before, f"{operation} {extra} left a trace"
    # the delete operation sends keys only
    spark_writer.write(_frame(small_spark, [("k1", "a", None, "x")]), path, _e2e_options("MERGE_ON_READ", "delete"))
    assert _read(path) == {}
