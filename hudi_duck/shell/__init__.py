"""``hudi-duck``: an interactive SQL shell in the DuckDB CLI's manner, with the ``hudi_*`` functions.

The connection comes from :func:`hudi_duck.connect`, so every table function the
package registers is there. Run ``hudi-duck`` or ``python -m hudi_duck``.
"""

from .cli import main

__all__ = ["main"]
