"""How much memory merging a file slice's logs may use, and where it spills beyond that.

Hudi's options, with Hudi's defaults:

* ``hoodie.memory.merge.max.size`` (1 GiB, Hudi's
  ``DEFAULT_MAX_MEMORY_FOR_SPILLABLE_MAP_IN_BYTES``): the memory one merge
  holds; a slice whose decoded log records pass it is merged from spill files;
* ``hoodie.memory.spillable.map.path`` (unset in Hudi, which then takes the
  JVM's temporary folder): the folder spill files go to; unset here, Python's
  temporary folder (``TMPDIR``, else ``/tmp``).

Built once per read (``ReadOptions.merge_memory``) and handed to every merge of it.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass

MERGE_MAX_SIZE = "hoodie.memory.merge.max.size"
SPILLABLE_MAP_PATH = "hoodie.memory.spillable.map.path"
DEFAULT_MERGE_MAX_SIZE = 1024**3

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Bytes of ``2147483648``, ``'2GiB'``, ``'500 MB'``, ``'1.5g'`` (``k``/``m``/``g``/``t``, 1000 or 1024 with ``i``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value}")
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"not a size: {value!r} (use bytes, or e.g. '2GiB', '500MB')")
    number, unit, binary = float(match.group(1)), match.group(2).lower(), bool(match.group(3))
    if not unit:
        return int(number)
    return int(number * (1024 if binary else 1000) ** ("kmgt".index(unit) + 1))


@dataclass(frozen=True)
class MergeMemory:
    """The memory budget of one slice merge and its spill folder."""

    #: ``hoodie.memory.merge.max.size`` in bytes
    max_size: int = DEFAULT_MERGE_MAX_SIZE
    #: ``hoodie.memory.spillable.map.path``; None: the temporary folder
    spill_path: str | None = None

    @classmethod
    def of(cls, max_size: int | str | None = None, spill_path: str | None = None) -> "MergeMemory":
        """Settings from the options' values (None: Hudi's default), refused with the option's name."""
        size = DEFAULT_MERGE_MAX_SIZE
        if max_size is not None:
            try:
                size = parse_size(max_size)
            except ValueError as exc:
                raise ValueError(f"{MERGE_MAX_SIZE}: {exc}") from None
        path = None if spill_path is None or not str(spill_path).strip() else str(spill_path)
        return cls(size, path)

    @property
    def spill_folder(self) -> str:
        """Where spill files go: the configured folder, else the temporary folder."""
        return self.spill_path or tempfile.gettempdir()
