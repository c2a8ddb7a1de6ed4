"""Incoming records Hudi refuses for their ordering value, decided before a write starts.

Apache Hudi 0.14's Spark datasource builds each record's payload with its
ordering value when the operation combines records
(``HoodieCreateRecordUtils``: upserts with ``hoodie.combine.before.upsert``,
insert-like operations with ``hoodie.combine.before.insert`` or
``hoodie.datasource.write.insert.drop.duplicates``), and ``BaseAvroPayload``
throws "Ordering value is null for record" for a null one. Without combining,
a null still breaks the write later: event-time merges compare it with the
stored value (``DefaultHoodieRecordPayload.needUpdatingPersistedRecord``: a
``NullPointerException``), and a record written into a merge-on-read log can
never be read back (the log scanner builds the same payload). The ``delete``
operation sends keys only: no ordering value, nothing to refuse.
"""

from __future__ import annotations

INSERT_LIKE = ("insert", "bulk_insert", "insert_overwrite", "insert_overwrite_table")


def null_ordering_refusal(
    operation: str,
    *,
    combines: bool,
    event_time: bool,
    is_mor: bool,
    bucket_index: bool,
) -> str | None:
    """Why records with a null ordering value cannot be written by this operation (None: they can)."""
    if operation not in ("upsert",) + INSERT_LIKE:
        return None
    if combines:
        return "Hudi builds each record's payload with its ordering value and refuses a null one"
    if operation == "upsert" and event_time:
        return "event-time ordering compares it with the stored record's value"
    into_logs = operation == "upsert" or (bucket_index and operation in ("insert", "bulk_insert"))
    if is_mor and into_logs:
        return "a merge-on-read log record without ordering value cannot be merged by Hudi's log reader"
    return None
