"""Local cache of files the DuckDB layer derives from a table.

DuckDB scans base files where they are; what Python computes (the merged
log rows of a file slice, the rows a slice drops, empty files carrying a
schema) is written here as parquet so DuckDB's own reader scans it too.
Entries are keyed by content (file names, sizes, timeline state), written
atomically, and shared by every query and process on the machine.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq


def cache_dir() -> Path:
    configured = os.environ.get("HUDI_DUCK_CACHE_DIR")
    if configured:
        path = Path(configured)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "hudi-duck"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        path = Path(tempfile.gettempdir()) / "hudi-duck-cache"
        path.mkdir(parents=True, exist_ok=True)
    return path


def digest(*parts: object) -> str:
    h = hashlib.sha1()
    for part in parts:
        h.update(repr(part).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def write_atomic(table: pa.Table, path: str | Path) -> None:
    """Write a parquet file so concurrent readers see all of it or nothing."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table, tmp, compression="zstd", compression_level=1)
    os.replace(tmp, path)


def cached_parquet(key: str, suffix: str, build: Callable[[], pa.Table]) -> str:
    """Path of a cached parquet file, building it on first use."""
    path = cache_dir() / f"{key}.{suffix}.parquet"
    if not path.exists():
        write_atomic(build(), path)
    return str(path)


def schema_file(schema: pa.Schema) -> str:
    """An empty parquet file with ``schema``: DuckDB binds a scan to it without
    opening any table file (so pruned files are never touched)."""
    key = digest("schema", schema.to_string(show_schema_metadata=False))
    return cached_parquet(key, "schema", schema.empty_table)
