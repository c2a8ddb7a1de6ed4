"""The public entry points of the writer."""

from __future__ import annotations

from typing import Any, Mapping

from pyspark.sql import DataFrame

from .client import WriteClient, WriteResult
from .config import parse_options


def write(
    df: DataFrame,
    path: str,
    options: Mapping[str, Any],
    mode: str = "append",
    storage_options: dict | None = None,
) -> WriteResult:
    """Write ``df`` into the Hudi table at ``path``.

    ``mode="append"`` applies ``hoodie.datasource.write.operation`` (default
    upsert) to the table, creating it if needed; ``mode="overwrite"`` creates or
    replaces the table. Equivalent to
    ``df.write.format("hudi").options(**options).mode(mode).save(path)``.
    """
    cfg = parse_options(options)
    client = WriteClient(df.sparkSession, path, cfg, storage_options)
    return client.write(df, mode)
