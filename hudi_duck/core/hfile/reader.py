"""Reader for the HFile format (HBase HFile v3) as Apache Hudi writes it.

Hudi's metadata table stores its partitions (``files``, ``record_index``,
``column_stats``, secondary indexes, ...) as HFiles: sorted key/value files
whose key is the record key and whose value is an Avro-serialized record.
They appear both as base files (``*.hfile``) and, in log files, as the content
of ``HFILE_DATA_BLOCK`` log blocks (a complete HFile inlined in the block).

Layout (all integers big-endian)::

    data blocks          "DATABLK*" blocks holding the cells, possibly with inline
                         non-data blocks between them (leaf index, bloom chunks)
    meta blocks          "METABLKc" (Hudi: bloom filter)
    load-on-open section root data index, meta index, file info ("FILEINF2"), ...
    trailer              last 4096 bytes: "TRABLK\\"$", a varint-delimited protobuf
                         FileTrailerProto, zero padding, and an int32 version
                         (minor version in the top byte, major in the low 3 bytes)

Every block starts with a 33-byte header (v3 always carries checksum fields)::

    8  magic
    4  on-disk size without header (payload + checksums)
    4  uncompressed size without header (payload only)
    8  previous block offset
    1  checksum type (0 NULL, 1 CRC32, 2 CRC32C)
    4  bytes per checksum chunk
    4  on-disk data size with header (header + payload, no checksums)

followed by the (possibly compressed) payload and then one 4-byte checksum per
chunk of header plus payload. Every block's checksums are verified (as HBase does
with ``hbase.regionserver.checksum.verify``, on by default): a mismatch is a
:class:`CorruptFileError` naming the file, block and chunk.

A data block payload is a run of cells::

    int32 key length, int32 value length,
    key:   int16 row length, row, int8 family length, family, qualifier,
           int64 timestamp, int8 key type
    value
    [int16 tags length, tags]           if the file info has hfile.MAX_TAGS_LEN
    [Hadoop vlong memstore timestamp]   if the file info has KEY_VALUE_VERSION == 1

Hudi puts the record key in the row and leaves family and qualifier empty.

A whole-file read finds the data blocks by walking every block from the first
data block offset to the load-on-open section and keeping the ``DATABLK*`` ones.
That needs no index (single- or multi-level alike) and the trailer's entry count
is checked against the cells found, so a missed or extra block is detected.
Lookups of some keys go through the block index instead (root, intermediate and
leaf index blocks, parsed here) and read only the blocks that can hold them:
see :mod:`.seek`.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import CorruptFileError, UnsupportedFeatureError
from .checksum import CHECKSUM_NAMES, CHECKSUM_NULL, checksum_size, first_mismatch

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
BLOCK_HEADER_SIZE = 33
PB_MAGIC = b"PBUF"

DATA_MAGIC = b"DATABLK*"
ENCODED_DATA_MAGIC = b"DATABLKE"
FILE_INFO_MAGIC = b"FILEINF2"
# Every block magic HBase defines; anything else at a block boundary is corruption.
KNOWN_BLOCK_MAGICS = frozenset(
    {
        DATA_MAGIC,
        ENCODED_DATA_MAGIC,
        b"IDXLEAF2",
        b"BLMFBLK2",
        b"METABLKc",
        b"IDXINTE2",
        b"IDXROOT2",
        FILE_INFO_MAGIC,
        b"BLMFMET2",
        b"DFBLMET2",
    }
)

# Ordinal of HBase's Compression.Algorithm, as stored in the trailer.
CODEC_NAMES = {0: "LZO", 1: "GZ", 2: "NONE", 3: "SNAPPY", 4: "LZ4", 5: "BZIP2", 6: "ZSTD"}
CODEC_GZ = 1
CODEC_NONE = 2

# File info keys that change how cells are laid out.
KEY_VALUE_VERSION = b"KEY_VALUE_VERSION"
MAX_MEMSTORE_TS_KEY = b"MAX_MEMSTORE_TS_KEY"
MAX_TAGS_LEN = b"hfile.MAX_TAGS_LEN"
DATA_BLOCK_ENCODING = b"DATA_BLOCK_ENCODING"
SCHEMA_KEY = b"schema"  # Hudi's writer schema of the values (HFile base files)

# Hudi blanks this field in the value and restores it from the cell key on read.
HUDI_KEY_FIELD = "key"

_UINT64_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class HFileTrailer:
    """The fields of FileTrailerProto a sequential reader needs."""

    major_version: int
    minor_version: int
    file_info_offset: int = 0
    load_on_open_offset: int = 0
    data_index_count: int = 0
    meta_index_count: int = 0
    entry_count: int = 0
    num_data_index_levels: int = 0
    first_data_block_offset: int = 0
    last_data_block_offset: int = 0
    comparator_class_name: str = ""
    compression_codec: int = CODEC_NONE

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.compression_codec, f"codec #{self.compression_codec}")


@dataclass(frozen=True)
class HFileBlock:
    """One block: its magic, where it sits, and its uncompressed payload."""

    magic: bytes
    offset: int
    next_offset: int  # offset right after the block's checksums
    payload: bytes


@dataclass
class HFile:
    """A parsed HFile: trailer, file info and the cells of its data blocks."""

    source: str
    trailer: HFileTrailer
    file_info: dict[bytes, bytes]
    cells: list[tuple[bytes, bytes]] = field(default_factory=list)

    @property
    def schema_json(self) -> str | None:
        """The Avro writer schema Hudi stores in the file info of HFile base files."""
        raw = self.file_info.get(SCHEMA_KEY)
        return raw.decode("utf-8") if raw is not None else None


# -- public API ----------------------------------------------------------------------


def read_hfile(data: bytes, source: str = "") -> list[tuple[bytes, bytes]]:
    """All (key, value) cells of an HFile, in file order.

    key = the row key bytes (for Hudi: the record key), value = the cell value
    (for Hudi: an Avro-serialized record).
    """
    return open_hfile(data, source).cells


def open_hfile(data: bytes, source: str = "") -> HFile:
    """Parse trailer, file info and all cells; callers needing the schema use this."""
    with corrupt_file_errors(source):
        return _open_hfile(bytes(data), source)


@contextmanager
def corrupt_file_errors(source: str) -> Iterator[None]:
    """Turn the low-level failures of parsing a damaged file into a :class:`CorruptFileError`
    naming it."""
    try:
        yield
    except (struct.error, IndexError, ValueError, OverflowError, zlib.error, EOFError) as exc:
        raise CorruptFileError(f"{source or 'HFile'}: malformed HFile ({exc})") from exc
    except CorruptFileError as exc:
        if source and source not in str(exc):
            raise CorruptFileError(f"{source}: {exc}") from exc
        raise


def decode_hfile_records(
    cells: list[tuple[bytes, bytes]], schema_json: str, source: str = "", *, union_record_names: bool = False
) -> list[dict[str, Any]]:
    """Decode cell values as Avro records of ``schema_json``, restoring Hudi's blanked key.

    Hudi's HFile writers set the ``key`` field of each record to "" before
    serializing it (the key is already the cell's row) and its readers put the
    cell key back when that field is present and empty; this mirrors that.
    With ``union_record_names`` a value of a union of several records comes back
    as ``(record name, record)``, so it can be written again into the same branch.
    """
    import fastavro

    try:
        parsed = fastavro.parse_schema(json.loads(schema_json))
    except Exception as exc:  # noqa: BLE001 - any schema failure is a bad file
        raise CorruptFileError(f"{source or 'HFile'}: cannot parse the writer schema ({exc})") from exc
    has_key_field = isinstance(parsed, dict) and any(
        f.get("name") == HUDI_KEY_FIELD for f in parsed.get("fields", ())
    )
    records: list[dict[str, Any]] = []
    for key, value in cells:
        buf = io.BytesIO(value)
        try:
            record = fastavro.schemaless_reader(
                buf, parsed, None, return_record_name=union_record_names, return_record_name_override=union_record_names
            )
        except Exception as exc:  # noqa: BLE001 - fastavro raises many types on bad bytes
            raise CorruptFileError(
                f"{source or 'HFile'}: cannot decode the Avro value of key {key!r} ({exc})"
            ) from exc
        if buf.tell() != len(value):
            raise CorruptFileError(
                f"{source or 'HFile'}: Avro value of key {key!r} has "
                f"{len(value) - buf.tell()} trailing bytes"
            )
        if has_key_field and isinstance(record, dict) and record.get(HUDI_KEY_FIELD) == "":
            try:
                record[HUDI_KEY_FIELD] = key.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorruptFileError(f"{source or 'HFile'}: record key {key!r} is not UTF-8") from exc
        records.append(record)
    return records


def decode_hfile_block_records(content: bytes, schema_json: str, source: str = "") -> list[dict[str, Any]]:
    """Records of an HFILE_DATA_BLOCK's content (an inlined HFile), decoded with the
    block header's writer schema, with record keys restored from the cell keys."""
    return decode_hfile_records(read_hfile(content, source), schema_json, source)


# -- trailer ---------------------------------------------------------------------------


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Protobuf base-128 varint at ``pos``; returns (value, next position)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise CorruptFileError("protobuf varint runs past its message")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise CorruptFileError("protobuf varint longer than 10 bytes")


def _parse_protobuf(buf: bytes, pos: int, end: int) -> dict[int, list[int | bytes]]:
    """Field number -> values of a protobuf message; enough for the trailer and file info."""
    fields: dict[int, list[int | bytes]] = {}
    while pos < end:
        tag, pos = _read_varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, pos = _read_varint(buf, pos, end)
        elif wire == 1:
            if pos + 8 > end:
                raise CorruptFileError("protobuf fixed64 runs past its message")
            (value,) = struct.unpack_from("<Q", buf, pos)
            pos += 8
        elif wire == 2:
            length, pos = _read_varint(buf, pos, end)
            if pos + length > end:
                raise CorruptFileError("protobuf bytes field runs past its message")
            value = bytes(buf[pos : pos + length])
            pos += length
        elif wire == 5:
            if pos + 4 > end:
                raise CorruptFileError("protobuf fixed32 runs past its message")
            (value,) = struct.unpack_from("<I", buf, pos)
            pos += 4
        else:
            raise CorruptFileError(f"unsupported protobuf wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def _delimited_message(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Bounds of a varint-length-prefixed protobuf message starting at ``pos``."""
    length, pos = _read_varint(buf, pos, end)
    if pos + length > end:
        raise CorruptFileError("protobuf message runs past its container")
    return pos, pos + length


def parse_trailer(data: bytes, source: str = "") -> HFileTrailer:
    """Decode the fixed-size trailer at the end of the file."""
    name = source or "HFile"
    if len(data) < TRAILER_SIZE:
        raise CorruptFileError(f"{name}: {len(data)} bytes is too short for an HFile trailer")
    start = len(data) - TRAILER_SIZE
    if data[start : start + len(TRAILER_MAGIC)] != TRAILER_MAGIC:
        raise CorruptFileError(f"{name}: HFile trailer magic not found (truncated or not an HFile)")
    (version,) = struct.unpack_from(">I", data, len(data) - 4)
    major, minor = version & 0x00FFFFFF, version >> 24
    if major != 3 and version != 3 << 24:  # some early Hudi writers stored 3 << 24
        raise UnsupportedFeatureError(f"{name}: HFile major version {major} is not supported (only v3)")
    try:
        msg_start, msg_end = _delimited_message(data, start + len(TRAILER_MAGIC), len(data) - 4)
        fields = _parse_protobuf(data, msg_start, msg_end)
    except CorruptFileError as exc:
        raise CorruptFileError(f"{name}: bad HFile trailer: {exc}") from exc

    def num(number: int, default: int = 0) -> int:
        values = fields.get(number)
        if not values or not isinstance(values[-1], int):
            return default
        return values[-1]

    comparator = fields.get(11, [b""])[-1]
    return HFileTrailer(
        major_version=major,
        minor_version=minor,
        file_info_offset=num(1),
        load_on_open_offset=num(2),
        data_index_count=num(5),
        meta_index_count=num(6),
        entry_count=num(7),
        num_data_index_levels=num(8),
        first_data_block_offset=num(9),
        last_data_block_offset=num(10),
        comparator_class_name=comparator.decode("utf-8", "replace") if isinstance(comparator, bytes) else "",
        compression_codec=num(12, CODEC_NONE),
    )


# -- blocks ----------------------------------------------------------------------------


def read_block(data: bytes, offset: int, limit: int, codec: int, source: str = "", base: int = 0) -> HFileBlock:
    """The block at ``offset`` of ``data`` (which must end by ``limit``), payload decompressed.

    ``data`` may be a window of the file starting at file offset ``base`` (a range read);
    offsets in messages and in the returned block are file offsets.
    """
    name = source or "HFile"
    at = base + offset
    if offset < 0 or offset + BLOCK_HEADER_SIZE > limit:
        raise CorruptFileError(f"{name}: HFile block header at {at} runs past the data section")
    magic = data[offset : offset + 8]
    if magic not in KNOWN_BLOCK_MAGICS:
        raise CorruptFileError(f"{name}: unknown HFile block magic {magic!r} at offset {at}")
    on_disk_size, uncompressed_size, _prev, checksum_type, bytes_per_checksum, data_size_with_header = (
        struct.unpack_from(">iiqbii", data, offset + 8)
    )
    block_end = offset + BLOCK_HEADER_SIZE + on_disk_size
    payload_end = offset + data_size_with_header
    if (
        on_disk_size < 0
        or uncompressed_size < 0
        or block_end > limit
        or not offset + BLOCK_HEADER_SIZE <= payload_end <= block_end
    ):
        raise CorruptFileError(
            f"{name}: HFile block {magic!r} at {at} has inconsistent sizes "
            f"(on-disk {on_disk_size}, data with header {data_size_with_header}, limit {base + limit})"
        )
    _verify_checksums(data, offset, payload_end, block_end, checksum_type, bytes_per_checksum, magic, name, base)
    raw = data[offset + BLOCK_HEADER_SIZE : payload_end]
    if codec == CODEC_NONE:
        payload = raw
    elif codec == CODEC_GZ:
        payload = _gunzip(raw)
    else:
        raise UnsupportedFeatureError(
            f"{name}: HFile compression codec {CODEC_NAMES.get(codec, f'#{codec}')} is not supported "
            "(only NONE and GZ)"
        )
    if len(payload) != uncompressed_size:
        raise CorruptFileError(
            f"{name}: HFile block {magic!r} at {at} decodes to {len(payload)} bytes, "
            f"header says {uncompressed_size}"
        )
    return HFileBlock(magic=magic, offset=at, next_offset=base + block_end, payload=payload)


def _verify_checksums(
    data: bytes,
    offset: int,
    payload_end: int,
    block_end: int,
    checksum_type: int,
    bytes_per_checksum: int,
    magic: bytes,
    name: str,
    base: int = 0,
) -> None:
    """Check the block's stored checksums against its header plus on-disk payload."""
    at = base + offset
    if checksum_type not in CHECKSUM_NAMES:
        raise CorruptFileError(f"{name}: HFile block {magic!r} at {at} has unknown checksum type {checksum_type}")
    if checksum_type == CHECKSUM_NULL:
        return
    if bytes_per_checksum <= 0:
        raise CorruptFileError(
            f"{name}: HFile block {magic!r} at {at} has {bytes_per_checksum} bytes per checksum"
        )
    expected = checksum_size(checksum_type, payload_end - offset, bytes_per_checksum)
    if block_end - payload_end != expected:
        raise CorruptFileError(
            f"{name}: HFile block {magic!r} at {at} carries {block_end - payload_end} checksum bytes, "
            f"its size needs {expected}"
        )
    view = memoryview(data)
    chunk = first_mismatch(view[offset:payload_end], view[payload_end:block_end], checksum_type, bytes_per_checksum)
    if chunk is not None:
        raise CorruptFileError(
            f"{name}: HFile block {magic!r} at {at} fails its {CHECKSUM_NAMES[checksum_type]} checksum "
            f"(chunk {chunk}, bytes {at + chunk * bytes_per_checksum}..); the file is damaged"
        )


def _gunzip(raw: bytes) -> bytes:
    """Inflate gzip (or zlib) data, including concatenated gzip members."""
    out = []
    rest = raw
    while rest:
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # auto-detect gzip / zlib header
        out.append(inflater.decompress(rest))
        if not inflater.eof:
            raise CorruptFileError("truncated gzip stream in HFile block")
        rest = inflater.unused_data.lstrip(b"\x00")
    return b"".join(out)


def read_file_info(data: bytes, trailer: HFileTrailer, source: str = "", base: int = 0) -> dict[bytes, bytes]:
    """The file info map (FILEINF2 block: "PBUF" + delimited InfoProto of BytesBytesPair).

    ``data`` is the file from offset ``base`` to its end (the whole file, or a tail
    holding the load-on-open section and the trailer).
    """
    name = source or "HFile"
    limit = len(data) - TRAILER_SIZE
    offset = trailer.file_info_offset - base
    block: HFileBlock | None = None
    if 0 <= offset < limit and data[offset : offset + 8] == FILE_INFO_MAGIC:
        block = read_block(data, offset, limit, trailer.compression_codec, source, base)
    else:  # walk the load-on-open section: root index, meta index, file info, ...
        offset = trailer.load_on_open_offset - base
        if offset < 0:
            raise CorruptFileError(f"{name}: load-on-open offset {trailer.load_on_open_offset} is outside the file")
        while offset < limit:
            candidate = read_block(data, offset, limit, trailer.compression_codec, source, base)
            if candidate.magic == FILE_INFO_MAGIC:
                block = candidate
                break
            offset = candidate.next_offset - base
    if block is None:
        raise CorruptFileError(f"{name}: HFile has no file info block")
    return parse_file_info(block.payload, name)


def parse_file_info(payload: bytes, name: str) -> dict[bytes, bytes]:
    """Entries of a FILEINF2 block payload."""
    if payload[: len(PB_MAGIC)] != PB_MAGIC:
        raise CorruptFileError(f"{name}: HFile file info lacks the PBUF magic")
    try:
        start, end = _delimited_message(payload, len(PB_MAGIC), len(payload))
        entries = _parse_protobuf(payload, start, end).get(1, [])
        info: dict[bytes, bytes] = {}
        for entry in entries:
            if not isinstance(entry, bytes):
                raise CorruptFileError("file info entry is not a message")
            pair = _parse_protobuf(entry, 0, len(entry))
            first, second = pair.get(1, [b""])[-1], pair.get(2, [b""])[-1]
            if not isinstance(first, bytes) or not isinstance(second, bytes):
                raise CorruptFileError("file info pair is not bytes")
            info[first] = second
    except CorruptFileError as exc:
        raise CorruptFileError(f"{name}: bad HFile file info: {exc}") from exc
    return info


# -- block index -----------------------------------------------------------------------


@dataclass(frozen=True)
class IndexEntry:
    """One entry of a block index level: where the child block sits and the row of its key.

    The key of a data block's entry is at most its first key and above the previous
    block's last key (HBase writes a short "first on row" midpoint); an entry of an
    upper level carries the first key of the index block it points to. Like Hudi's
    reader, only the row (the record key) is compared.
    """

    row: bytes
    offset: int
    size: int  # on-disk size with header and checksums


def key_row(key: bytes, name: str = "HFile") -> bytes:
    """The row of a cell key (int16 row length + row + ...), as Hudi's ``Key`` reads it."""
    if len(key) < 2:
        raise CorruptFileError(f"{name}: HFile index key of {len(key)} bytes has no row length")
    (row_len,) = struct.unpack_from(">H", key, 0)
    if 2 + row_len > len(key):
        raise CorruptFileError(f"{name}: HFile index key row length {row_len} exceeds its key length {len(key)}")
    return bytes(key[2 : 2 + row_len])


def parse_root_index(payload: bytes, count: int, name: str = "HFile") -> list[IndexEntry]:
    """The ``count`` entries of a root index block: int64 offset, int32 size, vint key length,
    key. A multi-level root is followed by mid-key metadata, which lookups do not need."""
    entries: list[IndexEntry] = []
    pos = 0
    end = len(payload)
    for number in range(count):
        if pos + 13 > end:
            raise CorruptFileError(f"{name}: HFile root index entry {number} of {count} runs past its block")
        offset, size = struct.unpack_from(">qi", payload, pos)
        key_len, pos = _read_hadoop_vlong(payload, pos + 12, end)
        if key_len < 0 or pos + key_len > end:
            raise CorruptFileError(f"{name}: HFile root index entry {number} has a bad key length {key_len}")
        entries.append(IndexEntry(key_row(payload[pos : pos + key_len], name), offset, size))
        pos += key_len
    return entries


def parse_non_root_index(payload: bytes, name: str = "HFile") -> list[IndexEntry]:
    """Entries of a leaf or intermediate index block: int32 count, count + 1 int32 offsets of
    the entries (after the offsets), then entries of int64 offset, int32 size and key."""
    end = len(payload)
    if end < 4:
        raise CorruptFileError(f"{name}: HFile index block of {end} bytes has no entry count")
    (count,) = struct.unpack_from(">i", payload, 0)
    entries_start = 4 + 4 * (count + 1)
    if count < 0 or entries_start > end:
        raise CorruptFileError(f"{name}: HFile index block entry count {count} does not fit its {end} bytes")
    relative = struct.unpack_from(f">{count + 1}i", payload, 4)
    entries: list[IndexEntry] = []
    for number in range(count):
        start, stop = entries_start + relative[number], entries_start + relative[number + 1]
        if not entries_start <= start <= stop - 12 or stop > end:
            raise CorruptFileError(f"{name}: HFile index block entry {number} of {count} has bad bounds")
        offset, size = struct.unpack_from(">qi", payload, start)
        entries.append(IndexEntry(key_row(payload[start + 12 : stop], name), offset, size))
    return entries


# -- cells -----------------------------------------------------------------------------


def _read_hadoop_vlong(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Hadoop WritableUtils vlong (used for the memstore timestamp); returns (value, next)."""
    if pos >= end:
        raise CorruptFileError("Hadoop vlong (memstore timestamp or key length) runs past its block")
    first = buf[pos] - 256 if buf[pos] > 127 else buf[pos]
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)  # bytes including the first
    if pos + size > end:
        raise CorruptFileError("Hadoop vlong (memstore timestamp or key length) runs past its block")
    value = int.from_bytes(buf[pos + 1 : pos + size], "big")
    return (~value if negative else value), pos + size


_CELL_HEADER = struct.Struct(">iiH")  # key length, value length, row length


def parse_cells(
    payload: bytes, includes_tags: bool, includes_memstore_ts: bool, rows: frozenset[bytes] | None = None
) -> list[tuple[bytes, bytes]]:
    """(row, value) of every cell in an uncompressed data block payload (only those whose
    row is in ``rows`` when given; every cell is still walked and checked)."""
    cells: list[tuple[bytes, bytes]] = []
    pos = 0
    end = len(payload)
    unpack = _CELL_HEADER.unpack_from
    while pos < end:
        if pos + 10 > end:
            raise CorruptFileError(f"cell header at {pos} runs past the data block")
        key_len, value_len, row_len = unpack(payload, pos)
        key_start = pos + 8
        value_start = key_start + key_len
        value_end = value_start + value_len
        if key_len < 12 or value_len < 0 or value_end > end:  # 12: row len, family len, ts, type
            raise CorruptFileError(f"cell at {pos} has bad lengths (key {key_len}, value {value_len})")
        row_end = key_start + 2 + row_len
        if row_end + 1 > value_start:
            raise CorruptFileError(f"cell at {pos}: row length {row_len} exceeds key length {key_len}")
        if row_end + 10 + payload[row_end] > value_start:  # qualifier may be empty; ts + type follow
            raise CorruptFileError(
                f"cell at {pos}: family length {payload[row_end]} exceeds key length {key_len}"
            )
        row = payload[key_start + 2 : row_end]
        if rows is None or row in rows:
            cells.append((row, payload[value_start:value_end]))
        pos = value_end
        if includes_tags:
            if pos + 2 > end:
                raise CorruptFileError(f"cell tags length at {pos} runs past the data block")
            (tags_len,) = struct.unpack_from(">H", payload, pos)
            pos += 2 + tags_len
            if pos > end:
                raise CorruptFileError(f"cell tags at {pos} run past the data block")
        if includes_memstore_ts:
            if pos < end and not 0x80 <= payload[pos] < 0x90:  # a one-byte vlong (always, for Hudi's zero)
                pos += 1
            else:
                _, pos = _read_hadoop_vlong(payload, pos, end)
    return cells


@dataclass(frozen=True)
class CellLayout:
    """What follows each cell's value, from the file info: tags, and which memstore
    timestamp layouts to try (in order) when the file does not say."""

    includes_tags: bool
    memstore_ts_layouts: tuple[bool, ...]


def cell_layout(file_info: dict[bytes, bytes], name: str) -> CellLayout:
    """The cell layout of a file; encoded data blocks are refused."""
    encoding = file_info.get(DATA_BLOCK_ENCODING, b"NONE")
    if encoding not in (b"NONE", b""):
        raise UnsupportedFeatureError(f"{name}: HFile data block encoding {encoding.decode(errors='replace')}")
    kv_version = file_info.get(KEY_VALUE_VERSION)
    # HBase writes a memstore timestamp after each cell iff KEY_VALUE_VERSION == 1;
    # Hudi's own reader always expects one (zero) byte there. Without the key, try
    # Hudi's layout first, then none.
    if kv_version is not None:
        layouts: tuple[bool, ...] = (len(kv_version) == 4 and struct.unpack(">i", kv_version)[0] == 1,)
    else:
        layouts = (True, False)
    return CellLayout(MAX_TAGS_LEN in file_info, layouts)


def check_load_on_open(trailer: HFileTrailer, file_size: int, name: str) -> None:
    """The load-on-open section must sit between the data and the trailer."""
    if not 0 <= trailer.load_on_open_offset <= file_size - TRAILER_SIZE:
        raise CorruptFileError(f"{name}: load-on-open offset {trailer.load_on_open_offset} is outside the file")


def _open_hfile(data: bytes, source: str) -> HFile:
    name = source or "HFile"
    trailer = parse_trailer(data, source)
    check_load_on_open(trailer, len(data), name)
    file_info = read_file_info(data, trailer, source)
    hfile = HFile(source=source, trailer=trailer, file_info=file_info)
    if trailer.entry_count == 0:
        return hfile
    layout = cell_layout(file_info, name)

    first = trailer.first_data_block_offset
    if first == _UINT64_MAX or first >= trailer.load_on_open_offset:
        raise CorruptFileError(f"{name}: trailer counts {trailer.entry_count} cells but has no data block")
    offset = first
    payloads: list[bytes] = []
    while offset < trailer.load_on_open_offset:
        block = read_block(data, offset, trailer.load_on_open_offset, trailer.compression_codec, source)
        if block.magic == ENCODED_DATA_MAGIC:
            raise UnsupportedFeatureError(f"{name}: encoded HFile data blocks are not supported")
        if block.magic == DATA_MAGIC:
            payloads.append(block.payload)
        offset = block.next_offset

    error: CorruptFileError | None = None
    for with_memstore_ts in layout.memstore_ts_layouts:
        try:
            cells = [
                cell for payload in payloads for cell in parse_cells(payload, layout.includes_tags, with_memstore_ts)
            ]
        except CorruptFileError as exc:
            error = error or exc
            continue
        if len(cells) != trailer.entry_count:
            error = error or CorruptFileError(
                f"found {len(cells)} cells, trailer says {trailer.entry_count}"
            )
            continue
        hfile.cells = cells
        return hfile
    assert error is not None
    raise CorruptFileError(f"{name}: {error}") from error
