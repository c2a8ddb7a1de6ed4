"""Writing Hudi base files (parquet) the way Apache Hudi 0.14 writes them.

Runs on Spark executors: pure pyarrow/numpy, no Spark imports.

What a base file of a Spark/Avro write (``HoodieAvroParquetWriter``) holds:

* columns: the five meta columns first (``_hoodie_commit_time``,
  ``_hoodie_commit_seqno``, ``_hoodie_record_key``, ``_hoodie_partition_path``,
  ``_hoodie_file_name``; plus ``_hoodie_operation`` when the table keeps
  operation metadata), then the data columns, typed as parquet-avro maps the
  write schema;
* meta values (``prepRecordWithMetadata``): commit time = the writing instant;
  seqno = ``<instant>_<sparkPartitionId>_<n>`` with ``n`` the number of records
  the file writer had written before this one (the row's position in the file,
  copied rows included); record key; partition path; the base file name.
  Rows whose meta fields are preserved (merge handle copying old records,
  compaction/clustering with ``preserve_meta``) keep commit time and seqno but
  get the new file name (``rewriteRecordWithMetadata``);
* footer key-value metadata: ``parquet.avro.schema`` (the write schema with the
  meta fields, ``HoodieAvroUtils.addMetadataFields`` + Avro ``toString``),
  ``writer.model.name=avro``, ``org.apache.hudi.bloomfilter`` (every record key
  of the file, in write order), ``hoodie_bloom_filter_type_code`` (dynamic
  filters only), ``hoodie_min_record_key`` / ``hoodie_max_record_key`` (Java
  ``String.compareTo`` order); in the order parquet-mr's ``HashMap`` iterates;
* parquet: codec ``hoodie.parquet.compression.codec`` (gzip in 0.x), block
  (row group) size 120 MB, page size 1 MB, dictionary encoding with
  parquet-mr's "fall back to plain when the dictionary does not pay" rule,
  format version 1 (``PLAIN_DICTIONARY``), statistics and page indexes.

With ``hoodie.populate.meta.fields=false`` the meta columns are null and the file
has no bloom filter and no min/max keys (``enableBloomFilter`` needs meta fields).

Remaining differences from parquet-mr (pyarrow cannot produce these):
``created_by``; the root group is named ``schema`` rather than the Avro record's
full name; lists are written in the standard 3-level form
(``<list> { repeated group list { element } }``, as Spark's row writer and
parquet-avro with ``write-old-list-structure=false`` write them) instead of
parquet-avro's default 2-level ``repeated <type> array``; the map's repeated group
carries no ``MAP_KEY_VALUE`` annotation; Avro enums are plain ``UTF8`` strings
(parquet-avro: ``ENUM``); ``bytes``-backed decimals are ``FIXED_LEN_BYTE_ARRAY``
of the minimal width (parquet-avro: ``BINARY``); ``time-millis``/``time-micros`` get
``isAdjustedToUTC=false``; page boundaries, level encodings list and compressed
bytes differ. Readers (Hudi/parquet-avro, Spark, DuckDB, hudi-rs) read both.
"""

from __future__ import annotations

import json
import math
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..config.write_settings import ParquetSettings
from ..errors import CorruptFileError, HudiError, SchemaError, WriteError
from ..index import bloom as _bloom
from ..metadata.java import hashmap_order, table_size_for
from ..schema.avro_arrow import avro_to_arrow, parse_avro_schema
from ..schema.evolution import align_to_schema
from ..schema.meta_fields import (
    COMMIT_SEQNO,
    COMMIT_TIME,
    META_FIELDS,
    OPERATION,
    RECORD_KEY,
)
from ..storage.storage import Storage
from .naming import parse_base_file

if TYPE_CHECKING:
    from ..timeline.commit_metadata import WriteStat

# -- Hudi / parquet-mr defaults --------------------------------------------------------------

#: The settings a base file is written with when none are given (Hudi's defaults).
DEFAULT_SETTINGS = ParquetSettings()
DEFAULT_PAGE_SIZE = DEFAULT_SETTINGS.page_size
#: parquet.dictionary.page.size (parquet-mr default, Hudi leaves it)
DEFAULT_DICTIONARY_PAGE_SIZE = 1024 * 1024
#: levels parquet-mr/Hadoop use by default (zlib default level, zstd-jni level 3)
_DEFAULT_LEVELS = {"gzip": 6, "zstd": 3, "brotli": None, "lz4": None, "snappy": None, "none": None}

MIN_RECORD_KEY_FOOTER = "hoodie_min_record_key"
MAX_RECORD_KEY_FOOTER = "hoodie_max_record_key"
AVRO_SCHEMA_FOOTER = "parquet.avro.schema"
WRITER_MODEL_FOOTER = "writer.model.name"

META_FIELDS_WITH_OPERATION = META_FIELDS + (OPERATION,)


# -- the Avro write schema with meta fields ------------------------------------------------------


def _meta_field(name: str) -> dict[str, Any]:
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_FIELD_DROPPED = ("order", "aliases")
_NAMED_KEYS = ("type", "name", "namespace", "doc")


def _avro_ordered(schema: Any) -> Any:
    """``schema`` with JSON keys in the order Avro's ``Schema.toString`` writes them.

    Namespaces are kept as given (Avro writes a namespace only where it differs
    from the enclosing one; schemas produced by Avro already are that way).
    """
    if isinstance(schema, list):
        return [_avro_ordered(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if len(schema) == 1 and (kind in _PRIMITIVES or isinstance(kind, (dict, list))):
        return _avro_ordered(kind)  # {"type": "long"} prints as "long"
    out: dict[str, Any] = {}
    if kind in ("record", "error"):
        for key in _NAMED_KEYS:
            if key in schema:
                out[key] = schema[key]
        out["fields"] = [_avro_field_ordered(f, keep_extras=True) for f in schema.get("fields", [])]
        tail = ("aliases",)
    elif kind == "enum":
        for key in _NAMED_KEYS + ("symbols", "default"):
            if key in schema:
                out[key] = schema[key]
        tail = ("aliases",)
    elif kind == "fixed":
        for key in _NAMED_KEYS + ("size",):
            if key in schema:
                out[key] = schema[key]
        tail = ("aliases",)
    elif kind == "array":
        out["type"] = "array"
        out["items"] = _avro_ordered(schema.get("items"))
        tail = ()
    elif kind == "map":
        out["type"] = "map"
        out["values"] = _avro_ordered(schema.get("values"))
        tail = ()
    else:
        out["type"] = _avro_ordered(kind)
        tail = ()
    for key, value in schema.items():  # props, then aliases (Avro writes props first)
        if key not in out and key not in tail:
            out[key] = value
    for key in tail:
        if key in schema:
            out[key] = schema[key]
    return out


def _avro_field_ordered(fld: dict[str, Any], keep_extras: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": fld["name"], "type": _avro_ordered(fld["type"])}
    if "doc" in fld:
        out["doc"] = fld["doc"]
    if "default" in fld:
        out["default"] = fld["default"]
    if keep_extras and fld.get("order", "ascending") != "ascending":
        out["order"] = fld["order"]
    if keep_extras and fld.get("aliases"):
        out["aliases"] = fld["aliases"]
    for key, value in fld.items():
        if key not in out and key not in _FIELD_DROPPED:
            out[key] = value
    return out


def avro_schema_to_string(schema: str | Mapping[str, Any]) -> str:
    """Avro ``Schema.toString()``: compact JSON, keys in Avro's order, non-ASCII unescaped."""
    parsed = json.loads(schema) if isinstance(schema, str) else schema
    return json.dumps(_avro_ordered(parsed), separators=(",", ":"), ensure_ascii=False)


def avro_schema_with_meta_fields(avro_schema: str | Mapping[str, Any], with_operation_field: bool = False) -> str:
    """``HoodieAvroUtils.addMetadataFields(schema, withOperationField).toString()``.

    Meta fields already in ``avro_schema`` are dropped and re-added first. Data
    fields keep name, type, doc, default and props (order/aliases are dropped as
    Hudi's ``new Schema.Field(...)`` copy drops them); record props are kept,
    record aliases dropped.
    """
    record = parse_avro_schema(dict(avro_schema) if isinstance(avro_schema, Mapping) else avro_schema)
    names = META_FIELDS_WITH_OPERATION if with_operation_field else META_FIELDS
    fields = [_meta_field(n) for n in names]
    for fld in record.get("fields", []):
        if fld["name"] in META_FIELDS_WITH_OPERATION:
            continue
        fields.append(_avro_field_ordered(fld, keep_extras=False))
    merged: dict[str, Any] = {"type": "record", "name": record["name"]}
    if record.get("namespace"):
        merged["namespace"] = record["namespace"]
    if "doc" in record:
        merged["doc"] = record["doc"]
    merged["fields"] = fields
    for key, value in record.items():
        if key not in ("type", "name", "namespace", "doc", "fields", "aliases"):
            merged[key] = value
    return json.dumps(_avro_ordered(merged), separators=(",", ":"), ensure_ascii=False)


# -- Java HashMap iteration order (parquet-mr's footer map) ------------------------------------


class _JavaHashMap:
    """Just enough of ``java.util.HashMap`` to know its table size after a copy and puts; the
    iteration order for that size is :func:`metadata.java.hashmap_order`."""

    def __init__(self, copy_of: "list[str] | None" = None):
        self.cap = 0
        self.thr = 0
        self.keys: list[str] = []
        if copy_of is not None:
            self.put_all(copy_of)

    def _resize(self) -> None:
        if self.cap > 0:
            old_cap = self.cap
            self.cap <<= 1
            self.thr = self.thr << 1 if old_cap >= 16 else int(self.cap * 0.75)
        elif self.thr > 0:
            self.cap = self.thr
            self.thr = int(self.cap * 0.75)
        else:
            self.cap, self.thr = 16, 12

    def put(self, key: str) -> None:
        if self.cap == 0:
            self._resize()
        if key in self.keys:
            return
        self.keys.append(key)
        if len(self.keys) > self.thr:
            self._resize()

    def put_all(self, keys: list[str]) -> None:
        s = len(keys)
        if s > 0:
            if self.cap == 0:
                t = int(s / 0.75 + 1.0)
                if t > self.thr:
                    self.thr = table_size_for(t)
            else:
                while s > self.thr:
                    self._resize()
        for key in keys:
            self.put(key)

    def iteration_order(self) -> list[str]:
        return list(hashmap_order(((key, None) for key in self.keys), capacity=max(self.cap, 1)))


def footer_key_order(hudi_keys: list[str]) -> list[str]:
    """Order parquet-mr writes the footer keys of a Hudi Avro base file.

    ``AvroWriteSupport.init`` gives ``{parquet.avro.schema}``; parquet-mr's record
    writer copies it into a new HashMap, puts ``writer.model.name``, then puts all
    of Hudi's finalize map (itself a HashMap filled bloom, type code, min, max).
    """
    hudi_map = _JavaHashMap()
    for key in hudi_keys:
        hudi_map.put(key)
    combined = _JavaHashMap(hudi_map.iteration_order())  # CollectionUtils.combine(footerMetadata, ...)
    final = _JavaHashMap([AVRO_SCHEMA_FOOTER])
    final.put(WRITER_MODEL_FOOTER)
    final.put_all(combined.iteration_order())
    return final.iteration_order()


# -- record keys: min/max as Java compares strings -----------------------------------------------


def _as_string_array(values: Any, what: str) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not isinstance(values, pa.Array):
        values = pa.array(list(values), type=pa.string())
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        try:
            values = values.cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise WriteError(f"{what} must be strings, not {values.type}") from exc
    return values


def java_min_max(keys: pa.Array) -> tuple[str | None, str | None]:
    """Min and max of ``keys`` under Java's ``String.compareTo`` (UTF-16 code units).

    UTF-8 byte order equals UTF-16 order unless a key has characters at or above
    U+E000 (surrogate pairs sort below U+E000..U+FFFF in UTF-16); only then
    the keys are compared in Python.
    """
    keys = keys.drop_null() if keys.null_count else keys
    if len(keys) == 0:
        return None, None
    data = keys.buffers()[2]
    if data is not None and np.any(np.frombuffer(data, dtype=np.uint8) >= 0xEE):
        values = keys.to_pylist()
        lo = min(values, key=lambda s: s.encode("utf-16-be"))
        hi = max(values, key=lambda s: s.encode("utf-16-be"))
        return lo, hi
    mm = pc.min_max(keys)
    return mm["min"].as_py(), mm["max"].as_py()


# -- parquet-mr's dictionary fallback rule ---------------------------------------------------------


def _plain_width(typ: pa.DataType) -> int | None:
    """Bytes per value in PLAIN encoding; 0 for variable length; None: no dictionary (v1 writer)."""
    if pa.types.is_boolean(typ) or pa.types.is_decimal(typ) or pa.types.is_fixed_size_binary(typ):
        return None
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return 0
    if pa.types.is_int32(typ) or pa.types.is_date32(typ) or pa.types.is_time32(typ) or pa.types.is_float32(typ):
        return 4
    if (pa.types.is_int64(typ) or pa.types.is_timestamp(typ) or pa.types.is_time64(typ)
            or pa.types.is_float64(typ)):
        return 8
    return None


def _leaf_columns(array: pa.Array, path: str) -> Iterable[tuple[str, pa.Array]]:
    """(parquet column path, non-null leaf values) of every leaf under ``array``."""
    typ = array.type
    if pa.types.is_struct(typ):
        for fld, child in zip(typ, array.flatten()):
            yield from _leaf_columns(child, f"{path}.{fld.name}")
    elif pa.types.is_map(typ):
        offsets = array.offsets
        first = offsets[0].as_py() if len(offsets) else 0
        last = offsets[-1].as_py() if len(offsets) else 0
        keys = array.keys.slice(first, last - first)
        items = array.items.slice(first, last - first)
        yield from _leaf_columns(keys, f"{path}.key_value.key")
        yield from _leaf_columns(items, f"{path}.key_value.value")
    elif pa.types.is_list(typ) or pa.types.is_large_list(typ):
        yield from _leaf_columns(array.flatten(), f"{path}.list.element")
    else:
        yield path, array.drop_null() if array.null_count else array


def _rle_hybrid_size(n: int, bit_width: int) -> int:
    """Approximate size of ``n`` dictionary ids in parquet's RLE/bit-packing hybrid."""
    if n == 0:
        return 1
    if bit_width == 0:
        return 2  # bit width byte + one run header
    return 1 + math.ceil(n / 8) * bit_width + math.ceil(n / 504)


def dictionary_columns(table: pa.Table, page_size: int = DEFAULT_PAGE_SIZE,
                       max_dictionary_size: int = DEFAULT_DICTIONARY_PAGE_SIZE) -> list[str]:
    """Leaf columns parquet-mr (v1 writer) would keep dictionary-encoded.

    parquet-mr starts every column with a dictionary and falls back to PLAIN when,
    on the first page, ``encoded ids + dictionary`` is not smaller than the plain
    size (``DictionaryValuesWriter.isCompressionSatisfying``) or the dictionary
    outgrows its page; booleans and FIXED_LEN_BYTE_ARRAY never use one in v1.
    """
    chosen = []
    for name in table.column_names:
        column = table.column(name)
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        for path, values in _leaf_columns(array, name):
            width = _plain_width(values.type)
            if width is None:
                continue
            if width == 0:
                lengths = pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64) + 4
                cumulative = np.cumsum(lengths)
                count = int(np.searchsorted(cumulative, page_size, side="right")) + 1
                count = min(count, len(values))
                first = values.slice(0, count)
                raw = int(cumulative[count - 1]) if count else 0
                uniques = pc.unique(first)
                dict_size = int(pc.sum(pc.binary_length(uniques)).as_py() or 0) + 4 * len(uniques)
            else:
                count = min(len(values), max(1, page_size // width))
                first = values.slice(0, count)
                raw = count * width
                uniques = pc.unique(first)
                dict_size = width * len(uniques)
            if count == 0:
                chosen.append(path)
                continue
            bit_width = max(len(uniques) - 1, 0).bit_length()
            encoded = _rle_hybrid_size(count, bit_width)
            if dict_size <= max_dictionary_size and encoded + dict_size < raw:
                chosen.append(path)
    return chosen


# -- writing -------------------------------------------------------------------------------------


@dataclass
class BaseFileWriteResult:
    """What ``write_base_file`` wrote: enough for a ``HoodieWriteStat``."""

    path: str  # relative to the table base path
    file_name: str
    file_id: str
    partition_path: str
    commit_time: str
    num_writes: int  # rows written to this file
    rows_consumed: int  # rows of ``data`` written (< data.num_rows: max file size hit, roll over)
    file_size: int
    min_record_key: str | None
    max_record_key: str | None
    num_row_groups: int
    avro_schema: str  # parquet.avro.schema
    bloom_filter: str | None = None  # serialized filter in the footer
    bloom_type: str | None = None
    next_seqno: int = 0  # seqno counter after the last row
    num_preserved: int = 0  # rows that kept their commit time / seqno
    footer: dict[str, str] = field(default_factory=dict, repr=False)
    #: the footer as written (column statistics), kept so nobody reads the file back for it
    parquet_metadata: Any = field(default=None, repr=False)

    def to_write_stat(self, prev_commit: str = "null", num_inserts: int | None = None, num_update_writes: int = 0,
                      num_deletes: int = 0, **extra: Any) -> "WriteStat":
        """The ``HoodieWriteStat`` of this file."""
        from ..timeline.commit_metadata import WriteStat

        return WriteStat(
            file_id=self.file_id,
            path=self.path,
            prev_commit=prev_commit,
            num_writes=self.num_writes,
            num_deletes=num_deletes,
            num_update_writes=num_update_writes,
            num_inserts=self.num_writes - num_update_writes if num_inserts is None else num_inserts,
            total_write_bytes=self.file_size,
            partition_path=self.partition_path,
            file_size_in_bytes=self.file_size,
            **extra,
        )


def _column(data: pa.Table, name: str) -> pa.Array | None:
    if name not in data.column_names:
        return None
    column = data.column(name)
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _seqnos(commit_time: str, task_partition_id: int, start: int, n: int) -> pa.Array:
    prefix = f"{commit_time}_{task_partition_id}_"
    numbers = pc.cast(pa.array(np.arange(start, start + n, dtype=np.int64)), pa.string())
    return pc.binary_join_element_wise(pa.scalar(prefix, pa.string()), numbers, "")


def _preserve_mask(preserve_meta: Any, n: int) -> np.ndarray | None:
    if preserve_meta is None or preserve_meta is False:
        return None
    if preserve_meta is True:
        return np.ones(n, dtype=bool)
    if isinstance(preserve_meta, pa.ChunkedArray):
        preserve_meta = preserve_meta.combine_chunks()
    if isinstance(preserve_meta, pa.Array):
        preserve_meta = preserve_meta.fill_null(False).to_numpy(zero_copy_only=False)
    mask = np.asarray(preserve_meta, dtype=bool)
    if mask.shape != (n,):
        raise WriteError(f"preserve_meta mask has {mask.shape} entries for {n} rows")
    return mask if mask.any() else None


def _mixed(new: pa.Array, old: pa.Array | None, mask: np.ndarray | None, what: str) -> pa.Array:
    """``old`` where ``mask`` else ``new``."""
    if mask is None:
        return new
    if old is None:
        raise WriteError(f"preserve_meta needs the incoming {what} column")
    old = _as_string_array(old, what).cast(pa.string())
    if mask.all():
        return old
    return pc.if_else(pa.array(mask), old, new.cast(pa.string()))


def _cast_data(data: pa.Table, target: pa.Schema, meta_names: tuple[str, ...]) -> list[pa.Array]:
    """Data columns shaped like ``target`` (missing nullable columns become nulls)."""
    known = set(target.names) | set(META_FIELDS_WITH_OPERATION)
    unknown = [c for c in data.column_names if c not in known]
    if unknown:
        raise WriteError(f"columns {unknown} are not in the write schema")
    data_fields = [f for f in target if f.name not in meta_names]
    for fld in data_fields:
        if fld.name not in data.column_names and not fld.nullable:
            raise WriteError(f"column {fld.name!r} is required by the write schema but missing")
    try:
        aligned = align_to_schema(data.select([f.name for f in data_fields if f.name in data.column_names]),
                                  pa.schema(data_fields), "write")
    except SchemaError as exc:
        raise WriteError(str(exc)) from exc
    out = []
    for fld, column in zip(data_fields, aligned.columns):
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        if not fld.nullable and array.null_count:
            raise WriteError(f"column {fld.name!r} is not nullable in the write schema but has nulls")
        out.append(array)
    return out


def write_base_file(
    storage: Storage,
    rel_path: str,
    data: pa.Table,
    avro_schema_json: str | Mapping[str, Any],
    *,
    commit_time: str,
    file_id: str,
    partition_path: str,
    record_keys: Any = None,
    seqno_start: int = 0,
    task_partition_id: int = 0,
    settings: ParquetSettings = DEFAULT_SETTINGS,
    max_file_size: int | None = None,
    populate_meta_fields: bool = True,
    preserve_meta: Any = False,
    with_operation_field: bool = False,
    overwrite: bool = False,
) -> BaseFileWriteResult:
    """Write one Hudi base parquet file at ``rel_path`` (relative to ``storage``).

    ``data``: the records in write order, data columns by name (meta columns may
    be present; they are only read when ``preserve_meta`` asks for them).
    ``record_keys``: one key per row (default: ``data``'s ``_hoodie_record_key``).
    ``settings``: codec, row group and page sizes, bloom filter (``hoodie.parquet.*``).
    ``preserve_meta``: ``True`` or a boolean mask per row: keep those rows'
    ``_hoodie_commit_time``/``_hoodie_commit_seqno`` from ``data`` (merge of old
    records, compaction, clustering); the file name is always rewritten.
    ``max_file_size``: this file's limit when it is not ``settings.max_file_size``
    (0: none, one file group per bucket); the writer stops once the file is within two
    average records of it, ``result.rows_consumed < data.num_rows`` then, and the caller
    writes the rest to a new file group, as Hudi's create handle rolls over.
    """
    if max_file_size is None:
        max_file_size = settings.max_file_size
    block_size, page_size, bloom_settings = settings.block_size, settings.page_size, settings.bloom_filter
    compression, compression_level = settings.compression, settings.compression_level
    file_name = posixpath.basename(rel_path)
    parsed = parse_base_file(partition_path, file_name)
    if parsed is None:
        raise WriteError(f"{file_name!r} is not a base file name (<fileId>_<writeToken>_<instant>.parquet)")
    if parsed.file_id != file_id:
        raise WriteError(f"base file name {file_name!r} does not belong to file group {file_id!r}")
    if not overwrite and storage.exists(rel_path):
        raise WriteError(f"base file {storage.uri(rel_path)} already exists")
    codec = (compression or "none").lower()
    if codec in ("uncompressed", "none"):
        codec = "none"
    if codec not in _DEFAULT_LEVELS:
        raise WriteError(f"unsupported parquet compression codec {compression!r}")
    level = compression_level if compression_level is not None else _DEFAULT_LEVELS[codec]

    schema_text = avro_schema_with_meta_fields(avro_schema_json, with_operation_field)
    try:
        target = avro_to_arrow(schema_text)
    except SchemaError as exc:
        raise WriteError(f"cannot write with this Avro schema: {exc}") from exc
    meta_names = META_FIELDS_WITH_OPERATION if with_operation_field else META_FIELDS

    n = data.num_rows
    if record_keys is None:
        record_keys = _column(data, RECORD_KEY)
        if record_keys is None:
            raise WriteError("record_keys are required (or a _hoodie_record_key column)")
    keys = _as_string_array(record_keys, "record keys")
    if len(keys) != n:
        raise WriteError(f"{len(keys)} record keys for {n} rows")
    if keys.null_count:
        raise WriteError("record keys must not be null")

    data_columns = _cast_data(data, target, meta_names)
    mask = _preserve_mask(preserve_meta, n)

    def meta_columns(start: int, stop: int) -> list[pa.Array]:
        count = stop - start
        if not populate_meta_fields:
            return [pa.nulls(count, pa.string()) for _ in meta_names]
        part_mask = mask[start:stop] if mask is not None else None
        if part_mask is not None and not part_mask.any():
            part_mask = None
        old_time = _column(data, COMMIT_TIME)
        old_seq = _column(data, COMMIT_SEQNO)
        cols = [
            _mixed(pa.repeat(pa.scalar(commit_time, pa.string()), count),
                   old_time.slice(start, count) if old_time is not None else None, part_mask, COMMIT_TIME),
            _mixed(_seqnos(commit_time, task_partition_id, seqno_start + start, count),
                   old_seq.slice(start, count) if old_seq is not None else None, part_mask, COMMIT_SEQNO),
            keys.slice(start, count).cast(pa.string()),
            pa.repeat(pa.scalar(partition_path, pa.string()), count),
            pa.repeat(pa.scalar(file_name, pa.string()), count),
        ]
        if with_operation_field:
            op = _column(data, OPERATION)
            cols.append(_as_string_array(op, OPERATION).slice(start, count) if op is not None
                        else pa.nulls(count, pa.string()))
        return cols

    def chunk(start: int, stop: int) -> pa.Table:
        arrays = meta_columns(start, stop) + [c.slice(start, stop - start) for c in data_columns]
        return pa.Table.from_arrays(arrays, schema=target)

    probe_rows = min(n, 65536)
    probe = chunk(0, probe_rows)
    use_dictionary: bool | list[str] = dictionary_columns(probe, page_size) if settings.dictionary_enabled else False
    options = dict(
        version="1.0",
        data_page_version="1.0",
        compression=codec,
        compression_level=level,
        use_dictionary=use_dictionary,
        write_statistics=True,
        data_page_size=page_size,
        dictionary_pagesize_limit=DEFAULT_DICTIONARY_PAGE_SIZE,
        store_schema=False,
        use_compliant_nested_type=True,
        write_page_index=True,
    )
    # Bytes per row: Arrow's in-memory size, or, when that says the data may not
    # fit one row group / file, the encoded size of the probe rows (parquet-mr
    # sizes row groups and files by encoded, compressed bytes).
    per_row = max(probe.nbytes / probe_rows, 1.0) if probe_rows else 1.0
    if probe_rows and per_row * n > min(block_size, max_file_size or block_size):
        buffer = pa.BufferOutputStream()
        with pq.ParquetWriter(buffer, target, **options) as trial:
            trial.write_table(probe, row_group_size=probe_rows)
        per_row = max(buffer.tell() / probe_rows, 1.0)
    rows_per_group = n if per_row * n <= block_size else max(1, int(block_size / per_row))

    bloom_on = populate_meta_fields  # enableBloomFilter needs the record keys in the file
    bf = (
        _bloom.create(bloom_settings.type, bloom_settings.num_entries, bloom_settings.fpp, bloom_settings.max_entries)
        if bloom_on
        else None
    )

    path = storage.abs(rel_path)
    storage.makedirs(posixpath.dirname(rel_path))
    if storage.is_local:
        sink = pa.OSFile(path, "wb")
        raw_file = None
    else:
        raw_file = storage.open(rel_path, "wb")
        sink = pa.PythonFile(raw_file, mode="w")
    writer = pq.ParquetWriter(sink, target, **options)
    written = 0
    row_groups = 0
    try:
        while written < n:
            take = min(rows_per_group, n - written)
            if written and max_file_size:
                size = sink.tell()
                avg = max(size // written, 1)
                if size > max_file_size - 2 * avg:
                    break
                take = min(take, max(1, int((max_file_size - 2 * avg - size) // avg)))
            elif max_file_size:
                take = min(take, max(1, int(0.9 * max_file_size / per_row)))
            part = chunk(written, written + take)
            writer.write_table(part, row_group_size=take)
            if bf is not None:
                bf.add_all(keys.slice(written, take))
            written += take
            row_groups += 1
        consumed_keys = keys.slice(0, written)
        lo, hi = java_min_max(consumed_keys) if bloom_on else (None, None)
        hudi_meta: dict[str, str] = {}
        if bf is not None:
            hudi_meta[_bloom.BLOOM_FILTER_FOOTER_KEY] = bf.serialize()
            if bf.type_code.startswith("DYNAMIC"):
                hudi_meta[_bloom.BLOOM_FILTER_TYPE_CODE_FOOTER_KEY] = bf.type_code
            if lo is not None and hi is not None:
                hudi_meta[MIN_RECORD_KEY_FOOTER] = lo
                hudi_meta[MAX_RECORD_KEY_FOOTER] = hi
        values = {AVRO_SCHEMA_FOOTER: schema_text, WRITER_MODEL_FOOTER: "avro", **hudi_meta}
        footer = {key: values[key] for key in footer_key_order(list(hudi_meta))}
        writer.add_key_value_metadata(footer)
        writer.close()
    except BaseException:
        try:
            writer.close()
        finally:
            sink.close()
            if raw_file is not None:
                raw_file.close()
            try:
                storage.fs.rm(path)
            except Exception:  # noqa: BLE001 - best effort cleanup of a partial file
                pass
        raise
    sink.close()
    if raw_file is not None:
        raw_file.close()
    size = storage.size(rel_path)
    preserved = int(mask[:written].sum()) if mask is not None else 0
    return BaseFileWriteResult(
        path=posixpath.join(partition_path, file_name) if partition_path else file_name,
        file_name=file_name,
        file_id=file_id,
        partition_path=partition_path,
        commit_time=commit_time,
        num_writes=written,
        rows_consumed=written,
        file_size=size,
        min_record_key=lo,
        max_record_key=hi,
        num_row_groups=row_groups,
        avro_schema=schema_text,
        bloom_filter=footer.get(_bloom.BLOOM_FILTER_FOOTER_KEY),
        bloom_type=bf.type_code if bf is not None else None,
        next_seqno=seqno_start + written,
        num_preserved=preserved,
        footer=footer,
        parquet_metadata=writer.writer.metadata,
    )


# -- reading footers (BLOOM index) ---------------------------------------------------------------


def read_base_file_footer(storage: Storage, rel_path: str) -> dict[str, Any]:
    """The Hudi footer entries of a base file (reads only the parquet footer).

    Keys: ``bloom_filter`` (a :class:`bloom.BloomFilter` or None), ``bloom_type``,
    ``min_record_key``, ``max_record_key``, ``avro_schema`` (str or None),
    ``num_rows``, ``metadata`` (all key-value pairs as str), ``parquet_metadata`` (the parsed
    footer, for :func:`read_record_keys` to read the same file without parsing it again).
    """
    try:
        with storage.open(rel_path, "rb") as handle:
            meta = pq.read_metadata(handle)
    except (OSError, ValueError, pa.ArrowException) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise CorruptFileError(f"base file {storage.uri(rel_path)}: cannot read its parquet footer ({exc})") from exc
    raw = meta.metadata or {}
    kv = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}
    code = kv.get(_bloom.BLOOM_FILTER_TYPE_CODE_FOOTER_KEY)
    text = kv.get(_bloom.BLOOM_FILTER_FOOTER_KEY) or kv.get(_bloom.OLD_BLOOM_FILTER_FOOTER_KEY)
    try:
        bf = _bloom.deserialize(text, code) if text else None
    except HudiError as exc:
        raise type(exc)(f"base file {storage.uri(rel_path)}: bloom filter in its footer: {exc}") from exc
    return {
        "bloom_filter": bf,
        "bloom_type": (code or _bloom.SIMPLE) if bf is not None else None,
        "min_record_key": kv.get(MIN_RECORD_KEY_FOOTER),
        "max_record_key": kv.get(MAX_RECORD_KEY_FOOTER),
        "avro_schema": kv.get(AVRO_SCHEMA_FOOTER),
        "num_rows": meta.num_rows,
        "metadata": kv,
        "parquet_metadata": meta,
    }


def read_record_keys(
    storage: Storage, rel_path: str, key_generator: Any = None, metadata: pq.FileMetaData | None = None
) -> pa.Array:
    """The record keys of a base file, in row order: its ``_hoodie_record_key`` column, or (a
    table with virtual keys, ``key_generator`` given) keys derived from the key fields.
    ``metadata``: the file's footer, when the caller already parsed it (a Hudi footer is mostly
    its bloom filter, hundreds of KB).

    Reads only those columns through ``ParquetFile``: ``pq.read_table``'s dataset layer costs
    more than the read itself for a small file (about 1 ms against 0.25 ms for a 10-row base
    file), and an index lookup reads every base file of the table.
    """
    with storage.open(rel_path, "rb") as handle:
        parquet = pq.ParquetFile(handle, metadata=metadata, pre_buffer=not storage.is_local)
        names = parquet.schema_arrow.names
        columns = [RECORD_KEY] if key_generator is None else list(key_generator.record_key_fields)
        missing = [c for c in columns if c not in names]
        if missing:
            what = "the meta columns (hoodie.populate.meta.fields=true)" if key_generator is None else "the record key fields"
            raise SchemaError(
                f"base file {storage.uri(rel_path)}: no column {', '.join(missing)}; reading its record keys needs {what}"
            )
        rows = parquet.read(columns=columns, use_threads=False)
    if key_generator is None:
        return rows.column(RECORD_KEY).combine_chunks()
    return key_generator.record_keys(rows).cast(pa.string())


__all__ = [
    "BaseFileWriteResult",
    "avro_schema_to_string",
    "avro_schema_with_meta_fields",
    "dictionary_columns",
    "footer_key_order",
    "java_min_max",
    "read_base_file_footer",
    "read_record_keys",
    "write_base_file",
]
