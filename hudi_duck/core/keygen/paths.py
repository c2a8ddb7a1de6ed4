"""Partition paths: ``PartitionPathEncodeUtils`` escaping, the default partition and path checks."""

from __future__ import annotations

import re

from ..errors import KeyGeneratorError

__all__ = [
    "DEFAULT_PARTITION_PATH",
    "DEPRECATED_DEFAULT_PARTITION_PATH",
    "escape_path_name",
    "unescape_path_name",
]

DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
DEPRECATED_DEFAULT_PARTITION_PATH = "default"  # written for null values before Hudi 0.12
PARTITION_PATH_SEPARATOR = "/"


_ESCAPED_CHARS = frozenset(range(0x20)) | {ord(c) for c in "\"#%'*/:=?\\{[]^"} | {0x7F}
_NEEDS_ESCAPE = re.compile("[" + re.escape("".join(chr(c) for c in sorted(_ESCAPED_CHARS))) + "]")


def escape_path_name(value: str | None) -> str:
    """``PartitionPathEncodeUtils.escapePathName``: ``%XX`` for Hive's special ASCII chars."""
    if value is None or value == "":
        return DEFAULT_PARTITION_PATH
    return _NEEDS_ESCAPE.sub(lambda m: f"%{ord(m.group()):02X}", value)


_HEX_PAIR = re.compile(r"[+-]?[0-9A-Fa-f]+")


def unescape_path_name(path: str) -> str:
    """``unescapePathName``: every ``%XY`` that parses as hex becomes that char."""
    out: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "%" and i + 2 < len(path):
            pair = path[i + 1 : i + 3]
            if _HEX_PAIR.fullmatch(pair) and int(pair, 16) >= 0:  # Java parseInt accepts a sign
                out.append(chr(int(pair, 16)))
                i += 3
                continue
        out.append(ch)
        i += 1
    return "".join(out)


BAD_SEGMENT = re.compile(r"(^|/)(\.|\.\.)?(/|$)")


def check_partition_path(path: str) -> str:
    """``path`` itself; raises when a segment is empty, ``.`` or ``..`` (it could not be a folder)."""
    if BAD_SEGMENT.search(path):
        raise KeyGeneratorError(
            f'partition path "{path}" has an empty, "." or ".." segment; a partition value '
            "contains '/' or is '.'/'..' (enable hoodie.datasource.write.partitionpath.urlencode "
            "or clean the value)"
        )
    return path
