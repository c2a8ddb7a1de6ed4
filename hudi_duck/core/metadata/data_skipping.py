"""Data skipping: the file slices a filtered read can leave out, from the metadata
table's ``column_stats`` and ``partition_stats`` partitions.

Conservative by construction: a slice is left out only when *every* file of it
(base file and log files) has statistics for a filtered column that show no
value of the file can pass the filter; a file without statistics, with a
deleted entry, with null bounds or bounds of another kind than the filter's
value keeps its slice. Merging only ever takes a column's value from one of the
slice's records, so no row of a left-out slice could have matched.

Partition statistics (table version 8+) leave out whole partitions, for reads
of the latest slices only: their bounds describe the latest file slices, not
the older ones a time-travel query reads.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..file_group.file_slice import FileSlice
from ..table.filters import ColumnFilter
from .files_reader import MetadataTable
from .records import MetadataRecord, column_index_id, column_stats_key, partition_index_id

COLUMN_STATS = "column_stats"
PARTITION_STATS = "partition_stats"

_EPOCH = _dt.date(1970, 1, 1)


@dataclass(frozen=True)
class SkippingResult:
    """The slices kept and how many were left out by which statistics."""

    slices: tuple[FileSlice, ...]
    skipped_by_partition_stats: int = 0
    skipped_by_column_stats: int = 0


#: ``ValueType`` ordinals (``valueType.typeOrdinal``, table version 9) read back here.
VALUE_TYPE_DECIMAL = 10
VALUE_TYPE_DATE = 12


def stat_value(wrapped: Any, value_type: Mapping[str, Any] | None = None) -> Any:
    """The plain value of a stats wrapper (``IntWrapper``, ``StringWrapper`` ...), read with
    the record's ``valueType`` where version 9 stores one (dates as ints, decimals as
    unscaled bytes); None when it has none or is of a kind whose order is not the
    engine's (bytes, times, timestamps)."""
    if wrapped is None:
        return None
    name = ""
    if isinstance(wrapped, tuple):
        name, wrapped = wrapped
    value = wrapped.get("value") if isinstance(wrapped, Mapping) else wrapped
    ordinal = (value_type or {}).get("typeOrdinal")
    if ordinal == VALUE_TYPE_DECIMAL and isinstance(value, (bytes, bytearray)):
        return _decimal(value, (value_type or {}).get("additionalInfo"))
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if (name.endswith("DateWrapper") or ordinal == VALUE_TYPE_DATE) and is_int:
        return _EPOCH + _dt.timedelta(days=value)
    if ordinal is not None and ordinal > VALUE_TYPE_DATE:
        return None  # times and timestamps
    if name.endswith(("TimestampMicrosWrapper", "TimeMicrosWrapper", "BytesWrapper", "LocalDateWrapper")):
        return None
    if isinstance(value, (bytes, bytearray, _dt.datetime, _dt.time)):
        return None
    return value


def _decimal(unscaled: bytes, precision_scale: Any) -> decimal.Decimal | None:
    """A decimal stored as its unscaled big-endian two's complement; ``precision_scale`` is "p,s"."""
    try:
        scale = int(str(precision_scale).split(",")[1])
    except (IndexError, ValueError):
        return None
    return decimal.Decimal(int.from_bytes(unscaled, "big", signed=True)).scaleb(-scale)


def _range_may_match(stats: Mapping[str, Any] | None, wanted: ColumnFilter) -> bool:
    if stats is None or stats.get("isDeleted"):
        return True
    value_type = stats.get("valueType")
    low = stat_value(stats.get("minValue"), value_type)
    high = stat_value(stats.get("maxValue"), value_type)
    return wanted.may_match_range(low, high)


def _records(metadata: MetadataTable, partition: str, columns: Iterable[str]) -> dict[str, MetadataRecord]:
    records, _ = metadata.records(partition, [column_index_id(c) for c in columns], required=False)
    return records


def skip_slices(
    metadata: MetadataTable,
    available: Iterable[str],
    slices: Iterable[FileSlice],
    filters: tuple[ColumnFilter, ...],
    latest: bool,
) -> SkippingResult:
    """The ``slices`` that may hold a row passing every filter. ``available``: the metadata
    partitions the table lists (``hoodie.table.metadata.partitions``); ``latest``: the read
    takes the latest slices (partition statistics apply)."""
    kept = list(slices)
    if not filters:
        return SkippingResult(tuple(kept))
    available = set(available)
    columns = sorted({f.column for f in filters})
    by_partition = 0
    if latest and PARTITION_STATS in available:
        records = _records(metadata, PARTITION_STATS, columns)

        def partition_may_match(partition: str) -> bool:
            for wanted in filters:
                record = records.get(column_index_id(wanted.column) + partition_index_id(partition))
                if record is not None and not _range_may_match(record.column_stats, wanted):
                    return False
            return True

        verdicts = {p: partition_may_match(p) for p in {s.partition_path for s in kept}}
        before = len(kept)
        kept = [s for s in kept if verdicts[s.partition_path]]
        by_partition = before - len(kept)
    by_column = 0
    if COLUMN_STATS in available and kept:
        records = _records(metadata, COLUMN_STATS, columns)

        def file_may_match(partition: str, file_name: str) -> bool:
            for wanted in filters:
                record = records.get(column_stats_key(partition, file_name, wanted.column))
                if record is None or _range_may_match(record.column_stats, wanted):
                    continue
                return False
            return True

        def slice_may_match(s: FileSlice) -> bool:
            files = ([s.base_file] if s.base_file is not None else []) + list(s.log_files)
            return any(file_may_match(s.partition_path, f.file_name) for f in files)

        before = len(kept)
        kept = [s for s in kept if slice_may_match(s)]
        by_column = before - len(kept)
    return SkippingResult(tuple(kept), by_partition, by_column)


__all__ = ["COLUMN_STATS", "PARTITION_STATS", "SkippingResult", "skip_slices", "stat_value"]
