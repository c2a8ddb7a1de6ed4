"""Line editing and history for the interactive prompt (stdlib ``readline`` when present).

History keeps whole statements, multi-line ones included, so Up recalls what
was run. The file holds one entry a line, newlines and backslashes escaped,
and keeps the latest ``HISTORY_LENGTH`` entries.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

HISTORY_LENGTH = 1000
HISTORY_ENV = "HUDI_DUCK_HISTORY"


def history_path() -> Path:
    """``$HUDI_DUCK_HISTORY``, else ``~/.hudi_duck_history``."""
    configured = os.environ.get(HISTORY_ENV)
    return Path(configured) if configured else Path.home() / ".hudi_duck_history"


def _encode(entry: str) -> str:
    return entry.replace("\\", "\\\\").replace("\n", "\\n")


def _decode(line: str) -> str:
    out: list[str] = []
    chars = iter(line)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            out.append("\n" if following == "n" else following)
        else:
            out.append(char)
    return "".join(out)


class LineEditor:
    """readline's editing and history; without readline, plain ``input()`` and no history."""

    def __init__(self, readline: ModuleType | None, path: Path):
        self.readline = readline
        self.path = path

    @classmethod
    def start(cls, path: Path | None = None) -> "LineEditor":
        path = path or history_path()
        try:
            import readline
        except ImportError:
            return cls(None, path)
        readline.set_auto_history(False)
        editor = cls(readline, path)
        editor._load()
        return editor

    def _load(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return
        for line in lines[-HISTORY_LENGTH:]:
            if line:
                self.readline.add_history(_decode(line))

    def remember(self, entry: str) -> None:
        """Add a finished command, unless blank or the same as the one before."""
        if self.readline is None or not entry.strip():
            return
        count = self.readline.get_current_history_length()
        if count and self.readline.get_history_item(count) == entry:
            return
        self.readline.add_history(entry)

    def save(self) -> None:
        """Write the latest entries; a history file that cannot be written is skipped."""
        if self.readline is None:
            return
        count = self.readline.get_current_history_length()
        first = max(1, count - HISTORY_LENGTH + 1)
        entries = (self.readline.get_history_item(i) for i in range(first, count + 1))
        text = "".join(_encode(entry) + "\n" for entry in entries if entry)
        try:
            self.path.write_text(text, encoding="utf-8")
        except OSError:
            pass
