"""Plans whose files were found as the commits wrote them, kept across processes.

A plan checks every file the completed commits on the timeline wrote against the
listing it read (``integrity.check_plan_files``). Nearly always every file is there
with the size written, and the answer is the same for the same commit files and the
same listing. So that answer is kept (:mod:`~hudi_duck.core.storage.kept`), known by
a digest of exactly what it depends on: each admitted commit file's name and ``stat``
signature (device, inode, size, modified and changed times: a rewritten file differs),
every base and log file of the listing read with its size, and what narrowed the check.
A new process whose plan has the same digest skips the check and the decoding of the
commit files; any difference, however small, and the check runs in full.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from array import array
from typing import Iterable

from ..storage import kept

log = logging.getLogger("hudi_duck")

KIND = "checked-plans"
#: Bumped whenever what a digest covers changes; older entries are ignored.
FORMAT = 2
#: Digests kept per timeline folder (the latest; a table read at several points in time or
#: with several filters has one per plan shape).
MAX_KEPT = 32

_KNOWN: dict[str, list[bytes]] = {}
_known_lock = threading.Lock()


def digest(
    commits: Iterable[tuple[str, tuple[int, ...]]],
    base_files: dict[str, int],
    log_files: dict[str, int],
    narrowing: tuple,
) -> bytes:
    """The digest of one plan's check: the admitted commit files (name, signature), the base
    and log files read (path, size) and what narrowed the check (replaced file groups,
    partitions, file groups, whether logs are read). Taken in the order given (a plan lists
    the same files in the same order): another order only misses what was kept."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{FORMAT}\n".encode())
    h.update(repr(list(commits)).encode())
    for files in (base_files, log_files):
        names = "\n".join(files).encode()
        h.update(len(files).to_bytes(8, "little") + len(names).to_bytes(8, "little") + names)
        h.update(array("q", files.values()).tobytes())
    h.update(repr(narrowing).encode())
    return h.digest()


def _decode(data: bytes | None) -> list[bytes]:
    import msgspec

    if not data:
        return []
    try:
        fmt, digests = msgspec.msgpack.decode(data, type=tuple[int, list[bytes]])
    except (msgspec.MsgspecError, ValueError, TypeError) as exc:
        log.debug("ignoring a damaged checked-plans entry: %s", exc)
        return []
    return digests if fmt == FORMAT else []


def _known(timeline_uri: str) -> list[bytes]:
    with _known_lock:
        found = _KNOWN.get(timeline_uri)
    if found is None:
        found = _decode(kept.load(KIND, timeline_uri))
        with _known_lock:
            found = _KNOWN.setdefault(timeline_uri, found)
    return found


def is_checked(timeline_uri: str, key: bytes) -> bool:
    """Whether a plan of digest ``key`` was checked clean by this or an earlier process."""
    return key in _known(timeline_uri)


def remember(timeline_uri: str, key: bytes) -> None:
    """Keep a clean check's digest, for this process and the next ones."""
    import msgspec

    known = _known(timeline_uri)
    if key in known:
        return
    with _known_lock:
        updated = (_KNOWN.get(timeline_uri, []) + [key])[-MAX_KEPT:]
        _KNOWN[timeline_uri] = updated

    def encode() -> bytes:
        # (merged with what other processes kept meanwhile, the newest last)
        on_disk = _decode(kept.load(KIND, timeline_uri))
        merged = [d for d in on_disk if d not in updated] + updated
        return msgspec.msgpack.encode((FORMAT, merged[-MAX_KEPT:]))

    kept.save_later(KIND, timeline_uri, encode)


def forget() -> None:
    """Forget what this process knows (tests: a process that starts afresh)."""
    with _known_lock:
        _KNOWN.clear()
