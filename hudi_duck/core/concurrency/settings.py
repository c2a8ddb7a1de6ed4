"""The concurrency options, with Hudi's names and defaults."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..errors import WriteError

FILESYSTEM_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
IN_PROCESS_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
LOCK_PROVIDERS = (FILESYSTEM_LOCK_PROVIDER, IN_PROCESS_LOCK_PROVIDER)


class ConcurrencyMode(str, Enum):
    """``hoodie.write.concurrency.mode``."""

    SINGLE_WRITER = "SINGLE_WRITER"
    OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"


class FailedWritesPolicy(str, Enum):
    """``hoodie.cleaner.policy.failed.writes``: when a write left pending is rolled back.

    EAGER: by the next writer (its heartbeat must have expired: a live one is another
    writer at work); LAZY: once its heartbeat expired, leaving live writers alone;
    NEVER: not at all."""

    EAGER = "EAGER"
    LAZY = "LAZY"
    NEVER = "NEVER"


@dataclass(frozen=True)
class ConcurrencySettings:
    mode: ConcurrencyMode = ConcurrencyMode.SINGLE_WRITER
    failed_writes: FailedWritesPolicy = FailedWritesPolicy.EAGER
    #: hoodie.client.heartbeat.interval_in_ms / hoodie.client.heartbeat.tolerable.misses
    heartbeat_interval_ms: int = 60_000
    heartbeat_tolerable_misses: int = 2
    #: hoodie.write.lock.provider (class name as Hudi spells it)
    lock_provider: str | None = None
    #: hoodie.write.lock.filesystem.path (default: the table's ``.hoodie``)
    lock_path: str | None = None
    #: hoodie.write.lock.filesystem.expire, minutes (0: never expires)
    lock_expire_minutes: int = 0
    #: hoodie.write.lock.wait_time_ms / hoodie.write.lock.wait_time_ms_between_retry
    lock_wait_ms: int = 60_000
    lock_retry_wait_ms: int = 1_000

    def __post_init__(self) -> None:
        if self.heartbeat_interval_ms < 1000:
            raise WriteError(
                f"hoodie.client.heartbeat.interval_in_ms={self.heartbeat_interval_ms} is below 1000 (Hudi's minimum)"
            )
        if self.heartbeat_tolerable_misses < 1:
            raise WriteError("hoodie.client.heartbeat.tolerable.misses must be at least 1")
        if self.lock_expire_minutes < 0:
            raise WriteError("hoodie.write.lock.filesystem.expire must not be negative (minutes; 0 never expires)")
        if self.is_optimistic:
            if self.lock_provider is None:
                raise WriteError(
                    "hoodie.write.concurrency.mode=optimistic_concurrency_control needs hoodie.write.lock.provider: "
                    f"{FILESYSTEM_LOCK_PROVIDER} (writers in several processes sharing the table's file system) or "
                    f"{IN_PROCESS_LOCK_PROVIDER} (writers in one process)"
                )
            if self.failed_writes is FailedWritesPolicy.EAGER:
                raise WriteError(
                    "hoodie.cleaner.policy.failed.writes=EAGER rolls back other writers' instants; with "
                    "optimistic_concurrency_control use LAZY (the default in that mode)"
                )
        if self.lock_provider is not None and self.lock_provider not in LOCK_PROVIDERS:
            raise WriteError(
                f"hoodie.write.lock.provider={self.lock_provider} is not supported here; use one of "
                + ", ".join(LOCK_PROVIDERS)
            )

    @property
    def is_optimistic(self) -> bool:
        return self.mode is ConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL

    @property
    def heartbeat_expiry_seconds(self) -> float:
        """How long a heartbeat may be silent before its writer counts as dead."""
        return self.heartbeat_interval_ms * self.heartbeat_tolerable_misses / 1000.0

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "ConcurrencySettings":
        """From Hudi option names (values as text); absent options take Hudi's defaults."""

        def number(key: str, default: int) -> int:
            value = options.get(key)
            if value is None or str(value).strip() == "":
                return default
            try:
                return int(str(value).strip())
            except ValueError:
                raise WriteError(f"{key}={value!r} is not a whole number") from None

        mode_text = str(options.get("hoodie.write.concurrency.mode") or "SINGLE_WRITER").strip().upper()
        try:
            mode = ConcurrencyMode(mode_text)
        except ValueError:
            raise WriteError(
                f"hoodie.write.concurrency.mode={mode_text!r}: expected single_writer or optimistic_concurrency_control"
            ) from None
        policy_text = options.get("hoodie.cleaner.policy.failed.writes")
        if policy_text is None:
            policy = FailedWritesPolicy.LAZY if mode is ConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL else FailedWritesPolicy.EAGER
        else:
            try:
                policy = FailedWritesPolicy(str(policy_text).strip().upper())
            except ValueError:
                raise WriteError(
                    f"hoodie.cleaner.policy.failed.writes={policy_text!r}: expected EAGER, LAZY or NEVER"
                ) from None
        return cls(
            mode=mode,
            failed_writes=policy,
            heartbeat_interval_ms=number("hoodie.client.heartbeat.interval_in_ms", 60_000),
            heartbeat_tolerable_misses=number("hoodie.client.heartbeat.tolerable.misses", 2),
            lock_provider=(str(options["hoodie.write.lock.provider"]).strip() or None)
            if options.get("hoodie.write.lock.provider") is not None
            else None,
            lock_path=options.get("hoodie.write.lock.filesystem.path") or None,
            lock_expire_minutes=number("hoodie.write.lock.filesystem.expire", 0),
            lock_wait_ms=number("hoodie.write.lock.wait_time_ms", 60_000),
            lock_retry_wait_ms=number("hoodie.write.lock.wait_time_ms_between_retry", 1_000),
        )


#: the option names :meth:`ConcurrencySettings.from_options` reads
OPTION_NAMES = (
    "hoodie.write.concurrency.mode",
    "hoodie.cleaner.policy.failed.writes",
    "hoodie.client.heartbeat.interval_in_ms",
    "hoodie.client.heartbeat.tolerable.misses",
    "hoodie.write.lock.provider",
    "hoodie.write.lock.filesystem.path",
    "hoodie.write.lock.filesystem.expire",
    "hoodie.write.lock.wait_time_ms",
    "hoodie.write.lock.wait_time_ms_between_retry",
)
