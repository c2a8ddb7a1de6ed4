"""Named kill points: where an instant's lifecycle can be cut by a crash, on purpose.

Every step of a commit that leaves something on storage calls :func:`reach` with the
name of the phase it just finished. When the environment variable
``HUDI_DUCK_KILL_AT`` names that phase (``inflight_written``) or the phase of one
action (``compaction:inflight_written``), optionally the n-th time it is reached
(``data_file_written#3``; the first by default), the process kills itself with SIGKILL: no
``finally`` block, no abort, no flush runs, exactly as if the machine lost power
there. Crash tests use this to show that every such point leaves a table that readers
see at its last committed state and that the next writer repairs.

The variable is read once, at import; unset (the normal case), :func:`reach` only
compares a string with ``None``.
"""

from __future__ import annotations

import os
import signal

#: The variable naming the phase to die at: ``<phase>`` or ``<action>:<phase>``, with ``#<n>`` the n-th time.
KILL_AT_VARIABLE = "HUDI_DUCK_KILL_AT"

#: Phases of every instant (writes and every table service), in lifecycle order.
REQUESTED_WRITTEN = "requested_written"  # <t>.<action>.requested (a service's plan) is on storage
INFLIGHT_WRITTEN = "inflight_written"  # <t>.<action>.inflight is on storage
MARKER_WRITTEN = "marker_written"  # the first marker of the instant, before its data file
DATA_FILE_WRITTEN = "data_file_written"  # the first data file (base or log) of the instant
DATA_FILES_WRITTEN = "data_files_written"  # every data file is written: the commit begins
BEFORE_COMPLETED = "before_completed"  # markers reconciled, participants done: the completed file is next
COMPLETED_WRITTEN = "completed_written"  # the completed file (the commit metadata) is published
CLEANED_UP = "cleaned_up"  # after publication, the markers are deleted: the instant is done

#: Phases of services that change files between inflight and completed.
CLEAN_FILE_DELETED = "clean_file_deleted"  # a clean deleted the first of its planned files
ROLLBACK_UNPUBLISHED = "rollback_unpublished"  # the completed file of the instant rolled back is deleted
ROLLBACK_FILE_DELETED = "rollback_file_deleted"  # a rollback deleted the first file of the rolled-back instant
ROLLBACK_BLOCK_WRITTEN = "rollback_block_written"  # a rollback appended its first command block (merge-on-read)
ROLLBACK_INSTANT_DELETED = "rollback_instant_deleted"  # a rollback deleted the rolled-back instant's timeline files

#: Phases of archival.
ARCHIVE_FILE_WRITTEN = "archive_file_written"  # the archive log file holds the entries; nothing deleted yet
ARCHIVE_PENDING_DELETED = "archive_pending_deleted"  # requested/inflight files of the archived instants deleted
ARCHIVE_COMPLETED_DELETED = "archive_completed_deleted"  # the completed files deleted too: archival is done

#: Every phase name, for tests that enumerate them.
PHASES = (
    REQUESTED_WRITTEN,
    INFLIGHT_WRITTEN,
    MARKER_WRITTEN,
    DATA_FILE_WRITTEN,
    DATA_FILES_WRITTEN,
    BEFORE_COMPLETED,
    COMPLETED_WRITTEN,
    CLEANED_UP,
    CLEAN_FILE_DELETED,
    ROLLBACK_UNPUBLISHED,
    ROLLBACK_FILE_DELETED,
    ROLLBACK_BLOCK_WRITTEN,
    ROLLBACK_INSTANT_DELETED,
    ARCHIVE_FILE_WRITTEN,
    ARCHIVE_PENDING_DELETED,
    ARCHIVE_COMPLETED_DELETED,
)


def _parse(value: str | None) -> tuple[str | None, int]:
    """``phase``, ``action:phase`` or either with ``#n``: (the name, n)."""
    if not value:
        return None, 0
    name, _, nth = value.partition("#")
    return name, int(nth) if nth.isdigit() and int(nth) > 0 else 1


_KILL_AT, _NTH = _parse(os.environ.get(KILL_AT_VARIABLE))
_hits = 0


def reach(phase: str, action: str | None = None) -> None:
    """The current instant (of ``action``) finished ``phase``: die here if asked to."""
    global _hits
    if _KILL_AT is None:
        return
    if _KILL_AT == phase or (action is not None and _KILL_AT == f"{action}:{phase}"):
        _hits += 1
        if _hits >= _NTH:
            os.kill(os.getpid(), signal.SIGKILL)
