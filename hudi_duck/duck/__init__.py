"""DuckDB layer: table macros over Python planning functions.

DuckDB's Python client has no Python table functions, so every ``hudi_*``
table function is a table macro ``SELECT * FROM query(hudi_duck_read(...))``
(``hudi_duck_plan`` for the metadata functions):
at bind time a Python scalar function plans the read with the core and
returns SQL over ``read_parquet``, which DuckDB then optimises and runs with
its own parquet reader (projection and filter pushdown, parallel scans).
"""

from .functions import connect, register

__all__ = ["connect", "register"]
