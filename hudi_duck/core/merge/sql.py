"""The merge rule as SQL (DuckDB dialect): the latest record per key, and base survival.

Log records reach SQL with their rank from ``fold.rank_log_entries`` as
columns (ignored, reset), their ordering value in the ordering column's type
and their scan position. :func:`latest_log_records_sql` keeps the winner of
every key, :func:`base_survives_sql` says whether a base row outlives its
key's winner. Both order values as ``ordering.EngineOrdering`` says: nulls
lowest, and for floats ``-0.0`` below ``0.0``.
"""

from __future__ import annotations

from .mode import MergeMode
from .ordering import EngineOrdering


def _zero_sign(column: str) -> str:
    """0.0 above -0.0 (DuckDB compares them equal); NULL for other values."""
    return f"(CASE WHEN {column} = 0 THEN NOT signbit({column}) END)"


def order_desc_sql(column: str, spec: EngineOrdering) -> list[str]:
    """ORDER BY terms putting the greatest ordering value first (nulls last)."""
    terms = [f"{column} DESC NULLS LAST"]
    if spec.zero_sign:
        terms.append(f"{_zero_sign(column)} DESC NULLS LAST")
    return terms


def greater_sql(left: str, right: str, spec: EngineOrdering) -> str:
    """``left.compareTo(right) > 0`` with nulls lowest (never NULL itself)."""
    strictly = f"{left} > {right}"
    if spec.zero_sign:
        strictly = f"({strictly} OR ({left} = 0 AND {right} = 0 AND NOT signbit({left}) AND signbit({right})))"
    return f"({left} IS NOT NULL AND ({right} IS NULL OR coalesce({strictly}, false)))"


def latest_log_records_sql(
    relation: str,
    *,
    key: str,
    seq: str,
    ignored: str,
    reset: str,
    ordering: str | None,
    spec: EngineOrdering | None,
    one_record_per_key: bool = False,
) -> str:
    """A query over ``relation`` (one row per log record) returning each key's winning record.

    ``one_record_per_key``: no key has two records, so each record that is not ignored wins
    by itself (no window to rank them: the common case of an upsert's log block)."""
    if one_record_per_key:
        return f"SELECT * FROM {relation} WHERE NOT {ignored}"
    order = [f"({seq} >= coalesce(_hd_last_reset, {seq})) DESC", f"{reset} ASC"]
    if ordering is not None and spec is not None:
        order += order_desc_sql(ordering, spec)
    order.append(f"{seq} DESC")
    return (
        f"SELECT * EXCLUDE (_hd_last_reset) FROM ("
        f"SELECT *, max(CASE WHEN {reset} THEN {seq} END) OVER (PARTITION BY {key}) AS _hd_last_reset "
        f"FROM {relation} WHERE NOT {ignored}) "
        f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {', '.join(order)}) = 1"
    )


def base_survives_sql(
    mode: MergeMode,
    *,
    base_ordering: str | None,
    winner_ordering: str | None,
    winner_reset: str,
    winner_is_delete: str,
    spec: EngineOrdering | None,
    soft_deletes_ordered: bool = True,
) -> str:
    """A predicate: does a base row survive its key's winning log record (both present)?"""
    if mode is MergeMode.COMMIT_TIME_ORDERING or base_ordering is None or winner_ordering is None or spec is None:
        return "false"
    guard = f"NOT {winner_reset}"
    if not soft_deletes_ordered:
        guard += f" AND NOT {winner_is_delete}"
    return f"({guard} AND {greater_sql(base_ordering, winner_ordering, spec)})"


def log_ranks_sql(
    relation: str,
    mode: MergeMode,
    *,
    key: str,
    seq: str,
    is_delete: str,
    never_compared: str,
    natural_delete: str,
    reset: str = "_hd_reset",
    ignored: str = "_hd_ignored",
    one_record_per_key: bool = False,
) -> str:
    """``fold.rank_log_entries`` as a query: ``relation`` with its ``reset`` and ``ignored`` columns.

    A delete is swallowed (event-time ordering) when its key's latest natural-order
    delete before it is later than its latest record before it: the state
    ``rank_log_entries`` carries from one entry to the next, as window columns.
    With ``one_record_per_key`` nothing comes before a record, so nothing is swallowed."""
    if mode is MergeMode.COMMIT_TIME_ORDERING:
        return f"SELECT *, true AS {reset}, false AS {ignored} FROM {relation}"
    if one_record_per_key:
        return f"SELECT *, {never_compared} AS {reset}, false AS {ignored} FROM {relation}"
    before = f"(PARTITION BY {key} ORDER BY {seq} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    last_natural_delete = f"coalesce(max(CASE WHEN {natural_delete} THEN {seq} END) OVER {before}, -1)"
    last_record = f"coalesce(max(CASE WHEN NOT {is_delete} THEN {seq} END) OVER {before}, -1)"
    return (
        f"SELECT *, {never_compared} AS {reset}, "
        f"({is_delete} AND {last_natural_delete} > {last_record}) AS {ignored} FROM {relation}"
    )
