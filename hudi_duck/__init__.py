"""hudi-duck: Apache Hudi tables in Python.

* ``hudi_duck.connect()`` / ``hudi_duck.register(con)``: DuckDB with the
  ``hudi_snapshot``, ``hudi_read_optimized``, ``hudi_incremental`` table
  functions and the inspection views (``hudi_timeline``, ``hudi_commits``,
  ``hudi_log_blocks`` ...).
* ``hudi_duck.read_snapshot(path)`` and friends: the same reads as
  ``pyarrow.RecordBatchReader`` for pandas/polars users;
  ``hudi_duck.inspect_table(path, view)`` the inspection views as ``pyarrow.Table``.
* ``hudi_duck.core``: the Hudi format (shared with ``spark_writer``).

Warnings (a skipped corrupt log block) go to the ``hudi_duck`` logger.
"""

from .api import HudiTableReader, inspect_table, open_table, read_incremental, read_read_optimized, read_snapshot
from .core.errors import (
    CorruptFileError,
    HudiError,
    InvalidTableConfigError,
    SchemaError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from .duck import connect, register
from .duck.progress import set_progress

__version__ = "0.1.0"

__all__ = [
    "connect",
    "register",
    "read_snapshot",
    "read_read_optimized",
    "read_incremental",
    "open_table",
    "set_progress",
    "inspect_table",
    "HudiTableReader",
    "HudiError",
    "TableNotFoundError",
    "InvalidTableConfigError",
    "UnsupportedFeatureError",
    "CorruptFileError",
    "SchemaError",
]
