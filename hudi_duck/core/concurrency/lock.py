"""Table locks for optimistic concurrency control (``hoodie.write.lock.provider``).

* ``FileSystemBasedLockProvider``: a file ``lock`` under ``hoodie.write.lock.filesystem.path``
  (default: the table's ``.hoodie``), created exclusively; whoever created it holds the
  lock until deleting it. A lock older than ``hoodie.write.lock.filesystem.expire``
  minutes (if set) is taken to be abandoned and deleted. Needs a file system with atomic
  exclusive creation (local and mounted file systems; not object stores), as in Hudi.
* ``InProcessLockProvider``: a lock per table in this Python process (writers on threads).
"""

from __future__ import annotations

import json
import os
import posixpath
import socket
import threading
import time
from contextlib import contextmanager
from datetime import datetime
from typing import Iterator, Protocol

from ..config.table_config import METAFOLDER
from ..errors import LockError
from ..storage.storage import Storage, get_storage
from .settings import FILESYSTEM_LOCK_PROVIDER, IN_PROCESS_LOCK_PROVIDER, ConcurrencySettings

LOCK_FILE_NAME = "lock"


class LockProvider(Protocol):
    def try_lock(self) -> bool: ...

    def unlock(self) -> None: ...

    def describe(self) -> str:
        """What is locked and, if known, who holds it (for error messages)."""


class FileSystemLock:
    """``FileSystemBasedLockProvider``: an exclusively created lock file."""

    def __init__(self, storage: Storage, lock_path: str | None, expire_minutes: int):
        if lock_path:
            self.storage = get_storage(lock_path, storage.storage_options)
            self.rel = LOCK_FILE_NAME
        else:
            self.storage = storage
            self.rel = f"{METAFOLDER}/{LOCK_FILE_NAME}"
        if not self.storage.is_local:
            raise LockError(
                f"{FILESYSTEM_LOCK_PROVIDER} needs a file system that creates files atomically; "
                f"{self.storage.uri(self.rel)} is on {self.storage.protocol}. Set hoodie.write.lock.filesystem.path "
                "to a shared local or mounted folder, or use a single writer"
            )
        self.expire_seconds = expire_minutes * 60

    @property
    def path(self) -> str:
        return self.storage.uri(self.rel)

    def try_lock(self) -> bool:
        self._delete_if_expired()
        self.storage.makedirs(posixpath.dirname(self.rel) or "")
        try:
            fd = os.open(self.storage.abs(self.rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(_owner()))
        return True

    def unlock(self) -> None:
        self.storage.delete(self.rel)

    def _delete_if_expired(self) -> None:
        if not self.expire_seconds:
            return
        created = self.storage.mtime(self.rel)
        if created is not None and time.time() - created > self.expire_seconds:
            self.storage.delete(self.rel)

    def describe(self) -> str:
        try:
            owner = self.storage.read(self.rel).decode("utf-8", "replace")
        except Exception:
            owner = ""
        return f"lock file {self.path}" + (f" (held by {owner})" if owner else "")


_IN_PROCESS: dict[str, threading.Lock] = {}
_IN_PROCESS_GUARD = threading.Lock()


class InProcessLock:
    """``InProcessLockProvider``: one lock per table within this process."""

    def __init__(self, storage: Storage):
        self.key = storage.uri()
        with _IN_PROCESS_GUARD:
            self.lock = _IN_PROCESS.setdefault(self.key, threading.Lock())

    def try_lock(self) -> bool:
        return self.lock.acquire(blocking=False)

    def unlock(self) -> None:
        self.lock.release()

    def describe(self) -> str:
        return f"the in-process lock of {self.key}"


def lock_provider(storage: Storage, settings: ConcurrencySettings) -> LockProvider:
    if settings.lock_provider == IN_PROCESS_LOCK_PROVIDER:
        return InProcessLock(storage)
    return FileSystemLock(storage, settings.lock_path, settings.lock_expire_minutes)


@contextmanager
def table_lock(provider: LockProvider, settings: ConcurrencySettings, purpose: str) -> Iterator[None]:
    """Hold ``provider``'s lock for ``purpose``; retried for ``hoodie.write.lock.wait_time_ms``."""
    deadline = time.monotonic() + settings.lock_wait_ms / 1000.0
    pause = max(0.01, settings.lock_retry_wait_ms / 1000.0)
    while not provider.try_lock():
        left = deadline - time.monotonic()
        if left <= 0:
            raise LockError(
                f"could not take {provider.describe()} for {purpose} within {settings.lock_wait_ms} ms "
                "(hoodie.write.lock.wait_time_ms); another writer holds it. Retry later; a lock file left by a "
                "writer that died can be deleted, or expired with hoodie.write.lock.filesystem.expire"
            )
        time.sleep(min(pause, left))
    try:
        yield
    finally:
        provider.unlock()


def _owner() -> dict[str, str]:
    return {
        "lockCreateTime": datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
        "host": socket.gethostname(),
        "pid": str(os.getpid()),
        "thread": threading.current_thread().name,
    }
