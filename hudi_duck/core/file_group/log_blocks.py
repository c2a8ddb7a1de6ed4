"""Contents of log blocks: records of data blocks, keys of delete blocks.

Data blocks decode to Arrow tables aligned to the reader schema; delete
blocks decode to (record key, partition path, ordering value) triples. The
writer side encodes the same layouts.
"""

from __future__ import annotations

import datetime as _dt
import functools
import io
import json
import mmap
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable, Iterator, Sequence

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from ..avro import models as avro_models
from ..errors import CorruptFileError, HudiError, UnsupportedFeatureError
from ..schema.avro_arrow import avro_to_arrow
from ..schema.evolution import align_to_schema
from ..schema.empty import empty_table
from .avro_decoder import compiled_reader, decode_framed, decode_framed_blocks
from .log_format import BlockType, LogBlock

DATA_BLOCK_VERSION = 3
DELETE_BLOCK_VERSION = 3

_EPOCH = _dt.date(1970, 1, 1)
#: Blocks with fewer records are decoded record by record: cheaper than starting a compiled reader.
COMPILED_MIN_RECORDS = 256


@dataclass(frozen=True)
class DeleteRecord:
    record_key: str
    partition_path: str | None
    ordering_value: Any = None  # None: natural (processing) order
    #: Wrapper record the ordering value came in (e.g. ``IntWrapper``), if any.
    ordering_wrapper: str | None = None


@lru_cache(maxsize=64)
def _parsed_schema(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


@lru_cache(maxsize=64)
def _arrow_schema_of(schema_json: str) -> pa.Schema:
    return avro_to_arrow(schema_json)


def _names_block(decode):
    """Errors decoding a block's content name its log file and offset; a foreign exception
    (json, fastavro, pyarrow on damaged bytes) becomes a :class:`CorruptFileError`."""

    @functools.wraps(decode)
    def wrapper(block: LogBlock, *args: Any, **kwargs: Any) -> Any:
        try:
            return decode(block, *args, **kwargs)
        except HudiError as exc:
            if not block.file_path or block.file_path in str(exc):
                raise
            raise CorruptFileError(f"{block.file_path}@{block.offset}: {exc}") from exc
        except Exception as exc:
            raise CorruptFileError(
                f"{block.file_path}@{block.offset}: cannot decode the {block.block_type.name} of instant "
                f"{block.instant_time} ({type(exc).__name__}: {exc})"
            ) from exc

    return wrapper


# -- data blocks ------------------------------------------------------------------------


def _avro_block_count(content: bytes, source: str) -> int:
    """The record count of an Avro data block (after checking its version)."""
    if len(content) < 8:
        raise CorruptFileError(f"{source}: Avro data block too short")
    version, count = struct.unpack_from(">ii", content, 0)
    if version != DATA_BLOCK_VERSION:
        raise UnsupportedFeatureError(f"{source}: Avro data block version {version} (only 3 is supported)")
    if count < 0 or count > (len(content) - 8) // 4:
        raise CorruptFileError(f"{source}: Avro data block claims {count} records in {len(content)} bytes")
    return count


def avro_block_records(content: bytes, schema_json: str, source: str = "") -> list[dict[str, Any]]:
    """Decode the length-prefixed Avro records of an Avro data block."""
    count = _avro_block_count(content, source)
    parsed = _parsed_schema(schema_json)
    stream = io.BytesIO(content)
    stream.seek(8)
    records = []
    try:
        for _ in range(count):
            (length,) = struct.unpack(">i", stream.read(4))
            end = stream.tell() + length
            if length < 0 or end > len(content):
                raise CorruptFileError(f"{source}: Avro record length {length} runs past the block")
            records.append(fastavro.schemaless_reader(stream, parsed, None))
            if stream.tell() != end:
                raise CorruptFileError(f"{source}: Avro record length mismatch")
    except (struct.error, EOFError, ValueError, IndexError) as exc:
        raise CorruptFileError(f"{source}: cannot decode Avro data block ({exc})") from exc
    if stream.tell() != len(content):
        raise CorruptFileError(f"{source}: Avro data block has {len(content) - stream.tell()} bytes after its {count} records")
    return records


def avro_block_table(content: bytes, schema_json: str, source: str = "") -> pa.Table:
    """The records of an Avro data block as Arrow (in the writer schema's Arrow form), decoded in
    compiled code when a compiled Avro reader is installed (``avro_decoder``)."""
    count = _avro_block_count(content, source)
    schema = _arrow_schema_of(schema_json)
    if count >= COMPILED_MIN_RECORDS:
        table = decode_framed(content, count, schema_json, schema, source)
        if table is not None:
            return table
    return pa.Table.from_pylist(avro_block_records(content, schema_json, source), schema=schema)


class TinyBlockBatches:
    """Small Avro data blocks of one merge decoded together: those of one writer schema, in
    batches of at most ``max_bytes``, each batch in one compiled decode and aligned to the
    merge's schema once, then split back per block (zero-copy slices). Alone, a block under
    ``COMPILED_MIN_RECORDS`` records is decoded record by record.

    A batch is decoded when its first block is taken, so a merge holds at most one decoded batch
    per writer schema ahead of its reading. A batch that does not decode or align together (a
    damaged block, types the compiled reader cannot give exactly) leaves its blocks to be decoded
    one by one, with the same results and errors as without batching."""

    def __init__(self, blocks: Iterable[LogBlock], max_bytes: int, target: pa.Schema):
        self._target = target
        self._batch_of: dict[int, list[LogBlock]] = {}
        self._decoded: dict[int, tuple[pa.Table, int] | None] = {}
        if compiled_reader() is None:
            return
        open_batches: dict[str, _Batch] = {}
        batches: list[_Batch] = []
        for block in blocks:
            count = _tiny_block_count(block, max_bytes)
            if count is None:
                continue
            schema_json = block.schema or ""
            batch = open_batches.get(schema_json)
            if batch is None or batch.size + len(block.content) > max_bytes:
                batch = open_batches[schema_json] = _Batch()
                batches.append(batch)
            batch.add(block, count)
        for batch in batches:
            members = batch.blocks
            if len(members) > 1 and batch.records >= COMPILED_MIN_RECORDS:
                for block in members:
                    self._batch_of[id(block)] = members

    def take(self, block: LogBlock) -> pa.Table | None:
        """The rows of ``block`` shaped like the merge's schema, decoded with its batch; None when
        the block is not in a batch (or its batch did not decode together)."""
        taken = self.take_sized(block)
        return taken[0] if taken is not None else None

    def take_sized(self, block: LogBlock) -> tuple[pa.Table, int] | None:
        """``take`` with the bytes the block's rows hold: their share of the batch by row count
        (measuring a slice of a batch column by column costs more than decoding it)."""
        members = self._batch_of.pop(id(block), None)
        if members is None:
            return None
        if id(block) not in self._decoded:
            self._decode(members)
        return self._decoded.pop(id(block), None)

    def _decode(self, members: list[LogBlock]) -> None:
        first = members[0]
        schema_json = first.schema or ""
        source = f"{first.file_path}@{first.offset} (and {len(members) - 1} more blocks)"
        counts = [struct.unpack_from(">i", b.content, 4)[0] for b in members]
        table = decode_framed_blocks([b.content for b in members], counts, schema_json, _arrow_schema_of(schema_json), source)
        if table is not None:
            try:
                table = align_to_schema(table, self._target, source)
            except HudiError:  # each block alone raises it, naming the block
                table = None
        per_row = table.nbytes / max(table.num_rows, 1) if table is not None else 0.0
        start = 0
        for block, count in zip(members, counts):
            self._decoded[id(block)] = (table.slice(start, count), int(per_row * count) + 1) if table is not None else None
            start += count


@dataclass
class _Batch:
    blocks: list[LogBlock] = field(default_factory=list)
    records: int = 0
    size: int = 0

    def add(self, block: LogBlock, count: int) -> None:
        self.blocks.append(block)
        self.records += count
        self.size += len(block.content)


def _tiny_block_count(block: LogBlock, max_bytes: int) -> int | None:
    """The record count of an Avro data block decoded record by record alone (None: any other block)."""
    if block.block_type is not BlockType.AVRO_DATA_BLOCK or not block.schema:
        return None
    content = block.content
    if len(content) < 8 or len(content) > max_bytes:
        return None
    version, count = struct.unpack_from(">ii", content, 0)
    if version != DATA_BLOCK_VERSION or not 0 < count < COMPILED_MIN_RECORDS or count * 4 > len(content) - 8:
        return None
    return count


@_names_block
def decode_data_block(block: LogBlock, target: pa.Schema) -> pa.Table:
    """Rows of a data block as an Arrow table shaped like ``target``."""
    source = f"{block.file_path}@{block.offset}"
    schema_json = block.schema
    if block.block_type is BlockType.AVRO_DATA_BLOCK:
        if not schema_json:
            raise CorruptFileError(f"{source}: Avro data block without a SCHEMA header")
        table = avro_block_table(block.content, schema_json, source)
    elif block.block_type is BlockType.PARQUET_DATA_BLOCK:
        if not block.content:
            return empty_table(target)
        try:
            table = pq.ParquetFile(io.BytesIO(block.content)).read()
        except Exception as exc:
            raise CorruptFileError(f"{source}: cannot read parquet data block ({exc})") from exc
    elif block.block_type is BlockType.HFILE_DATA_BLOCK:
        from ..hfile.reader import decode_hfile_block_records

        if not schema_json:
            raise CorruptFileError(f"{source}: HFile data block without a SCHEMA header")
        records = decode_hfile_block_records(block.content, schema_json, source)
        table = pa.Table.from_pylist(records, schema=_arrow_schema_of(schema_json))
    else:
        raise ValueError(f"not a data block: {block.block_type.name}")
    return align_to_schema(table, target, source)


def iter_data_block(
    block: LogBlock, target: pa.Schema, piece_bytes: int, batches: TinyBlockBatches | None = None
) -> Iterator[pa.Table]:
    """Rows of a data block shaped like ``target``, in pieces: an Avro block larger than
    ``piece_bytes`` is decoded a run of records at a time (each run re-framed as a block of its
    own), so a merge never holds a large block decoded whole. A small block of ``batches`` is
    decoded with its batch (shaped like ``target``, the schema the batches align to)."""
    for rows, _ in iter_data_block_sized(block, target, piece_bytes, batches):
        yield rows


def iter_data_block_sized(
    block: LogBlock, target: pa.Schema, piece_bytes: int, batches: TinyBlockBatches | None = None
) -> Iterator[tuple[pa.Table, int]]:
    """``iter_data_block`` with the bytes each piece holds."""
    taken = batches.take_sized(block) if batches is not None else None
    if taken is not None:
        yield taken
        return
    if block.block_type is not BlockType.AVRO_DATA_BLOCK or len(block.content) <= piece_bytes or not block.schema:
        rows = decode_data_block(block, target)
        yield rows, rows.nbytes
        return
    source = f"{block.file_path}@{block.offset}"
    count = _avro_block_count(block.content, source)
    if count < COMPILED_MIN_RECORDS:
        rows = decode_data_block(block, target)
        yield rows, rows.nbytes
        return
    content = memoryview(block.content)
    for start, end, n in _avro_runs(content, count, piece_bytes, source):
        piece = struct.pack(">ii", DATA_BLOCK_VERSION, n) + content[start:end]
        _release_pages(block, start, end)
        rows = _decode_run(block, piece, target)
        yield rows, rows.nbytes


def _release_pages(block: LogBlock, start: int, end: int) -> None:
    """Let the pages of a memory-mapped block's bytes ``[start, end)`` go (they are read again
    from the file if needed): a merge then holds one run of a large block, not the block."""
    mapped = getattr(block.content, "obj", None)
    if not isinstance(mapped, mmap.mmap) or not hasattr(mapped, "madvise"):
        return
    lo = (block.content_offset + start) // mmap.PAGESIZE * mmap.PAGESIZE
    hi = (block.content_offset + end) // mmap.PAGESIZE * mmap.PAGESIZE
    if hi > lo:
        try:
            mapped.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (OSError, ValueError, AttributeError):
            pass


@_names_block
def _decode_run(block: LogBlock, piece: bytes, target: pa.Schema) -> pa.Table:
    source = f"{block.file_path}@{block.offset}"
    return align_to_schema(avro_block_table(piece, block.schema or "", source), target, source)


def _avro_runs(content: memoryview, count: int, piece_bytes: int, source: str) -> Iterator[tuple[int, int, int]]:
    """(start, end, records) of consecutive runs of an Avro block's framed records, each about
    ``piece_bytes`` long, found as they are read; the framing is checked as the
    record-by-record reader checks it."""
    unpack = struct.Struct(">i").unpack_from
    size = len(content)
    start = pos = 8
    n = 0
    for _ in range(count):
        if pos + 4 > size:
            raise CorruptFileError(f"{source}: Avro data block ends inside a record length")
        (length,) = unpack(content, pos)
        pos += 4 + length
        if length < 0 or pos > size:
            raise CorruptFileError(f"{source}: Avro record length {length} runs past the block")
        n += 1
        if pos - start >= piece_bytes:
            yield start, pos, n
            start, n = pos, 0
    if pos != size:
        raise CorruptFileError(f"{source}: Avro data block has {size - pos} bytes after its {count} records")
    if n:
        yield start, pos, n


def encode_avro_records(records: Iterable[dict[str, Any]], schema_json: str) -> bytes:
    """Content of an Avro data block holding ``records``."""
    parsed = _parsed_schema(schema_json)
    parts = []
    count = 0
    buffer = io.BytesIO()
    for record in records:
        buffer.seek(0)
        buffer.truncate()
        fastavro.schemaless_writer(buffer, parsed, record)
        payload = buffer.getvalue()
        parts.append(struct.pack(">i", len(payload)))
        parts.append(payload)
        count += 1
    return struct.pack(">ii", DATA_BLOCK_VERSION, count) + b"".join(parts)


def encode_parquet_records(table: pa.Table, schema_json: str, compression: str = "gzip") -> bytes:
    """Content of a parquet data block: a whole parquet file with the Avro schema in its footer."""
    if table.num_rows == 0:
        return b""
    sink = io.BytesIO()
    # footer as Hudi's Avro path writes it: the Avro schema and the writer model, nothing else
    table = table.replace_schema_metadata(None)
    with pq.ParquetWriter(sink, table.schema, compression=compression, store_schema=False) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({"parquet.avro.schema": schema_json, "writer.model.name": "avro"})
    return sink.getvalue()


# -- delete blocks ----------------------------------------------------------------------

_WRAPPER_NAMES = [w["name"] for w in avro_models.VALUE_WRAPPERS]


def _unwrap(value: Any) -> tuple[Any, str | None]:
    """The Python value inside an ``orderingVal`` wrapper record, and the wrapper's name."""
    if value is None:
        return None, None
    if isinstance(value, tuple):
        name, record = value
        short = name.rsplit(".", 1)[-1]
        inner = record["value"] if isinstance(record, dict) else record
        if short == "DateWrapper" and isinstance(inner, int):
            return _EPOCH + _dt.timedelta(days=inner), short
        if short == "TimestampMicrosWrapper" and isinstance(inner, int):
            epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
            return epoch + _dt.timedelta(microseconds=inner), short
        return inner, short
    if isinstance(value, dict):
        return value.get("value"), None
    return value, None


@_names_block
def decode_delete_block(block: LogBlock) -> list[DeleteRecord]:
    source = f"{block.file_path}@{block.offset}"
    content = block.content
    if len(content) < 8:
        raise CorruptFileError(f"{source}: delete block too short")
    version, length = struct.unpack_from(">ii", content, 0)
    if version < DELETE_BLOCK_VERSION:
        raise UnsupportedFeatureError(
            f"{source}: delete block version {version} holds Java-serialized (Kryo) keys written by "
            "Hudi < 0.11; compact the table with Apache Hudi first"
        )
    payload = content[8 : 8 + length]
    try:
        decoded = fastavro.schemaless_reader(
            io.BytesIO(payload), avro_models.parsed("HoodieDeleteRecordList"), None, return_record_name=True
        )
    except Exception as exc:
        raise CorruptFileError(f"{source}: cannot decode delete block ({exc})") from exc
    out = []
    for item in decoded["deleteRecordList"]:
        value, wrapper = _unwrap(item.get("orderingVal"))
        out.append(DeleteRecord(item["recordKey"], item.get("partitionPath"), value, wrapper))
    return out


def wrap_ordering_value(value: Any) -> Any:
    """Wrap a Python value the way Hudi's ``wrapValueIntoAvro`` does."""
    import decimal

    ns = avro_models.NAMESPACE
    if value is None:
        return None
    if isinstance(value, bool):
        return (f"{ns}.BooleanWrapper", {"value": value})
    if isinstance(value, int):
        name = "IntWrapper" if -(2**31) <= value < 2**31 else "LongWrapper"
        return (f"{ns}.{name}", {"value": value})
    if isinstance(value, float):
        return (f"{ns}.DoubleWrapper", {"value": value})
    if isinstance(value, decimal.Decimal):
        return (f"{ns}.DecimalWrapper", {"value": value.quantize(decimal.Decimal(1).scaleb(-15))})
    if isinstance(value, str):
        return (f"{ns}.StringWrapper", {"value": value})
    if isinstance(value, (bytes, bytearray)):
        return (f"{ns}.BytesWrapper", {"value": bytes(value)})
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        micros = (value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(microseconds=1)
        return (f"{ns}.TimestampMicrosWrapper", {"value": micros})
    if isinstance(value, _dt.date):
        return (f"{ns}.DateWrapper", {"value": (value - _EPOCH).days})
    raise TypeError(f"cannot wrap ordering value of type {type(value).__name__}")


_WRAPPER_FOR_TYPE = {
    "bool": "BooleanWrapper",
    "int8": "IntWrapper",
    "int16": "IntWrapper",
    "int32": "IntWrapper",
    "int64": "LongWrapper",
    "float": "FloatWrapper",
    "double": "DoubleWrapper",
    "string": "StringWrapper",
    "large_string": "StringWrapper",
    "date32[day]": "DateWrapper",
}


def wrapper_for_type(dtype: pa.DataType) -> str | None:
    """The wrapper record Hudi picks for an ordering value of this column type.

    The value is the payload's ordering value as ``HoodieAvroUtils.getNestedFieldVal``
    returns it: a ``LocalDate`` for dates, a ``BigDecimal`` for decimals, and for
    timestamps their Avro ``long`` (a ``LongWrapper``; ``TimestampMicrosWrapper`` only
    with consistent logical timestamps)."""
    if pa.types.is_decimal(dtype):
        return "DecimalWrapper"
    if pa.types.is_timestamp(dtype):
        return "LongWrapper"
    return _WRAPPER_FOR_TYPE.get(str(dtype))


def encode_delete_records(records: Sequence[DeleteRecord]) -> bytes:
    """Content of a delete block (version 3: Avro ``HoodieDeleteRecordList``).

    Deletes without an ordering value carry ``IntWrapper(0)``, as Hudi writes
    them ("natural order": the delete wins); otherwise the value is wrapped in
    the record ``ordering_wrapper`` names (the column's Java type).
    """
    items = []
    ns = avro_models.NAMESPACE
    for rec in records:
        value = rec.ordering_value
        if value is None:
            wrapped = (f"{ns}.IntWrapper", {"value": 0})
        elif rec.ordering_wrapper:
            wrapped = wrap_ordering_value(value)
            raw = wrapped[1]["value"]
            if rec.ordering_wrapper in ("IntWrapper", "LongWrapper") and isinstance(value, (int, bool)):
                raw = int(value)
            elif rec.ordering_wrapper in ("FloatWrapper", "DoubleWrapper"):
                raw = float(value)
            wrapped = (f"{ns}.{rec.ordering_wrapper}", {"value": raw})
        else:
            wrapped = wrap_ordering_value(value)
        items.append({"recordKey": rec.record_key, "partitionPath": rec.partition_path, "orderingVal": wrapped})
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, avro_models.parsed("HoodieDeleteRecordList"), {"deleteRecordList": items})
    payload = buffer.getvalue()
    return struct.pack(">ii", DELETE_BLOCK_VERSION, len(payload)) + payload


# -- counting ---------------------------------------------------------------------------


@_names_block
def block_record_count(block: LogBlock) -> int | None:
    """Records of a data block or keys of a delete block, read without decoding the records;
    ``None`` for command and corrupt blocks. Raises :class:`CorruptFileError` on malformed content."""
    kind = block.block_type
    source = f"{block.file_path}@{block.offset}"
    if kind in (BlockType.AVRO_DATA_BLOCK, BlockType.CDC_DATA_BLOCK):
        if len(block.content) < 8:
            raise CorruptFileError(f"{source}: Avro data block too short")
        version, count = struct.unpack_from(">ii", block.content, 0)
        if version != DATA_BLOCK_VERSION:
            raise UnsupportedFeatureError(f"{source}: Avro data block version {version} (only 3 is supported)")
        return count
    if kind is BlockType.PARQUET_DATA_BLOCK:
        if not block.content:
            return 0
        try:
            return pq.ParquetFile(io.BytesIO(block.content)).metadata.num_rows
        except Exception as exc:
            raise CorruptFileError(f"{source}: cannot read parquet data block ({exc})") from exc
    if kind is BlockType.HFILE_DATA_BLOCK:
        from ..hfile.reader import read_hfile

        return len(read_hfile(block.content, source))
    if kind is BlockType.DELETE_BLOCK:
        return len(decode_delete_block(block))
    return None
