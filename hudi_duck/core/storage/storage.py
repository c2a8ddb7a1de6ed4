"""Storage access through fsspec.

A :class:`Storage` is rooted at a table's base path and speaks in paths
relative to it, the way Hudi's timeline and file names do. Local paths and any
fsspec URL (``s3://``, ``gs://``, ``memory://``, ...) work the same.

Storage options are fsspec's, either for one filesystem (``{"key": ..., "endpoint_url": ...}``)
or per protocol (``{"s3": {...}, "gs": {...}}``); :func:`options_for` picks a URL's.

Object stores have no directories and no atomic rename, but a single PUT replaces an object
whole and a LIST after a write sees it: so files are written with one put, no folder is
created, and listings are never served from a cache another process's writes make stale.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import fsspec
from fsspec.core import url_to_fs

from ..errors import HudiError, TableNotFoundError

#: suffix of the temporary files atomic writes publish from
TEMPORARY_SUFFIX = ".tmp"

#: Protocols of object stores: one PUT writes an object whole; rename is copy + delete.
OBJECT_STORE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})


def url_protocol(url: str) -> str:
    """The protocol of a URL (``file`` for a local path)."""
    url = str(url)
    return url.split("://", 1)[0].lower() if "://" in url else "file"


def _protocol_aliases(protocol: str) -> tuple[str, ...]:
    """Every name the filesystem of ``protocol`` answers to (``s3a`` -> ``s3``, ``s3a``)."""
    try:
        names = fsspec.get_filesystem_class(protocol).protocol
    except (ValueError, ImportError):
        return (protocol,)
    names = (names,) if isinstance(names, str) else tuple(names)
    return (protocol,) + tuple(n for n in names if n != protocol)


def _is_per_protocol(storage_options: dict[str, Any]) -> bool:
    known = set(fsspec.available_protocols()) | {"file", "local"}
    return bool(storage_options) and all(k in known and isinstance(v, dict) for k, v in storage_options.items())


def options_for(storage_options: dict[str, Any] | None, url: str) -> dict[str, Any]:
    """The fsspec options of ``url``'s filesystem: the entry of its protocol (or an alias of it)
    when the options are given per protocol, else all of them."""
    options = dict(storage_options or {})
    if not _is_per_protocol(options):
        return options
    for name in _protocol_aliases(url_protocol(url)):
        if name in options:
            return dict(options[name])
    return {}


@dataclass(frozen=True)
class FileInfo:
    """One entry of a directory listing, relative to the storage root."""

    path: str  # relative to the root, '/'-separated
    size: int
    is_dir: bool
    mtime: float | None = None

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


def _mtime(entry: dict[str, Any]) -> float | None:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = entry.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        try:
            return float(value)
        except (TypeError, ValueError):
            continue
    return None


def scan_local_folder(
    path: str, stat_folders: bool = True, unsized: Callable[[str], bool] | None = None
) -> list[tuple[str, int, bool, float | None]]:
    """(name, size, is a folder, mtime) of the entries of a local folder, sorted by name; an
    absent folder (or a file) has none. One ``scandir``, and the entries fsspec's local ``ls``
    gives (a link is not a folder, its size is its target's, its time its own) without fsspec's
    path handling per entry, which cost most of planning a table of many partitions.
    ``stat_folders`` False: a folder is known from the folder's listing alone (size 0, no
    mtime), without a ``stat`` of its own; so is a file whose name ``unsized`` accepts."""
    out = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    if (not stat_folders and is_dir) or (unsized is not None and not is_dir and unsized(entry.name)):
                        out.append((entry.name, 0, is_dir, None))
                        continue
                    info = entry.stat(follow_symlinks=False)
                    size = info.st_size
                    if entry.is_symlink():
                        try:
                            size = entry.stat(follow_symlinks=True).st_size
                        except OSError:
                            size = 0
                except FileNotFoundError:
                    continue  # gone since the folder was read
                out.append((entry.name, size, is_dir, float(info.st_mtime)))
    except (FileNotFoundError, NotADirectoryError):
        return []
    out.sort()
    return out


#: A local file's identity on disk (:meth:`Storage.signature`): (device, inode, size, mtime_ns, ctime_ns).
Signature = tuple[int, int, int, int, int]


class Storage:
    """A filesystem rooted at ``base_uri`` (a table's base path)."""

    def __init__(self, base_uri: str, storage_options: dict[str, Any] | None = None):
        base_uri = str(base_uri)
        if "://" not in base_uri:
            base_uri = os.path.abspath(os.path.expanduser(base_uri))
        self.base_uri = base_uri.rstrip("/") or "/"
        self.storage_options = options_for(storage_options, self.base_uri)
        if url_protocol(self.base_uri) in OBJECT_STORE_PROTOCOLS:
            # another process (a Spark executor, another writer) adds files: list them fresh
            self.storage_options.setdefault("use_listings_cache", False)
        self.fs, root = url_to_fs(self.base_uri, **self.storage_options)
        self.root = root.rstrip("/") if root not in ("/", "") else root
        protocol = self.fs.protocol
        self.protocol = protocol[0] if isinstance(protocol, (tuple, list)) else protocol

    # -- paths -------------------------------------------------------------
    @property
    def is_local(self) -> bool:
        return self.protocol in ("file", "local")

    @property
    def is_object_store(self) -> bool:
        """An object store: no directories, no atomic rename, whole objects on a single put."""
        return self.protocol in OBJECT_STORE_PROTOCOLS

    def abs(self, rel: str = "") -> str:
        """Filesystem path (without protocol) of ``rel``."""
        rel = rel.strip("/")
        if not rel:
            return self.root
        return f"{self.root}/{rel}" if self.root != "/" else f"/{rel}"

    def uri(self, rel: str = "") -> str:
        """A URL other readers (DuckDB, pyarrow) can open for ``rel``."""
        path = self.abs(rel)
        if self.is_local:
            return path
        return self.fs.unstrip_protocol(path)

    def child(self, rel: str) -> "Storage":
        return Storage(self.uri(rel), self.storage_options)

    # -- reads -------------------------------------------------------------
    def exists(self, rel: str = "") -> bool:
        return bool(self.fs.exists(self.abs(rel)))

    def is_dir(self, rel: str = "") -> bool:
        return bool(self.fs.isdir(self.abs(rel)))

    def size(self, rel: str) -> int:
        return int(self.fs.size(self.abs(rel)))

    def signature(self, rel: str) -> Signature:
        """A local file's identity without reading it: its ``stat`` (device, inode, size,
        modified and changed times; any rewrite changes the last, even with the modified time
        put back). Raises ``OSError`` (``FileNotFoundError`` when it is gone)."""
        st = os.stat(self.abs(rel))
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def read(self, rel: str) -> bytes:
        try:
            if self.is_local:  # a plan reads every commit file: a tenth of fsspec's cost per file
                with open(self.abs(rel), "rb") as fh:
                    return fh.read()
            return self.fs.cat_file(self.abs(rel))
        except FileNotFoundError as exc:
            raise TableNotFoundError(f"file not found: {self.uri(rel)}") from exc

    def read_many(self, rels: list[str]) -> dict[str, bytes | BaseException]:
        """The bytes of several files, or what stopped each read. An object store serves them
        side by side (fsspec's concurrent ``cat``: one round trip's wait for many small files,
        where one GET after another waits once per file); local files are read in turn."""
        if self.is_local or len(rels) < 2:
            out: dict[str, bytes | BaseException] = {}
            for rel in rels:
                try:
                    out[rel] = self.read(rel)
                except Exception as exc:  # noqa: BLE001 - handed to the caller, which names the file
                    out[rel] = exc
            return out
        paths = {self.abs(rel): rel for rel in rels}
        found = self.fs.cat(list(paths), on_error="return")
        out = {}
        for path, rel in paths.items():
            value = found.get(path, found.get(self.fs._strip_protocol(path)))
            if isinstance(value, FileNotFoundError):
                value = TableNotFoundError(f"file not found: {self.uri(rel)}")
            out[rel] = value if value is not None else TableNotFoundError(f"file not found: {self.uri(rel)}")
        return out

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of ``rel`` (a ranged GET on object stores)."""
        try:
            return self.fs.cat_file(self.abs(rel), start=start, end=end)
        except FileNotFoundError as exc:
            raise TableNotFoundError(f"file not found: {self.uri(rel)}") from exc

    def open(self, rel: str, mode: str = "rb", **kwargs: Any):
        return self.fs.open(self.abs(rel), mode, **kwargs)

    def list(self, rel: str = "") -> list[FileInfo]:
        """Entries directly under ``rel``; an absent directory lists as empty."""
        if self.is_local:
            return self._list_local(rel)
        path = self.abs(rel)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        out: list[FileInfo] = []
        prefix_len = len(self.root.rstrip("/")) + 1 if self.root != "/" else 1
        for entry in entries:
            name = entry["name"].rstrip("/")
            if name == path.rstrip("/"):
                continue
            rel_path = name[prefix_len:] if name.startswith(self.root) else name
            out.append(
                FileInfo(
                    path=rel_path,
                    size=int(entry.get("size") or 0),
                    is_dir=entry.get("type") == "directory",
                    mtime=_mtime(entry),
                )
            )
        out.sort(key=lambda f: f.path)
        return out

    def _list_local(self, rel: str) -> list[FileInfo]:
        """:meth:`list` of a local folder, read by :func:`scan_local_folder`."""
        path = self.abs(rel)
        prefix_len = len(self.root.rstrip("/")) + 1 if self.root != "/" else 1
        root = self.root
        out = []
        for name, size, is_dir, mtime in scan_local_folder(path):
            full = f"{path}/{name}" if path != "/" else f"/{name}"
            out.append(FileInfo(full[prefix_len:] if full.startswith(root) else full, size, is_dir, mtime))
        return out

    def list_entries(self, rel: str = "", unsized: Callable[[str], bool] | None = None) -> list[tuple[str, int, bool]]:
        """(name, size, is a folder) of the entries directly under ``rel``, sorted by name (an absent
        folder has none; a folder's size is 0, and so is a file's whose name ``unsized`` accepts).
        What a search for partitions needs of each folder: no entry objects, no ``stat`` of a
        local folder's subfolders nor of files whose size it does not need."""
        if not self.is_local:
            return [
                (info.name, 0 if info.is_dir or (unsized is not None and unsized(info.name)) else info.size, info.is_dir)
                for info in self.list(rel)
            ]
        entries = scan_local_folder(self.abs(rel), stat_folders=False, unsized=unsized)
        return [(name, size, is_dir) for name, size, is_dir, _ in entries]

    def file_names(self, rel: str = "") -> list[str]:
        """Names of the entries directly under ``rel`` that are not folders (sorted); an absent
        folder has none. What a timeline needs of its folder: thousands of instant files, no
        sizes, so a local folder is read without a ``stat`` per file."""
        if not self.is_local:
            return [info.name for info in self.list(rel) if not info.is_dir]
        entries = scan_local_folder(self.abs(rel), stat_folders=False, unsized=lambda _: True)
        return [name for name, _, is_dir, _ in entries if not is_dir]

    def walk_files(self, rel: str = "", skip_dirs: tuple[str, ...] = ()) -> Iterator[FileInfo]:
        """Every file below ``rel``, not descending into ``skip_dirs`` names."""
        stack = [rel]
        while stack:
            current = stack.pop()
            for info in self.list(current):
                if info.is_dir:
                    if info.name not in skip_dirs:
                        stack.append(info.path)
                else:
                    yield info

    # -- writes ------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        if self.is_object_store:
            return  # folders exist through their objects (and a bucket is never created here)
        self.fs.makedirs(self.abs(rel), exist_ok=True)

    def write(self, rel: str, data: bytes) -> None:
        parent = posixpath.dirname(rel)
        if parent:
            self.makedirs(parent)
        try:
            with self.fs.open(self.abs(rel), "wb") as handle:
                handle.write(data)
        except FileNotFoundError as exc:
            if not self.is_object_store:
                raise
            raise HudiError(f"cannot write {self.uri(rel)}: {exc} (does the bucket exist?)") from exc

    def write_if_absent(self, rel: str, data: bytes) -> bool:
        """Create ``rel`` with ``data`` unless it exists; report whether it did.

        Used for timeline files, which must never be overwritten nor seen half-written:
        see :meth:`create_atomic`.
        """
        return self.create_atomic(rel, data)

    def create_atomic(self, rel: str, data: bytes) -> bool:
        """Create ``rel`` whole, never over an existing file; report whether it did.

        Locally the bytes go to a temporary file first, then a hard link publishes it
        under its name (the link fails if the name exists, so two writers racing for
        one name cannot both win); where links are not possible, a rename. On object
        stores one PUT of the complete bytes is atomic.
        """
        if self.exists(rel):
            return False
        if not self.is_local:
            self._put(rel, data)
            return True
        tmp = self._temporary_name(rel)
        self.write(tmp, data)
        try:
            try:
                os.link(self.abs(tmp), self.abs(rel))
            except FileExistsError:
                return False
            except OSError:  # no hard links here
                if self.exists(rel):
                    return False
                os.rename(self.abs(tmp), self.abs(rel))
            return True
        finally:
            self.delete(tmp)

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Replace ``rel`` whole, so readers never see half a file: a temporary file
        renamed over it locally, one PUT on object stores."""
        if not self.is_local:
            self._put(rel, data)
            return
        tmp = self._temporary_name(rel)
        self.write(tmp, data)
        try:
            os.replace(self.abs(tmp), self.abs(rel))
        except BaseException:
            self.delete(tmp)
            raise

    def _put(self, rel: str, data: bytes) -> None:
        """One request carrying the complete bytes (object stores publish it atomically)."""
        self.fs.pipe_file(self.abs(rel), bytes(data))

    @staticmethod
    def _temporary_name(rel: str) -> str:
        """``.<name>.<uuid>.tmp`` next to ``rel`` (what a writer that died leaves behind)."""
        parent = posixpath.dirname(rel)
        return posixpath.join(parent, f".{posixpath.basename(rel)}.{uuid.uuid4().hex}{TEMPORARY_SUFFIX}")

    def mtime(self, rel: str) -> float | None:
        """Last modification of ``rel`` in seconds since the epoch (``None`` if absent)."""
        if self.is_local:
            try:
                return os.stat(self.abs(rel)).st_mtime
            except FileNotFoundError:
                return None
        try:
            return _mtime(self.fs.info(self.abs(rel)))
        except FileNotFoundError:
            return None

    def rename(self, src: str, dst: str) -> None:
        self.fs.mv(self.abs(src), self.abs(dst))

    def delete(self, rel: str, recursive: bool = False) -> None:
        try:
            self.fs.rm(self.abs(rel), recursive=recursive)
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"Storage({self.base_uri!r})"


def get_storage(base_uri: str, storage_options: dict[str, Any] | None = None) -> Storage:
    """Build a :class:`Storage`, turning fsspec's own errors into clear ones."""
    try:
        return Storage(base_uri, storage_options)
    except (ValueError, ImportError) as exc:
        raise HudiError(f"cannot open storage for {base_uri!r}: {exc}") from exc


__all__ = ["FileInfo", "Storage", "get_storage", "options_for", "url_protocol", "OBJECT_STORE_PROTOCOLS", "fsspec"]
