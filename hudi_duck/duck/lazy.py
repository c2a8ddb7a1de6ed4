"""Merging file slices lazily, only for the slices DuckDB actually scans.

Planning a query must not open the log files of partitions a filter prunes.
So the planner only *registers* each slice with logs here; the merge runs
the first time DuckDB needs its result:

* the winning log rows are served as ``hudiduck://<slice key>/<plan>/logrows.parquet``
  through an fsspec filesystem registered on the connection; DuckDB opens it
  only if file pruning keeps it;
* the base rows a slice's logs replace are filtered by the vectorised UDF
  ``hudi_duck_keep(plan, filename, row)``, which runs only on rows DuckDB read.

Results are cached on local disk (``cache.py``) and shared across queries and
processes. A merge's result records the corrupt log blocks it skipped, so
every plan that uses it, merged now or found in the cache, in this process or
another, warns about them (once per log file per process) or, when the plan is
strict, fails.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fsspec import AbstractFileSystem

from ..core.file_group.log_scanner import SkippedBlock, report_skipped_blocks
from ..core.file_group.reader import SliceLogMerge
from . import cache
from .progress import MergeProgress, clear_line

PROTOCOL = "hudiduck"
KEEP_FUNCTION = "hudi_duck_keep"
_EPOCH = _dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc)
_SKIPPED_KEY = b"hudi_duck.skipped_corrupt_blocks"


@dataclass
class SliceJob:
    """How to merge one slice, and where its results live once merged."""

    key: str
    build: Callable[[], SliceLogMerge]
    #: the corrupt blocks ``build`` would skip, found without merging
    find_corrupt: Callable[[], list[SkippedBlock]]
    lock: threading.Lock = field(default_factory=threading.Lock)
    dropped: np.ndarray | None = None
    skipped: list[SkippedBlock] = field(default_factory=list)

    @property
    def logrows_file(self) -> str:
        return str(cache.cache_dir() / f"{self.key}.logrows.parquet")

    @property
    def dropped_file(self) -> str:
        return str(cache.cache_dir() / f"{self.key}.dropped.parquet")

    def ensure(self, progress: MergeProgress | None = None) -> None:
        """Merge the slice (once) unless a previous run left its results on disk."""
        merged_here = False
        with self.lock:
            if self.dropped is None:
                try:
                    self._load()
                except (FileNotFoundError, OSError, pa.ArrowInvalid, KeyError, ValueError):
                    merged_here = True
                    self._merge_with(progress)
        if progress is not None and not merged_here:
            progress.finished(self.key, merged=False)

    def corrupt_blocks(self) -> list[SkippedBlock]:
        """What the merge skips: recorded with its result when merged (here or in the
        cache), else found by scanning the log framing."""
        with self.lock:
            if self.dropped is None:
                try:
                    self._load()
                except (FileNotFoundError, OSError, pa.ArrowInvalid, KeyError, ValueError):
                    return self.find_corrupt()
            return list(self.skipped)

    def _merge_with(self, progress: MergeProgress | None) -> None:
        if progress is None:
            self._merge()
            return
        progress.started(self.key)
        try:
            self._merge()
        finally:
            progress.finished(self.key, merged=True)

    def _load(self) -> None:
        table = pq.read_table(self.dropped_file)
        if not _exists(self.logrows_file):
            raise FileNotFoundError(self.logrows_file)
        recorded = (table.schema.metadata or {})[_SKIPPED_KEY]
        self.skipped = [SkippedBlock.from_dict(d) for d in json.loads(recorded)]
        self.dropped = np.asarray(table.column("row").to_numpy(), dtype=np.int64)

    def _merge(self) -> None:
        merged = self.build()
        cache.write_atomic(merged.log_rows, self.logrows_file)
        rows = pa.array(sorted(merged.dropped_base_rows), pa.int64())
        skipped = json.dumps([b.to_dict() for b in merged.skipped_blocks])
        dropped = pa.table({"row": rows}).replace_schema_metadata({_SKIPPED_KEY: skipped.encode()})
        cache.write_atomic(dropped, self.dropped_file)
        self.skipped = list(merged.skipped_blocks)
        self.dropped = np.asarray(rows.to_numpy(), dtype=np.int64)


@dataclass
class PlanState:
    """What the scan of one plan needs: its slices, strictness and progress."""

    base_files: dict[str, str]  # base file URI -> slice key
    strict: bool = False
    progress: MergeProgress | None = None


def _exists(path: str) -> bool:
    return os.path.exists(path)


class Registry:
    """Slices registered by plans, and which base file of a plan belongs to which slice."""

    def __init__(self, max_plans: int = 256):
        self.jobs: dict[str, SliceJob] = {}
        self.plans: dict[str, PlanState] = {}
        self.lock = threading.Lock()
        self.max_plans = max_plans

    def register(self, job: SliceJob) -> SliceJob:
        with self.lock:
            existing = self.jobs.get(job.key)
            if existing is not None:
                return existing
            self.jobs[job.key] = job
            return job

    def register_plan(self, token: str, plan: PlanState) -> None:
        with self.lock:
            self.plans[token] = plan
            while len(self.plans) > self.max_plans:
                self.plans.pop(next(iter(self.plans)))

    def job(self, key: str) -> SliceJob:
        try:
            return self.jobs[key]
        except KeyError:
            raise FileNotFoundError(f"{PROTOCOL}://{key}: unknown slice (plan it again)") from None

    def plan(self, token: str) -> PlanState:
        plan = self.plans.get(token)
        if plan is None:
            raise RuntimeError(f"hudi-duck plan {token} is no longer known; run the query again")
        return plan

    def ensure(self, key: str, token: str, judge: bool = True) -> SliceJob:
        """The merged slice for a plan; reports the corrupt blocks its merge skipped.

        ``judge=False`` (DuckDB probing a file's size while binding, where an
        error would surface as a traceback) leaves warnings and strict
        failures to the actual read.
        """
        plan = self.plan(token)
        job = self.job(key)
        job.ensure(plan.progress)
        if job.skipped and judge:
            clear_line()  # a warning must not run into the progress line
            report_skipped_blocks(job.skipped, plan.strict)
        return job

    def check_strict(self, keys: list[str]) -> None:
        """Fail a strict plan now, while planning, if a slice it reads has a skipped corrupt block.

        Checking before the scan makes the failure independent of what DuckDB
        prunes and gives a clean error; the merges themselves stay lazy.
        """
        for key in keys:
            report_skipped_blocks(self.job(key).corrupt_blocks(), strict=True)

    def keep(self, token: str, filenames: pa.Array, rows: pa.Array) -> pa.Array:
        """Mask of base rows that survive their slice's logs.

        Runs once per DuckDB vector: files are told apart with Arrow's
        dictionary encoding and rows looked up in the (sorted) dropped rows,
        so no Python object is made per row.
        """
        mapping = self.plan(token).base_files
        encoded = filenames if pa.types.is_dictionary(filenames.type) else pc.dictionary_encode(filenames)
        names = encoded.dictionary.to_pylist()
        row_values = rows.to_numpy(zero_copy_only=False)
        keep = np.ones(len(row_values), dtype=bool)
        indices = encoded.indices.to_numpy(zero_copy_only=False) if len(names) > 1 else None
        for i, name in enumerate(names):
            key = mapping.get(name)
            if key is None:
                continue
            job = self.ensure(key, token)
            if not len(job.dropped):
                continue
            if indices is None:
                keep = ~_sorted_contains(job.dropped, row_values)
            else:
                positions = np.nonzero(indices == i)[0]
                keep[positions] = ~_sorted_contains(job.dropped, row_values[positions])
        return pa.array(keep, pa.bool_())


def _sorted_contains(sorted_values: np.ndarray, probes: np.ndarray) -> np.ndarray:
    """Which probes occur in ``sorted_values`` (ascending)."""
    at = np.searchsorted(sorted_values, probes)
    hit = at < len(sorted_values)
    hit[hit] = sorted_values[at[hit]] == probes[hit]
    return hit


REGISTRY = Registry()


def keep_rows(tokens: pa.Array, filenames: pa.Array, rows: pa.Array) -> pa.Array:
    """The ``hudi_duck_keep`` scalar function (vectorised over Arrow batches)."""
    token = tokens[0].as_py() if len(tokens) else None
    if isinstance(filenames, pa.ChunkedArray):
        filenames = filenames.combine_chunks()
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    if token is None:
        return pc.is_valid(rows)
    return REGISTRY.keep(token, filenames, rows)


def logrows_uri(key: str, token: str) -> str:
    """The merged log rows of slice ``key`` as read by plan ``token``."""
    return f"{PROTOCOL}://{key}/{token}/logrows.parquet"


def _key_and_token(path: str) -> tuple[str, str]:
    parts = str(path).split("://", 1)[-1].strip("/").split("/")
    if len(parts) < 2:
        raise FileNotFoundError(f"{PROTOCOL}://{path}: not a merged slice file")
    return parts[0], parts[1]


class PositionalReader:
    """A read-only file whose position is kept per thread.

    DuckDB's scan threads share one Python file object and read it by
    ``seek`` + ``read``; with one shared position two threads can interleave
    and read at each other's offsets. Each thread here has its own position,
    and reads are ``os.pread`` at it.
    """

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self._fd).st_size
        self._local = threading.local()
        self.closed = False
        self.name = path

    @property
    def _pos(self) -> int:
        return getattr(self._local, "pos", 0)

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self.size}[whence]
        self._local.pos = max(0, base + offset)
        return self._local.pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        pos = self._pos
        if n is None or n < 0:
            n = max(0, self.size - pos)
        data = os.pread(self._fd, n, pos)
        self._local.pos = pos + len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LazySliceFileSystem(AbstractFileSystem):
    """Serves merged log rows of registered slices, merging on first open."""

    protocol = PROTOCOL
    root_marker = ""

    def _open(self, path, mode="rb", **kwargs):
        if "r" not in mode:
            raise PermissionError(f"{PROTOCOL}:// files are read-only")
        job = REGISTRY.ensure(*_key_and_token(path))
        return PositionalReader(job.logrows_file)

    def info(self, path, **kwargs):
        key, token = _key_and_token(path)
        job = REGISTRY.job(key)
        size = 0
        # DuckDB probes every listed file before scanning; only report (and
        # compute) the real size once the file is really being read.
        if str(path).startswith(f"{PROTOCOL}://") or job.dropped is not None:
            job = REGISTRY.ensure(key, token, judge=False)
            size = os.path.getsize(job.logrows_file)
        return {"name": path, "size": size, "type": "file"}

    def ls(self, path, detail=True, **kwargs):
        entry = self.info(path)
        return [entry] if detail else [entry["name"]]

    def modified(self, path):
        return _EPOCH

    def created(self, path):
        return _EPOCH
