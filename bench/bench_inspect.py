"""Inspection functions on a table with many log blocks: parquet materialisation
against rendering the rows as SQL literals (``SELECT ... UNION ALL SELECT ...``).

    python bench/bench_inspect.py --blocks 5000

Builds a merge-on-read table from the v6 fixture ``quickstart_trips_table/mor/avro/v6_trips_8i1u``
whose one log file is repeated into ``--files`` log files of ``--blocks / --files`` blocks, then times
``hudi_log_blocks`` cold (empty cache) and warm, and the same rows rendered as literal SQL.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import hudi_duck  # noqa: E402
from hudi_duck.core.table.table import HudiTable  # noqa: E402
from hudi_duck.duck.sql import quote_ident, quote_literal  # noqa: E402
from hudi_duck.duck.views import build_view  # noqa: E402

FIXTURE = REPO.parent / "shared" / "fixtures" / "hudi-tables" / "quickstart_trips_table" / "mor" / "avro" / "v6_trips_8i1u.zip"


def make_table(root: Path, blocks: int, files: int) -> str:
    with zipfile.ZipFile(FIXTURE) as archive:
        archive.extractall(root, [m for m in archive.namelist() if not m.startswith("__MACOSX/")])
    base = root / "v6_trips_8i1u"
    folder = base / "city=san_francisco"
    (log,) = [p for p in folder.iterdir() if ".log." in p.name]
    block = log.read_bytes()
    prefix, _, token = log.name.rpartition("_")
    name = prefix.rsplit(".", 1)[0]
    log.unlink()
    per_file = blocks // files
    for version in range(1, files + 1):
        (folder / f"{name}.{version}_{token}").write_bytes(block * per_file)
    return str(base)


def literal_sql(table: pa.Table) -> str:
    """The rows as ``SELECT <literals> UNION ALL ...`` (lists and maps as DuckDB literals)."""

    def lit(value: Any, dtype: pa.DataType) -> str:
        if value is None:
            return "NULL"
        if pa.types.is_map(dtype):
            items = ", ".join(f"{quote_literal(k)}: {quote_literal(v)}" for k, v in value)
            return "MAP {" + items + "}"
        if pa.types.is_list(dtype):
            return "[" + ", ".join(quote_literal(v) for v in value) + "]"
        if pa.types.is_boolean(dtype):
            return "true" if value else "false"
        if pa.types.is_integer(dtype):
            return str(int(value))
        return quote_literal(value)

    selects = []
    for row in table.to_pylist():
        values = ", ".join(f"{lit(row[f.name], f.type)} AS {quote_ident(f.name)}" for f in table.schema)
        selects.append(f"SELECT {values}")
    return "\nUNION ALL\n".join(selects)


def timed(label: str, fn) -> Any:
    started = time.perf_counter()
    result = fn()
    print(f"{label:55s} {time.perf_counter() - started:8.3f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=5000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--no-literal", action="store_true", help="skip the literal SQL (minutes for thousands of rows)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hudi-inspect-bench-"))
    os.environ["HUDI_DUCK_CACHE_DIR"] = str(work / "cache")
    try:
        path = make_table(work / "table", args.blocks, args.files)
        con = hudi_duck.connect()
        query = f"SELECT count(*), sum(record_count) FROM hudi_log_blocks('{path}')"
        print(timed("hudi_log_blocks, cold (read logs, write parquet)", lambda: con.sql(query).fetchall()))
        print(timed("hudi_log_blocks, warm (cached parquet)", lambda: con.sql(query).fetchall()))
        rows = timed("build the rows only (Python)", lambda: build_view("log_blocks", HudiTable(path)))
        if args.no_literal:
            return
        sql = timed("render them as literal SQL", lambda: literal_sql(rows))
        print(timed("DuckDB runs the literal SQL", lambda: con.sql(f"SELECT count(*), sum(record_count) FROM ({sql})").fetchall()))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
