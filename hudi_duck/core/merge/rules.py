"""Merge semantics of a file slice: which version of a record a reader returns.

Hudi merges per file slice, by record key:

* **Commit-time ordering** (``OverwriteWithLatestAvroPayload``): the later
  record wins, log over base, later log over earlier log; deletes always win.
* **Event-time ordering** (``DefaultHoodieRecordPayload``, ``EVENT_TIME_ORDERING``):
  the record with the greater ordering (precombine) value wins, ties going
  to the later record. A delete without an ordering value (or with ``0``, what
  SQL ``DELETE`` writes) always wins; a delete with a real ordering value loses
  to a strictly greater existing value.

Log records are folded in scan order first (``fold_log_records``); the result
is then merged with the base file's rows (``merge_with_base``). This module is
the only place these rules live: the DuckDB reader, the Python reader and
compaction all call it.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from ..config.table_config import Keys, TableConfig
from ..errors import UnsupportedFeatureError

OVERWRITE_WITH_LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"


class MergeMode(str, Enum):
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"


@dataclass(frozen=True)
class MergeConfig:
    mode: MergeMode
    ordering_field: str | None
    #: Why merging is impossible (custom payloads...); raised only when a merge is needed.
    unsupported: str | None = None

    def require_supported(self, where: str) -> None:
        if self.unsupported:
            raise UnsupportedFeatureError(f"{where}: {self.unsupported}")


def _first(props: dict[str, str], *keys: str) -> str:
    for key in keys:
        value = (props.get(key) or "").strip()
        if value:
            return value
    return ""


def resolve_merge_config(config: TableConfig, options: dict[str, str] | None = None) -> MergeConfig:
    """Merge mode and ordering field of a table, as Hudi infers them per version."""
    props = dict(config.props)
    props.update(options or {})
    ordering = config.ordering_fields
    unsupported = None
    if len(ordering) > 1:
        unsupported = f"multiple ordering fields {','.join(ordering)!r} are not supported"
    ordering_field = ordering[0] if ordering else None

    mode_text = _first(props, Keys.RECORD_MERGE_MODE).upper()
    if mode_text:
        if mode_text in MergeMode.__members__:
            return MergeConfig(MergeMode(mode_text), ordering_field, unsupported)
        return MergeConfig(
            MergeMode.COMMIT_TIME_ORDERING,
            ordering_field,
            f"{Keys.RECORD_MERGE_MODE}={mode_text} (a custom merger) cannot be applied outside the JVM",
        )
    payload = _first(props, Keys.PAYLOAD_CLASS, "hoodie.datasource.write.payload.class", "hoodie.table.legacy.payload.class")
    strategy = _first(props, Keys.RECORD_MERGE_STRATEGY_ID, Keys.RECORD_MERGER_STRATEGY)
    if not payload and not strategy:
        mode = MergeMode.EVENT_TIME_ORDERING if ordering_field else MergeMode.COMMIT_TIME_ORDERING
        return MergeConfig(mode, ordering_field, unsupported)

    def from_payload() -> MergeMode | None:
        if payload in (DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD):
            return MergeMode.EVENT_TIME_ORDERING
        if payload == OVERWRITE_WITH_LATEST_PAYLOAD:
            return MergeMode.COMMIT_TIME_ORDERING
        return None

    def from_strategy() -> MergeMode | None:
        if strategy == EVENT_TIME_STRATEGY_ID:
            return MergeMode.EVENT_TIME_ORDERING
        if strategy == COMMIT_TIME_STRATEGY_ID:
            return MergeMode.COMMIT_TIME_ORDERING
        return None

    if config.version >= 8:
        mode = from_strategy() if strategy else from_payload()
    else:
        mode = from_payload() if payload else from_strategy()
    if mode is None:
        return MergeConfig(
            MergeMode.COMMIT_TIME_ORDERING,
            ordering_field,
            f"records merge with payload {payload or '-'} / strategy {strategy or '-'}, a merger of its own "
            "that only the JVM can run; read it read-optimized or compact it with Apache Hudi",
        )
    return MergeConfig(mode, ordering_field, unsupported)


# -- ordering values ----------------------------------------------------------------------
#
# An ordering value is a pair (class, value). Classes follow Hudi's comparison
# rules: integral, boolean, date and timestamp values compare as longs; floats
# as doubles; decimals by value; strings byte-wise. DEFAULT is Java's Integer 0
# (and a null cell): it equals long 0 but is a different class from the rest.

NONE = 0  # no ordering value at all
DEFAULT = 1
LONG = 2
DOUBLE = 3
DECIMAL = 4
STRING = 5

Ordering = tuple  # (class, value)
NO_ORDERING: Ordering = (NONE, None)
DEFAULT_ORDERING: Ordering = (DEFAULT, 0)


def _same_class(a: Ordering, b: Ordering) -> bool:
    ca, cb = a[0], b[0]
    if ca == cb:
        return True
    return {ca, cb} == {DEFAULT, LONG}


def _value(o: Ordering) -> Any:
    return 0 if o[0] == DEFAULT else o[1]


def ordering_of(value: Any, arrow_type: pa.DataType | None = None) -> Ordering:
    """Ordering value of a record field (or of a delete block's unwrapped value)."""
    import datetime as _dt

    if value is None:
        return DEFAULT_ORDERING
    if isinstance(value, bool):
        return (LONG, int(value))
    if isinstance(value, int):
        if value == 0 and (arrow_type is None or pa.types.is_int32(arrow_type)):
            return DEFAULT_ORDERING
        return (LONG, value)
    if isinstance(value, float):
        return (DOUBLE, value)
    if isinstance(value, decimal.Decimal):
        return (DECIMAL, value)
    if isinstance(value, str):
        return (STRING, value.encode("utf-8"))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (LONG, (value - epoch) // _dt.timedelta(microseconds=1))
    if isinstance(value, _dt.date):
        return (LONG, (value - _dt.date(1970, 1, 1)).days)
    return NO_ORDERING


def ordering_of_delete(value: Any, wrapper: str | None) -> Ordering:
    """Ordering of a delete-block entry: null or ``IntWrapper(0)`` mean natural order."""
    if value is None:
        return NO_ORDERING
    if wrapper == "IntWrapper" and value == 0:
        return DEFAULT_ORDERING
    if wrapper == "BytesWrapper":
        raise UnsupportedFeatureError("a delete block orders by a bytes value, which Hudi cannot compare")
    ordering = ordering_of(value, pa.int64())
    return ordering


def keep_newer(old: Ordering, new: Ordering, new_is_ct_delete: bool, old_is_ct_delete: bool = False) -> bool:
    """Event-time rule: does the newer record replace the older one?"""
    if new_is_ct_delete or old_is_ct_delete:
        return True
    if old[0] == NONE or new[0] == NONE:
        return True
    if not _same_class(old, new):
        return True
    return _value(new) >= _value(old)


# -- folding log records ------------------------------------------------------------------


@dataclass
class LogState:
    """The buffered outcome for one key after scanning a slice's logs."""

    is_delete: bool
    ordering: Ordering
    row: int | None  # row of the winning data record in the log records table

    @property
    def is_ct_delete(self) -> bool:
        return self.is_delete and self.ordering[0] in (NONE, DEFAULT)


@dataclass(frozen=True)
class LogEntry:
    """One log record in scan order: a data record (row) or a delete."""

    key: str
    is_delete: bool
    ordering: Ordering
    row: int | None = None


def fold_log_records(entries: Iterable[LogEntry], mode: MergeMode) -> dict[str, LogState]:
    """Merge log records of one slice in scan order (log vs log)."""
    buffer: dict[str, LogState] = {}
    if mode is MergeMode.COMMIT_TIME_ORDERING:
        for entry in entries:
            buffer[entry.key] = LogState(entry.is_delete, entry.ordering, entry.row)
        return buffer
    for entry in entries:
        existing = buffer.get(entry.key)
        incoming = LogState(entry.is_delete, entry.ordering, entry.row)
        if existing is None:
            buffer[entry.key] = incoming
        elif entry.is_delete and incoming.is_ct_delete is False and not existing.is_ct_delete:
            # a delete with a real ordering value loses to a strictly greater one
            if _same_class(existing.ordering, entry.ordering) and existing.ordering[0] != NONE and (
                _value(existing.ordering) > _value(entry.ordering)
            ):
                continue
            buffer[entry.key] = incoming
        elif entry.is_delete:
            if existing.is_ct_delete:
                continue
            buffer[entry.key] = incoming
        elif keep_newer(existing.ordering, entry.ordering, False, existing.is_ct_delete):
            buffer[entry.key] = incoming
    return buffer


# -- merging with the base file ----------------------------------------------------------------


@dataclass
class SliceMergeResult:
    """What a reader does with a slice: drop these base rows, add these log rows."""

    dropped_base_rows: list[int]
    winning_log_rows: list[int]


def _base_wins(mode: MergeMode, base_ordering: Ordering, state: LogState) -> bool:
    if mode is MergeMode.COMMIT_TIME_ORDERING:
        return False
    return not keep_newer(base_ordering, state.ordering, state.is_ct_delete)


def merge_with_base(
    base_keys: pa.Array | pa.ChunkedArray | None,
    base_ordering: pa.Array | pa.ChunkedArray | None,
    states: dict[str, LogState],
    mode: MergeMode,
) -> SliceMergeResult:
    """Final merge of folded log states with a base file's rows (base vs log)."""
    dropped: list[int] = []
    winners: list[int] = []
    pending = dict(states)
    if base_keys is not None and len(base_keys) and states:
        keys = pa.array(list(states.keys()), pa.string())
        hits = pc.indices_nonzero(pc.is_in(base_keys, value_set=keys)).to_pylist()
        if hits:
            hit_keys = base_keys.take(pa.array(hits)).to_pylist()
            ordering_type = base_ordering.type if base_ordering is not None else None
            hit_orders = (
                base_ordering.take(pa.array(hits)).to_pylist() if base_ordering is not None else [None] * len(hits)
            )
            for position, key, raw in zip(hits, hit_keys, hit_orders):
                state = pending.pop(key, None)
                if state is None:
                    continue  # a duplicate key in the base file: only the first merges
                base_ord = ordering_of(raw, ordering_type) if base_ordering is not None else NO_ORDERING
                if _base_wins(mode, base_ord, state):
                    continue
                dropped.append(position)
                if not state.is_delete and state.row is not None:
                    winners.append(state.row)
    for state in pending.values():
        if not state.is_delete and state.row is not None:
            winners.append(state.row)
    winners.sort()
    return SliceMergeResult(dropped, winners)
