"""Avro data blocks decoded in compiled code: the block re-framed as an Avro object container.

A Hudi Avro data block is its writer schema (in the block header) followed by
``version, count`` and ``count`` length-prefixed binary records. Read as
Avro, each length prefix is a ``fixed(4)``: with the writer schema wrapped in a
record ``{length: fixed(4), record: <writer schema>}`` the block's bytes after
its 8-byte head are, unchanged, the body of one container block. So no record
is touched in Python: the container header is written around the bytes and a
compiled reader decodes them to Arrow. The length prefixes it decoded are then
checked against the bytes (vectorised): every record must end where the next
prefix begins, as the per-record reader checks.

Readers, best first: one an engine registers (:func:`register_decoder`; the
DuckDB layer registers DuckDB's ``avro`` extension when it loads without a
download), then the ``datafusion`` package (the ``fast`` extra), then
``fastavro`` record by record, with one log line saying how to get a faster
one. Small blocks (``log_blocks.COMPILED_MIN_RECORDS``) are decoded record by
record anyway: starting the compiled reader costs more. Results are the same Arrow table on every path (cast to the schema
``avro_arrow`` derives from the writer schema).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError
from ..schema.empty import empty_table

log = logging.getLogger("hudi_duck")

#: Field names of the wrapping record (never Hudi field names: they start with ``_hd``).
LENGTH_FIELD = "_hd_length"
RECORD_FIELD = "_hd_record"
_SYNC = b"\x00" * 16
_HEAD = 8  # version and count of a data block


@dataclass(frozen=True)
class ContainerReader:
    """A compiled reader of Avro object container files: a name and ``read(path) -> pa.Table``."""

    name: str
    read: Callable[[str], pa.Table]


_registered: list[ContainerReader] = []
_lock = threading.Lock()
_announced = False


def register_decoder(reader: ContainerReader) -> None:
    """Prefer ``reader`` (an engine's own Avro reader) over the ones found here."""
    with _lock:
        _registered[:] = [r for r in _registered if r.name != reader.name]
        _registered.insert(0, reader)
        _best.cache_clear()


@lru_cache(maxsize=1)
def _datafusion() -> ContainerReader | None:
    try:
        import datafusion
    except ImportError:
        return None
    config = datafusion.SessionConfig().with_target_partitions(1)
    local = threading.local()

    def read(path: str) -> pa.Table:
        ctx = getattr(local, "ctx", None)
        if ctx is None:
            ctx = local.ctx = datafusion.SessionContext(config)
        return ctx.read_avro(path).to_arrow_table()

    return ContainerReader("datafusion", read)


@lru_cache(maxsize=1)
def _best() -> ContainerReader | None:
    if _registered:
        return _registered[0]
    return _datafusion()


def compiled_reader() -> ContainerReader | None:
    """The compiled Avro reader in use (None: records are decoded one by one with fastavro)."""
    reader = None if os.environ.get("HUDI_DUCK_AVRO_DECODER", "").lower() == "fastavro" else _best()
    global _announced
    if not _announced:
        _announced = True
        if reader is None:
            log.info(
                "hudi-duck decodes Avro log blocks record by record (fastavro); install hudi-duck[fast] "
                "(the datafusion package) to decode them in compiled code, many times faster"
            )
        else:
            log.info("hudi-duck decodes Avro log blocks with %s", reader.name)
    return reader


# -- the container -------------------------------------------------------------------------


def _zigzag(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _avro_bytes(value: bytes) -> bytes:
    return _zigzag(len(value)) + value


@lru_cache(maxsize=64)
def framed_schema(schema_json: str) -> str:
    """The writer schema wrapped with each record's length prefix."""
    return json.dumps(
        {
            "type": "record",
            "name": "FramedRecord",
            "namespace": "hudi_duck.framing",
            "fields": [
                {"name": LENGTH_FIELD, "type": {"type": "fixed", "name": "Length", "size": 4}},
                {"name": RECORD_FIELD, "type": json.loads(schema_json)},
            ],
        }
    )


def container_header(schema_json: str) -> bytes:
    meta = (
        _zigzag(2)
        + _avro_bytes(b"avro.schema")
        + _avro_bytes(framed_schema(schema_json).encode("utf-8"))
        + _avro_bytes(b"avro.codec")
        + _avro_bytes(b"null")
        + _zigzag(0)
    )
    return b"Obj\x01" + meta + _SYNC


def container_block(count: int, body: memoryview | bytes) -> list[bytes | memoryview]:
    return [_zigzag(count), _zigzag(len(body)), body, _SYNC]


# -- decoding ----------------------------------------------------------------------------


def _check_lengths(body: bytes | memoryview, lengths: np.ndarray, source: str, ends_at: np.ndarray | None = None) -> None:
    """Every record's decoded length prefix is where the framing puts it (``body``: the records
    of one block, or of several blocks one after the other, each ending at ``ends_at``)."""
    if len(lengths) == 0:
        if len(body) != 0:
            raise CorruptFileError(f"{source}: Avro data block has bytes after its last record")
        return
    if (lengths < 0).any():
        raise CorruptFileError(f"{source}: Avro data block holds a negative record length")
    steps = lengths.astype(np.int64) + 4
    ends = np.cumsum(steps)
    if int(ends[-1]) != len(body):
        raise CorruptFileError(f"{source}: Avro record length mismatch (the records do not fill the block)")
    if ends_at is not None and not np.array_equal(ends[ends_at[:, 0]], ends_at[:, 1]):
        raise CorruptFileError(f"{source}: Avro record length mismatch (the records do not fill their blocks)")
    starts = np.concatenate(([0], ends[:-1]))
    raw = np.frombuffer(body, dtype=np.uint8)
    at = raw[starts[:, None] + np.arange(4)]
    framed = at.copy().view(">i4").reshape(-1)
    if not np.array_equal(framed, lengths):
        raise CorruptFileError(f"{source}: Avro record length mismatch")


def decode_framed(content: bytes, count: int, schema_json: str, target: pa.Schema, source: str) -> pa.Table | None:
    """Records of an Avro data block as ``target`` (the writer schema's Arrow form), decoded by
    the compiled reader; None when there is none or it cannot give these types exactly."""
    reader = compiled_reader()
    if reader is None:
        return None
    if count < 0 or count * 4 > len(content) - _HEAD:
        raise CorruptFileError(f"{source}: Avro data block claims {count} records in {len(content)} bytes")
    if count == 0:
        _check_lengths(memoryview(content)[_HEAD:], np.empty(0, np.int32), source)
        return empty_table(target)
    return _decode_body(reader, memoryview(content)[_HEAD:], count, schema_json, target, source)


def decode_framed_blocks(
    contents: Sequence[bytes | memoryview], counts: Sequence[int], schema_json: str, target: pa.Schema, source: str
) -> pa.Table | None:
    """Records of several Avro data blocks of one writer schema decoded in one container, their
    records one after the other (each block's are the next ``counts[i]`` rows). None when there
    is no compiled reader, or the blocks do not decode together exactly, each record within its
    own block (then each block is decoded on its own, and a damaged one is reported as alone)."""
    reader = compiled_reader()
    if reader is None or not contents or min(counts) <= 0:
        return None
    for content, count in zip(contents, counts):
        if count * 4 > len(content) - _HEAD:
            return None
    body = b"".join(memoryview(c)[_HEAD:] for c in contents)
    last_record = np.cumsum(np.asarray(counts, np.int64)) - 1
    block_end = np.cumsum(np.asarray([len(c) - _HEAD for c in contents], np.int64))
    try:
        return _decode_body(
            reader, body, int(last_record[-1]) + 1, schema_json, target, source, np.stack([last_record, block_end], axis=1)
        )
    except CorruptFileError as exc:
        log.debug("%s: blocks decoded together do not fit (%s); decoding them one by one", source, exc)
        return None


def _decode_body(
    reader: ContainerReader,
    body: bytes | memoryview,
    count: int,
    schema_json: str,
    target: pa.Schema,
    source: str,
    ends_at: np.ndarray | None = None,
) -> pa.Table | None:
    """``count`` framed records (``body``) read as one container block by ``reader``."""
    fd, path = tempfile.mkstemp(suffix=".avro", prefix="hudi-duck-block-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(container_header(schema_json))
            for part in container_block(count, body):
                handle.write(part)
        try:
            decoded = reader.read(path)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except BaseException as exc:  # a Rust panic arrives as a BaseException
            raise CorruptFileError(f"{source}: cannot decode Avro data block ({_first_line(exc)})") from exc
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    if decoded.num_rows != count:
        raise CorruptFileError(f"{source}: Avro data block holds {decoded.num_rows} records, its header says {count}")
    length_column = decoded.column(LENGTH_FIELD).combine_chunks()
    if not pa.types.is_fixed_size_binary(length_column.type):
        length_column = length_column.cast(pa.binary(4))
    lengths = np.frombuffer(length_column.buffers()[1], dtype=">i4", count=len(length_column), offset=length_column.offset * 4)
    _check_lengths(body, lengths.astype(np.int32), source, ends_at)
    records = decoded.column(RECORD_FIELD).combine_chunks()
    if isinstance(records, pa.ChunkedArray):  # pragma: no cover - combine_chunks of a struct column
        records = records.chunk(0)
    columns = records.flatten()
    if [f.name for f in records.type] != target.names:
        return None
    try:
        return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(columns, target)], schema=target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError) as exc:
        log.debug("%s: %s types differ from the Arrow schema (%s); decoding with fastavro", source, reader.name, exc)
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
