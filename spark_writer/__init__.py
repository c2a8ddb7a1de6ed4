"""spark_writer: write Apache Hudi tables (table version 6) from PySpark DataFrames.

    import spark_writer
    spark_writer.write(df, "s3://bucket/trips", {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city",
    }, mode="append")

Options use Apache Hudi's names and defaults; data files are written on the
executors, only write statistics reach the driver.
"""

from hudi_duck.core.metadata import writer as _metadata_writer

from .api import write
from .client import WriteResult
from .config import parse_options
from .preflight import ExecutorEnvironmentError

__all__ = ["write", "WriteResult", "parse_options", "ExecutorEnvironmentError"]

from .services import (  # noqa: E402
    archive,
    clean_table as clean,
    cluster,
    compact,
    restore,
    rollback,
    savepoint,
    schedule_compaction,
)

# every instant this package commits keeps the table's metadata table in step
_metadata_writer.register()

__all__ += ["compact", "schedule_compaction", "cluster", "clean", "archive", "savepoint", "restore", "rollback"]
