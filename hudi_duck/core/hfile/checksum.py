"""HBase block checksums: one 4-byte checksum per ``bytes per checksum`` chunk of a block.

HBase (and so Hudi's metadata table) follows every HFile block with checksums of
its header plus on-disk data, cut into chunks of ``hbase.bytes.per.checksum``
bytes. The checksum type sits in the block header: 0 none, 1 CRC32
(``java.util.zip.CRC32``, the same polynomial as zlib), 2 CRC32C (the default).
CRC32C comes from ``google-crc32c`` (hardware-accelerated where the CPU has it),
so checking every block on read costs little next to inflating it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import google_crc32c

CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2

CHECKSUM_NAMES = {CHECKSUM_NULL: "NULL", CHECKSUM_CRC32: "CRC32", CHECKSUM_CRC32C: "CRC32C"}


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``crc``."""
    return google_crc32c.extend(crc, data) if crc else google_crc32c.value(data)


def _crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


_ALGORITHMS: dict[int, Callable[[bytes], int]] = {CHECKSUM_CRC32: _crc32, CHECKSUM_CRC32C: crc32c}


def checksum_size(checksum_type: int, data_size_with_header: int, bytes_per_checksum: int) -> int:
    """Bytes of checksums that follow a block of ``data_size_with_header`` bytes."""
    if checksum_type == CHECKSUM_NULL:
        return 0
    return 4 * ((data_size_with_header + bytes_per_checksum - 1) // bytes_per_checksum)


def block_checksums(block: bytes | memoryview, checksum_type: int, bytes_per_checksum: int) -> bytes:
    """The checksum bytes HBase writes after ``block`` (header plus on-disk data)."""
    if checksum_type == CHECKSUM_NULL:
        return b""
    algorithm = _ALGORITHMS[checksum_type]
    view = memoryview(block)
    return b"".join(
        struct.pack(">I", algorithm(bytes(view[start : start + bytes_per_checksum])))
        for start in range(0, len(view), bytes_per_checksum)
    )


def first_mismatch(
    block: bytes | memoryview, stored: bytes | memoryview, checksum_type: int, bytes_per_checksum: int
) -> int | None:
    """Index of the first chunk whose stored checksum differs, or ``None`` when all match."""
    expected = block_checksums(block, checksum_type, bytes_per_checksum)
    if expected == bytes(stored):
        return None
    for index in range(0, len(expected), 4):
        if expected[index : index + 4] != bytes(stored[index : index + 4]):
            return index // 4
    return len(expected) // 4
