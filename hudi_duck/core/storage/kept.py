"""What a process keeps for the next one.

A fresh process plans its first query from scratch: the commit files decoded, the
metadata table's file listing decoded, every file the commits wrote checked against
the listing. What an earlier process learnt of files that have not changed since is
kept as bytes per (kind, URI) where the reader's layer keeps its cache
(:func:`use_store`); without a store (a Spark executor, a writer) nothing is kept.
Each kind decodes its bytes into fixed shapes and checks them against the files they
describe: a damaged, foreign or stale entry is ignored and written again, never
trusted into a plan.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Protocol

log = logging.getLogger("hudi_duck")


class KeptStore(Protocol):
    """Bytes kept per kind and URI for later processes."""

    def load(self, kind: str, uri: str) -> bytes | None: ...

    def save(self, kind: str, uri: str, data: bytes) -> None: ...


_store: KeptStore | None = None


def use_store(store: KeptStore | None) -> None:
    """Keep what processes learn in ``store`` (``None``: only in this process)."""
    global _store
    _store = store


def store() -> KeptStore | None:
    return _store


def load(kind: str, uri: str) -> bytes | None:
    """The bytes kept for ``uri`` (None: no store, nothing kept, or a store that cannot be
    read, which only costs the caller the work the bytes would have saved)."""
    current = _store
    if current is None:
        return None
    try:
        return current.load(kind, uri)
    except Exception as exc:
        log.debug("%s of %s not read: %s", kind, uri, exc)
        return None


_saving: list[threading.Thread] = []
_saving_lock = threading.Lock()


def save_later(kind: str, uri: str, encode: Callable[[], bytes], saved: Callable[[bytes], None] | None = None) -> None:
    """Encode and save on a thread of their own: a plan does not wait for the write (nor for
    the cache's size check at a process's first write). The thread is not a daemon, so a
    process that ends right after its query still saves. ``saved`` gets the bytes once written."""
    current = _store
    if current is None:
        return

    def save() -> None:
        try:
            data = encode()
            current.save(kind, uri, data)
            if saved is not None:
                saved(data)
        except Exception as exc:  # a cache that cannot be written only costs the next process time
            log.debug("%s of %s not kept: %s", kind, uri, exc)

    thread = threading.Thread(target=save, name=f"hudi-duck-kept-{kind}")
    with _saving_lock:
        _saving[:] = [t for t in _saving if t.is_alive()] + [thread]
    thread.start()


def wait_for_saves() -> None:
    """Wait until what is being saved is written (tests; a process exiting waits anyway)."""
    with _saving_lock:
        threads = list(_saving)
    for thread in threads:
        thread.join()
