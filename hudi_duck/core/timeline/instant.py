"""Instants: the events of a Hudi timeline and their file names.

An instant is identified by its *requested* time (``yyyyMMddHHmmssSSS``), an
action and a state. Layout 1 (table version <= 6) names files
``<time>.<action>[.requested|.inflight]``; layout 2 (version 8+) names the
completed file ``<requested>_<completed>.<action>`` so the completion time is
known without opening it.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
import time
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from ..frozen import frozen_value


class State(str, Enum):
    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"

    @property
    def rank(self) -> int:
        return _STATE_RANK[self]


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


class Action:
    """Action names, spelled as in timeline file names."""

    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    CLUSTERING = "clustering"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    INDEXING = "indexing"
    SCHEMA_COMMIT = "schemacommit"

    ALL = (
        COMMIT,
        DELTA_COMMIT,
        REPLACE_COMMIT,
        CLUSTERING,
        COMPACTION,
        LOG_COMPACTION,
        CLEAN,
        ROLLBACK,
        SAVEPOINT,
        RESTORE,
        INDEXING,
        SCHEMA_COMMIT,
    )
    #: Actions whose completion writes data files readers must see.
    WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)


#: Pending actions whose completed form carries another action name.
COMPLETED_ACTION = {
    Action.COMPACTION: Action.COMMIT,
    Action.LOG_COMPACTION: Action.DELTA_COMMIT,
    Action.CLUSTERING: Action.REPLACE_COMMIT,
}

INSTANT_TIME_FORMAT = "%Y%m%d%H%M%S"
#: Sentinel times Hudi uses for the metadata table's bootstrap instants.
INIT_INSTANT_TIME = "00000000000000"

#: requested times of 14 or 17 digits, plus a 3-digit suffix on the metadata table (``...001``)
_INSTANT_FILE = re.compile(
    r"^(?P<ts>\d{14,20})(?:_(?P<completed>\d{14,17}))?"
    r"(?:\.(?P<action>[a-z]+))?(?:\.(?P<state>requested|inflight))?$"
)


@dataclass(frozen=True)
class Instant:
    """One instant in one state. ``completion_time`` is known for layout 2."""

    requested_time: str
    action: str
    state: State
    completion_time: str | None = None

    @property
    def timestamp(self) -> str:
        return self.requested_time

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_requested(self) -> bool:
        return self.state is State.REQUESTED

    @property
    def is_inflight(self) -> bool:
        return self.state is State.INFLIGHT

    def with_state(self, state: State, completion_time: str | None = None) -> "Instant":
        action = self.action
        if state is State.COMPLETED:
            action = COMPLETED_ACTION.get(action, action)
        return Instant(self.requested_time, action, state, completion_time)

    # -- file names ------------------------------------------------------------
    def file_name(self, layout_version: int) -> str:
        ts, action = self.requested_time, self.action
        if self.state is State.COMPLETED:
            if layout_version >= 2:
                if not self.completion_time:
                    raise ValueError(f"layout 2 needs a completion time for {self}")
                return f"{ts}_{self.completion_time}.{action}"
            return f"{ts}.{action}"
        if self.state is State.INFLIGHT:
            if action == Action.COMMIT:
                return f"{ts}.inflight"
            return f"{ts}.{action}.inflight"
        return f"{ts}.{action}.requested"

    @staticmethod
    def parse_file_name(name: str) -> "Instant | None":
        """Parse a timeline file name; ``None`` for files that are not instants."""
        return _parse_file_name(name)

    def __str__(self) -> str:
        done = f"__{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{done}__{self.action}__{self.state.value}]"


@lru_cache(maxsize=1 << 16)
def _parse_file_name(name: str) -> Instant | None:
    """``Instant.parse_file_name`` (cached: every plan of a table lists its timeline again;
    instants are immutable values)."""
    match = _INSTANT_FILE.match(name)
    if not match:
        return None
    ts, completed, action, state_text = match.groups()
    if action is None:
        return None
    if action == "inflight" and state_text is None:
        # '<ts>.inflight' is the inflight state of a commit
        return _instant(ts, Action.COMMIT, State.INFLIGHT, None)
    if action not in Action.ALL:
        return None
    if state_text is None:
        state = State.COMPLETED
    else:
        state = State.REQUESTED if state_text == "requested" else State.INFLIGHT
    if completed and state is not State.COMPLETED:
        return None
    return _instant(ts, action, state, completed)


def _instant(requested_time: str, action: str, state: State, completion_time: str | None) -> Instant:
    """``Instant(...)`` as :func:`~hudi_duck.core.frozen.frozen_value` makes it (a plan parses
    thousands of timeline names)."""
    return frozen_value(Instant, {
        "requested_time": requested_time, "action": action, "state": state, "completion_time": completion_time,
    })


# -- instant time generation -------------------------------------------------------

_lock = threading.Lock()
_last_generated = ""


def format_instant_time(moment: _dt.datetime) -> str:
    return moment.strftime(INSTANT_TIME_FORMAT) + f"{moment.microsecond // 1000:03d}"


def parse_instant_time(ts: str, utc: bool = False) -> _dt.datetime:
    """Datetime of an instant time (millisecond or second precision)."""
    base = _dt.datetime.strptime(ts[:14], INSTANT_TIME_FORMAT)
    millis = int(ts[14:17]) if len(ts) >= 17 else 0
    moment = base.replace(microsecond=millis * 1000)
    if utc:
        return moment.replace(tzinfo=_dt.timezone.utc)
    return moment


def new_instant_time(utc: bool = False, after: str | None = None) -> str:
    """A fresh instant time, strictly greater than any this process made before.

    Hudi requires instant times to be unique and increasing; two writes in the
    same millisecond wait for the clock to move on.
    """
    global _last_generated
    with _lock:
        floor = max(_last_generated, after or "")
        while True:
            now = _dt.datetime.now(_dt.timezone.utc) if utc else _dt.datetime.now()
            candidate = format_instant_time(now)
            if candidate > floor:
                _last_generated = candidate
                return candidate
            time.sleep(0.001)


def normalize_instant_time(value: str) -> str:
    """Accept ``yyyyMMddHHmmss[SSS]`` or ISO-like text and return Hudi's form.

    Users pass as-of times in several spellings; Hudi compares them as strings
    of the 17-digit form.
    """
    text = str(value).strip()
    if re.fullmatch(r"\d{14}", text):
        return text + "000"
    if re.fullmatch(r"\d{17}", text):
        return text
    if re.fullmatch(r"\d{8}", text):
        return text + "000000000"
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"):
        try:
            return format_instant_time(_dt.datetime.strptime(text, fmt))
        except ValueError:
            continue
    raise ValueError(
        f"not an instant time: {value!r} (use yyyyMMddHHmmssSSS, e.g. 20240418173551906, "
        "or 'yyyy-MM-dd HH:mm:ss[.SSS]')"
    )
