"""Query planning: which file slices a query reads and which log instants count.

* **snapshot** (optionally as of an instant): every visible file group's slice
  as of the instant; log blocks of completed instants up to it.
* **read optimized**: the latest base file of every file group, logs ignored.
* **incremental** ``(begin, end]``: rows written by the completed commits in
  the window, in their state as of ``end``. Table version 6 windows on
  requested (instant) times, 8+ on completion times, as hudi-rs does.

Times are instant times in any spelling ``normalize_instant_time`` accepts,
plus Hudi's idioms for "from the first commit" as begin time: ``'000'`` (what
Hudi's docs use: every instant time sorts after it) and ``'earliest'`` (Hudi's
incremental query analyzer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Iterable

from ..errors import TimelineError, UnsupportedFeatureError
from ..file_group.file_slice import FileSlice
from ..file_group.reader import SliceReadContext
from ..timeline.instant import Action, Instant, normalize_instant_time
from .table import HudiTable


class QueryType(str, Enum):
    SNAPSHOT = "snapshot"
    READ_OPTIMIZED = "read_optimized"
    INCREMENTAL = "incremental"


@dataclass
class ReadPlan:
    table: HudiTable
    query_type: QueryType
    slices: list[FileSlice]
    admit: Callable[[str], bool]
    as_of: str | None = None
    begin: str | None = None
    end: str | None = None
    #: Incremental queries keep only rows whose ``_hoodie_commit_time`` is in here.
    commit_times: frozenset[str] | None = None
    partitions: list[str] | None = None
    notes: list[str] = field(default_factory=list)

    def context(self) -> SliceReadContext:
        return SliceReadContext.for_table(self.table, self.admit)

    @property
    def slices_with_logs(self) -> list[FileSlice]:
        return [s for s in self.slices if s.log_files]

    @property
    def base_only_slices(self) -> list[FileSlice]:
        return [s for s in self.slices if not s.log_files and s.base_file is not None]


EARLIEST = "earliest"
_INSTANT_FORMS = "yyyyMMddHHmmssSSS (e.g. 20240418173551906), yyyyMMddHHmmss, 'yyyy-MM-dd HH:mm:ss[.SSS]' or 'yyyy-MM-dd'"
_BEFORE_EVERY_INSTANT = re.compile(r"0+")


def parse_query_time(what: str, value: str | None, table_path: str) -> str | None:
    """A query's ``as_of``, ``begin_time`` or ``end_time`` in Hudi's 17-digit form, or None.

    * ``begin_time`` ``'000'`` (any run of zeros) or ``'earliest'``: None, from the
      first commit on, archived ones included, as Hudi reads them;
    * ``end_time`` ``'000'``: before every instant, an empty window (Hudi compares
      instant times as strings); ``'earliest'`` is only a begin time in Hudi;
    * ``as_of``: instant times only, as Hudi's time travel.
    """
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    before_all = bool(_BEFORE_EVERY_INSTANT.fullmatch(text))
    if what == "begin_time" and (before_all or text.lower() == EARLIEST):
        return None
    if what == "end_time" and before_all:
        return "0" * 17
    try:
        return normalize_instant_time(text)
    except ValueError:
        pass
    accepted = f"use an instant time: {_INSTANT_FORMS}"
    if what == "begin_time":
        accepted += ", or '000' / 'earliest' to start from the first commit"
    elif before_all or text.lower() == EARLIEST:
        accepted += "; '000' and 'earliest' mean 'from the first commit' only as begin_time"
    raise TimelineError(f"Hudi table {table_path}: {what} {str(value)!r} is not an instant time; {accepted}")


def plan_snapshot(table: HudiTable, as_of: str | None = None, partitions: Iterable[str] | None = None) -> ReadPlan:
    as_of = parse_query_time("as_of", as_of, table.base_uri)
    table.config.check_readable()
    view = table.file_system_view
    slices = view.latest_slices(as_of=as_of, partitions=partitions)

    def admit(instant: str) -> bool:
        return view.is_committed(instant) and (as_of is None or instant <= as_of)

    return ReadPlan(table, QueryType.SNAPSHOT, slices, admit, as_of=as_of, partitions=list(partitions) if partitions else None)


def plan_read_optimized(
    table: HudiTable, as_of: str | None = None, partitions: Iterable[str] | None = None
) -> ReadPlan:
    as_of = parse_query_time("as_of", as_of, table.base_uri)
    table.config.check_readable()
    view = table.file_system_view
    slices = view.latest_slices(as_of=as_of, partitions=partitions, read_optimized=True)
    return ReadPlan(table, QueryType.READ_OPTIMIZED, slices, lambda _t: False, as_of=as_of)


def _window_key(table: HudiTable, instant: Instant) -> str:
    """Time an incremental window compares: requested (v6) or completion (v8+)."""
    if table.config.version >= 8 and instant.completion_time:
        return instant.completion_time
    return instant.requested_time


def plan_incremental(table: HudiTable, begin: str | None = None, end: str | None = None) -> ReadPlan:
    """Rows of the commits in ``(begin, end]``; ``begin`` None (or '000' / 'earliest') starts at the first commit."""
    begin = parse_query_time("begin_time", begin, table.base_uri)
    end = parse_query_time("end_time", end, table.base_uri)
    table.config.check_readable()
    if not table.has_meta_fields:
        raise UnsupportedFeatureError(
            f"{table.base_uri}: incremental queries need the _hoodie_commit_time meta column, "
            "but the table is written with hoodie.populate.meta.fields=false"
        )
    timeline = table.timeline
    view = table.file_system_view

    def in_window(key: str) -> bool:
        return (begin is None or key > begin) and (end is None or key <= end)

    selected = [i for i in timeline.completed_writes if in_window(_window_key(table, i))]
    touched: set[tuple[str, str]] = set()
    for instant in selected:
        touched |= timeline.commit_metadata(instant).file_ids()
    earliest_active = timeline.completed_writes[0].requested_time if timeline.completed_writes else None
    if earliest_active is None or begin is None or begin < earliest_active:
        # the window reaches back before the active timeline: archived commits count too
        for instant, metadata in timeline.archived_completed_writes():
            if timeline.group(instant.requested_time) is None and in_window(_window_key(table, instant)):
                selected.append(instant)
                touched |= metadata.file_ids()
    commit_times = frozenset(i.requested_time for i in selected)
    replaced: set[tuple[str, str]] = set()
    for instant in timeline.completed([Action.REPLACE_COMMIT]):
        if end is None or _window_key(table, instant) <= end:
            for partition, ids in timeline.commit_metadata(instant).replaced_file_ids().items():
                replaced.update((partition, file_id) for file_id in ids)
    slice_as_of = None
    if end is not None:
        # the slice as of the window end: base instants (requested times) up to it
        slice_as_of = end
    def base_visible(instant: str) -> bool:
        """Base files count if their commit completed by the window end."""
        if end is None or table.config.version < 8:
            return True
        completion = timeline.completion_time(instant)
        return completion is None or completion <= end

    slices = []
    if selected:
        slices = view.latest_slices(
            as_of=slice_as_of,
            partitions=sorted({p for p, _ in touched}),
            file_group_filter=lambda g: (g.partition_path, g.file_id) in touched,
            replaced=replaced,
            base_visible=base_visible,
        )

    def admit(instant: str) -> bool:
        if not view.is_committed(instant):
            return False
        if end is None:
            return True
        completion = timeline.completion_time(instant) if table.config.version >= 8 else None
        return (completion or instant) <= end

    return ReadPlan(
        table,
        QueryType.INCREMENTAL,
        slices,
        admit,
        begin=begin,
        end=end,
        commit_times=commit_times,
    )
