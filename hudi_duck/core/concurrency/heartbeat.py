"""Heartbeats of in-flight instants, as Hudi keeps them.

A writer touches ``.hoodie/.heartbeat/<instant>`` every
``hoodie.client.heartbeat.interval_in_ms`` while its instant is in flight, from the
moment before its requested file appears until after its completed file (or its
rollback) landed; then it deletes the file. Another writer reads the file's
modification time: silent for more than ``interval × hoodie.client.heartbeat.tolerable.misses``
(or absent) means the writer is gone and its instant may be rolled back.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field

from ..config.table_config import METAFOLDER
from ..storage.storage import Storage

log = logging.getLogger("hudi_duck")

HEARTBEAT_FOLDER = f"{METAFOLDER}/.heartbeat"


def heartbeat_path(instant_time: str) -> str:
    return f"{HEARTBEAT_FOLDER}/{instant_time}"


def last_heartbeat(storage: Storage, instant_time: str) -> float | None:
    """When the instant's writer last showed it is alive (seconds since the epoch), or None."""
    return storage.mtime(heartbeat_path(instant_time))


def is_alive(storage: Storage, instant_time: str, expiry_seconds: float, now: float | None = None) -> bool:
    """Whether the instant's writer beat within ``expiry_seconds``."""
    last = last_heartbeat(storage, instant_time)
    if last is None:
        return False
    return (time.time() if now is None else now) - last <= expiry_seconds


def delete_heartbeat(storage: Storage, instant_time: str) -> None:
    """Delete the instant's heartbeat, and the heartbeat folder once it is empty: Hudi's
    single writer leaves no ``.heartbeat`` folder behind, so neither do we."""
    storage.delete(heartbeat_path(instant_time))
    if storage.is_local:
        try:
            os.rmdir(storage.abs(HEARTBEAT_FOLDER))
        except OSError:  # another writer's heartbeat is there, or the folder is gone
            pass


@dataclass
class Heartbeat:
    """The heartbeat of one instant this process writes."""

    storage: Storage
    instant_time: str
    interval_seconds: float
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "Heartbeat":
        """Beat once now (before the instant exists), then every interval on a daemon thread."""
        self.beat()
        self._thread = threading.Thread(
            target=self._run, name=f"hudi-heartbeat-{self.instant_time}", daemon=True
        )
        self._thread.start()
        return self

    def beat(self) -> None:
        try:
            self.storage.write(heartbeat_path(self.instant_time), b"")
        except FileNotFoundError:  # another writer removed the empty folder just now
            self.storage.write(heartbeat_path(self.instant_time), b"")

    def _run(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            try:
                self.beat()
            except Exception as exc:  # the writer goes on; others may see it as expired
                log.warning("heartbeat of instant %s could not be written: %s", self.instant_time, exc)

    def stop(self, delete: bool = True) -> None:
        """Stop beating and delete the heartbeat file (the instant is no longer in flight);
        ``delete=False`` leaves the file to another process beating for the same instant."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=max(5.0, self.interval_seconds))
        if delete:
            delete_heartbeat(self.storage, self.instant_time)

    @property
    def path(self) -> str:
        return heartbeat_path(self.instant_time)
