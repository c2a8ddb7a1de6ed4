"""Which version of a record wins: log records folded in scan order, then against the base.

The rule, per record key (ordering values compare as in ``ordering``):

**Commit-time ordering** (``OverwriteWithLatestAvroPayload``): the later record
wins, log over base, later log over earlier log; deletes always win.

**Event-time ordering** (``DefaultHoodieRecordPayload``, ``EventTimeAvroPayload``):

* records and deletes with ordering values: the greatest value wins, ties go to
  the later record;
* *resets*, which win over everything before them and lose to anything after
  them: deletes in natural order (``IntWrapper(0)``, no value, the ``delete``
  operation), deletes whose value is of another Java class than the records'
  (``isSameClass`` fails) and records without ordering value (a block written
  before the ordering column existed);
* a delete in natural order swallows the deletes that follow it until the
  next record (their values would compare against its ``Integer 0``);
* against the base record: a reset wins; otherwise the folded record wins
  when its value is >= the base's (a null base value always loses,
  ``DefaultHoodieRecordPayload.needUpdatingPersistedRecord``), and under
  ``EventTimeAvroPayload`` a delete wins without comparing.

So every log record has a *rank*: ignored or not, reset or not, its ordering
value and its position. The winner of a key is the greatest (ordering value,
position) at or after its last reset, a reset counting as lowest there. This
module computes the ranks (:func:`rank_log_entries`) and applies them
(:func:`fold_log_records`, :func:`merge_with_base`); the Spark writer and the
SQL rendering (``sql``) sort by the same ranks. Writers use the same fold:
in-batch precombine is event-time folding without resets (Hudi's
``preCombine`` keeps the greater ordering value under both payloads), the
copy-on-write merge handle keeps the last record of a key (Hudi's
``keyToNewRecords`` map) and merges it with the base record like a reader.

Readers follow Hudi's merge modes (Hudi 1.x's file group reader, which hudi-rs
follows too) for every table version. Hudi 0.14's own log scanner differs in
two places: it keeps the greater ordering value between log records of an
``OverwriteWithLatestAvroPayload`` table (``preCombine``), and a delete from
a log always removes the base record (its empty payload has nothing to compare).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .mode import MergeMode
from .ordering import JavaClass, Ordering, comparable, compare, ordering_values


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One log record in scan order: a data record (row) or a delete."""

    key: str
    is_delete: bool
    ordering: Ordering
    row: int | None = None


@dataclass(frozen=True, slots=True)
class Rank:
    """How a log record takes part in its key's fold."""

    ignored: bool  # a delete swallowed by a preceding natural-order delete
    reset: bool  # wins over what came before, lowest for what follows


@dataclass(slots=True)
class LogState:
    """The buffered outcome for one key after scanning a slice's logs."""

    is_delete: bool
    ordering: Ordering
    row: int | None  # row of the winning data record in the log records table
    reset: bool = False  # the winner has no value comparable to records': never compared with the base


def _never_compared(entry: LogEntry, column_class: JavaClass | None) -> bool:
    """No ordering value, or a delete's value of another class than the records' (``isSameClass``)."""
    ordering = entry.ordering
    if ordering.is_natural:
        return True
    return entry.is_delete and ordering.java_class is not None and ordering.java_class is not column_class


def rank_log_entries(
    entries: Sequence[LogEntry], mode: MergeMode, column_class: JavaClass | None
) -> list[Rank]:
    """The rank of every log record (in scan order): the rule as data, for every engine."""
    ranks = []
    after_natural_delete: dict[str, bool] = {}
    for entry in entries:
        # under commit-time ordering every record is later than the ones before it
        reset = mode is MergeMode.COMMIT_TIME_ORDERING or _never_compared(entry, column_class)
        ignored = (
            mode is MergeMode.EVENT_TIME_ORDERING and entry.is_delete and after_natural_delete.get(entry.key, False)
        )
        if not ignored:
            after_natural_delete[entry.key] = entry.is_delete and entry.ordering.is_natural
        ranks.append(Rank(ignored, reset))
    return ranks


def fold_log_records(
    entries: Iterable[LogEntry], mode: MergeMode, column_class: JavaClass | None = None
) -> dict[str, LogState]:
    """Merge the log records of one slice (or one batch) in scan order: the winner per key.

    ``column_class`` is the Java class of the records' ordering values (the
    ordering column's, :func:`ordering.column_class`); deletes of another class
    are resets."""
    entries = list(entries)
    states: dict[str, LogState] = {}
    for entry, rank in zip(entries, rank_log_entries(entries, mode, column_class)):
        if rank.ignored:
            continue
        state = states.get(entry.key)
        if state is None or rank.reset or state.reset or compare(entry.ordering, state.ordering) >= 0:
            states[entry.key] = LogState(entry.is_delete, entry.ordering, entry.row, _never_compared(entry, column_class))
    return states


def base_wins(mode: MergeMode, base: Ordering, state: LogState, soft_deletes_ordered: bool = True) -> bool:
    """Does the base record survive the folded log record of its key?"""
    if mode is MergeMode.COMMIT_TIME_ORDERING or state.reset:
        return False
    if state.is_delete and not soft_deletes_ordered:
        return False
    if not comparable(base, state.ordering):
        return False
    return compare(base, state.ordering) > 0


# -- merging with the base file ----------------------------------------------------------------


@dataclass
class SliceMergeResult:
    """What a reader does with a slice: drop these base rows, add these log rows."""

    dropped_base_rows: list[int]
    winning_log_rows: list[int]


def merge_with_base(
    base_keys: pa.Array | pa.ChunkedArray | None,
    base_ordering: pa.Array | pa.ChunkedArray | None,
    states: dict[str, LogState],
    mode: MergeMode,
    soft_deletes_ordered: bool = True,
    ordering_field: str = "",
) -> SliceMergeResult:
    """Final merge of folded log states with a base file's rows (base vs log).

    ``base_ordering`` holds the base rows' ordering values in the reader
    schema's type (None: the base file has no ordering column)."""
    dropped: list[int] = []
    winners: list[int] = []
    pending = dict(states)
    if base_keys is not None and len(base_keys) and states:
        keys = pa.array(list(states.keys()), pa.string())
        hits = pc.indices_nonzero(pc.is_in(base_keys, value_set=keys)).to_pylist()
        if hits:
            positions = pa.array(hits)
            hit_keys = base_keys.take(positions).to_pylist()
            hit_column = base_ordering.take(positions) if base_ordering is not None else None
            hit_orders = ordering_values(hit_column, len(hits), ordering_field)
            for position, key, base_ordering_value in zip(hits, hit_keys, hit_orders):
                state = pending.pop(key, None)
                if state is None:
                    continue  # a duplicate key in the base file: only the first merges
                if base_wins(mode, base_ordering_value, state, soft_deletes_ordered):
                    continue
                dropped.append(position)
                if not state.is_delete and state.row is not None:
                    winners.append(state.row)
    for state in pending.values():
        if not state.is_delete and state.row is not None:
            winners.append(state.row)
    winners.sort()
    return SliceMergeResult(dropped, winners)
