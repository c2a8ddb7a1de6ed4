"""Progress of the first read of a merge-on-read table, shown on an interactive stderr.

Merging a slice's log files can take seconds, and DuckDB's scan threads merge
slices lazily, so a first MOR read may look stuck. While merges run, one line
on stderr says how many of a plan's slices are merged::

    hudi_snapshot /data/trips: merging log files 12/40 file slices

The line is redrawn in place and cleared as soon as no merge is running, so
query results never print after it. Shown only when stderr is a terminal;
``HUDI_DUCK_PROGRESS=0`` (or ``hudi_duck.set_progress(False)``) turns it off,
``HUDI_DUCK_PROGRESS=1`` (or ``set_progress(True)``) shows it on any stderr.
"""

from __future__ import annotations

import os
import sys
import threading
import time

ENV_VAR = "HUDI_DUCK_PROGRESS"
_REDRAW_SECONDS = 0.1
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")

_setting: bool | None = None
_line_lock = threading.Lock()
_line_shown = False
_last_draw = 0.0


def set_progress(enabled: bool | None) -> None:
    """Show merge progress always (True), never (False), or on a terminal only (None)."""
    global _setting
    _setting = enabled


def enabled() -> bool:
    """Whether a plan made now reports progress (setting, then environment, then terminal)."""
    if _setting is not None:
        return _setting
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


class MergeProgress:
    """Counts the merged slices of one plan; draws while a merge of it runs."""

    def __init__(self, label: str, total: int):
        self.label = label
        self.total = total
        self.done: set[str] = set()
        self.running = 0
        self.lock = threading.Lock()

    def started(self, key: str) -> None:
        """A slice's merge begins (its result was not cached)."""
        with self.lock:
            self.running += 1
            text = self._text()
        _draw(text, force=True)

    def finished(self, key: str, merged: bool) -> None:
        """A slice's result is ready, merged here (``merged``) or found done/cached."""
        with self.lock:
            if merged:
                self.running -= 1
            if key in self.done and not merged:
                return
            self.done.add(key)
            idle = self.running <= 0
            text = self._text()
        if idle:
            clear_line()
        else:
            _draw(text, force=len(self.done) >= self.total)

    def _text(self) -> str:
        return f"{self.label}: merging log files {len(self.done)}/{self.total} file slices"


def for_plan(label: str, total: int) -> MergeProgress | None:
    """A progress counter for a plan merging ``total`` slices, or None when not shown."""
    if total <= 0 or not enabled():
        return None
    return MergeProgress(label, total)


def _draw(text: str, force: bool = False) -> None:
    global _line_shown, _last_draw
    with _line_lock:
        now = time.monotonic()
        if _line_shown and not force and now - _last_draw < _REDRAW_SECONDS:
            return
        _write(f"\r{text}\x1b[K")
        _line_shown = True
        _last_draw = now


def clear_line() -> None:
    """Take the progress line off the terminal (before other output, e.g. a warning)."""
    global _line_shown
    with _line_lock:
        if _line_shown:
            _write("\r\x1b[K")
            _line_shown = False


def _write(text: str) -> None:
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass
