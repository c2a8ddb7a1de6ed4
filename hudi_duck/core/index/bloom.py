"""Hudi's record-key bloom filters, bit-for-bit as Apache Hudi writes them.

Every base file Hudi writes carries, in its parquet footer key-value metadata,
``org.apache.hudi.bloomfilter`` (and for the dynamic type
``hoodie_bloom_filter_type_code``). The BLOOM index reads them to skip files
that cannot hold a record key. The string is::

    base64( Writable serialization of the filter )   # java.util.Base64, padded, no line breaks

Two filter types exist (``hoodie.bloom.index.filter.type``):

``SIMPLE``
    Hadoop's ``org.apache.hadoop.util.bloom.BloomFilter``.
``DYNAMIC_V0`` (default)
    Hudi's ``InternalDynamicBloomFilter``: Hadoop's ``DynamicBloomFilter``
    bounded by ``hoodie.bloom.index.filter.dynamic.max.entries``.

Writable layout (all integers big-endian, as ``DataOutput`` writes them)::

    filter header:  int32 version (-1) | int32 nbHash | int8 hashType | int32 vectorSize
    bloom filter:   header | ceil(vectorSize / 8) bytes, bit i in byte i // 8 at mask 1 << (i % 8)
    dynamic filter: header | int32 nr | int32 currentNbRecord | int32 rows | rows x bloom filter

A header whose first int is positive is the pre-versioned format: that int is
``nbHash`` and the hash is Jenkins.

Sizing (``BloomFilterUtils``)::

    bitSize  = ceil(numEntries * (-ln(fpp) / ln(2)^2))
    numHash  = ceil(ln(2) * bitSize / numEntries)

A key is its UTF-8 bytes. Its bit positions come from Hadoop's ``HashFunction``:
``h_0 = hash(key, seed=0)``, ``h_i = hash(key, seed=h_{i-1})``, position
``|h_i % vectorSize|`` with Java's truncating ``%``. The hash is Hadoop's
MurmurHash2 (32-bit, tail bytes sign-extended as Java bytes are signed) or
Jenkins' lookup3 ``hashlittle``.

The dynamic filter adds keys to its last row until that row holds ``nr``
(= numEntries) keys, then adds a row while ``rows * nr < maxNr``; once that
bound is hit, keys go round-robin over all rows (starting with row 0 twice,
as Hudi's ``getActiveStandardBF`` does). Only ``nr``, ``currentNbRecord`` and
the rows are serialized, so a deserialized dynamic filter has ``maxNr = 0``.

Keys are hashed in bulk with numpy (``add_all`` / ``might_contain_all``: batches
of 65536 keys, grouped by byte length; the per-block part of MurmurHash does not
depend on the seed and is computed once per key). About 1 s per million keys;
``add(key)`` hashes one key in pure Python (~0.1 ms).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, HudiError

# -- constants ---------------------------------------------------------------------------

#: footer key of the serialized filter and of its type code (type code only for DYNAMIC_*)
BLOOM_FILTER_FOOTER_KEY = "org.apache.hudi.bloomfilter"
OLD_BLOOM_FILTER_FOOTER_KEY = "com.uber.hoodie.bloomfilter"
BLOOM_FILTER_TYPE_CODE_FOOTER_KEY = "hoodie_bloom_filter_type_code"

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"
TYPE_CODES = (SIMPLE, DYNAMIC_V0)

JENKINS_HASH = 0
MURMUR_HASH = 1

#: Hudi's defaults: hoodie.index.bloom.num_entries, hoodie.index.bloom.fpp,
#: hoodie.bloom.index.filter.dynamic.max.entries, hoodie.bloom.index.filter.type
DEFAULT_NUM_ENTRIES = 60000
DEFAULT_FPP = 0.000000001
DEFAULT_MAX_ENTRIES = 100000
DEFAULT_TYPE = DYNAMIC_V0

_VERSION = -1
_HEADER = struct.Struct(">iibi")
_INT = struct.Struct(">i")
_M = np.uint32(0x5BD1E995)
_U32 = 0xFFFFFFFF

#: keys hashed per numpy batch (keeps the working set in cache)
_BATCH = 1 << 16


class BloomFilterError(HudiError):
    """A bloom filter string cannot be decoded or a key cannot be added."""


# -- sizing --------------------------------------------------------------------------------


def bit_size(num_entries: int, fpp: float) -> int:
    """``BloomFilterUtils.getBitSize``: bits for ``num_entries`` keys at false-positive rate ``fpp``."""
    log2_squared = math.log(2) * math.log(2)
    return _java_int(math.ceil(num_entries * (-math.log(fpp) / log2_squared)))


def num_hashes(bits: int, num_entries: int) -> int:
    """``BloomFilterUtils.getNumHashes``."""
    return _java_int(math.ceil(math.log(2) * bits / num_entries))


def _java_int(value: float) -> int:
    """``(int) double`` in Java: saturates at the int range."""
    if value != value:  # NaN
        return 0
    return int(max(-(2**31), min(2**31 - 1, value)))


# -- hash functions (scalar; used for single keys and as reference) -----------------------


def _to_int32(value: int) -> int:
    value &= _U32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur_hash(data: bytes, seed: int) -> int:
    """Hadoop's ``MurmurHash.hash(data, seed)`` (MurmurHash2, 32 bit) as a Java int."""
    m = 0x5BD1E995
    length = len(data)
    h = (seed ^ length) & _U32
    nblocks = length >> 2
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & _U32
        k ^= k >> 24
        k = (k * m) & _U32
        h = ((h * m) & _U32) ^ k
    left = length - (nblocks << 2)
    if left:
        def signed(b: int) -> int:
            return b - 256 if b > 127 else b

        if left >= 3:
            h ^= (signed(data[length - 3]) << 16) & _U32
        if left >= 2:
            h ^= (signed(data[length - 2]) << 8) & _U32
        h ^= signed(data[length - 1]) & _U32
        h = (h * m) & _U32
    h ^= h >> 13
    h = (h * m) & _U32
    h ^= h >> 15
    return _to_int32(h)


def _rot(value: int, pos: int) -> int:
    value &= _U32
    return ((value << pos) | (value >> (32 - pos))) & _U32


def jenkins_hash(data: bytes, seed: int) -> int:
    """Hadoop's ``JenkinsHash.hash(data, seed)`` (lookup3 ``hashlittle``) as a Java int."""
    length = len(data)
    a = b = c = (0xDEADBEEF + length + seed) & _U32
    offset = 0
    while length > 12:
        a = (a + int.from_bytes(data[offset : offset + 4], "little")) & _U32
        b = (b + int.from_bytes(data[offset + 4 : offset + 8], "little")) & _U32
        c = (c + int.from_bytes(data[offset + 8 : offset + 12], "little")) & _U32
        a = (a - c) & _U32; a ^= _rot(c, 4); c = (c + b) & _U32  # noqa: E702
        b = (b - a) & _U32; b ^= _rot(a, 6); a = (a + c) & _U32  # noqa: E702
        c = (c - b) & _U32; c ^= _rot(b, 8); b = (b + a) & _U32  # noqa: E702
        a = (a - c) & _U32; a ^= _rot(c, 16); c = (c + b) & _U32  # noqa: E702
        b = (b - a) & _U32; b ^= _rot(a, 19); a = (a + c) & _U32  # noqa: E702
        c = (c - b) & _U32; c ^= _rot(b, 4); b = (b + a) & _U32  # noqa: E702
        offset += 12
        length -= 12
    if length == 0:
        return _to_int32(c)
    tail = data[offset : offset + length] + bytes(12 - length)
    a = (a + int.from_bytes(tail[0:4], "little")) & _U32
    b = (b + int.from_bytes(tail[4:8], "little")) & _U32
    c = (c + int.from_bytes(tail[8:12], "little")) & _U32
    c ^= b; c = (c - _rot(b, 14)) & _U32  # noqa: E702
    a ^= c; a = (a - _rot(c, 11)) & _U32  # noqa: E702
    b ^= a; b = (b - _rot(a, 25)) & _U32  # noqa: E702
    c ^= b; c = (c - _rot(b, 16)) & _U32  # noqa: E702
    a ^= c; a = (a - _rot(c, 4)) & _U32  # noqa: E702
    b ^= a; b = (b - _rot(a, 14)) & _U32  # noqa: E702
    c ^= b; c = (c - _rot(b, 24)) & _U32  # noqa: E702
    return _to_int32(c)


def key_positions(key: str | bytes, nb_hash: int, vector_size: int, hash_type: int = MURMUR_HASH) -> list[int]:
    """Bit positions of one key (Hadoop ``HashFunction.hash``): the seed-chained hashes mod the size."""
    data = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    if not data:
        raise BloomFilterError("a bloom filter key must not be empty (Hadoop's HashFunction rejects it)")
    if hash_type == MURMUR_HASH:
        return _murmur_key_positions(data, nb_hash, vector_size)
    fn = _scalar_hash(hash_type)
    out = []
    seed = 0
    for _ in range(nb_hash):
        seed = fn(data, seed)
        out.append(abs(seed) % vector_size)  # == Math.abs(seed % vectorSize) for Java ints
    return out


def _murmur_key_positions(data: bytes, nb_hash: int, vector_size: int) -> list[int]:
    """``murmur_hash`` chained ``nb_hash`` times; the seed-independent block mixing done once."""
    m = 0x5BD1E995
    length = len(data)
    nblocks = length >> 2
    ks = []
    for i in range(nblocks):
        k = (int.from_bytes(data[4 * i : 4 * i + 4], "little") * m) & _U32
        ks.append(((k ^ (k >> 24)) * m) & _U32)
    left = length - (nblocks << 2)
    tail = None
    if left:
        def signed(b: int) -> int:
            return b - 256 if b > 127 else b

        t = signed(data[length - 1]) & _U32
        if left >= 2:
            t ^= (signed(data[length - 2]) << 8) & _U32
        if left >= 3:
            t ^= (signed(data[length - 3]) << 16) & _U32
        tail = t
    out = []
    seed = 0
    for _ in range(nb_hash):
        h = (seed ^ length) & _U32
        for k in ks:
            h = ((h * m) & _U32) ^ k
        if tail is not None:
            h = ((h ^ tail) * m) & _U32
        h ^= h >> 13
        h = (h * m) & _U32
        h ^= h >> 15
        seed = h - (1 << 32) if h & 0x80000000 else h
        out.append(abs(seed) % vector_size)
    return out


def _scalar_hash(hash_type: int):
    if hash_type == MURMUR_HASH:
        return murmur_hash
    if hash_type == JENKINS_HASH:
        return jenkins_hash
    raise BloomFilterError(f"unknown bloom filter hash type {hash_type} (0 = jenkins, 1 = murmur)")


# -- bulk hashing --------------------------------------------------------------------------


def _encode_keys(keys) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of all keys in one buffer and int64 offsets (n + 1)."""
    if isinstance(keys, (str, bytes)):
        keys = [keys]
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    if not isinstance(keys, pa.Array):
        keys = list(keys)
        if keys and isinstance(keys[0], (bytes, bytearray, memoryview)):
            keys = pa.array([bytes(k) if k is not None else None for k in keys], type=pa.large_binary())
        else:
            keys = pa.array(keys, type=pa.large_string())
    if pa.types.is_dictionary(keys.type):
        keys = keys.dictionary_decode()
    if keys.null_count:
        raise BloomFilterError("a bloom filter key must not be null")
    if pa.types.is_string(keys.type) or pa.types.is_binary(keys.type):
        keys = keys.cast(pa.large_binary())
    elif pa.types.is_large_string(keys.type) or pa.types.is_string_view(keys.type) or pa.types.is_binary_view(keys.type):
        keys = keys.cast(pa.large_binary())
    elif not pa.types.is_large_binary(keys.type):
        raise BloomFilterError(f"bloom filter keys must be strings, not {keys.type}")
    n = len(keys)
    buffers = keys.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64, count=n + 1, offset=keys.offset * 8)
    data_buf = buffers[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None and data_buf.size else np.zeros(0, np.uint8)
    return data, offsets


def _murmur_positions(data: np.ndarray, starts: np.ndarray, length: int, nb_hash: int, vector_size: int) -> np.ndarray:
    """Positions (g, nb_hash) of ``g`` keys that all have ``length`` bytes."""
    g = len(starts)
    mat = data[starts[:, None] + np.arange(length, dtype=np.int64)]  # (g, length) uint8
    nblocks = length >> 2
    blocks = None
    if nblocks:
        blocks = np.ascontiguousarray(mat[:, : nblocks * 4]).view("<u4").astype(np.uint32)  # (g, nblocks)
        blocks *= _M
        blocks ^= blocks >> np.uint32(24)
        blocks *= _M
        blocks = np.ascontiguousarray(blocks.T)  # (nblocks, g): one contiguous row per block
    left = length - (nblocks << 2)
    tail = None
    if left:
        signed = mat[:, nblocks * 4 :].view(np.int8).astype(np.int64)
        t = np.zeros(g, dtype=np.int64)
        if left >= 3:
            t ^= signed[:, left - 3] << 16
        if left >= 2:
            t ^= signed[:, left - 2] << 8
        t ^= signed[:, left - 1]
        tail = (t & _U32).astype(np.uint32)
    out = np.empty((g, nb_hash), dtype=np.int64)
    seed = np.zeros(g, dtype=np.uint32)
    length_u = np.uint32(length)
    s13 = np.uint32(13)
    s15 = np.uint32(15)
    for r in range(nb_hash):
        h = seed ^ length_u
        for b in range(nblocks):
            h *= _M
            h ^= blocks[b]
        if tail is not None:
            h ^= tail
            h *= _M
        h ^= h >> s13
        h *= _M
        h ^= h >> s15
        seed = h
        out[:, r] = np.abs(h.view(np.int32).astype(np.int64)) % vector_size
    return out


def _positions_encoded(data: np.ndarray, offsets: np.ndarray, nb_hash: int, vector_size: int,
                       hash_type: int) -> np.ndarray:
    """Positions (n, nb_hash) of the keys ``data[offsets[i]:offsets[i + 1]]``."""
    n = len(offsets) - 1
    out = np.empty((n, nb_hash), dtype=np.int64)
    if n == 0:
        return out
    lengths = np.diff(offsets)
    if (lengths == 0).any():
        raise BloomFilterError("a bloom filter key must not be empty (Hadoop's HashFunction rejects it)")
    if hash_type != MURMUR_HASH:
        fn = _scalar_hash(hash_type)
        raw = data.tobytes()
        for i in range(n):
            key = raw[offsets[i] : offsets[i + 1]]
            seed = 0
            for r in range(nb_hash):
                seed = fn(key, seed)
                out[i, r] = abs(seed) % vector_size
        return out
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    bounds = np.flatnonzero(np.diff(sorted_lengths)) + 1
    group_starts = np.concatenate(([0], bounds))
    group_ends = np.concatenate((bounds, [n]))
    key_starts = offsets[:-1]
    for gs, ge in zip(group_starts, group_ends):
        idx = order[gs:ge]
        out[idx] = _murmur_positions(data, key_starts[idx], int(sorted_lengths[gs]), nb_hash, vector_size)
    return out


def _iter_positions(keys, nb_hash: int, vector_size: int, hash_type: int):
    """(first key index, positions of up to ``_BATCH`` keys) in key order; bounded memory."""
    data, offsets = _encode_keys(keys)
    n = len(offsets) - 1
    for start in range(0, n, _BATCH):
        stop = min(n, start + _BATCH)
        yield start, _positions_encoded(data, offsets[start : stop + 1], nb_hash, vector_size, hash_type)


def hash_positions(keys, nb_hash: int, vector_size: int, hash_type: int = MURMUR_HASH) -> np.ndarray:
    """Bit positions of many keys: int64 array (n, nb_hash), rows in key order.

    ``keys``: a pyarrow string/binary array, or an iterable of ``str``/``bytes``.
    """
    parts = [pos for _, pos in _iter_positions(keys, nb_hash, vector_size, hash_type)]
    if not parts:
        return np.empty((0, nb_hash), dtype=np.int64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _one_key(key: str | bytes) -> bytes:
    if key is None:
        raise BloomFilterError("a bloom filter key must not be null")
    return key.encode("utf-8") if isinstance(key, str) else bytes(key)


# -- one bit vector (Hadoop BloomFilter / Hudi InternalBloomFilter) -------------------------


class _BitVector:
    """The bits of one bloom filter row plus its hash parameters."""

    __slots__ = ("vector_size", "nb_hash", "hash_type", "bits")

    def __init__(self, vector_size: int, nb_hash: int, hash_type: int, bits: np.ndarray | None = None):
        if vector_size <= 0:
            raise BloomFilterError("bloom filter vector size must be > 0")
        if nb_hash <= 0:
            raise BloomFilterError("bloom filter hash count must be > 0")
        _scalar_hash(hash_type)
        self.vector_size = vector_size
        self.nb_hash = nb_hash
        self.hash_type = hash_type
        self.bits = bits if bits is not None else np.zeros(vector_size, dtype=bool)

    def set_positions(self, positions: np.ndarray) -> None:
        if positions.size:
            self.bits[positions.reshape(-1)] = True

    def test_positions(self, positions: np.ndarray) -> np.ndarray:
        """Per key (row of ``positions``): all its bits set."""
        if positions.shape[0] == 0:
            return np.zeros(0, dtype=bool)
        return self.bits[positions].all(axis=1)

    def header(self) -> bytes:
        return _HEADER.pack(_VERSION, self.nb_hash, self.hash_type, self.vector_size)

    def write(self) -> bytes:
        return self.header() + np.packbits(self.bits, bitorder="little").tobytes()

    def same_shape(self, other: "_BitVector") -> bool:
        return (self.vector_size, self.nb_hash, self.hash_type) == (other.vector_size, other.nb_hash, other.hash_type)

    @classmethod
    def read_header(cls, buf: bytes, pos: int) -> tuple[int, int, int, int]:
        """(nb_hash, hash_type, vector_size, new position) of a Filter header."""
        ver = _read_int(buf, pos)
        pos += 4
        if ver > 0:  # old non-versioned format
            nb_hash, hash_type = ver, JENKINS_HASH
        elif ver == _VERSION:
            nb_hash = _read_int(buf, pos)
            if pos + 5 > len(buf):
                raise CorruptFileError("bloom filter truncated in its header")
            hash_type = struct.unpack_from(">b", buf, pos + 4)[0]
            pos += 5
        else:
            raise CorruptFileError(f"unsupported bloom filter version {ver}")
        vector_size = _read_int(buf, pos)
        return nb_hash, hash_type, vector_size, pos + 4

    @classmethod
    def read(cls, buf: bytes, pos: int) -> tuple["_BitVector", int]:
        nb_hash, hash_type, vector_size, pos = cls.read_header(buf, pos)
        if vector_size <= 0:
            raise CorruptFileError(f"bloom filter vector size {vector_size} is not positive")
        nbytes = (vector_size + 7) // 8
        if pos + nbytes > len(buf):
            raise CorruptFileError("bloom filter bit vector is truncated")
        packed = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=pos)
        bits = np.unpackbits(packed, bitorder="little", count=vector_size).astype(bool)
        try:
            return cls(vector_size, nb_hash, hash_type, bits), pos + nbytes
        except BloomFilterError as exc:
            raise CorruptFileError(str(exc)) from exc


def _read_int(buf: bytes, pos: int) -> int:
    if pos + 4 > len(buf):
        raise CorruptFileError("bloom filter truncated")
    return _INT.unpack_from(buf, pos)[0]


# -- the public filters ---------------------------------------------------------------------


class BloomFilter:
    """A Hudi record-key bloom filter (base of the two types)."""

    type_code: str = ""

    def add(self, key: str) -> None:
        """Add one record key."""
        self.add_all([key])

    def add_all(self, keys) -> None:  # pragma: no cover - abstract
        """Add many record keys, in order (order matters for the dynamic type)."""
        raise NotImplementedError

    def might_contain(self, key: str) -> bool:
        return bool(self.might_contain_all([key])[0])

    def might_contain_all(self, keys) -> np.ndarray:  # pragma: no cover - abstract
        """Bool array: per key whether it may be in the filter (no false negatives)."""
        raise NotImplementedError

    def to_bytes(self) -> bytes:  # pragma: no cover - abstract
        """The Writable serialization."""
        raise NotImplementedError

    def serialize(self) -> str:
        """The string Hudi stores (``serializeToString``): base64 of the Writable bytes."""
        return base64.b64encode(self.to_bytes()).decode("ascii")

    def __contains__(self, key: str) -> bool:
        return self.might_contain(key)


class SimpleBloomFilter(BloomFilter):
    """``SIMPLE``: one Hadoop ``BloomFilter``."""

    type_code = SIMPLE

    def __init__(
        self,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        hash_type: int = MURMUR_HASH,
        *,
        _vector: _BitVector | None = None,
    ):
        if _vector is None:
            if num_entries <= 0:
                raise BloomFilterError("bloom filter num_entries must be > 0")
            bits = bit_size(num_entries, fpp)
            _vector = _BitVector(bits, num_hashes(bits, num_entries), hash_type)
        self._vector = _vector

    @property
    def vector_size(self) -> int:
        return self._vector.vector_size

    @property
    def nb_hash(self) -> int:
        return self._vector.nb_hash

    @property
    def hash_type(self) -> int:
        return self._vector.hash_type

    def add(self, key: str) -> None:
        v = self._vector
        v.bits[key_positions(_one_key(key), v.nb_hash, v.vector_size, v.hash_type)] = True

    def might_contain(self, key: str) -> bool:
        v = self._vector
        return bool(v.bits[key_positions(_one_key(key), v.nb_hash, v.vector_size, v.hash_type)].all())

    def add_all(self, keys) -> None:
        v = self._vector
        for _, positions in _iter_positions(keys, v.nb_hash, v.vector_size, v.hash_type):
            v.set_positions(positions)

    def might_contain_all(self, keys) -> np.ndarray:
        v = self._vector
        parts = [v.test_positions(pos) for _, pos in _iter_positions(keys, v.nb_hash, v.vector_size, v.hash_type)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def to_bytes(self) -> bytes:
        return self._vector.write()

    @classmethod
    def from_bytes(cls, raw: bytes) -> "SimpleBloomFilter":
        vector, pos = _BitVector.read(raw, 0)
        return cls(_vector=vector)


class HoodieDynamicBoundedBloomFilter(BloomFilter):
    """``DYNAMIC_V0``: rows of ``num_entries``-sized filters, at most ``max_entries`` worth of rows."""

    type_code = DYNAMIC_V0

    def __init__(
        self,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        hash_type: int = MURMUR_HASH,
    ):
        if num_entries <= 0:
            raise BloomFilterError("bloom filter num_entries must be > 0")
        bits = bit_size(num_entries, fpp)
        self._shape = _BitVector(bits, num_hashes(bits, num_entries), hash_type, bits=np.zeros(0, bool))
        self.nr = num_entries
        self.max_nr = max_entries
        self.current_nb_record = 0
        self.reached_max = False
        self.cur_matrix_index = 0
        self.rows: list[_BitVector] = [self._new_row()]

    def _new_row(self) -> _BitVector:
        s = self._shape
        return _BitVector(s.vector_size, s.nb_hash, s.hash_type)

    @property
    def vector_size(self) -> int:
        return self._shape.vector_size

    @property
    def nb_hash(self) -> int:
        return self._shape.nb_hash

    @property
    def hash_type(self) -> int:
        return self._shape.hash_type

    def _assign_rows(self, n: int) -> np.ndarray:
        """Row index each of the next ``n`` keys goes to (``getActiveStandardBF``), updating state."""
        rows = np.empty(n, dtype=np.int64)
        i = 0
        while i < n:
            if self.reached_max:
                count = n - i
                rows[i:] = (self.cur_matrix_index + np.arange(count, dtype=np.int64)) % len(self.rows)
                self.cur_matrix_index += count
                self.current_nb_record += count
                break
            if self.current_nb_record >= self.nr:
                if len(self.rows) * self.nr < self.max_nr:
                    self.rows.append(self._new_row())
                    self.current_nb_record = 0
                else:
                    self.reached_max = True
                    rows[i] = 0
                    self.current_nb_record += 1
                    i += 1
                    continue
            take = min(self.nr - self.current_nb_record, n - i)
            rows[i : i + take] = len(self.rows) - 1
            self.current_nb_record += take
            i += take
        return rows

    def add(self, key: str) -> None:
        s = self._shape
        positions = key_positions(_one_key(key), s.nb_hash, s.vector_size, s.hash_type)
        self.rows[int(self._assign_rows(1)[0])].bits[positions] = True

    def might_contain(self, key: str) -> bool:
        s = self._shape
        positions = key_positions(_one_key(key), s.nb_hash, s.vector_size, s.hash_type)
        return any(bool(row.bits[positions].all()) for row in self.rows)

    def add_all(self, keys) -> None:
        s = self._shape
        for _, positions in _iter_positions(keys, s.nb_hash, s.vector_size, s.hash_type):
            rows = self._assign_rows(positions.shape[0])
            first, last = int(rows[0]), int(rows[-1])
            if first == last and (len(self.rows) == 1 or (rows == first).all()):
                self.rows[first].set_positions(positions)
                continue
            for r in np.unique(rows):
                self.rows[int(r)].set_positions(positions[rows == r])

    def might_contain_all(self, keys) -> np.ndarray:
        s = self._shape
        parts = []
        for _, positions in _iter_positions(keys, s.nb_hash, s.vector_size, s.hash_type):
            result = np.zeros(positions.shape[0], dtype=bool)
            for row in self.rows:
                result |= row.test_positions(positions)
            parts.append(result)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def to_bytes(self) -> bytes:
        parts = [
            self._shape.header(),
            _INT.pack(self.nr),
            _INT.pack(self.current_nb_record),
            _INT.pack(len(self.rows)),
        ]
        parts.extend(row.write() for row in self.rows)
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, raw: bytes) -> "HoodieDynamicBoundedBloomFilter":
        nb_hash, hash_type, vector_size, pos = _BitVector.read_header(raw, 0)
        nr = _read_int(raw, pos)
        current = _read_int(raw, pos + 4)
        count = _read_int(raw, pos + 8)
        pos += 12
        if count < 0:
            raise CorruptFileError(f"bloom filter has a negative row count {count}")
        rows = []
        for _ in range(count):
            row, pos = _BitVector.read(raw, pos)
            rows.append(row)
        self = cls.__new__(cls)
        try:
            self._shape = _BitVector(vector_size, nb_hash, hash_type, bits=np.zeros(0, bool))
        except BloomFilterError as exc:
            raise CorruptFileError(str(exc)) from exc
        self.nr = nr
        self.max_nr = 0  # not serialized; Java's readFields leaves it 0
        self.current_nb_record = current
        self.reached_max = False
        self.cur_matrix_index = 0
        self.rows = rows
        return self


# -- factory --------------------------------------------------------------------------------


def create(
    type_code: str = DEFAULT_TYPE,
    num_entries: int = DEFAULT_NUM_ENTRIES,
    fpp: float = DEFAULT_FPP,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    hash_type: int = MURMUR_HASH,
) -> BloomFilter:
    """``BloomFilterFactory.createBloomFilter`` (Hudi always uses the Murmur hash)."""
    code = (type_code or DEFAULT_TYPE).upper()
    if code == SIMPLE:
        return SimpleBloomFilter(num_entries, fpp, hash_type)
    if code.startswith("DYNAMIC"):
        if code != DYNAMIC_V0:
            raise BloomFilterError(f"unknown bloom filter type code {type_code!r}")
        return HoodieDynamicBoundedBloomFilter(num_entries, fpp, max_entries, hash_type)
    raise BloomFilterError(f"unknown bloom filter type code {type_code!r} (expected one of {TYPE_CODES})")


def deserialize(text: str | bytes, type_code: str | None = None) -> BloomFilter:
    """``BloomFilterFactory.fromString``: a footer string back into a filter.

    ``type_code`` is the footer's ``hoodie_bloom_filter_type_code``; files without
    one hold a ``SIMPLE`` filter.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError as exc:
            raise CorruptFileError(f"bloom filter string is not base64: {exc}") from exc
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CorruptFileError(f"bloom filter string is not base64: {exc}") from exc
    code = (type_code or SIMPLE).upper()
    if code == SIMPLE:
        return SimpleBloomFilter.from_bytes(raw)
    if code == DYNAMIC_V0:
        return HoodieDynamicBoundedBloomFilter.from_bytes(raw)
    raise BloomFilterError(f"unknown bloom filter type code {type_code!r} (expected one of {TYPE_CODES})")


def from_footer(metadata: dict) -> BloomFilter | None:
    """The bloom filter of a base file from its footer key-value metadata (str or bytes keys)."""
    meta = {(k.decode() if isinstance(k, bytes) else k): v for k, v in (metadata or {}).items()}
    text = meta.get(BLOOM_FILTER_FOOTER_KEY) or meta.get(OLD_BLOOM_FILTER_FOOTER_KEY)
    if text is None:
        return None
    code = meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER_KEY)
    if isinstance(code, bytes):
        code = code.decode()
    return deserialize(text, code)


def build(keys, type_code: str = DEFAULT_TYPE, num_entries: int = DEFAULT_NUM_ENTRIES, fpp: float = DEFAULT_FPP,
          max_entries: int = DEFAULT_MAX_ENTRIES) -> BloomFilter:
    """A new filter holding ``keys`` (added in order)."""
    bf = create(type_code, num_entries, fpp, max_entries)
    bf.add_all(keys)
    return bf


__all__ = [
    "BLOOM_FILTER_FOOTER_KEY",
    "BLOOM_FILTER_TYPE_CODE_FOOTER_KEY",
    "BloomFilter",
    "BloomFilterError",
    "DEFAULT_FPP",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_NUM_ENTRIES",
    "DYNAMIC_V0",
    "HoodieDynamicBoundedBloomFilter",
    "JENKINS_HASH",
    "MURMUR_HASH",
    "OLD_BLOOM_FILTER_FOOTER_KEY",
    "SIMPLE",
    "SimpleBloomFilter",
    "bit_size",
    "build",
    "create",
    "deserialize",
    "from_footer",
    "hash_positions",
    "jenkins_hash",
    "key_positions",
    "murmur_hash",
    "num_hashes",
]
