"""Tables on S3: one set of storage options for the writer, the services, the planner and DuckDB.

An S3 endpoint is served on loopback by moto's server; everything reaches it through s3fs
with the options below and nothing else (no environment, no extension download): the Spark
writer and its executors, compaction, clustering and clean, the DuckDB table functions, the
Python API, and hudi-rs as the oracle. The table is also copied to local disk and read there.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import duckdb
import pytest

import hudi_duck
from hudi_duck.api import arrow_table
from hudi_duck.core.errors import HudiError
from hudi_duck.core.storage.storage import Storage, options_for
from hudi_duck.core.table.table import HudiTable
from hudi_duck.core.timeline.instant import State
from hudi_duck.duck import object_store
from oracle import canonical_rows, diff_rows, hudi_rs_read

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
pyspark = pytest.importorskip("pyspark")
import spark_writer  # noqa: E402

BUCKET = "lake"
DDL = "id string, p string, ts long, v int"
COLUMNS = ["_hoodie_record_key", "_hoodie_partition_path", "id", "p", "ts", "v"]


@pytest.fixture(scope="module")
def s3() -> dict[str, Any]:
    """One moto S3 server for the module: its s3fs options (the only way to reach it)."""
    with pytest.MonkeyPatch.context() as env:
        for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
            env.delenv(name, raising=False)
        yield from _moto_server()


def _moto_server():
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = {
        "key": "hudi-test-key",
        "secret": "hudi-test-secret",
        "endpoint_url": f"http://{host}:{port}",
        "client_kwargs": {"region_name": "us-east-1"},
    }
    import boto3

    boto3.client(
        "s3",
        endpoint_url=options["endpoint_url"],
        aws_access_key_id=options["key"],
        aws_secret_access_key=options["secret"],
        region_name="us-east-1",
    ).create_bucket(Bucket=BUCKET)
    yield options
    server.stop()


def write_options(table_type: str, **extra: str) -> dict[str, str]:
    options = {
        "hoodie.table.name": "s3t",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.delete.shuffle.parallelism": "2",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
    }
    options.update(extra)
    return options


class Model:
    """The rows a snapshot must return, by record key."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple] = {}
        self.ts = 0

    def rows_for(self, keys: list[int], rng: random.Random) -> list[tuple]:
        out = []
        for k in keys:
            self.ts += 1
            out.append((f"k{k:02d}", "ab"[k % 2], self.ts, rng.randint(-99, 99)))
        return out

    def upsert(self, rows: list[tuple]) -> None:
        for r in rows:
            self.rows[r[0]] = (r[0], r[1]) + r

    def delete(self, keys: list[str]) -> None:
        for k in keys:
            self.rows.pop(k, None)

    def snapshot(self) -> Counter:
        return Counter(self.rows.values())


def rows_of(table) -> Counter:
    return canonical_rows(table, COLUMNS) if table.num_rows else Counter()


def hudi_rs_s3(url: str, s3: dict[str, Any], read_optimized: bool = False):
    """hudi-rs reading the table straight from the endpoint (object_store's option names)."""
    import pyarrow as pa
    from hudi import HudiReadOptions, HudiTableBuilder

    builder = HudiTableBuilder.from_base_uri(url).with_storage_options(
        {
            "aws_endpoint_url": s3["endpoint_url"],
            "aws_access_key_id": s3["key"],
            "aws_secret_access_key": s3["secret"],
            "aws_region": "us-east-1",
            "aws_allow_http": "true",
        }
    )
    if read_optimized:
        builder = builder.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    table = builder.build()
    batches = table.read(HudiReadOptions())
    return pa.Table.from_batches(batches) if batches else pa.Table.from_batches([], schema=table.get_schema_with_meta_fields())


class S3Requests:
    """What the S3 server was asked to do, from every process (driver and Spark executors):
    (operation, key) with operation put, copy (the destination key), multipart or delete."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    def install(self, monkeypatch) -> "S3Requests":
        from moto.s3.models import S3Backend

        def record(operation: str, method: str, key_of):
            original = getattr(S3Backend, method)

            def recording(backend, *args, **kwargs):
                self.requests.append((operation, key_of(args, kwargs)))
                return original(backend, *args, **kwargs)

            monkeypatch.setattr(S3Backend, method, recording)

        record("put", "put_object", lambda a, k: a[1] if len(a) > 1 else k["key_name"])
        record("copy", "copy_object", lambda a, k: a[2] if len(a) > 2 else k["dest_key_name"])
        record("multipart", "create_multipart_upload", lambda a, k: a[1] if len(a) > 1 else k["key_name"])
        record("delete", "delete_object", lambda a, k: a[1] if len(a) > 1 else k["key_name"])
        record("create_bucket", "create_bucket", lambda a, k: a[0] if a else k["bucket_name"])
        return self

    def of(self, key: str) -> list[str]:
        return [operation for operation, k in self.requests if k == key]


def assert_no_extension_download(con: duckdb.DuckDBPyConnection, url: str) -> None:
    """DuckDB read the files with the options given, without fetching httpfs."""
    if object_store.httpfs_loadable(duckdb.connect()):
        secrets = con.sql("SELECT scope FROM duckdb_secrets() WHERE name LIKE 'hudi_duck_%'").fetchall()
        assert any(url.rstrip("/") in scope for (scope,) in secrets), secrets
    else:
        (row,) = con.sql(
            "SELECT installed, loaded FROM duckdb_extensions() WHERE extension_name = 'httpfs'"
        ).fetchall()
        assert row == (False, False), "DuckDB installed or loaded httpfs"
        assert "s3" in con.list_filesystems()


# -- options: one set, per protocol or flat --------------------------------------------------------


def test_options_per_protocol_or_flat():
    flat = {"key": "k", "secret": "s", "client_kwargs": {"region_name": "eu-west-1"}}
    assert options_for(flat, "s3://b/t") == flat  # nested s3fs options are kept
    per_protocol = {"s3": flat, "gs": {"token": "anon"}}
    assert options_for(per_protocol, "s3://b/t") == flat
    assert options_for(per_protocol, "s3a://b/t") == flat  # an alias of the same filesystem
    assert options_for(per_protocol, "gs://b/t") == {"token": "anon"}
    assert options_for(per_protocol, "/tmp/t") == {}
    assert options_for(None, "s3://b/t") == {}


def test_s3_secret_from_s3fs_options():
    """The DuckDB secret made from s3fs's option names (used when httpfs loads without a download)."""
    secret, reason = object_store.s3_secret(
        {
            "key": "AK",
            "secret": "S'K",
            "token": "T",
            "endpoint_url": "http://127.0.0.1:9000",
            "client_kwargs": {"region_name": "eu-west-1"},
            "use_listings_cache": False,
        }
    )
    assert reason == ""
    assert secret.sql("hudi_duck_x", "s3://lake/t") == (
        "CREATE OR REPLACE TEMPORARY SECRET hudi_duck_x (TYPE s3, KEY_ID 'AK', SECRET 'S''K', SESSION_TOKEN 'T', "
        "REGION 'eu-west-1', ENDPOINT '127.0.0.1:9000', URL_STYLE 'path', USE_SSL false, SCOPE 's3://lake/t')"
    )
    secret, _ = object_store.s3_secret(
        {
            "key": "AK",
            "secret": "SK",
            "client_kwargs": {"endpoint_url": "https://minio.example:9443/"},
            "config_kwargs": {"s3": {"addressing_style": "virtual"}},
        }
    )
    assert (secret.endpoint, secret.url_style, secret.use_ssl) == ("minio.example:9443", "vhost", True)
    secret, _ = object_store.s3_secret({"anon": True})
    assert secret.sql("n", "s3://pub/t") == "CREATE OR REPLACE TEMPORARY SECRET n (TYPE s3, SCOPE 's3://pub/t')"
    # options DuckDB cannot take stay with s3fs (DuckDB then reads through it), saying why
    assert object_store.s3_secret({"profile": "dev"}) == (None, "options DuckDB's S3 secret has no equivalent for: profile")
    assert object_store.s3_secret({})[0] is None
    assert "requester_pays" in object_store.s3_secret({"key": "a", "secret": "b", "requester_pays": True})[1]


def test_the_secret_is_valid_duckdb_sql_and_used_when_httpfs_loads(s3, monkeypatch):
    """Where httpfs loads without a download DuckDB reads S3 itself with the secret; its SQL parses
    (here, without httpfs, DuckDB stops only at the missing secret type) and no filesystem is registered."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        monkeypatch.setattr(object_store, "httpfs_loadable", lambda _con: True)
        storage = Storage(f"s3://{BUCKET}/native", {"s3": s3})
        try:
            object_store.ReadStorage(con).prepare(storage)
        except duckdb.Error as exc:
            assert "Secret type 's3' does not exist" in str(exc)
        else:
            (scope,) = con.sql("SELECT scope FROM duckdb_secrets() WHERE name LIKE 'hudi_duck_%'").fetchall()[0]
            assert scope == [storage.uri()]
        assert "s3" not in con.list_filesystems()
    finally:
        con.close()


# -- object-store behaviour --------------------------------------------------------------------------


def test_object_store_writes_are_single_puts(s3, monkeypatch):
    requests = S3Requests().install(monkeypatch)
    storage = Storage(f"s3://{BUCKET}/puts", {"s3": s3})
    assert storage.is_object_store
    storage.write_atomic(".hoodie/001.commit", b"{}")
    storage.write_atomic(".hoodie/hoodie.properties", b"a=1")
    storage.write_atomic(".hoodie/hoodie.properties", b"a=2")
    assert requests.requests == [
        ("put", "puts/.hoodie/001.commit"),
        ("put", "puts/.hoodie/hoodie.properties"),
        ("put", "puts/.hoodie/hoodie.properties"),
    ]
    assert storage.read(".hoodie/hoodie.properties") == b"a=2"
    assert [f.path for f in storage.list(".hoodie")] == [".hoodie/001.commit", ".hoodie/hoodie.properties"]


def test_a_missing_bucket_is_an_error_not_a_new_bucket(s3, monkeypatch):
    requests = S3Requests().install(monkeypatch)
    storage = Storage("s3://no-such-bucket/t", {"s3": s3})
    with pytest.raises(HudiError, match="no-such-bucket"):
        storage.write(".hoodie/hoodie.properties", b"a=1")
    assert not [r for r in requests.requests if r[0] == "create_bucket"]


def test_listing_after_another_writer(s3):
    """Files another process writes (an executor, another writer) show in the next listing."""
    import s3fs

    storage = Storage(f"s3://{BUCKET}/listing", {"s3": s3})
    assert storage.list("p") == []
    assert not storage.exists("p/a.parquet")
    other = s3fs.S3FileSystem(skip_instance_cache=True, **s3)
    other.pipe(f"{BUCKET}/listing/p/a.parquet", b"x")
    other.pipe(f"{BUCKET}/listing/p/b.parquet", b"yy")
    assert [(f.path, f.size) for f in storage.list("p")] == [("p/a.parquet", 1), ("p/b.parquet", 2)]
    assert storage.exists("p/a.parquet")
    other.rm(f"{BUCKET}/listing/p/a.parquet")
    assert [f.path for f in storage.list("p")] == ["p/b.parquet"]
    assert not storage.exists("p/a.parquet")


# -- reads of tables Apache Hudi wrote -----------------------------------------------------------------

FIXTURES = [
    "sample_table/cow/v6_complexkeygen_hivestyle",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
]


@pytest.mark.parametrize("fid", FIXTURES)
def test_fixture_tables_on_s3_read_like_local(s3, fixture_tables, fid):
    import s3fs

    local = fixture_tables[fid]
    name = fid.replace("/", "_")
    s3fs.S3FileSystem(skip_instance_cache=True, **s3).put(local + "/", f"{BUCKET}/fixtures/{name}/", recursive=True)
    url = f"s3://{BUCKET}/fixtures/{name}"
    con = hudi_duck.connect(storage_options={"s3": s3}, config={"autoinstall_known_extensions": False})
    try:
        for function in ("hudi_snapshot", "hudi_read_optimized", "hudi_incremental"):
            remote = arrow_table(con.sql(f"SELECT * FROM {function}('{url}')"))
            here = arrow_table(con.sql(f"SELECT * FROM {function}('{local}')"))
            assert remote.num_rows == here.num_rows > 0
            assert not diff_rows(remote, here), function
        assert con.sql(f"SELECT count(*) FROM hudi_commits('{url}')").fetchall() == con.sql(
            f"SELECT count(*) FROM hudi_commits('{local}')"
        ).fetchall()
        assert_no_extension_download(con, url)
    finally:
        con.close()
    api = hudi_duck.read_snapshot(url.replace("s3://", "s3a://"), storage_options={"s3": s3}).read_all()
    assert not diff_rows(api, hudi_duck.read_snapshot(local).read_all())
    assert not diff_rows(hudi_rs_s3(url, s3), hudi_rs_read(local))


def test_a_plan_reads_the_commit_files_on_s3_side_by_side(s3, fixture_tables, monkeypatch):
    """Planning checks every completed commit's write stats: on an object store the commit files
    are fetched side by side (one round trip's wait), not one GET after another; the plan is the
    one made from local disk."""
    import asyncio

    import s3fs

    from hudi_duck.core.timeline import active
    from hudi_duck.duck.planner import clear_plan_cache

    fid = "sample_table/mor/avro/v9_txns_simple_meta"
    local = fixture_tables[fid]
    s3fs.S3FileSystem(skip_instance_cache=True, **s3).put(local + "/", f"{BUCKET}/concurrent/", recursive=True)
    url = f"s3://{BUCKET}/concurrent"
    commits = len(HudiTable(local).timeline.completed_writes)
    assert commits >= 10
    real = s3fs.S3FileSystem._cat_file
    now = {"in_flight": 0, "most": 0, "commit_files": 0}

    async def counting(self, path, *args, **kwargs):
        timeline_file = "/.hoodie/" in path and "/metadata/" not in path and (
            path.rsplit("/", 1)[-1].split(".", 1)[0].replace("_", "").isdigit()
        )
        if timeline_file:
            now["commit_files"] += 1
            now["in_flight"] += 1
            now["most"] = max(now["most"], now["in_flight"])
            await asyncio.sleep(0.05)  # a real store's round trip
        try:
            return await real(self, path, *args, **kwargs)
        finally:
            if timeline_file:
                now["in_flight"] -= 1

    monkeypatch.setattr(s3fs.S3FileSystem, "_cat_file", counting)
    active.clear_summary_cache()
    clear_plan_cache()
    con = hudi_duck.connect(storage_options={"s3": s3}, config={"autoinstall_known_extensions": False})
    try:
        remote = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{url}')"))
        here = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{local}')"))
    finally:
        con.close()
    assert not diff_rows(remote, here)
    # the commit files the check reads are in flight at once (a few may be read before it: the
    # latest commit's schema, replace commits)
    assert now["commit_files"] >= commits // 2
    assert now["most"] >= now["commit_files"] // 2 >= 5


# -- the whole cycle ---------------------------------------------------------------------------------


def test_mor_cycle_on_s3(small_spark, s3, tmp_path, monkeypatch):
    """Write, compact, cluster and clean a MOR table on S3 with Spark; read it with DuckDB,
    the Python API and hudi-rs; the same as the model and as a local copy."""
    storage_options = {"s3": dict(s3)}  # one set, per protocol, for every layer
    url = f"s3://{BUCKET}/mor_cycle"
    options = write_options("MERGE_ON_READ")
    model = Model()
    rng = random.Random(7)
    requests = S3Requests().install(monkeypatch)

    def upsert(keys: list[int], operation: str = "upsert") -> str:
        rows = model.rows_for(keys, rng)
        df = small_spark.createDataFrame(rows, DDL).coalesce(1)
        result = spark_writer.write(
            df, url, dict(options, **{"hoodie.datasource.write.operation": operation}), storage_options=storage_options
        )
        if operation == "delete":
            model.delete([r[0] for r in rows])
        else:
            model.upsert(rows)
        return result.instant_time

    upsert(list(range(12)), "insert")
    upsert([1, 2, 3, 8])
    upsert([4, 9, 20])
    (compaction,) = spark_writer.compact(small_spark, url, options, storage_options=storage_options)
    upsert([5, 6])
    upsert([2, 11], "delete")
    replaced = spark_writer.cluster(
        small_spark, url, dict(options, **{"hoodie.clustering.plan.strategy.sort.columns": "v"}), storage_options=storage_options
    )
    assert replaced, "clustering planned nothing"
    upsert([0, 7, 30])
    cleaned = spark_writer.clean(
        small_spark, url, dict(options, **{"hoodie.cleaner.commits.retained": "1"}), storage_options=storage_options
    )
    assert cleaned is not None, "clean planned nothing"

    table = HudiTable(url, storage_options)
    timeline = table.timeline
    completed = [i for i in timeline.instants if i.state == State.COMPLETED]
    assert compaction in {i.requested_time for i in completed}
    assert {i.action for i in completed} >= {"deltacommit", "commit", "replacecommit", "clean"}

    # object stores have no atomic rename: every file was written with one put (no copy, no
    # temporary file), each completed instant exactly once, and no bucket was made
    assert requests.requests, "the S3 server saw no request"
    assert not [r for r in requests.requests if r[0] in ("copy", "multipart", "create_bucket")], requests.requests
    assert not [r for r in requests.requests if r[1].endswith(".tmp")]
    for instant in completed:
        key = f"mor_cycle/{timeline.file_of(instant)}"
        assert requests.of(key) == ["put"], (key, requests.of(key))

    # DuckDB through the table functions, with the same options and nothing downloaded
    con = hudi_duck.connect(storage_options=storage_options)
    try:
        snapshot = arrow_table(con.sql(f"SELECT * FROM hudi_snapshot('{url}')"))
        assert rows_of(snapshot) == model.snapshot()
        incremental = arrow_table(con.sql(f"SELECT * FROM hudi_incremental('{url}', begin_time := '{compaction}')"))
        read_optimized = arrow_table(con.sql(f"SELECT * FROM hudi_read_optimized('{url}')"))
        ((files,),) = con.sql(f"SELECT count(*) FROM hudi_file_slices('{url}')").fetchall()
        assert files > 0
        assert_no_extension_download(con, url)
    finally:
        con.close()

    # the Python API with the same options, flat this time
    api = hudi_duck.read_snapshot(url, storage_options=dict(s3)).read_all()
    assert rows_of(api) == model.snapshot()

    # a local copy of the objects reads the same
    local = tmp_path / "mor_cycle"
    Storage(url, storage_options).fs.get(f"{BUCKET}/mor_cycle/", str(local), recursive=True)
    local_con = hudi_duck.connect()
    try:
        assert rows_of(arrow_table(local_con.sql(f"SELECT * FROM hudi_snapshot('{local}')"))) == model.snapshot()
        assert rows_of(incremental) == rows_of(
            arrow_table(local_con.sql(f"SELECT * FROM hudi_incremental('{local}', begin_time := '{compaction}')"))
        )
        assert rows_of(read_optimized) == rows_of(arrow_table(local_con.sql(f"SELECT * FROM hudi_read_optimized('{local}')")))
    finally:
        local_con.close()

    # hudi-rs reading the same objects from the endpoint
    assert rows_of(hudi_rs_s3(url, s3)) == model.snapshot()
    assert rows_of(hudi_rs_s3(url, s3, read_optimized=True)) == rows_of(read_optimized)
