"""Writer for the HFile format (HBase HFile v3) as Apache Hudi 0.14/0.15 writes it.

Hudi 0.14/0.15 write the metadata table's HFiles through HBase 2.4's
``HFileWriterImpl`` (shaded): base files via ``HoodieAvroHFileWriter`` and the
content of ``HFILE_DATA_BLOCK`` log blocks via ``HoodieHFileDataBlock``. This
module produces the same bytes:

* cells are HBase ``KeyValue`` s: the record key as the row, empty family and
  qualifier, timestamp ``Long.MAX_VALUE`` (``LATEST_TIMESTAMP``), type Put (4),
  followed by a zero memstore timestamp (Hadoop vlong) because the file context
  includes MVCC; no tags;
* a data block is closed once its unencoded size has reached the block size
  and the next cell has a different row (so a row never straddles two blocks);
* each data block gets an index entry whose key is the first key of the block,
  or, after the first block, the shortest row between the previous block's last
  row and this block's first row (HBase's ``getMidpoint``), as a
  "first on row" key (timestamp ``Long.MAX_VALUE``, type Maximum);
* index entries go to the root index block; once the leaf chunk reaches
  ``hfile.index.block.max.size`` (128 KiB) leaf index blocks are written inline
  and the root references them (with mid-key metadata), and a root that grows
  beyond that size is split into intermediate levels;
* meta blocks (Hudi: ``bloomFilter``) after the data, then the load-on-open
  section: root data index, meta index, file info (a sorted map, ``PBUF`` +
  delimited protobuf), then the 4096-byte trailer (``TRABLK"$`` + delimited
  ``FileTrailerProto`` + zero padding + version 3.3);
* every block is compressed on its own (GZ: Java's ``GZIPOutputStream`` bytes,
  i.e. a fixed 10-byte gzip header, raw deflate at the default level, CRC32 and
  size) and followed by CRC32C checksums of 16 KiB chunks of header + data.

See :mod:`hudi_duck.core.hfile.reader` for the block and cell layouts.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import HudiError
from .checksum import CHECKSUM_CRC32C, block_checksums, checksum_size, crc32c
from .reader import (
    BLOCK_HEADER_SIZE,
    CODEC_GZ,
    CODEC_NONE,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    KEY_VALUE_VERSION,
    MAX_MEMSTORE_TS_KEY,
    PB_MAGIC,
    SCHEMA_KEY,
    TRAILER_MAGIC,
    TRAILER_SIZE,
)

# -- constants ---------------------------------------------------------------------------

#: ``HoodieHBaseKVComparator``: the comparator Hudi's HFiles name in their trailer.
HUDI_COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"

#: Block magics of the blocks this writer emits.
LEAF_INDEX_MAGIC = b"IDXLEAF2"
INTERMEDIATE_INDEX_MAGIC = b"IDXINTE2"
ROOT_INDEX_MAGIC = b"IDXROOT2"
META_MAGIC = b"METABLKc"

#: ``hoodie.hfile.block.size`` default and ``HoodieHFileDataBlock``'s fixed block size.
DEFAULT_BLOCK_SIZE = 1024 * 1024
#: ``hfile.index.block.max.size`` and ``hfile.index.block.min.entries`` defaults.
DEFAULT_INDEX_CHUNK_SIZE = 128 * 1024
DEFAULT_INDEX_MIN_ENTRIES = 16
#: ``hbase.bytes.per.checksum`` default.
DEFAULT_BYTES_PER_CHECKSUM = 16 * 1024

#: HFile v3 with the protobuf trailer (minor version 3).
MAJOR_VERSION = 3
MINOR_VERSION = 3

#: HBase's ``HConstants.LATEST_TIMESTAMP``; ``KeyValue.Type.Put`` and ``Maximum``.
LATEST_TIMESTAMP = (1 << 63) - 1
TYPE_PUT = 4
TYPE_MAXIMUM = 255

# File info keys HBase writes itself (``HFileInfo``).
LASTKEY = b"hfile.LASTKEY"
AVG_KEY_LEN = b"hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = b"hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = b"hfile.CREATE_TIME_TS"

# Hudi's own file info keys and meta block (``HoodieAvroHFileReader``).
KEY_MIN_RECORD = b"minRecordKey"
KEY_MAX_RECORD = b"maxRecordKey"
KEY_BLOOM_FILTER_TYPE_CODE = b"bloomFilterTypeCode"
BLOOM_FILTER_META_BLOCK = b"bloomFilter"

_CODECS = {"NONE": CODEC_NONE, "GZ": CODEC_GZ}
# Java's GZIPOutputStream header: magic, deflate, no flags, mtime 0, no extra flags, OS 0.
_JAVA_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
_MID_KEY_METADATA_SIZE = 16
_SECONDARY_INDEX_ENTRY_OVERHEAD = 12


class HFileWriteError(HudiError):
    """Cells that an HFile cannot hold (unsorted keys, oversized rows, reserved file info keys)."""


@dataclass(frozen=True)
class HFileWriterOptions:
    """What HBase's ``HFileContext`` and configuration fix for one file.

    The defaults are the ones Hudi 0.14's metadata table uses: 1 MiB blocks
    (``hoodie.hfile.block.size``), GZ (``hoodie.hfile.compression.algorithm``),
    CRC32C checksums of 16 KiB chunks, 128 KiB index chunks.
    """

    block_size: int = DEFAULT_BLOCK_SIZE
    compression: str = "GZ"
    bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM
    index_chunk_size: int = DEFAULT_INDEX_CHUNK_SIZE
    index_min_entries: int = DEFAULT_INDEX_MIN_ENTRIES
    comparator: str = HUDI_COMPARATOR
    create_time_ms: int = 0  # HFileContext.fileCreateTime; Hudi never sets it

    def __post_init__(self) -> None:
        if self.compression.upper() not in _CODECS:
            raise HFileWriteError(
                f"HFile compression {self.compression!r} is not supported for writing (use GZ or NONE)"
            )
        if self.block_size <= 0 or self.bytes_per_checksum <= 0 or self.index_chunk_size <= 0:
            raise HFileWriteError("HFile block, checksum chunk and index chunk sizes must be positive")

    @property
    def codec(self) -> int:
        return _CODECS[self.compression.upper()]


# -- encodings -------------------------------------------------------------------------------


def pb_varint(value: int) -> bytes:
    """Protobuf base-128 varint (negative values as 64-bit two's complement, as Java's ``uint64``)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _pb_uint(number: int, value: int) -> bytes:
    return pb_varint(number << 3) + pb_varint(value)


def _pb_bytes(number: int, value: bytes) -> bytes:
    return pb_varint(number << 3 | 2) + pb_varint(len(value)) + value


def hadoop_vlong(value: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong`` (also ``writeVInt``)."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value = ~value
        length = -120
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return struct.pack(">b", length - len(raw)) + raw


def java_gzip(payload: bytes) -> bytes:
    """``GZIPOutputStream`` output for ``payload``: the bytes HBase's GZ codec writes per block."""
    deflater = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS, 8)
    body = deflater.compress(payload) + deflater.flush()
    return _JAVA_GZIP_HEADER + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def cell_key(row: bytes, timestamp: int = LATEST_TIMESTAMP, key_type: int = TYPE_PUT) -> bytes:
    """A ``KeyValue`` key with empty family and qualifier (the only kind Hudi writes)."""
    if len(row) > 0x7FFF:
        raise HFileWriteError(f"HFile row key of {len(row)} bytes is longer than 32767 bytes")
    return struct.pack(">H", len(row)) + row + b"\x00" + struct.pack(">qB", timestamp, key_type)


def midpoint_row(left: bytes, right: bytes) -> bytes | None:
    """HBase's ``getMinimumMidpointArray``: a short row ``r`` with ``left < r <= right``.

    Java bytes are signed: the "left byte + 1" test compares the signed left
    byte with the unsigned right byte, exactly as HBase does.
    """
    common = 0
    limit = min(len(left), len(right))
    while common < limit and left[common] == right[common]:
        common += 1
    if common >= limit:  # left is a prefix of right
        return right[: common + 1]
    signed_left = left[common] - 256 if left[common] > 127 else left[common]
    if left[common] < 0xFF and signed_left + 1 < right[common]:
        return left[:common] + bytes([(signed_left + 1) & 0xFF])
    return right[: common + 1]


def index_key(previous_last_row: bytes | None, first_row: bytes) -> bytes:
    """The data index key of a block (``HFileWriterImpl.getMidpoint``)."""
    if previous_last_row is None or previous_last_row == first_row:
        return cell_key(first_row)
    if previous_last_row > first_row:
        raise HFileWriteError(f"HFile rows out of order: {previous_last_row!r} before {first_row!r}")
    mid = midpoint_row(previous_last_row, first_row)
    if mid is None:
        return cell_key(first_row)
    return cell_key(mid, LATEST_TIMESTAMP, TYPE_MAXIMUM)


# -- blocks ----------------------------------------------------------------------------------


@dataclass
class _IndexChunk:
    """Entries of one index level (``BlockIndexChunk``)."""

    keys: list[bytes] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    sub_entries: list[int] = field(default_factory=list)  # cumulative, root chunk of a multi-level index
    non_root_entries_size: int = 0
    root_size: int = 0

    def add(self, key: bytes, offset: int, size: int, total_sub_entries: int | None = None) -> None:
        self.keys.append(key)
        self.offsets.append(offset)
        self.sizes.append(size)
        if total_sub_entries is not None:
            self.sub_entries.append(total_sub_entries)
        self.non_root_entries_size += _SECONDARY_INDEX_ENTRY_OVERHEAD + len(key)
        self.root_size += 12 + len(hadoop_vlong(len(key))) + len(key)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def non_root_size(self) -> int:
        return 4 + 4 * (len(self.keys) + 1) + self.non_root_entries_size

    def write_root(self) -> bytes:
        out = bytearray()
        for key, offset, size in zip(self.keys, self.offsets, self.sizes):
            out += struct.pack(">qi", offset, size) + hadoop_vlong(len(key)) + key
        return bytes(out)

    def write_non_root(self) -> bytes:
        out = bytearray(struct.pack(">i", len(self.keys)))
        position = 0
        for key in self.keys:
            out += struct.pack(">i", position)
            position += _SECONDARY_INDEX_ENTRY_OVERHEAD + len(key)
        out += struct.pack(">i", position)
        for key, offset, size in zip(self.keys, self.offsets, self.sizes):
            out += struct.pack(">qi", offset, size) + key
        return bytes(out)

    def mid_key_metadata(self) -> bytes:
        """Where the middle data block's key sits: leaf block offset, size, entry within it."""
        total = self.sub_entries[-1]
        mid = (total - 1) // 2
        entry = next(i for i, count in enumerate(self.sub_entries) if count > mid)
        before = self.sub_entries[entry - 1] if entry else 0
        return struct.pack(">qii", self.offsets[entry], self.sizes[entry], mid - before)


class _BlockWriter:
    """Frames, compresses and checksums blocks; tracks offsets (``HFileBlock.Writer``)."""

    def __init__(self, options: HFileWriterOptions):
        self.options = options
        self.out = bytearray()
        self._previous_by_magic: dict[bytes, int] = {}

    @property
    def position(self) -> int:
        return len(self.out)

    def write(self, magic: bytes, payload: bytes) -> tuple[int, int, int]:
        """Append one block; returns (offset, on-disk size with header, uncompressed size with header)."""
        offset = len(self.out)
        data = java_gzip(payload) if self.options.codec == CODEC_GZ else payload
        data_size_with_header = BLOCK_HEADER_SIZE + len(data)
        chunk = self.options.bytes_per_checksum
        checksum_bytes = checksum_size(CHECKSUM_CRC32C, data_size_with_header, chunk)
        header = magic + struct.pack(
            ">iiqbii",
            len(data) + checksum_bytes,
            len(payload),
            self._previous_by_magic.get(magic, -1),
            CHECKSUM_CRC32C,
            chunk,
            data_size_with_header,
        )
        block = header + data
        checksums = block_checksums(block, CHECKSUM_CRC32C, chunk)
        self.out += block
        self.out += checksums
        self._previous_by_magic[magic] = offset
        return offset, len(block) + len(checksums), BLOCK_HEADER_SIZE + len(payload)


# -- the writer ------------------------------------------------------------------------------


class HFileWriter:
    """Streams sorted cells into HFile bytes (``HFileWriterImpl``); :meth:`finish` returns the file."""

    def __init__(self, options: HFileWriterOptions | None = None):
        self.options = options or HFileWriterOptions()
        self._blocks = _BlockWriter(self.options)
        self._file_info: dict[bytes, bytes] = {}
        self._meta: list[tuple[bytes, bytes]] = []
        self._block = bytearray()
        self._block_first_row: bytes | None = None
        self._previous_block_last_row: bytes | None = None
        self._last_row: bytes | None = None
        self._last_key: bytes | None = None
        self._entry_count = 0
        self._total_key_length = 0
        self._total_value_length = 0
        self._total_uncompressed = 0
        self._first_data_block_offset = -1
        self._last_data_block_offset = -1
        self._leaf_chunk = _IndexChunk()
        self._root_chunk = _IndexChunk()
        self._index_levels = 1
        self._index_entries = 0
        self._index_uncompressed = 0
        self._finished = False

    # -- input ----------------------------------------------------------------------------

    def append(self, row: bytes, value: bytes) -> None:
        """Add one cell; rows must come in ascending byte order (equal rows allowed)."""
        self._check_open()
        if self._last_row is not None and row < self._last_row:
            raise HFileWriteError(
                f"HFile cells must be added in key order: {row!r} after {self._last_row!r}"
            )
        duplicate = row == self._last_row
        if not duplicate and self._block and len(self._block) >= self.options.block_size:
            self._finish_data_block()
            self._write_inline_index_blocks(closing=False)
        key = cell_key(row)
        if not self._block:
            self._block_first_row = row
        self._block += struct.pack(">ii", len(key), len(value)) + key + value + b"\x00"  # memstore ts 0
        self._entry_count += 1
        self._total_key_length += len(key)
        self._total_value_length += len(value)
        self._last_row = row
        self._last_key = key

    def append_file_info(self, key: bytes, value: bytes) -> None:
        """A user file info entry (``HFile.Writer.appendFileInfo``); ``hfile.*`` keys are HBase's."""
        self._check_open()
        if key.startswith(b"hfile."):
            raise HFileWriteError(f"HFile file info key {key!r} is reserved for HBase")
        self._file_info[bytes(key)] = bytes(value)

    def append_meta_block(self, name: bytes, content: bytes) -> None:
        """A named meta block; meta blocks are kept sorted by name, as HBase does."""
        self._check_open()
        position = len(self._meta)
        for i, (existing, _) in enumerate(self._meta):
            if existing > name:
                position = i
                break
        self._meta.insert(position, (bytes(name), bytes(content)))

    # -- output ---------------------------------------------------------------------------

    def finish(self) -> bytes:
        """Write the remaining blocks, the load-on-open section and the trailer."""
        self._check_open()
        self._finished = True
        self._finish_data_block()
        self._write_inline_index_blocks(closing=True)
        meta_index = _IndexChunk()
        for name, content in self._meta:
            offset, on_disk, uncompressed = self._blocks.write(META_MAGIC, content)
            self._total_uncompressed += uncompressed
            meta_index.add(name, offset, on_disk)
        load_on_open = self._write_data_index()
        _, _, uncompressed = self._blocks.write(ROOT_INDEX_MAGIC, meta_index.write_root())
        self._total_uncompressed += uncompressed
        file_info_offset = self._blocks.position
        _, _, uncompressed = self._blocks.write(FILE_INFO_MAGIC, self._file_info_payload())
        self._total_uncompressed += uncompressed
        trailer = self._trailer(file_info_offset, load_on_open, len(meta_index))
        return bytes(self._blocks.out) + trailer

    # -- internals ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._finished:
            raise HFileWriteError("HFile writer is already finished")

    def _finish_data_block(self) -> None:
        if not self._block:
            return
        offset, on_disk, uncompressed = self._blocks.write(DATA_MAGIC, bytes(self._block))
        if self._first_data_block_offset < 0:
            self._first_data_block_offset = offset
        self._last_data_block_offset = offset
        assert self._block_first_row is not None
        self._leaf_chunk.add(index_key(self._previous_block_last_row, self._block_first_row), offset, on_disk)
        self._index_entries += 1
        self._total_uncompressed += uncompressed
        self._previous_block_last_row = self._last_row
        self._block = bytearray()
        self._block_first_row = None

    def _write_inline_index_blocks(self, closing: bool) -> None:
        """Leaf index blocks between data blocks (``BlockIndexWriter`` as an inline block writer)."""
        while len(self._leaf_chunk):
            if closing:
                if not len(self._root_chunk):  # never spilled: the leaf entries become the root
                    self._root_chunk, self._leaf_chunk = self._leaf_chunk, _IndexChunk()
                    return
            elif self._leaf_chunk.non_root_size < self.options.index_chunk_size:
                return
            first_key = self._leaf_chunk.keys[0]
            payload = self._leaf_chunk.write_non_root()
            offset, on_disk, uncompressed = self._blocks.write(LEAF_INDEX_MAGIC, payload)
            self._total_uncompressed += uncompressed
            self._index_uncompressed += len(payload)
            self._index_levels = 2
            self._root_chunk.add(first_key, offset, on_disk, self._index_entries)
            self._leaf_chunk = _IndexChunk()

    def _write_data_index(self) -> int:
        """Intermediate levels if the root is too big, then the root; returns the root's offset."""
        root = self._root_chunk
        mid_key = root.mid_key_metadata() if self._index_levels > 1 else b""
        options = self.options
        while (
            self._index_levels > 1
            and root.root_size > options.index_chunk_size
            and len(root) > options.index_min_entries
            and self._index_levels < 16
        ):
            root = self._write_intermediate_level(root)
            self._index_levels += 1
        payload = root.write_root() + mid_key
        offset, _, _ = self._blocks.write(ROOT_INDEX_MAGIC, payload)
        self._index_uncompressed += len(payload)
        self._root_chunk = root
        return offset

    def _write_intermediate_level(self, level: _IndexChunk) -> _IndexChunk:
        parent = _IndexChunk()
        chunk = _IndexChunk()
        for i, (key, offset, size) in enumerate(zip(level.keys, level.offsets, level.sizes)):
            chunk.add(key, offset, size)
            if i >= self.options.index_min_entries and chunk.root_size >= self.options.index_chunk_size:
                self._write_intermediate_block(parent, chunk)
                chunk = _IndexChunk()
        if len(chunk):
            self._write_intermediate_block(parent, chunk)
        return parent

    def _write_intermediate_block(self, parent: _IndexChunk, chunk: _IndexChunk) -> None:
        payload = chunk.write_non_root()
        offset, on_disk, _ = self._blocks.write(INTERMEDIATE_INDEX_MAGIC, payload)
        self._index_uncompressed += len(payload)
        parent.add(chunk.keys[0], offset, on_disk)

    def _file_info_payload(self) -> bytes:
        info = dict(self._file_info)
        info[MAX_MEMSTORE_TS_KEY] = struct.pack(">q", 0)
        info[KEY_VALUE_VERSION] = struct.pack(">i", 1)
        if self._last_key is not None:
            info[LASTKEY] = self._last_key
        count = self._entry_count
        info[AVG_KEY_LEN] = struct.pack(">i", self._total_key_length // count if count else 0)
        info[CREATE_TIME_TS] = struct.pack(">q", self.options.create_time_ms)
        info[AVG_VALUE_LEN] = struct.pack(">i", self._total_value_length // count if count else 0)
        entries = b"".join(_pb_bytes(1, _pb_bytes(1, k) + _pb_bytes(2, v)) for k, v in sorted(info.items()))
        return PB_MAGIC + pb_varint(len(entries)) + entries

    def _trailer(self, file_info_offset: int, load_on_open: int, meta_count: int) -> bytes:
        message = b"".join(
            [
                _pb_uint(1, file_info_offset),
                _pb_uint(2, load_on_open),
                _pb_uint(3, self._index_uncompressed),
                _pb_uint(4, self._total_uncompressed + TRAILER_SIZE),
                _pb_uint(5, len(self._root_chunk)),
                _pb_uint(6, meta_count),
                _pb_uint(7, self._entry_count),
                _pb_uint(8, self._index_levels),
                _pb_uint(9, self._first_data_block_offset),
                _pb_uint(10, self._last_data_block_offset),
                _pb_bytes(11, self.options.comparator.encode("utf-8")),
                _pb_uint(12, self.options.codec),
            ]
        )
        body = TRAILER_MAGIC + pb_varint(len(message)) + message
        padding = TRAILER_SIZE - 4 - len(body)
        if padding < 0:
            raise HFileWriteError("HFile trailer does not fit in 4096 bytes")
        return body + b"\x00" * padding + struct.pack(">I", MINOR_VERSION << 24 | MAJOR_VERSION)


def write_hfile(
    cells: Iterable[tuple[bytes, bytes]],
    *,
    file_info: dict[bytes, bytes] | None = None,
    meta_blocks: dict[bytes, bytes] | None = None,
    options: HFileWriterOptions | None = None,
) -> bytes:
    """An HFile holding ``cells`` (sorted by row) with the given user file info and meta blocks."""
    writer = HFileWriter(options)
    for row, value in cells:
        writer.append(row, value)
    for key, value in (file_info or {}).items():
        writer.append_file_info(key, value)
    for name, content in (meta_blocks or {}).items():
        writer.append_meta_block(name, content)
    return writer.finish()


# -- Hudi's two uses ------------------------------------------------------------------------


def _sorted_cells(records: Iterable[tuple[str, bytes]]) -> list[tuple[bytes, bytes]]:
    """Cells sorted by key bytes; records with equal keys keep their order (a stable sort)."""
    cells = [(key.encode("utf-8"), value) for key, value in records]
    cells.sort(key=lambda cell: cell[0])
    return cells


def write_hudi_base_hfile(
    records: Iterable[tuple[str, bytes]],
    schema_json: str,
    *,
    bloom_filter=None,
    options: HFileWriterOptions | None = None,
) -> bytes:
    """A metadata-table base file as ``HoodieAvroHFileWriter`` writes it.

    ``records`` are (record key, Avro value with the ``key`` field blanked);
    they are written in key order. File info: ``schema`` (the writer schema
    text) and, with a bloom filter (Hudi always configures one), ``minRecordKey``,
    ``maxRecordKey``, ``bloomFilterTypeCode`` plus the ``bloomFilter`` meta block
    holding the filter's base64 string. ``bloom_filter`` is a fresh
    :mod:`hudi_duck.core.index.bloom` filter; the keys are added to it here.
    """
    cells = _sorted_cells(records)
    file_info = {SCHEMA_KEY: schema_json.encode("utf-8")}
    meta: dict[bytes, bytes] = {}
    if bloom_filter is not None:
        keys = [row.decode("utf-8") for row, _ in cells]
        if keys:
            bloom_filter.add_all(keys)
        file_info[KEY_MIN_RECORD] = keys[0].encode("utf-8") if keys else b""
        file_info[KEY_MAX_RECORD] = keys[-1].encode("utf-8") if keys else b""
        file_info[KEY_BLOOM_FILTER_TYPE_CODE] = bloom_filter.type_code.encode("ascii")
        meta[BLOOM_FILTER_META_BLOCK] = bloom_filter.serialize().encode("ascii")
    return write_hfile(cells, file_info=file_info, meta_blocks=meta, options=options)


def write_hudi_block_hfile(
    records: Iterable[tuple[str, bytes]], schema_json: str, *, compression: str = "GZ"
) -> bytes:
    """The content of an ``HFILE_DATA_BLOCK`` as ``HoodieHFileDataBlock.serializeRecords`` writes it:
    1 MiB blocks, the table's HFile compression, only ``schema`` in the file info, no bloom filter."""
    options = HFileWriterOptions(block_size=DEFAULT_BLOCK_SIZE, compression=compression)
    return write_hfile(
        _sorted_cells(records), file_info={SCHEMA_KEY: schema_json.encode("utf-8")}, options=options
    )


__all__ = [
    "HFileWriteError",
    "HFileWriter",
    "HFileWriterOptions",
    "HUDI_COMPARATOR",
    "BLOOM_FILTER_META_BLOCK",
    "KEY_MIN_RECORD",
    "KEY_MAX_RECORD",
    "KEY_BLOOM_FILTER_TYPE_CODE",
    "cell_key",
    "crc32c",
    "index_key",
    "java_gzip",
    "midpoint_row",
    "write_hfile",
    "write_hudi_base_hfile",
    "write_hudi_block_hfile",
]
