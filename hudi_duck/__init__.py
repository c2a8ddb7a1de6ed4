"""hudi-duck: Apache Hudi tables in Python.

* ``hudi_duck.connect()`` / ``hudi_duck.register(con)``: DuckDB with the
  ``hudi_snapshot``, ``hudi_read_optimized``, ``hudi_incremental`` table
  functions and the inspection views (``hudi_timeline``, ``hudi_commits``,
  ``hudi_log_blocks`` ...).
* ``hudi_duck.read_snapshot(path)`` and friends: the same reads as
  ``pyarrow.RecordBatchReader`` for pandas/polars users;
  ``hudi_duck.inspect_table(path, view)`` the inspection views as ``pyarrow.Table``.
* ``hudi_duck.core``: the Hudi format (shared with ``spark_writer``).

The DuckDB layer loads on first use of one of its names, so Spark executors,
which import only ``hudi_duck.core``, never load DuckDB.

Warnings (a skipped corrupt log block) go to the ``hudi_duck`` logger.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core.errors import (
    CorruptFileError,
    HudiError,
    InvalidTableConfigError,
    SchemaError,
    TableNotFoundError,
    UnsupportedFeatureError,
)

__version__ = "0.1.0"

#: public name -> module (relative to this package) that defines it, imported on first access
_LAZY = {
    "connect": ".duck.functions",
    "register": ".duck.functions",
    "set_progress": ".duck.progress",
    "set_cache_limits": ".duck.lazy",
    "read_snapshot": ".api",
    "read_read_optimized": ".api",
    "read_incremental": ".api",
    "open_table": ".api",
    "inspect_table": ".api",
    "HudiTableReader": ".api",
}

if TYPE_CHECKING:
    from .api import (
        HudiTableReader,
        inspect_table,
        open_table,
        read_incremental,
        read_read_optimized,
        read_snapshot,
    )
    from .duck.functions import connect, register
    from .duck.lazy import set_cache_limits
    from .duck.progress import set_progress


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "connect",
    "register",
    "read_snapshot",
    "read_read_optimized",
    "read_incremental",
    "open_table",
    "set_progress",
    "set_cache_limits",
    "inspect_table",
    "HudiTableReader",
    "HudiError",
    "TableNotFoundError",
    "InvalidTableConfigError",
    "UnsupportedFeatureError",
    "CorruptFileError",
    "SchemaError",
]
