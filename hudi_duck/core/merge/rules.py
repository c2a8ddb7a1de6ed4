"""The merge rule's public names in one import (``mode``, ``ordering``, ``fold``)."""

from .fold import LogEntry, LogState, SliceMergeResult, fold_log_records, merge_with_base, rank_log_entries
from .mode import (
    COMMIT_TIME_STRATEGY_ID,
    DEFAULT_PAYLOAD,
    EVENT_TIME_PAYLOAD,
    EVENT_TIME_STRATEGY_ID,
    OVERWRITE_WITH_LATEST_PAYLOAD,
    MergeConfig,
    MergeMode,
    resolve_merge_config,
    resolve_write_merge,
)
from .ordering import NATURAL, Ordering, column_class, delete_ordering, ordering_values

__all__ = [
    "COMMIT_TIME_STRATEGY_ID",
    "DEFAULT_PAYLOAD",
    "EVENT_TIME_PAYLOAD",
    "EVENT_TIME_STRATEGY_ID",
    "OVERWRITE_WITH_LATEST_PAYLOAD",
    "NATURAL",
    "LogEntry",
    "LogState",
    "MergeConfig",
    "MergeMode",
    "Ordering",
    "SliceMergeResult",
    "column_class",
    "delete_ordering",
    "fold_log_records",
    "merge_with_base",
    "ordering_values",
    "rank_log_entries",
    "resolve_merge_config",
    "resolve_write_merge",
]
