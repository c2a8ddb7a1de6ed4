"""Errors raised by hudi-duck.

Every error names the thing that is wrong (table path, file, field) and, where
there is one, what the user can do about it. Callers catch ``HudiError``.
"""

from __future__ import annotations


class HudiError(Exception):
    """Base class of every error hudi-duck raises on purpose."""


class TableNotFoundError(HudiError):
    """The path does not exist or holds no ``.hoodie/hoodie.properties``."""


class InvalidTableConfigError(HudiError):
    """``hoodie.properties`` is missing keys, malformed or contradictory."""


class UnsupportedFeatureError(HudiError):
    """The table uses a Hudi feature hudi-duck does not read or write."""


class CorruptFileError(HudiError):
    """A file of the table cannot be decoded (truncated, wrong magic, bad Avro)."""


class MissingFileError(CorruptFileError):
    """A data file a completed commit wrote is missing from storage or shorter than the commit recorded."""


class TimelineError(HudiError):
    """The timeline is inconsistent or an instant cannot be resolved."""


class TimelineChangedError(TimelineError):
    """A timeline file listed a moment ago is gone (archived, cleaned up or rolled back since):
    the listing is stale, and planning again from a fresh listing resolves it."""


class SchemaError(HudiError):
    """A schema cannot be converted or evolved as requested."""


class KeyGeneratorError(HudiError):
    """A record key or partition path cannot be produced for a record."""


class WriteError(HudiError):
    """A write was refused or failed; committed data is unchanged."""


class TableServiceError(HudiError):
    """A table service (compaction, clustering, clean, archival) failed.

    Raised after a write whose instant had already committed (``committed``): the
    write's data is in the table; the service can run again.
    """

    def __init__(self, message: str, committed: str | None = None, result: object = None):
        super().__init__(message)
        #: the write instant that had committed before the service ran, if any
        self.committed = committed
        #: what the write returned (``spark_writer.WriteResult``), if the service followed a write
        self.result = result


class ConcurrentWriteError(WriteError):
    """Another writer's instant is in flight (its heartbeat is alive) and this write may not
    run beside it (single-writer mode); nothing was written."""


class WriteConflictError(WriteError):
    """Optimistic concurrency control: a write touched file groups another instant changed
    since it started; its files were rolled back, the other instant stands."""


class LockError(WriteError):
    """The table lock of ``hoodie.write.lock.provider`` could not be taken in time."""
