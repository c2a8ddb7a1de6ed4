"""How DuckDB reads the files of a table behind a URL, with the storage options the planner uses.

The planner opens a table through fsspec with the caller's storage options; DuckDB's
``read_parquet`` then scans the base files. Both must reach the same store with the same
options, and DuckDB must never reach for an extension download. So for each protocol:

* **native**: an S3 table whose options map onto a DuckDB S3 secret, when DuckDB's ``httpfs``
  extension loads without a download (installed or built in): DuckDB reads the files itself,
  with a ``CREATE SECRET (TYPE s3, ...)`` made from the same options, scoped to the table;
* **fsspec**: otherwise DuckDB reads through the planner's own fsspec filesystem (the same
  instance), registered on the connection for the protocol, so DuckDB never looks for an
  extension for it.

Which one a protocol uses is logged once per process on the ``hudi_duck`` logger.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import duckdb

from ..core.errors import HudiError
from ..core.storage.storage import Storage
from .quoting import quote_literal

log = logging.getLogger("hudi_duck")

#: Protocols DuckDB's httpfs reads as S3.
S3_PROTOCOLS = frozenset({"s3", "s3a", "s3n"})
#: s3fs options that say nothing about how to reach the store (fsspec's own caching, buffering).
_NEUTRAL_OPTIONS = frozenset(
    {
        "use_listings_cache",
        "listings_expiry_time",
        "max_paths",
        "skip_instance_cache",
        "default_block_size",
        "default_fill_cache",
        "default_cache_type",
        "cache_regions",
        "asynchronous",
        "loop",
        "max_concurrency",
        "fixed_upload_size",
    }
)
_said: set[tuple[str, str]] = set()
_said_lock = threading.Lock()


@dataclass(frozen=True)
class S3Secret:
    """A DuckDB S3 secret: the s3fs options of one table, in DuckDB's names."""

    key_id: str | None = None
    secret: str | None = None
    session_token: str | None = None
    region: str | None = None
    endpoint: str | None = None
    url_style: str | None = None
    use_ssl: bool | None = None

    def sql(self, name: str, scope: str) -> str:
        """``CREATE OR REPLACE TEMPORARY SECRET`` for files under ``scope``."""
        params = ["TYPE s3"]
        for keyword, value in (
            ("KEY_ID", self.key_id),
            ("SECRET", self.secret),
            ("SESSION_TOKEN", self.session_token),
            ("REGION", self.region),
            ("ENDPOINT", self.endpoint),
            ("URL_STYLE", self.url_style),
        ):
            if value is not None:
                params.append(f"{keyword} {quote_literal(value)}")
        if self.use_ssl is not None:
            params.append(f"USE_SSL {'true' if self.use_ssl else 'false'}")
        params.append(f"SCOPE {quote_literal(scope)}")
        return f"CREATE OR REPLACE TEMPORARY SECRET {name} ({', '.join(params)})"


def s3_secret(options: dict[str, Any]) -> tuple[S3Secret | None, str]:
    """The DuckDB secret of s3fs ``options``, or None and why they do not map onto one.

    s3fs names: ``key``, ``secret``, ``token``, ``endpoint_url`` (also in ``client_kwargs``),
    ``client_kwargs.region_name``, ``config_kwargs.s3.addressing_style``, ``use_ssl``, ``anon``.
    Credentials only s3fs can find (a profile, the environment, instance metadata) stay with s3fs.
    """
    options = {k: v for k, v in options.items() if k not in _NEUTRAL_OPTIONS}
    client = dict(options.pop("client_kwargs", None) or {})
    config = dict(options.pop("config_kwargs", None) or {})
    anon = bool(options.pop("anon", False))
    key, secret, token = options.pop("key", None), options.pop("secret", None), options.pop("token", None)
    endpoint_url = options.pop("endpoint_url", None) or client.pop("endpoint_url", None)
    region = client.pop("region_name", None)
    use_ssl = options.pop("use_ssl", None)
    style = dict(config.pop("s3", None) or {}).get("addressing_style")
    for name in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
        if name in client:
            return None, f"credentials in client_kwargs.{name}"
    leftovers = sorted(options) + [f"client_kwargs.{k}" for k in sorted(client)] + [f"config_kwargs.{k}" for k in sorted(config)]
    if leftovers:
        return None, f"options DuckDB's S3 secret has no equivalent for: {', '.join(leftovers)}"
    if not anon and not (key and secret):
        return None, "no key and secret in the storage options (s3fs finds the credentials)"
    endpoint = None
    if endpoint_url:
        parts = urlsplit(str(endpoint_url))
        if not parts.netloc:
            return None, f"endpoint_url {endpoint_url!r} is not a URL"
        endpoint = parts.netloc + parts.path.rstrip("/")
        if use_ssl is None:
            use_ssl = parts.scheme == "https"
    url_style = {"path": "path", "virtual": "vhost"}.get(style or "")
    if url_style is None and endpoint is not None:
        url_style = "path"  # S3-compatible stores on an endpoint address buckets by path
    return (
        S3Secret(
            key_id=None if anon else key,
            secret=None if anon else secret,
            session_token=None if anon else token,
            region=region,
            endpoint=endpoint,
            url_style=url_style,
            use_ssl=None if use_ssl is None else bool(use_ssl),
        ),
        "",
    )


def httpfs_loadable(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether DuckDB's httpfs is loaded or loads without a download (installed or built in)."""
    cursor = con.cursor()
    try:
        row = cursor.execute(
            "SELECT loaded, installed FROM duckdb_extensions() WHERE extension_name = 'httpfs'"
        ).fetchone()
        if row is None or not (row[0] or row[1]):
            return False
        if not row[0]:
            cursor.execute("LOAD httpfs")
        return True
    except duckdb.Error:
        return False
    finally:
        cursor.close()


def _say_once(protocol: str, how: str) -> None:
    with _said_lock:
        if (protocol, how) in _said:
            return
        _said.add((protocol, how))
    log.info("DuckDB reads %s:// files %s", protocol, how)


class ReadStorage:
    """Makes one DuckDB connection able to read the tables the planner opens."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self._con = weakref.ref(con)  # the connection owns the planner that owns this
        self._lock = threading.Lock()
        self._httpfs: bool | None = None
        self._secrets: set[str] = set()
        self._registered: dict[str, Storage] = {}

    def _connection(self) -> duckdb.DuckDBPyConnection:
        con = self._con()
        if con is None:
            raise HudiError("the DuckDB connection of this read was closed")
        return con

    def prepare(self, storage: Storage) -> None:
        """Let DuckDB read the files of the table at ``storage`` (nothing to do for local paths)."""
        if storage.is_local:
            return
        with self._lock:
            con = self._connection()
            reason = "not an S3 URL"
            if storage.protocol in S3_PROTOCOLS:
                reason = self._native_s3(con, storage)
                if not reason:
                    return
            self._through_fsspec(con, storage, reason)

    def _native_s3(self, con: duckdb.DuckDBPyConnection, storage: Storage) -> str:
        """Read with httpfs and a secret from the options; returns why not ('' when it does)."""
        secret, reason = s3_secret(storage.storage_options)
        if secret is None:
            return reason
        if self._httpfs is None:
            self._httpfs = httpfs_loadable(con)
        if not self._httpfs:
            return f"DuckDB {duckdb.__version__} has no httpfs extension installed (none is downloaded)"
        scope = storage.uri()
        name = "hudi_duck_" + hashlib.sha256(json.dumps([scope, secret.sql("x", scope)]).encode()).hexdigest()[:16]
        if name not in self._secrets:
            cursor = con.cursor()
            try:
                cursor.execute(secret.sql(name, scope))
            finally:
                cursor.close()
            self._secrets.add(name)
        _say_once(storage.protocol, "with DuckDB's httpfs and an S3 secret made from the storage options")
        return ""

    def _through_fsspec(self, con: duckdb.DuckDBPyConnection, storage: Storage, reason: str) -> None:
        names = storage.fs.protocol
        names = (names,) if isinstance(names, str) else tuple(names)
        ours = self._registered.get(names[0])
        if ours is not None:
            if ours.fs is not storage.fs:
                raise HudiError(
                    f"{storage.base_uri}: this DuckDB connection already reads {names[0]}:// with other storage "
                    "options; read tables with different storage options on separate connections"
                )
            return
        if set(con.list_filesystems()).intersection(names):
            _say_once(storage.protocol, "through the fsspec filesystem registered on the connection")
            return
        con.register_filesystem(storage.fs)
        self._registered[names[0]] = storage
        _say_once(storage.protocol, f"through fsspec ({type(storage.fs).__name__}, the planner's filesystem): {reason}")
