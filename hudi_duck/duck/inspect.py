"""``hudi_timeline`` and ``hudi_file_slices``: a table's metadata as rows."""

from __future__ import annotations

from typing import Any, Sequence

from ..core.read_plan import plan_snapshot
from ..core.table import HudiTable
from .sql import quote_ident, quote_literal

TIMELINE_COLUMNS = (
    ("requested_time", "VARCHAR"),
    ("action", "VARCHAR"),
    ("state", "VARCHAR"),
    ("completion_time", "VARCHAR"),
    ("operation_type", "VARCHAR"),
    ("file_name", "VARCHAR"),
)

FILE_SLICE_COLUMNS = (
    ("partition_path", "VARCHAR"),
    ("file_id", "VARCHAR"),
    ("base_instant_time", "VARCHAR"),
    ("base_file", "VARCHAR"),
    ("base_file_size", "BIGINT"),
    ("log_files", "VARCHAR[]"),
    ("num_log_files", "INTEGER"),
    ("total_size", "BIGINT"),
)


def _literal(value: Any, sql_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if sql_type.endswith("[]"):
        inner = ", ".join(quote_literal(v) for v in value)
        return f"CAST([{inner}] AS {sql_type})"
    if sql_type in ("BIGINT", "INTEGER"):
        return f"CAST({int(value)} AS {sql_type})"
    return f"CAST({quote_literal(value)} AS {sql_type})"


def rows_sql(columns: Sequence[tuple[str, str]], rows: list[Sequence[Any]]) -> str:
    """A SELECT producing ``rows`` with exactly ``columns`` (even when empty)."""
    if not rows:
        nulls = ", ".join(f"CAST(NULL AS {t}) AS {quote_ident(n)}" for n, t in columns)
        return f"SELECT {nulls} WHERE false"
    selects = []
    for row in rows:
        values = ", ".join(
            f"{_literal(v, t)} AS {quote_ident(n)}" for v, (n, t) in zip(row, columns)
        )
        selects.append(f"SELECT {values}")
    return "\nUNION ALL\n".join(selects)


def timeline_rows(table: HudiTable) -> list[tuple]:
    timeline = table.timeline
    rows = []
    for instant in timeline.instants:
        operation = None
        if instant.is_completed and instant.action in ("commit", "deltacommit", "replacecommit"):
            operation = timeline.commit_metadata(instant).operation_type
        rows.append(
            (
                instant.requested_time,
                instant.action,
                instant.state.value,
                instant.completion_time,
                operation,
                instant.file_name(timeline.layout_version),
            )
        )
    return rows


def timeline_sql(path: str, options: dict[str, Any]) -> str:
    table = HudiTable(path, options)
    return rows_sql(TIMELINE_COLUMNS, timeline_rows(table))


def file_slice_rows(table: HudiTable, as_of: str | None) -> list[tuple]:
    plan = plan_snapshot(table, as_of)
    rows = []
    for s in sorted(plan.slices, key=lambda s: (s.partition_path, s.file_id)):
        base = s.base_file
        rows.append(
            (
                s.partition_path,
                s.file_id,
                s.base_instant_time,
                base.file_name if base else None,
                base.size if base else None,
                [log.file_name for log in s.sorted_logs()],
                len(s.log_files),
                s.total_size,
            )
        )
    return rows


def file_slices_sql(path: str, as_of: str | None, options: dict[str, Any]) -> str:
    table = HudiTable(path, options)
    return rows_sql(FILE_SLICE_COLUMNS, file_slice_rows(table, as_of))
