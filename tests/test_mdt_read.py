"""Reads planned from the metadata table: every Apache-written fixture with a metadata table
is planned from its ``files`` partition without listing one data folder, and reads what
hudi-rs reads and what the listing read (``metadata_enable := false``) reads; filters skip
files with ``column_stats`` / ``partition_stats`` conservatively; a damaged metadata table
fails naming what is missing; version-6 metadata tables laid out as Hudi 0.14 lays them
out are read the same way."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from fsspec.implementations.local import LocalFileSystem

import hudi_duck
from conftest import FIXTURE_IDS
from hudi_duck import open_table
from hudi_duck.api import arrow_table
from hudi_duck.core.config.table_config import Keys, TableConfig, format_properties
from hudi_duck.core.file_group.file_slice import FileSlice
from hudi_duck.core.file_group.naming import parse_base_file, parse_log_file
from hudi_duck.core.metadata import layout
from hudi_duck.core.metadata.data_skipping import skip_slices, stat_value
from hudi_duck.core.metadata.files_reader import MetadataTableError
from hudi_duck.core.metadata.records import column_stats_record, partition_files_record
from hudi_duck.core.storage import storage as storage_module
from hudi_duck.core.storage.storage import Storage
from hudi_duck.core.table.filters import ColumnFilter, FilterError, parse_filters
from hudi_duck.core.table.read_plan import canonical
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.commit_metadata import CommitMetadata
from hudi_duck.core.timeline.instant import Action
from hudi_duck.duck.sql import SqlRenderer
from oracle import canonical_rows, diff_rows, hudi_rs_read


def _has_files_partition(path: str) -> bool:
    return "files" in TableConfig.load(Storage(path)).metadata_partitions


@pytest.fixture(scope="module")
def mdt_tables(fixture_tables) -> dict[str, str]:
    """Every fixture whose hoodie.properties lists the metadata table's files partition."""
    found = {fid: path for fid, path in fixture_tables.items() if _has_files_partition(path)}
    assert len(found) >= 3, found  # the v8 trips table and both v9 txns tables
    return found


MDT_IDS = [fid for fid in FIXTURE_IDS if "/v8_trips" in fid or "/v9_" in fid]


# -- counting listings ----------------------------------------------------------------------

#: fsspec calls that list or stat a folder
LISTING_CALLS = ("ls", "listdir", "find", "glob", "walk", "info", "isdir", "exists")


class ListingCounter:
    """Counts fsspec listing calls on the data folders of one table (any folder below the
    base path but outside ``.hoodie``), and local folder reads (``scan_local_folder``, as
    ``ls``); calls made inside another counted call are not counted again."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)
        self.calls: Counter = Counter()
        self._depth = 0

    def data_folder(self, path) -> str | None:
        text = str(path).removeprefix("file://")
        real = os.path.realpath(text)
        rel = os.path.relpath(real, self.root)
        if rel.startswith("..") or rel.split(os.sep)[0] == ".hoodie":
            return None
        return rel if os.path.isdir(real) else None

    def wrap(self, name: str, original):
        counter = self

        def counted(fs, path, *args, **kwargs):
            if counter._depth == 0:
                folder = counter.data_folder(path)
                if folder is not None:
                    counter.calls[(name, folder)] += 1
            counter._depth += 1
            try:
                return original(fs, path, *args, **kwargs)
            finally:
                counter._depth -= 1

        return counted

    def wrap_function(self, name: str, original):
        """``wrap`` for a function of a folder's path (no filesystem argument)."""
        counted = self.wrap(name, lambda _fs, path, *args, **kwargs: original(path, *args, **kwargs))
        return lambda path, *args, **kwargs: counted(None, path, *args, **kwargs)

    @property
    def total(self) -> int:
        return sum(self.calls.values())


@contextmanager
def counting_listings(monkeypatch, root: str):
    """Count listings of ``root``'s data folders while planning afresh (no plan cached from an
    earlier read of the same table)."""
    from hudi_duck.duck.planner import clear_plan_cache

    clear_plan_cache()
    counter = ListingCounter(root)
    with monkeypatch.context() as patch:
        for name in LISTING_CALLS:
            original = getattr(LocalFileSystem, name)
            patch.setattr(LocalFileSystem, name, counter.wrap(name, original))
        patch.setattr(storage_module, "scan_local_folder", counter.wrap_function("ls", storage_module.scan_local_folder))
        yield counter


def _read(con, function: str, path: str, **named) -> object:
    args = "".join(f", {k} := {v}" for k, v in named.items())
    return arrow_table(con.sql(f"SELECT * FROM {function}('{path}'{args})"))


# -- planning from the files partition ----------------------------------------------------------


@pytest.mark.parametrize("fid", MDT_IDS)
def test_snapshot_from_metadata_table_lists_no_data_folder(monkeypatch, con, mdt_tables, fid):
    path = mdt_tables[fid]
    with counting_listings(monkeypatch, path) as listed:
        fallback = _read(con, "hudi_snapshot", path, metadata_enable="false")
    assert listed.total > 0, "the listing read must list the data folders"
    with counting_listings(monkeypatch, path) as listed:
        ours = _read(con, "hudi_snapshot", path)
        plan = open_table(path).plan()
    assert listed.total == 0, dict(listed.calls)
    assert plan.listing == "metadata"
    assert open_table(path, metadata_enable=False).plan().listing == "storage"
    assert not diff_rows(ours, fallback)
    assert not diff_rows(ours, hudi_rs_read(path))


@pytest.mark.parametrize("fid", MDT_IDS)
def test_every_query_kind_plans_from_metadata_table(monkeypatch, con, mdt_tables, fid):
    path = mdt_tables[fid]
    table = HudiTable(path)
    times = [i.requested_time for i in table.timeline.completed_writes]
    with counting_listings(monkeypatch, path) as listed:
        ro = _read(con, "hudi_read_optimized", path)
        inc = _read(con, "hudi_incremental", path, begin_time=f"'{times[1]}'")
        as_of = _read(con, "hudi_snapshot", path, as_of=f"'{times[-2]}'")
        slices = con.sql(f"SELECT count(*) FROM hudi_file_slices('{path}')").fetchall()[0][0]
        partitions = con.sql(f"SELECT count(*) FROM hudi_partitions('{path}')").fetchall()[0][0]
    assert listed.total == 0, dict(listed.calls)
    assert slices > 0 and partitions > 0
    assert not diff_rows(ro, _read(con, "hudi_read_optimized", path, metadata_enable="false"))
    assert not diff_rows(inc, _read(con, "hudi_incremental", path, begin_time=f"'{times[1]}'", metadata_enable="false"))
    assert not diff_rows(as_of, _read(con, "hudi_snapshot", path, as_of=f"'{times[-2]}'", metadata_enable="false"))
    assert not diff_rows(ro, hudi_rs_read(path, read_optimized=True))
    listed_slices = con.sql(f"SELECT * FROM hudi_file_slices('{path}', metadata_enable := false) ORDER BY ALL").fetchall()
    assert con.sql(f"SELECT * FROM hudi_file_slices('{path}') ORDER BY ALL").fetchall() == listed_slices


def test_plans_equal_listing_plans(mdt_tables):
    """The same slices, files and sizes whichever way the files were found."""
    for fid, path in mdt_tables.items():
        ours = open_table(path).plan()
        listed = open_table(path, metadata_enable=False).plan()
        assert canonical(ours.slices) == canonical(listed.slices), fid


def test_python_api_metadata_switch(monkeypatch, mdt_tables):
    path = next(iter(mdt_tables.values()))
    with counting_listings(monkeypatch, path) as listed:
        ours = hudi_duck.read_snapshot(path).read_all()
    assert listed.total == 0
    with counting_listings(monkeypatch, path) as listed:
        theirs = hudi_duck.read_snapshot(path, metadata_enable=False).read_all()
    assert listed.total > 0
    assert not diff_rows(ours, theirs)


def test_table_without_metadata_table_lists(monkeypatch, con, fixture_tables):
    fid = next(f for f in FIXTURE_IDS if f.endswith("cow/v8_nonpartitioned"))
    path = fixture_tables[fid]
    assert not _has_files_partition(path)
    assert open_table(path).plan().listing == "storage"
    with counting_listings(monkeypatch, path) as listed:
        rows = _read(con, "hudi_snapshot", path)
    assert listed.total > 0 and rows.num_rows > 0


# -- the metadata table's instants -------------------------------------------------------------


def test_block_of_failed_data_commit_is_ignored(tmp_path, mdt_tables):
    """An instant the metadata table completed but the data table did not (the writer
    failed between the two commits) adds nothing to the listing."""
    source = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    table = tmp_path / "t"
    shutil.copytree(source, table)
    before = open_table(str(table)).plan()
    partition = before.slices[0].partition_path
    ghost = "00000000-0000-0000-0000-000000000000-0_0-1-1_29990101000000000.parquet"
    instant = "29990101000000000"
    (table / ".hoodie/timeline" / f"{instant}.commit.requested").write_bytes(b"")
    (table / ".hoodie/timeline" / f"{instant}.inflight").write_bytes(b"")
    mdt_timeline = table / ".hoodie/metadata/.hoodie/timeline"
    (mdt_timeline / f"{instant}.deltacommit.requested").write_bytes(b"")
    (mdt_timeline / f"{instant}.deltacommit.inflight").write_bytes(b"")
    completed = sorted(mdt_timeline.glob("*_*.deltacommit"))[-1].read_bytes()
    (mdt_timeline / f"{instant}_29990101000000100.deltacommit").write_bytes(completed)
    log = sorted((table / ".hoodie/metadata/files").glob(".files-0000-0_*.log.*"))[-1]
    with open(log, "ab") as out:
        out.write(layout.hfile_data_block([partition_files_record(partition, {ghost: 10})], instant))
    after = open_table(str(table)).plan()
    assert canonical(after.slices) == canonical(before.slices)
    assert ghost not in {s.base_file.file_name for s in after.slices if s.base_file}
    # once the data table completes the instant, the block counts
    data_completed = sorted((table / ".hoodie/timeline").glob("*_*.commit"))[-1].read_bytes()
    (table / ".hoodie/timeline" / f"{instant}_29990101000000200.commit").write_bytes(data_completed)
    assert (ghost, 10) in HudiTable(str(table), metadata_enable=True).file_system_view.listing.files(partition)


def test_block_of_metadata_only_instant_counts(tmp_path, mdt_tables):
    """A delta commit only the metadata table has (its log compaction, an index build) counts
    once the metadata table completed it; a block of an instant it has not completed does not."""
    source = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    table = _copy(source, tmp_path)
    partition = open_table(str(table)).plan().slices[0].partition_path
    mdt_timeline = table / ".hoodie/metadata/.hoodie/timeline"
    completed = sorted(mdt_timeline.glob("*_*.deltacommit"))[-1].read_bytes()
    log = sorted((table / ".hoodie/metadata/files").glob(".files-0000-0_*.log.*"))[-1]
    names = {}
    for instant, done in (("29990101000000000", False), ("29990102000000000", True)):
        names[instant] = f"00000000-0000-0000-0000-00000000000{done:d}-0_0-1-1_20200101000000000.parquet"
        (mdt_timeline / f"{instant}.deltacommit.requested").write_bytes(b"")
        (mdt_timeline / f"{instant}.deltacommit.inflight").write_bytes(b"")
        if done:
            (mdt_timeline / f"{instant}_{instant[:-1]}9.deltacommit").write_bytes(completed)
        with open(log, "ab") as out:
            out.write(layout.hfile_data_block([partition_files_record(partition, {names[instant]: 7})], instant))
    listed = dict(HudiTable(str(table), metadata_enable=True).file_system_view.listing.files(partition))
    assert names["29990102000000000"] in listed and names["29990101000000000"] not in listed


def _zeroed_log_fails(table: Path, listing) -> None:
    """The latest log file of the ``files`` partition overwritten with as many zero bytes fails
    ``listing()`` naming it; then its bytes are put back."""
    from hudi_duck.core.errors import CorruptFileError

    log = sorted((table / ".hoodie/metadata/files").glob(".files-0000-0_*.log.*"))[-1]
    data = log.read_bytes()
    log.write_bytes(bytes(len(data)))
    with pytest.raises(CorruptFileError, match=log.name):
        listing()
    log.write_bytes(data)


def test_a_files_listing_is_decoded_once_per_process_and_never_from_other_bytes(tmp_path, mdt_tables):
    """Tables opened again share the decoded listing while the metadata table's files and the
    instants that count are the same; a log file rewritten with other bytes of the same size
    is decoded afresh."""
    from hudi_duck.core.metadata import files_reader

    source = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    table = _copy(source, tmp_path)

    def listing():
        return HudiTable(str(table), metadata_enable=True).metadata_table.files_listing()

    first = listing()
    assert listing() is first
    _zeroed_log_fails(table, listing)
    assert listing() == first  # (known by its stat, the file written again is decoded afresh)
    files_reader._LISTINGS.clear()
    again = listing()
    assert again is not first and again == first


def test_a_files_listing_is_kept_for_the_next_process(tmp_path, mdt_tables, monkeypatch):
    """A process that finds the listing an earlier one kept (the same files of the ``files``
    partition by their ``stat``, the same instants counting) decodes no HFile; a log file
    written since (another ``stat``) is decoded afresh, damage and all."""
    from hudi_duck.core.metadata import files_reader
    from hudi_duck.core.storage import kept
    from hudi_duck.duck import cache

    monkeypatch.setenv(cache.ENV_DIR, str(tmp_path / "cache"))
    monkeypatch.setattr(kept, "_store", cache.KeptFiles())
    source = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    table = _copy(source, tmp_path)

    def listing():
        files_reader._LISTINGS.clear()  # (a new process)
        return HudiTable(str(table), metadata_enable=True).metadata_table.files_listing()

    first = listing()
    kept.wait_for_saves()
    assert list((tmp_path / "cache").glob(f"*.{files_reader.KEPT_KIND}"))
    decoded = []
    real = files_reader.MetadataTable._files_listing
    monkeypatch.setattr(files_reader.MetadataTable, "_files_listing", lambda *a: decoded.append(1) or real(*a))
    assert listing() == first and decoded == []
    _zeroed_log_fails(table, listing)
    assert listing() == first and len(decoded) == 2


# -- a damaged metadata table ---------------------------------------------------------------------


def _copy(source: str, tmp_path: Path) -> Path:
    table = tmp_path / "t"
    shutil.copytree(source, table)
    return table


def test_missing_files_file_group_fails_naming_it(tmp_path, mdt_tables):
    source = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    table = _copy(source, tmp_path)
    for file in (table / ".hoodie/metadata/files").iterdir():
        if not file.name.startswith(".hoodie_partition"):
            file.unlink()
    with pytest.raises(MetadataTableError, match=r"\.hoodie/metadata/files.*no file slices.*hoodie\.metadata\.enable=false"):
        open_table(str(table)).plan()
    con = hudi_duck.connect()
    with pytest.raises(duckdb.Error, match=r"\.hoodie/metadata/files"):
        con.sql(f"SELECT * FROM hudi_snapshot('{table}')").fetchall()
    listed = _read(con, "hudi_snapshot", str(table), metadata_enable="false")
    assert not diff_rows(listed, hudi_rs_read(source))


def test_missing_metadata_table_fails_naming_it(tmp_path, mdt_tables):
    source = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    table = _copy(source, tmp_path)
    shutil.rmtree(table / ".hoodie/metadata")
    with pytest.raises(MetadataTableError, match=r"no metadata table \(expected \.hoodie/metadata/files\)"):
        open_table(str(table)).plan()
    assert open_table(str(table), metadata_enable=False).plan().slices


def test_file_the_metadata_table_lists_but_storage_lost_fails_naming_it(tmp_path, mdt_tables):
    """A stale listing (a data file deleted behind Hudi's back) fails the read naming the
    file, as Hudi's reader does; it never returns fewer rows."""
    source = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    table = _copy(source, tmp_path)
    victim = open_table(str(table)).plan().slices[0].base_file
    (table / victim.path).unlink()
    con = hudi_duck.connect()
    with pytest.raises(duckdb.Error, match=victim.file_name):
        con.sql(f"SELECT * FROM hudi_snapshot('{table}')").fetchall()


# -- filters and data skipping ----------------------------------------------------------------------

SKIPPING_CASES = {
    "cow/v9_txns_simple_meta": [
        "currency = USD",
        "region = eu",
        "amount > 5000",
        "txn_date = 2024-01-20",
        "is_international = true AND currency != USD",
        "merchant_name >= 'Uber'",
        "amount < 1",
    ],
    "mor/avro/v9_txns_simple_meta": ["currency = USD", "amount > 5000", "txn_date <= 2024-01-16", "region = us"],
    "mor/avro/v8_trips_8i3u1d": ["fare > 50", "rider = 'rider-J'", "fare <= 20 AND ts > 1695115999911"],
}


def _base_files(plan) -> int:
    renderer = SqlRenderer(plan)
    renderer.render()
    return renderer.stats.base_files


@pytest.mark.parametrize("suffix", sorted(SKIPPING_CASES))
def test_filters_skip_files_and_keep_every_match(con, mdt_tables, suffix):
    path = next(p for f, p in mdt_tables.items() if f.endswith(suffix))
    reader = open_table(path)
    full = reader.plan()
    everything = _read(con, "hudi_snapshot", path)
    skipped_any = False
    for text in SKIPPING_CASES[suffix]:
        plan = reader.plan(filters=text)
        assert plan.listing == "metadata" and plan.skipped_slices == len(full.slices) - len(plan.slices)
        skipped_any |= plan.skipped_slices > 0
        assert _base_files(plan) <= _base_files(full)
        filtered = arrow_table(
            con.sql(f"SELECT * FROM hudi_snapshot('{path}', filters := $f)", params={"f": text})
        )
        where = arrow_table(con.sql(f"SELECT * FROM everything WHERE {_where(text)}"))
        assert not diff_rows(filtered, where), text
        listed = arrow_table(
            con.sql(f"SELECT * FROM hudi_snapshot('{path}', filters := $f, metadata_enable := false)", params={"f": text})
        )
        assert not diff_rows(filtered, listed), text
        assert open_table(path, metadata_enable=False).plan(filters=text).skipped_slices == 0
        # the same rows from Python, filters as tuples
        tuples = [_tuple(term) for term in text.split(" AND ")]
        assert not diff_rows(hudi_duck.read_snapshot(path, filters=tuples).read_all(), where), text
    assert skipped_any


def _tuple(term: str) -> tuple[str, str, str]:
    column, op, value = term.split(" ", 2)
    return column, op, value.strip("'")


def _where(text: str) -> str:
    """The filter text as a DuckDB condition (bare values quoted and cast by the column)."""
    out = []
    for term in text.split(" AND "):
        column, op, value = _tuple(term)
        out.append(f"{column} {op} CAST('{value}' AS {_duck_type(column)})")
    return " AND ".join(out)


def _duck_type(column: str) -> str:
    return {
        "amount": "DECIMAL(15,2)",
        "fare": "DOUBLE",
        "ts": "BIGINT",
        "txn_date": "DATE",
        "is_international": "BOOLEAN",
    }.get(column, "VARCHAR")


def test_filtered_skipping_counts(mdt_tables):
    """Base files planned with and without a filter (the numbers the report quotes)."""
    path = next(p for f, p in mdt_tables.items() if f.endswith("cow/v9_txns_simple_meta"))
    reader = open_table(path)
    assert _base_files(reader.plan()) == 5
    assert _base_files(reader.plan(filters="amount > 5000")) == 1
    assert _base_files(reader.plan(filters="region = eu")) == 2
    assert _base_files(open_table(path, metadata_enable=False).plan(filters="amount > 5000")) == 5


def test_partition_stats_apply_to_latest_reads_only(mdt_tables):
    path = next(p for f, p in mdt_tables.items() if f.endswith("cow/v9_txns_simple_meta"))
    reader = open_table(path)
    times = [i.requested_time for i in reader.table.timeline.completed_writes]
    latest = reader.plan(filters="currency = EUR")
    old = reader.plan("snapshot", times[-1], filters="currency = EUR")
    assert {s.partition_path for s in latest.slices} == {"region=eu"}
    assert len(old.slices) >= len(latest.slices)


def _slice(partition: str, base: str | None, *logs: str) -> FileSlice:
    base_file = parse_base_file(partition, base, 100) if base else None
    log_files = tuple(parse_log_file(partition, name, 100) for name in logs)
    instant = base_file.instant_time if base_file else log_files[0].instant_time
    file_id = base_file.file_id if base_file else log_files[0].file_id
    return FileSlice(partition, file_id, instant, base_file, log_files)


class _StubMetadata:
    """A metadata table answering from given column stats records."""

    def __init__(self, records):
        self.by_key = {r.key: r for r in records}

    def records(self, partition, key_prefixes=None, *, required=True):
        if partition != "column_stats":
            return {}, ()
        return {k: r for k, r in self.by_key.items() if k.startswith(tuple(key_prefixes))}, ()


def _int(value):
    return ("org.apache.hudi.avro.model.IntWrapper", {"value": value})


def test_skipping_is_conservative():
    names = [f"{i}1111111-1111-1111-1111-111111111111-0_0-1-1_20240101000000000.parquet" for i in range(7)]
    log = ".61111111-1111-1111-1111-111111111111-0_20240101000000000.log.1_0-1-1"
    stats = [
        column_stats_record("p", names[0], "x", min_value=_int(1), max_value=_int(5), value_count=3, null_count=0),
        column_stats_record("p", names[1], "x", min_value=None, max_value=None, value_count=3, null_count=3),
        column_stats_record("p", names[2], "x", min_value=_int(1), max_value=_int(5), deleted=True),
        column_stats_record(
            "p", names[3], "x", min_value=("org.apache.hudi.avro.model.StringWrapper", {"value": "a"}),
            max_value=("org.apache.hudi.avro.model.StringWrapper", {"value": "z"}),
        ),
        # names[4]: no statistics at all
        column_stats_record("p", names[5], "x", min_value=_int(10), max_value=_int(20)),
        column_stats_record("p", names[6], "x", min_value=_int(1), max_value=_int(2)),
        # the log of names[6]'s slice has no statistics
    ]
    slices = [_slice("p", name) for name in names[:6]] + [_slice("p", names[6], log)]
    result = skip_slices(_StubMetadata(stats), ["files", "column_stats"], slices, (ColumnFilter("x", ">", 7),), True)
    kept = {s.base_file.file_name for s in result.slices}
    assert kept == set(names[1:])  # only the file whose range [1, 5] excludes x > 7 is left out
    assert result.skipped_by_column_stats == 1
    # no column_stats partition listed in hoodie.properties: nothing is skipped
    assert len(skip_slices(_StubMetadata(stats), ["files"], slices, (ColumnFilter("x", ">", 7),), True).slices) == 7


def test_range_rules():
    assert not ColumnFilter("x", "=", 3).may_match_range(4, 9)
    assert ColumnFilter("x", "=", 4).may_match_range(4, 9)
    assert not ColumnFilter("x", "!=", 4).may_match_range(4, 4)
    assert ColumnFilter("x", "!=", 4).may_match_range(4, 5)
    assert not ColumnFilter("x", "<", 4).may_match_range(4, 9)
    assert ColumnFilter("x", "<=", 4).may_match_range(4, 9)
    assert not ColumnFilter("x", ">", 9).may_match_range(4, 9)
    assert ColumnFilter("x", ">=", 9).may_match_range(4, 9)
    assert ColumnFilter("x", ">", 9).may_match_range(None, 9)  # no bound: keep
    assert ColumnFilter("x", ">", 9).may_match_range(float("nan"), 3.0)  # NaN bound: keep
    assert ColumnFilter("x", ">", 9).may_match_range("a", "b")  # another kind: keep
    assert ColumnFilter("x", "=", True).may_match_range(0, 0)  # bool vs int: keep
    # NaN rows pass > / >= / != and bounds may leave NaN out: floats keep; < and = still skip
    assert ColumnFilter("x", ">", 9.0).may_match_range(1.0, 2.0)
    assert ColumnFilter("x", "!=", 1.0).may_match_range(1.0, 1.0)
    assert not ColumnFilter("x", "<", 0.5).may_match_range(1.0, 2.0)
    assert not ColumnFilter("x", "=", 3.0).may_match_range(1.0, 2.0)
    # Java's UTF-16 order and DuckDB's code point order disagree from U+D800 on: keep
    assert ColumnFilter("s", "=", "\U0001F600").may_match_range("\uffff", "\uffff")
    assert not ColumnFilter("s", "=", "b").may_match_range("c", "d")


def test_stat_values_of_version_9():
    import datetime as dt
    import decimal

    assert stat_value(("org.apache.hudi.avro.model.BytesWrapper", {"value": b"#'"}), {"typeOrdinal": 10, "additionalInfo": "15,2"}) == decimal.Decimal("89.99")
    assert stat_value(("org.apache.hudi.avro.model.BytesWrapper", {"value": b"\xff"}), {"typeOrdinal": 10, "additionalInfo": "5,1"}) == decimal.Decimal("-0.1")
    assert stat_value(_int(19737), {"typeOrdinal": 12}) == dt.date(2024, 1, 15)
    assert stat_value(("org.apache.hudi.avro.model.LongWrapper", {"value": 1}), {"typeOrdinal": 16}) is None
    assert stat_value(("org.apache.hudi.avro.model.BytesWrapper", {"value": b"ab"})) is None


def test_filter_parsing(mdt_tables):
    import datetime as dt
    import decimal

    schema = open_table(next(p for f, p in mdt_tables.items() if "cow/v9" in f)).schema
    parsed = parse_filters("region = eu and amount>=10.5 AND txn_date < '2024-01-20' AND merchant_name = 'Dean ''n'' AND Co'", schema)
    assert parsed == (
        ColumnFilter("region", "=", "eu"),
        ColumnFilter("amount", ">=", decimal.Decimal("10.5")),
        ColumnFilter("txn_date", "<", dt.date(2024, 1, 20)),
        ColumnFilter("merchant_name", "=", "Dean 'n' AND Co"),
    )
    assert parse_filters([("is_international", "<>", "true")], schema) == (ColumnFilter("is_international", "!=", True),)
    with pytest.raises(FilterError, match="no column 'nope'"):
        parse_filters("nope = 1", schema)
    with pytest.raises(FilterError, match="operator '~'"):
        parse_filters([("region", "~", "x")], schema)
    with pytest.raises(FilterError, match="value 'abc' does not fit column 'amount'"):
        parse_filters("amount > abc", schema)
    with pytest.raises(FilterError, match="cannot read 'region eu'"):
        parse_filters("region eu", schema)


def test_sql_filter_errors_name_the_problem(con, mdt_tables):
    path = next(p for f, p in mdt_tables.items() if "cow/v9" in f)
    with pytest.raises(duckdb.Error, match="no column 'nope'"):
        con.sql(f"SELECT * FROM hudi_snapshot('{path}', filters := 'nope = 1')").fetchall()


# -- version 6 metadata tables --------------------------------------------------------------------

V6_IDS = [
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle",
    "sample_table/cow/v6_nonpartitioned",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
]


def build_v6_files_partition(table: Path) -> None:
    """A version-6 metadata table with a files partition, as Hudi 0.14 lays it out: a base
    HFile written when the first commit completed, then one delta commit per later data
    commit appending its files records to the file group's log."""
    storage = Storage(str(table))
    data = HudiTable(str(table))
    writes = data.timeline.completed_writes
    first, rest = writes[0], writes[1:]
    init = layout.initialization_instant(first.requested_time)
    folder = table / layout.METADATA_FOLDER
    (folder / ".hoodie").mkdir(parents=True)
    (folder / ".hoodie/hoodie.properties").write_text(format_properties(layout.metadata_table_properties(data.config.name)))
    (folder / "files").mkdir()
    stats = {i.requested_time: data.timeline.commit_metadata(i).to_json_record()["partitionToWriteStats"] for i in writes}
    base_records = layout.commit_files_records(stats[first.requested_time])
    from hudi_duck.core.hfile.writer import write_hudi_base_hfile
    from hudi_duck.core.metadata.records import encode_cells, writer_schema_json

    base_name = f"{layout.file_group_id(layout.FILES, 0)}_0-0-0_{init}.hfile"
    (folder / "files" / base_name).write_bytes(write_hudi_base_hfile(encode_cells(base_records), writer_schema_json()))
    log = layout.initial_log_file(init)
    for instant in rest:
        log += layout.hfile_data_block(layout.commit_files_records(stats[instant.requested_time]), instant.requested_time)
    (folder / "files" / layout.initial_log_file_name(layout.FILES, 0, init)).write_bytes(log)
    empty = CommitMetadata.of([]).to_bytes(6)
    for instant in [init] + [i.requested_time for i in rest]:
        (folder / ".hoodie" / f"{instant}.deltacommit.requested").write_bytes(b"")
        (folder / ".hoodie" / f"{instant}.deltacommit.inflight").write_bytes(b"")
        (folder / ".hoodie" / f"{instant}.deltacommit").write_bytes(empty)
    config = TableConfig.load(storage)
    props = dict(config.props)
    props[Keys.METADATA_PARTITIONS] = layout.metadata_partitions_value(["files"])
    (table / ".hoodie/hoodie.properties").write_text(format_properties(props))
    assert data.timeline.completed_writes and all(
        i.action in (Action.COMMIT, Action.DELTA_COMMIT) for i in writes
    ), "the builder mirrors commits and delta commits only"


@pytest.mark.parametrize("fid", V6_IDS)
def test_version_6_metadata_table(monkeypatch, con, fresh_fixture, fid):
    path = fresh_fixture(fid)
    before = open_table(path).plan()
    build_v6_files_partition(Path(path))
    assert before.listing == "storage"
    with counting_listings(monkeypatch, path) as listed:
        plan = open_table(path).plan()
        ours = _read(con, "hudi_snapshot", path)
    assert listed.total == 0, dict(listed.calls)
    assert plan.listing == "metadata"
    assert [(s.partition_path, s.file_id, s.base_instant_time) for s in plan.slices] == [
        (s.partition_path, s.file_id, s.base_instant_time) for s in before.slices
    ]
    assert not diff_rows(ours, _read(con, "hudi_snapshot", path, metadata_enable="false"))
    assert not diff_rows(ours, hudi_rs_read(path))
    assert canonical_rows(ours)
