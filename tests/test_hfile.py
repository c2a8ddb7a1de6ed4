"""HFile reader: real metadata-table HFiles written by Apache Hudi, checked against
the trailer, the Avro schemas and hudi-rs; plus synthetic and corrupted files."""

from __future__ import annotations

import os
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from fixtures import fixture_id, fixture_zips, unzip_fixture

from hudi_duck.core.errors import CorruptFileError, UnsupportedFeatureError
from hudi_duck.core.file_group.log_format import BlockType, read_log_file
from hudi_duck.core.hfile.reader import (
    decode_hfile_block_records,
    decode_hfile_records,
    open_hfile,
    read_hfile,
)

VERSIONED_ZIPS = [z for z in fixture_zips() if re.search(r"(^|/)v[89]_", fixture_id(z))]


@pytest.fixture(scope="module")
def metadata_tables(tmp_path_factory) -> dict[str, Path]:
    """fixture id -> ``.hoodie/metadata`` of every v8/v9 fixture that has HFiles."""
    root = tmp_path_factory.mktemp("hfile_fixtures")
    out: dict[str, Path] = {}
    for zip_path in VERSIONED_ZIPS:
        mdt = Path(unzip_fixture(zip_path, root)) / ".hoodie" / "metadata"
        if any(mdt.glob("*/*.hfile")):
            out[fixture_id(zip_path)] = mdt
    assert out, "no v8/v9 fixture with metadata-table HFiles found"
    return out


def _hfiles(mdt: Path) -> list[Path]:
    return sorted(mdt.glob("*/*.hfile"))


def _log_files(mdt: Path) -> list[Path]:
    return sorted(p for p in mdt.glob("*/.*.log.*"))


def _hfile_blocks(log_path: Path):
    for block in read_log_file(log_path.read_bytes(), str(log_path)):
        if block.block_type == BlockType.HFILE_DATA_BLOCK:
            yield block


def _norm(value: Any) -> Any:
    """Order-insensitive form for records and maps (Arrow maps are (k, v) lists)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items()))
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return tuple(sorted((k, _norm(v)) for k, v in value))
        return tuple(_norm(v) for v in value)
    return value


def _check_cells(cells: list[tuple[bytes, bytes]], records: list[dict], source: str) -> None:
    keys = [k for k, _ in cells]
    assert keys == sorted(keys), f"{source}: keys not sorted"
    assert len(set(keys)) == len(keys), f"{source}: duplicate keys"
    assert len(records) == len(cells)
    for (key, _), record in zip(cells, records):
        # Hudi blanks the "key" field in the value; the reader restores it from the cell key
        assert record["key"] == key.decode("utf-8"), source


# -- real files --------------------------------------------------------------------------


def test_base_hfiles_decode(metadata_tables):
    seen = 0
    for mdt in metadata_tables.values():
        for path in _hfiles(mdt):
            hfile = open_hfile(path.read_bytes(), str(path))
            assert len(hfile.cells) == hfile.trailer.entry_count
            assert hfile.trailer.codec_name in ("NONE", "GZ")
            assert hfile.schema_json, f"{path}: no writer schema in the file info"
            records = decode_hfile_records(hfile.cells, hfile.schema_json, str(path))
            _check_cells(hfile.cells, records, str(path))
            seen += 1
    assert seen >= 30


def test_log_hfile_blocks_decode(metadata_tables):
    blocks = 0
    for mdt in metadata_tables.values():
        for path in _log_files(mdt):
            for block in _hfile_blocks(path):
                hfile = open_hfile(block.content, str(path))
                assert len(hfile.cells) == hfile.trailer.entry_count > 0
                assert block.schema
                records = decode_hfile_block_records(block.content, block.schema, str(path))
                _check_cells(hfile.cells, records, str(path))
                assert read_hfile(block.content, str(path)) == hfile.cells
                blocks += 1
    assert blocks >= 100


def test_base_hfiles_match_hudi_rs(metadata_tables):
    from hudi import HudiFileGroupReader

    compared = 0
    for mdt in metadata_tables.values():
        reader = HudiFileGroupReader(str(mdt))
        for path in _hfiles(mdt):
            hfile = open_hfile(path.read_bytes(), str(path))
            ours = decode_hfile_records(hfile.cells, hfile.schema_json, str(path))
            theirs = reader.read_file_slice_from_paths(path.relative_to(mdt).as_posix(), []).to_pylist()
            assert [r["key"] for r in ours] == [r["key"] for r in theirs], path
            assert [_norm(r) for r in ours] == [_norm(r) for r in theirs], path
            compared += 1
    assert any(p.parent.name == "files" for m in metadata_tables.values() for p in _hfiles(m))
    assert compared >= 30


_HFILE_NAME = re.compile(r"^(?P<group>.+-\d{4}-\d+)_[^_]+_(?P<instant>\d+)\.hfile$")
_LOG_NAME = re.compile(r"^\.(?P<group>.+-\d{4}-\d+)_(?P<instant>\d+)\.log\.")


def _completion_times(mdt: Path) -> dict[str, str]:
    """Requested -> completion time of the metadata table's completed delta commits."""
    out: dict[str, str] = {}
    for name in os.listdir(mdt / ".hoodie" / "timeline"):
        match = re.match(r"^(\d+)_(\d+)\.deltacommit$", name)
        if match:
            out[match[1]] = match[2]
    return out


def _merge_files_record(old: dict | None, new: dict) -> dict:
    """Hudi's files-partition merge: newer entries win, deleted ones drop out."""
    if old is None:
        return new
    merged = dict(old["filesystemMetadata"] or {})
    for name, info in (new["filesystemMetadata"] or {}).items():
        if info["isDeleted"]:
            merged.pop(name, None)
        else:
            merged[name] = info
    return dict(new, filesystemMetadata=merged)


@pytest.mark.parametrize("partition", ["files", "record_index"])
def test_log_blocks_replay_to_compacted_base(metadata_tables, partition):
    """Replaying the decoded log blocks onto the previous base gives what the next
    compaction wrote (read by hudi-rs): checks log-block decoding end to end."""
    from hudi import HudiFileGroupReader

    compared = 0
    for mdt in metadata_tables.values():
        folder = mdt / partition
        if not folder.is_dir():
            continue
        completed = _completion_times(mdt)
        reader = HudiFileGroupReader(str(mdt))
        groups: dict[str, dict[str, list[tuple[str, str]]]] = {}
        for name in os.listdir(folder):
            match = _HFILE_NAME.match(name) or _LOG_NAME.match(name)
            if match:
                kind = "base" if name.endswith(".hfile") else "log"
                groups.setdefault(match["group"], {"base": [], "log": []})[kind].append((match["instant"], name))
        for files in groups.values():
            bases = sorted(files["base"])
            for i, (instant, base_name) in enumerate(bases):
                if i == 0 and instant.startswith("0000000000000"):
                    continue  # initial (bootstrap) base: nothing to replay
                previous = bases[i - 1] if i else None
                state: dict[str, dict] = {}
                if previous:
                    old = open_hfile((folder / previous[1]).read_bytes(), previous[1])
                    state = {r["key"]: r for r in decode_hfile_records(old.cells, old.schema_json)}
                # A compaction takes the delta commits completed before it was requested.
                replay = []
                for _, log_name in files["log"]:
                    for block in _hfile_blocks(folder / log_name):
                        done = completed.get(block.instant_time)
                        if done and done < instant and (previous is None or done > previous[0]):
                            replay.append((block.instant_time, log_name, block))
                for _, log_name, block in sorted(replay, key=lambda item: item[0]):
                    for record in decode_hfile_block_records(block.content, block.schema, log_name):
                        if partition == "files":
                            record = _merge_files_record(state.get(record["key"]), record)
                        state[record["key"]] = record
                theirs = reader.read_file_slice_from_paths(f"{partition}/{base_name}", []).to_pylist()
                if partition == "files":
                    live = lambda fs: sorted((n, v["size"]) for n, v in (fs.items() if isinstance(fs, dict) else fs or []) if not v["isDeleted"])  # noqa: E731
                    assert {k: live(r["filesystemMetadata"] or {}) for k, r in state.items()} == {
                        r["key"]: live(r["filesystemMetadata"]) for r in theirs
                    }, base_name
                else:
                    # keys deleted later (delete blocks, not replayed here) may remain in ``state``
                    for record in theirs:
                        assert record["key"] in state, (base_name, record["key"])
                        assert _norm(state[record["key"]]["recordIndexMetadata"]) == _norm(
                            record["recordIndexMetadata"]
                        ), (base_name, record["key"])
                compared += 1
    assert compared >= 3


# -- synthetic files ---------------------------------------------------------------------


def _block(magic: bytes, payload: bytes, gz: bool = False, checksum: bool = True) -> bytes:
    body = payload
    if gz:
        comp = zlib.compressobj(wbits=31)
        body = comp.compress(payload) + comp.flush()
    checksum_bytes = 4 if checksum else 0  # one CRC32 chunk of header + body
    header = magic + struct.pack(
        ">iiqbii", len(body) + checksum_bytes, len(payload), -1, 1 if checksum else 0, 16384, 33 + len(body)
    )
    checksums = struct.pack(">I", zlib.crc32(header + body)) if checksum else b""
    return header + body + checksums


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _pb_field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, bytes):
        return _varint(number << 3 | 2) + _varint(len(value)) + value
    return _varint(number << 3) + _varint(value)


def _hadoop_vlong(value: int) -> bytes:
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return struct.pack(">b", -112 - len(raw)) + raw


def _cell(row: bytes, value: bytes, tags: bytes | None, mvcc: int | None) -> bytes:
    key = struct.pack(">H", len(row)) + row + b"\x00" + struct.pack(">q", 0) + b"\x04"
    out = struct.pack(">ii", len(key), len(value)) + key + value
    if tags is not None:
        out += struct.pack(">H", len(tags)) + tags
    if mvcc is not None:
        out += _hadoop_vlong(mvcc)
    return out


def build_hfile(
    blocks_of_cells: list[list[tuple[bytes, bytes]]],
    *,
    gz: bool = False,
    tags: bool = False,
    mvcc: list[int] | None = None,
    file_info: dict[bytes, bytes] | None = None,
    codec: int | None = None,
    entry_count: int | None = None,
) -> bytes:
    """A small HFile v3, with an inline leaf-index block between data blocks."""
    info = {b"KEY_VALUE_VERSION": struct.pack(">i", 1), b"MAX_MEMSTORE_TS_KEY": struct.pack(">q", 0)}
    if tags:
        info[b"hfile.MAX_TAGS_LEN"] = struct.pack(">i", 3)
    if mvcc is None:
        mvcc = []
    info.update(file_info or {})
    with_mvcc = info.get(b"KEY_VALUE_VERSION") == struct.pack(">i", 1)
    out = bytearray()
    n = 0
    for i, cells in enumerate(blocks_of_cells):
        if i:
            out += _block(b"IDXLEAF2", b"\x00" * 12, gz=gz)  # inline non-data block: skipped
        payload = b"".join(
            _cell(k, v, b"abc" if tags else None, (mvcc[n + j] if j + n < len(mvcc) else 0) if with_mvcc else None)
            for j, (k, v) in enumerate(cells)
        )
        n += len(cells)
        out += _block(b"DATABLK*", payload, gz=gz)
    load_on_open = len(out)
    out += _block(b"IDXROOT2", b"", gz=gz)
    out += _block(b"IDXROOT2", b"", gz=gz)
    file_info_offset = len(out)
    entries = b"".join(_pb_field(1, _pb_field(1, k) + _pb_field(2, v)) for k, v in info.items())
    out += _block(b"FILEINF2", b"PBUF" + _varint(len(entries)) + entries, gz=gz)
    trailer_pb = b"".join(
        [
            _pb_field(1, file_info_offset),
            _pb_field(2, load_on_open),
            _pb_field(5, len(blocks_of_cells)),
            _pb_field(7, n if entry_count is None else entry_count),
            _pb_field(8, 2),
            _pb_field(9, 0 if blocks_of_cells else (1 << 64) - 1),
            _pb_field(11, b"org.apache.hudi.io.storage.HoodieHBaseKVComparator"),
            _pb_field(12, codec if codec is not None else (1 if gz else 2)),
        ]
    )
    trailer = b'TRABLK"$' + _varint(len(trailer_pb)) + trailer_pb
    trailer += b"\x00" * (4096 - 4 - len(trailer)) + struct.pack(">I", 3 << 24 | 3)
    return bytes(out) + trailer


CELLS = [[(b"a", b"1"), (b"b", b"22")], [(b"c", b""), (b"d", b"4444")]]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("tags", [False, True])
def test_synthetic_multi_block(gz, tags):
    data = build_hfile(CELLS, gz=gz, tags=tags, mvcc=[0, 5, 300, 1 << 40])
    assert read_hfile(data, "x.hfile") == [cell for block in CELLS for cell in block]


def test_synthetic_without_memstore_ts():
    data = build_hfile(CELLS, file_info={b"KEY_VALUE_VERSION": struct.pack(">i", 0)})
    assert read_hfile(data) == [cell for block in CELLS for cell in block]


def test_synthetic_empty_file():
    hfile = open_hfile(build_hfile([]), "empty.hfile")
    assert hfile.cells == [] and hfile.trailer.entry_count == 0


@pytest.mark.parametrize("codec, name", [(0, "LZO"), (3, "SNAPPY"), (6, "ZSTD")])
def test_unsupported_codec(codec, name):
    with pytest.raises(UnsupportedFeatureError, match=name):
        read_hfile(build_hfile(CELLS, codec=codec), "x.hfile")


def test_entry_count_mismatch_is_corrupt():
    with pytest.raises(CorruptFileError, match="x.hfile"):
        read_hfile(build_hfile(CELLS, entry_count=5), "x.hfile")


def test_decode_restores_blank_key_only():
    schema = '{"type":"record","name":"R","fields":[{"name":"key","type":"string"},{"name":"v","type":"int"}]}'
    blank = b"\x00" + b"\x02"  # key "", v 1
    kept = b"\x04zz" + b"\x04"  # key "zz", v 2
    records = decode_hfile_block_records(build_hfile([[(b"k1", blank), (b"k2", kept)]]), schema)
    assert records == [{"key": "k1", "v": 1}, {"key": "zz", "v": 2}]
    with pytest.raises(CorruptFileError, match="trailing"):
        decode_hfile_block_records(build_hfile([[(b"k1", blank + b"\x00")]]), schema, "blk")


# -- corruption --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_hfiles(metadata_tables) -> list[tuple[str, bytes]]:
    """One real GZ HFile (with data) per fixture, plus a synthetic uncompressed one."""
    out = []
    for mdt in metadata_tables.values():
        for path in _hfiles(mdt):
            data = path.read_bytes()
            if open_hfile(data).cells:
                out.append((path.name, data))
                break
    out.append(("synthetic.hfile", build_hfile(CELLS)))
    return out


def test_truncated_hfiles_are_corrupt(sample_hfiles):
    for name, data in sample_hfiles:
        for cut in (0, 1, 7, 100, len(data) // 2, len(data) - 4096, len(data) - 100, len(data) - 1):
            with pytest.raises(CorruptFileError, match=re.escape(name)):
                read_hfile(data[:cut], name)


def _patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new) :]


def test_garbled_hfiles_are_corrupt(sample_hfiles):
    for name, data in sample_hfiles:
        trailer = len(data) - 4096
        hfile = open_hfile(data, name)
        garbled = [
            _patch(data, trailer, b"XXXXXXXX"),  # trailer magic
            _patch(data, trailer + 8, b"\xff" * 12),  # trailer protobuf length / fields
            _patch(data, 0, b"NOTABLOK"),  # first block magic
            _patch(data, 8, struct.pack(">i", 10**8)),  # on-disk size way past the end
            _patch(data, 12, struct.pack(">i", 7)),  # uncompressed size disagrees
            _patch(data, 29, struct.pack(">i", 5)),  # on-disk data size smaller than header
            _patch(data, hfile.trailer.file_info_offset + 33, b"\x13" * 8),  # file info payload
            bytes(len(data)),  # all zeros
            b"\x5a" * 5000,  # not an HFile
        ]
        if hfile.trailer.codec_name == "NONE":
            garbled.append(_patch(data, 33, struct.pack(">i", 10**6)))  # first cell key length
        else:
            garbled.append(_patch(data, 33 + 10, b"\xff" * 16))  # inside the gzip stream
        for i, bad in enumerate(garbled):
            with pytest.raises(CorruptFileError, match=re.escape(name)):
                read_hfile(bad, name)
            assert i >= 0


def test_error_is_never_a_raw_exception():
    data = build_hfile(CELLS, gz=True)
    for offset in range(0, len(data) - 4000, 3):
        bad = _patch(data, offset, b"\xa5\x5a")
        try:
            read_hfile(bad, "fuzz.hfile")
        except (CorruptFileError, UnsupportedFeatureError):
            pass


def _first_block_layout(data: bytes) -> tuple[int, int, int]:
    """(checksum type, payload end, block end) of the first block."""
    on_disk_size, _, _, checksum_type, _, data_size_with_header = struct.unpack_from(">iiqbii", data, 8)
    return checksum_type, data_size_with_header, 33 + on_disk_size


def _checksummed_hfiles(sample_hfiles) -> list[tuple[str, bytes]]:
    """HBase-written fixture HFiles (CRC32C), the synthetic CRC32 one and one of our writer's."""
    from hudi_duck.core.hfile.writer import HFileWriter

    writer = HFileWriter()
    for row in (b"k1", b"k2", b"k3"):
        writer.append(row, row * 40)
    ours = ("ours.hfile", writer.finish())
    checked = [(name, data) for name, data in sample_hfiles if _first_block_layout(data)[0] != 0]
    assert any(data[24] == 2 for _, data in checked), "no HBase-written (CRC32C) fixture HFile"
    return checked + [ours]


def test_flipped_byte_fails_the_block_checksum(sample_hfiles):
    """A flip that leaves every size intact (inside a value, or in a stored checksum) is
    caught by the block checksum, as HBase does; the error names the file and the block."""
    for name, data in _checksummed_hfiles(sample_hfiles):
        _, payload_end, block_end = _first_block_layout(data)
        for offset in (33, (33 + payload_end) // 2, payload_end - 1, payload_end, block_end - 1):
            bad = _patch(data, offset, bytes([data[offset] ^ 0x01]))
            with pytest.raises(CorruptFileError, match=re.escape(name) + r".*checksum"):
                read_hfile(bad, name)


def test_checksum_type_and_size_are_checked(sample_hfiles):
    name, data = _checksummed_hfiles(sample_hfiles)[0]
    with pytest.raises(CorruptFileError, match="unknown checksum type 9"):
        read_hfile(_patch(data, 24, b"\x09"), name)
    with pytest.raises(CorruptFileError, match="bytes per checksum"):
        read_hfile(_patch(data, 25, struct.pack(">i", 0)), name)


def test_checksum_types_of_apache_writers(metadata_tables):
    """HBase's writer (Hudi up to 1.0) puts CRC32C of 16 KiB chunks after every block, and
    they verify; Hudi 1.1's own writer marks blocks NULL (nothing to verify), and they read."""
    seen = set()
    for fixture, mdt in metadata_tables.items():
        for path in _hfiles(mdt):
            data = path.read_bytes()
            checksum_type = _first_block_layout(data)[0]
            seen.add((fixture.split("/")[-1][:2], checksum_type))
            if checksum_type:
                assert checksum_type == 2 and struct.unpack_from(">i", data, 25)[0] == 16 * 1024
            read_hfile(data, path.name)
    assert ("v8", 2) in seen and ("v9", 0) in seen, seen
