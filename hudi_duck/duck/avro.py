"""DuckDB's own ``avro`` extension as the compiled reader of Avro log blocks, when it loads.

Only an extension already installed for this DuckDB is used: loading never
downloads (``autoinstall_known_extensions`` off). Without it the core uses the
next reader it finds (``core.file_group.avro_decoder``).
"""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa

from ..core.file_group.avro_decoder import ContainerReader, register_decoder

_lock = threading.Lock()
_tried = False


def register_duckdb_avro() -> bool:
    """Register DuckDB's ``read_avro`` for Avro log blocks if the extension loads here (once)."""
    global _tried
    with _lock:
        if _tried:
            return False
        _tried = True
        try:
            con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
            con.execute("LOAD avro")
        except Exception:
            return False
    local = threading.local()

    def read(path: str) -> pa.Table:
        cursor = getattr(local, "cursor", None)
        if cursor is None:
            cursor = local.cursor = con.cursor()
        return cursor.execute("SELECT * FROM read_avro(?)", [path]).to_arrow_table()

    register_decoder(ContainerReader("duckdb avro extension", read))
    return True
