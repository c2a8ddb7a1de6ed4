"""Merging file slices lazily, only for the slices DuckDB actually scans.

Planning a query must not open the log files of partitions a filter prunes.
So the renderer only *registers* a read plan here; a slice's merge runs the
first time DuckDB needs its result:

* the winning log rows are served as ``hudiduck://<slice key>/<plan token>/logrows.parquet``
  through an fsspec filesystem registered on the connection; DuckDB opens it
  only if file pruning keeps it;
* the base rows a slice's logs replace are filtered by the vectorised UDF
  ``hudi_duck_keep(plan token, filename, row)``, which runs only on rows DuckDB read;
* tiny slices batched into one job are merged whole (``whole.py``): the job's file holds every
  row of its slices, and their base files are not scanned by the query at all.

Results are cached on local disk (``cache.py``: sealed, atomic, bounded) and
shared across queries and processes. A merge's result records the corrupt log
blocks it skipped, so every plan that uses it, merged now or found in the
cache, in this process or another, warns about them (once per log file per
process) or, when the plan is strict, fails.

The registry of plans and slices is bounded (``max_plans``, ``max_memory``;
least recently used first). A plan token in generated SQL always leads back to
its plan: a plan pushed out of memory is kept as plain data beside the cache
(signed with a key only this process knows; storage options stay in memory)
and read back when its query still scans.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import pickle
import secrets
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fsspec import AbstractFileSystem

from ..core.errors import HudiError
from ..core.storage.storage import url_protocol
from ..core.file_group.file_slice import FileSlice
from ..core.file_group.log_scanner import SkippedBlock, report_skipped_blocks
from ..core.file_group.reader import SliceLogMerge, SliceReadContext, corrupt_blocks
from .merge import HELD_SHARE, SpilledRows, merge_slice_logs, merge_slices
from ..core.table.read_plan import ReadPlan, digest_of
from . import cache, progress as progress_line
from . import whole as whole_slices
from .progress import MergeProgress, clear_line

log = logging.getLogger("hudi_duck")

PROTOCOL = "hudiduck"
KEEP_FUNCTION = "hudi_duck_keep"
#: ``hudi_duck_keep`` by DuckDB's hash of a row's file name, not the name itself
KEEP_AT_FUNCTION = "hudi_duck_keep_at"
#: base file names whose DuckDB hash a process keeps
_MAX_HASHED_NAMES = 1 << 17
#: Changes when what a cached slice merge holds changes (older entries are not reused).
MERGE_CACHE_VERSION = 4
ENV_MAX_PLANS = "HUDI_DUCK_MAX_PLANS"
ENV_MAX_MEMORY = "HUDI_DUCK_MAX_PLAN_MEMORY"
DEFAULT_MAX_PLANS = 256
DEFAULT_MAX_MEMORY = 256 * 1024**2
_EPOCH = _dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_US = int(_EPOCH.timestamp()) * 1_000_000
_SKIPPED_KEY = b"hudi_duck.skipped_corrupt_blocks"
#: rough bytes a registered plan holds per slice, and a slice job without its merge loaded
_SLICE_BYTES = 600
_JOB_BYTES = 300
_MAX_STORAGE_OPTIONS = 1024
#: Slices whose log files are smaller than this are merged together, up to ``GROUP_LOG_BYTES`` of
#: log files (or ``GROUP_MAX_SLICES`` slices) per job: one query and one cache entry instead of many.
SMALL_SLICE_LOG_BYTES = 1024**2
GROUP_LOG_BYTES = 16 * 1024**2
GROUP_MAX_SLICES = 1024
#: Batching starts at this many small slices in a plan; below it each slice keeps its own job, so a
#: partition filter never merges a pruned slice.
GROUP_MIN_SLICES = 32
#: Batched slices whose base file is at most this size are merged whole (``whole.py``): the job's
#: cache entry holds every row of its slices, and the snapshot reads no base file of theirs. Such
#: a job holds at most ``WHOLE_JOB_BASE_BYTES`` of base files, and no more than the share of the read's
#: merge budget a merge holds in memory (their rows pass through memory; a smaller budget merges less whole).
WHOLE_MAX_BASE_BYTES = 2 * 1024**2
WHOLE_JOB_BASE_BYTES = 256 * 1024**2


def slice_keys(plan: ReadPlan) -> list[tuple[str, FileSlice]]:
    """The cache key of each slice a plan merges: what its merge depends on, nothing more.

    A merge depends on the slice's files (names and sizes), the instants whose
    blocks count, the output schema, the merge rules and, for tables without
    stored keys, the key generator; not on the query type, other slices or
    options such as ``strict``.
    """
    common = cache.digest(
        MERGE_CACHE_VERSION,
        plan.base_uri,
        digest_of(plan.instants),
        plan.schema.to_string(),
        digest_of(plan.merge),
        digest_of(plan.key_generator),
    )
    return [(cache.digest(common, s.slice_id, _slice_files(s)), s) for s in plan.slices_with_logs]


def merge_jobs(
    keyed: list[tuple[str, FileSlice]], whole_bytes: int = WHOLE_JOB_BASE_BYTES, parallel: int | None = None
) -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    """Slice keys merged together, by job key: small slices (in partition order) batched into
    jobs when a plan has many, other slices alone (their job key is the slice key); and which
    batched jobs are merged whole: their slices' base files are tiny, at most ``whole_bytes`` of
    them per job (0: none merged whole).

    Small slices make at least ``parallel`` jobs (default: the cores), so DuckDB's scan threads
    merge them side by side rather than one thread merging them all."""
    small = [key for key, s in keyed if _log_bytes(s) <= SMALL_SLICE_LOG_BYTES]
    if len(small) < GROUP_MIN_SLICES:
        return {key: (key,) for key, _ in keyed}, frozenset()
    jobs: dict[str, tuple[str, ...]] = {}
    whole: set[str] = set()
    per_job = min(GROUP_MAX_SLICES, -(-len(small) // max(1, parallel or _cores())))
    batches = {False: _Batch("slices", GROUP_LOG_BYTES, None, per_job),
               True: _Batch("whole-slices", GROUP_LOG_BYTES, whole_bytes, per_job)}
    tiny = min(WHOLE_MAX_BASE_BYTES, whole_bytes)
    for key, s in sorted(keyed, key=lambda item: (item[1].partition_path, item[1].file_id, item[0])):
        if _log_bytes(s) > SMALL_SLICE_LOG_BYTES:
            jobs[key] = (key,)
            continue
        batches[whole_bytes > 0 and _base_bytes(s) <= tiny].add(key, s, jobs, whole)
    for batch in batches.values():
        batch.close(jobs, whole)
    return jobs, frozenset(whole)


@dataclass
class _Batch:
    """Small slices gathered into one merge job, up to a size in log files (and in base files)."""

    kind: str
    max_log_bytes: int
    max_base_bytes: int | None
    max_slices: int = GROUP_MAX_SLICES
    keys: list[str] = field(default_factory=list)
    log_bytes: int = 0
    base_bytes: int = 0

    def add(self, key: str, s: FileSlice, jobs: dict[str, tuple[str, ...]], whole: set[str]) -> None:
        log_bytes, base_bytes = _log_bytes(s), _base_bytes(s)
        full = self.log_bytes + log_bytes > self.max_log_bytes or len(self.keys) >= self.max_slices
        if self.max_base_bytes is not None:
            full = full or self.base_bytes + base_bytes > self.max_base_bytes
        if self.keys and full:
            self.close(jobs, whole)
        self.keys.append(key)
        self.log_bytes += log_bytes
        self.base_bytes += base_bytes

    def close(self, jobs: dict[str, tuple[str, ...]], whole: set[str]) -> None:
        """A batch of one slice is a job of its own (merged as any slice alone)."""
        if len(self.keys) == 1:
            jobs[self.keys[0]] = (self.keys[0],)
        elif self.keys:
            job = cache.digest(self.kind, *self.keys)
            jobs[job] = tuple(self.keys)
            if self.max_base_bytes is not None:
                whole.add(job)
        self.keys, self.log_bytes, self.base_bytes = [], 0, 0


def _cores() -> int:
    """The cores this process may run on (DuckDB's default thread count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _whole_bytes(plan: ReadPlan) -> int:
    """Base file bytes a whole merged job of the plan may hold: none for tables behind URLs (the
    merge's own DuckDB reads the base files, and knows no storage options)."""
    if url_protocol(plan.location.base_uri) not in ("file", "local"):
        return 0
    return min(WHOLE_JOB_BASE_BYTES, plan.options.merge_memory.max_size // HELD_SHARE)


def _base_bytes(s: FileSlice) -> int:
    return max(s.base_file.size, 0) if s.base_file is not None else 0


def _log_bytes(s: FileSlice) -> int:
    return sum(max(log_file.size, 0) for log_file in s.log_files)


def _slice_files(s: FileSlice) -> list[tuple[str, int]]:
    files = []
    if s.base_file is not None:
        files.append((s.base_file.file_name, s.base_file.size))
    files.extend((log_file.file_name, log_file.size) for log_file in s.sorted_logs())
    return files


def merge_slice(state: "PlanState", key: str) -> SliceLogMerge:
    """Merge the slice ``key`` of a plan (the core's merge, on the plan's data)."""
    return merge_slice_logs(state.context(), state.slice(key))


def merge_group(state: "PlanState", key: str) -> list[tuple[str, SliceLogMerge]]:
    """Merge the slices of job ``key`` (one slice, or small slices batched) in one query."""
    members = state.jobs.get(key, (key,))
    if len(members) == 1:
        return [(members[0], merge_slice(state, members[0]))]
    merged = merge_slices(state.context(), [state.slice(k) for k in members])
    return list(zip(members, merged))


def merge_whole(state: "PlanState", key: str, path: str, name: str) -> list[tuple[str, SliceLogMerge]]:
    """Merge the slices of whole job ``key`` and write all their rows as cache entry ``name``."""
    members = state.jobs[key]
    if state.plan is None:
        raise HudiError("hudi-duck: this plan has no table to read")
    merged = whole_slices.materialize(state.plan, state.context(), [state.slice(k) for k in members], path, name)
    return list(zip(members, merged))


def find_corrupt_blocks(state: "PlanState", key: str) -> list[SkippedBlock]:
    """The corrupt blocks a merge of job ``key`` would skip, from the log framing alone."""
    found: list[SkippedBlock] = []
    for member in state.jobs.get(key, (key,)):
        found.extend(corrupt_blocks(state.context(), state.slice(member)))
    return found


@dataclass
class PlanState:
    """What the scan of one plan needs: its slices, strictness and progress."""

    base_files: dict[str, str]  # base file URI -> slice key
    strict: bool = False
    progress: MergeProgress | None = None
    plan: ReadPlan | None = None
    slices: dict[str, FileSlice] = field(default_factory=dict)  # slice key -> slice
    jobs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # job key -> its slice keys
    job_of: dict[str, str] = field(default_factory=dict)  # slice key -> job key
    whole: frozenset[str] = frozenset()  # job keys merged whole (``whole.py``)
    _context: SliceReadContext | None = field(default=None, repr=False)
    _file_ids: "dict[int, str] | None | bool" = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, plan: ReadPlan, shown: bool = True) -> "PlanState":
        keyed = slice_keys(plan)
        base_files = {plan.location.uri(s.base_file.path): key for key, s in keyed if s.base_file is not None}
        jobs, whole_jobs = merge_jobs(keyed, _whole_bytes(plan))
        job_of = {member: job for job, members in jobs.items() for member in members}
        label = f"hudi_{plan.query_type.value} {plan.base_uri}"
        shown_progress = progress_line.for_plan(label, len(jobs)) if shown else None
        return cls(base_files, plan.options.strict, shown_progress, plan, dict(keyed), jobs, job_of, whole_jobs)

    def context(self) -> SliceReadContext:
        with self._lock:
            if self._context is None:
                if self.plan is None:
                    raise HudiError("hudi-duck: this plan has no table to read")
                self._context = SliceReadContext.for_plan(self.plan)
            return self._context

    def file_ids(self) -> dict[int, str] | None:
        """Slice key of each base file by DuckDB's ``hash`` of its name (what ``hudi_duck_keep_at``
        gets for a row's file: an integer crosses to Python at a fraction of a name's cost);
        None if two of the plan's base files share a hash (their rows are told apart by name)."""
        known = self._file_ids
        if known is not False:
            return known
        with self._lock:
            if self._file_ids is False:
                uris = list(self.base_files)
                hashes = duckdb_hashes(uris)
                ids = dict(zip(hashes, (self.base_files[u] for u in uris)))
                self._file_ids = ids if len(ids) == len(uris) else None
            return self._file_ids

    def slice(self, key: str) -> FileSlice:
        try:
            return self.slices[key]
        except KeyError:
            raise FileNotFoundError(f"{PROTOCOL}://{key}: not a slice of this plan") from None

    @property
    def keys(self) -> list[str]:
        return list(self.slices)

    @property
    def job_keys(self) -> list[str]:
        return list(self.jobs) if self.jobs else list(self.slices)

    @property
    def nbytes(self) -> int:
        return 1024 + _SLICE_BYTES * (len(self.slices) + len(self.plan.slices if self.plan else ()))


@dataclass
class SliceJob:
    """One slice's merge: where its results live, and them once loaded."""

    key: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    dropped: np.ndarray | None = None
    skipped: list[SkippedBlock] = field(default_factory=list)
    #: dropped base rows of each slice of a batched job (slice key -> rows)
    members: dict[str, np.ndarray] = field(default_factory=dict)

    def dropped_of(self, slice_key: str) -> np.ndarray | None:
        """Dropped base rows of one slice of this job."""
        if slice_key == self.key or not self.members:
            return self.dropped
        return self.members.get(slice_key)

    @property
    def logrows_file(self) -> str:
        return str(cache.cache_dir() / f"{self.key}.logrows.parquet")

    @property
    def dropped_file(self) -> str:
        return str(cache.cache_dir() / f"{self.key}.dropped.parquet")

    @property
    def nbytes(self) -> int:
        return _JOB_BYTES + (self.dropped.nbytes if self.dropped is not None else 0) + 200 * len(self.skipped)

    def ensure(self, state: PlanState) -> bool:
        """Merge the slice (once) unless its sound results are on disk (from any process).

        Returns whether the results were taken in now (loaded or merged). Once
        they are in memory, the memory is what the scan uses; the merged log
        rows file is checked again each time DuckDB opens it (``open_logrows``).
        """
        merged_here = loaded = False
        if self.dropped is None:
            with self.lock:
                if self.dropped is None:
                    loaded = True
                    if not self._load():
                        merged_here = True
                        self._merge_with(state)
        if state.progress is not None and not merged_here:
            state.progress.finished(self.key, merged=False)
        return loaded

    def open_logrows(self, state: PlanState) -> int:
        """A descriptor of the sound merged log rows (merged again if the cached file is damaged)."""
        for _ in range(3):
            fd = cache.open_checked(self.logrows_file, f"{self.key}.logrows")
            if fd is not None:
                return fd
            self._forget()
            self.ensure(state)
        raise HudiError(f"hudi-duck cannot keep the merged rows of a file slice in {cache.cache_dir()}")

    def logrows_size(self, state: PlanState) -> int:
        """Size of the sound merged log rows file (merged again if the cached file is damaged)."""
        for _ in range(3):
            if cache.check(self.logrows_file, f"{self.key}.logrows"):
                try:
                    return os.path.getsize(self.logrows_file)
                except OSError:
                    pass
            self._forget()
            self.ensure(state)
        raise HudiError(f"hudi-duck cannot keep the merged rows of a file slice in {cache.cache_dir()}")

    def _forget(self) -> None:
        with self.lock:
            self.dropped = None

    def corrupt_blocks(self, state: PlanState) -> list[SkippedBlock]:
        """What the merge skips: recorded with its result when merged (here or in the
        cache), else found by scanning the log framing."""
        with self.lock:
            if self.dropped is None and not self._load():
                return find_corrupt_blocks(state, self.key)
            return list(self.skipped)

    def _load(self) -> bool:
        """Take the results from the cache if both files are sound."""
        data = cache.read_checked(self.dropped_file, f"{self.key}.dropped")
        if data is None or not cache.check(self.logrows_file, f"{self.key}.logrows"):
            return False
        try:
            table = pq.ParquetFile(pa.BufferReader(data)).read()  # (no dataset layer: it imports pandas)
            recorded = (table.schema.metadata or {})[_SKIPPED_KEY]
            self.skipped = [SkippedBlock.from_dict(d) for d in json.loads(recorded)]
            self.members = _split_members(table, self.key)
            self.dropped = np.asarray(table.column("row").to_numpy(), dtype=np.int64)
        except (pa.ArrowInvalid, KeyError, ValueError, TypeError):
            return False
        return True

    def _merge_with(self, state: PlanState) -> None:
        shown = state.progress
        if shown is None:
            self._merge(state)
            return
        shown.started(self.key)
        try:
            self._merge(state)
        finally:
            shown.finished(self.key, merged=True)

    def _merge(self, state: PlanState) -> None:
        if self.key in state.whole:  # the rows file holds every row of the job's slices
            merged = merge_whole(state, self.key, self.logrows_file, f"{self.key}.logrows")
        else:
            merged = merge_group(state, self.key)
            try:
                self._write_logrows([m.log_rows for _, m in merged])
            finally:
                for _, m in merged:
                    if isinstance(m.log_rows, SpilledRows):
                        m.log_rows.release()
        # each member's rows sorted, its name once (dictionary-encoded): no Python object per row
        rows = [np.sort(np.asarray(outcome.dropped_base_rows, dtype=np.int64)) for _, outcome in merged]
        members = np.repeat(np.arange(len(merged), dtype=np.int32), [len(r) for r in rows])
        skipped_blocks = [b for _, m in merged for b in m.skipped_blocks]
        skipped = json.dumps([b.to_dict() for b in skipped_blocks])
        names = pa.DictionaryArray.from_arrays(pa.array(members), pa.array([member for member, _ in merged], pa.string()))
        row_values = np.concatenate(rows) if rows else np.empty(0, np.int64)
        dropped = pa.table({"slice": names, "row": pa.array(row_values, pa.int64())})
        dropped = dropped.replace_schema_metadata({_SKIPPED_KEY: skipped.encode()})
        cache.write_parquet(dropped, self.dropped_file, f"{self.key}.dropped")
        self.skipped = skipped_blocks
        self.members = _split_members(dropped, self.key)
        self.dropped = np.asarray(dropped.column("row").to_numpy(), dtype=np.int64)

    def _write_logrows(self, log_rows: list) -> None:
        """The merged log rows as one cache entry; rows a merge left in spill files are streamed."""
        name = f"{self.key}.logrows"
        if any(isinstance(rows, SpilledRows) for rows in log_rows):
            cache.write_parquet_batches(log_rows[0].schema, _logrows_batches(log_rows), self.logrows_file, name)
        else:
            cache.write_parquet(pa.concat_tables(log_rows) if len(log_rows) > 1 else log_rows[0], self.logrows_file, name)


def _logrows_batches(log_rows: list) -> Iterator[pa.RecordBatch]:
    for rows in log_rows:
        yield from rows.to_batches()


def _split_members(dropped: pa.Table, job_key: str) -> dict[str, np.ndarray]:
    """Dropped rows by slice for a batched job (empty for a job of one slice)."""
    if "slice" not in dropped.column_names or not dropped.num_rows:
        return {}
    slices = dropped.column("slice").combine_chunks()
    if not pa.types.is_dictionary(slices.type):
        slices = pc.dictionary_encode(slices)
    names = slices.dictionary.to_pylist()
    indices = slices.indices.to_numpy(zero_copy_only=False)
    if len(np.unique(indices)) == 1 and names[indices[0]] == job_key:
        return {}
    rows = np.asarray(dropped.column("row").to_numpy(), dtype=np.int64)
    order = np.argsort(indices, kind="stable")  # each slice's rows keep their order
    found, starts = np.unique(indices[order], return_index=True)
    ends = list(starts[1:]) + [len(order)]
    return {names[int(i)]: rows[order[a:b]] for i, a, b in zip(found, starts, ends)}


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return cache.parse_size(value)
    except ValueError:
        log.warning("%s=%r is not a number; using %d", name, value, default)
        return default


class Registry:
    """Plans and slice jobs of this process: a bounded LRU, with evicted plans recoverable.

    ``max_plans`` bounds the plans kept in memory, ``max_memory`` the bytes of
    plans and loaded merges together (estimates). Evicting is always safe: a
    slice job is reloaded from the disk cache (or merged again), a plan from
    the file written when it was evicted.
    """

    def __init__(self, max_plans: int | None = None, max_memory: int | None = None):
        self.plans: OrderedDict[str, PlanState] = OrderedDict()
        self.jobs: OrderedDict[str, SliceJob] = OrderedDict()
        self.lock = threading.RLock()
        self._max_plans = max_plans
        self._max_memory = max_memory
        self._sizes: OrderedDict[tuple[str, str], int] = OrderedDict()  # LRU of ("plan"|"job", id) -> bytes
        self._bytes = 0
        self._secret = secrets.token_bytes(32)
        self._process = secrets.token_hex(6)
        self._storage_options: OrderedDict[str, tuple] = OrderedDict()
        self.evicted_plans = 0
        self.recovered_plans = 0
        self.max_plans = DEFAULT_MAX_PLANS
        self.max_memory = DEFAULT_MAX_MEMORY
        self.configure(max_plans, max_memory)

    # -- bounds -------------------------------------------------------------------------------
    def configure(self, max_plans: int | None = None, max_memory: int | str | None = None) -> None:
        """Set the bounds (None: from ``HUDI_DUCK_MAX_PLANS`` / ``HUDI_DUCK_MAX_PLAN_MEMORY`` or the defaults)."""
        if max_plans is not None and max_plans < 1:
            raise ValueError(f"max_plans must be at least 1, not {max_plans}")
        with self.lock:
            self._max_plans = max_plans
            self._max_memory = None if max_memory is None else cache.parse_size(max_memory)
            self.max_plans = max_plans if max_plans is not None else max(1, _env_int(ENV_MAX_PLANS, DEFAULT_MAX_PLANS))
            self.max_memory = self._max_memory if self._max_memory is not None else _env_int(ENV_MAX_MEMORY, DEFAULT_MAX_MEMORY)
            self._shrink()

    def clear(self) -> None:
        """Forget every plan and job held in memory (they are recovered on demand)."""
        with self.lock:
            for token, state in list(self.plans.items()):
                self._persist(token, state)
            self.plans.clear()
            self.jobs.clear()
            self._sizes.clear()
            self._bytes = 0

    def _used(self, kind: str, name: str, nbytes: int) -> None:
        entry = (kind, name)
        self._bytes += nbytes - self._sizes.get(entry, 0)
        self._sizes[entry] = nbytes
        self._sizes.move_to_end(entry)

    def _shrink(self) -> None:
        while self._sizes and (len(self.plans) > self.max_plans or self._bytes > self.max_memory):
            if len(self.plans) > self.max_plans:
                entry = next((e for e in self._sizes if e[0] == "plan"), None)
                if entry is None:  # pragma: no cover - every plan has its entry
                    break
            else:
                entry = next(iter(self._sizes))
            self._bytes -= self._sizes.pop(entry)
            kind, name = entry
            if kind == "plan":
                state = self.plans.pop(name, None)
                if state is not None:
                    self._persist(name, state)
                    self.evicted_plans += 1
            else:
                self.jobs.pop(name, None)

    # -- plans --------------------------------------------------------------------------------
    def register_plan(self, token: str, plan: PlanState) -> None:
        with self.lock:
            self.plans[token] = plan
            self.plans.move_to_end(token)
            self._used("plan", token, plan.nbytes)
            self._shrink()

    def register_read(self, plan: ReadPlan) -> tuple[str, PlanState]:
        """Register a plan's merges; returns its token (a digest of the plan) and its state.

        A plan registered again (the same query) keeps its slices and gets a new
        progress counter.
        """
        token = plan.fingerprint()
        with self.lock:
            known = self.plans.get(token)
        if known is not None and known.plan is not None:
            label = f"hudi_{plan.query_type.value} {plan.base_uri}"
            state = replace(known, progress=progress_line.for_plan(label, len(known.job_keys)))
        else:
            state = PlanState.of(plan)
        if plan.location.storage_options:
            self._keep_storage_options(plan)
        self.register_plan(token, state)
        return token, state

    def plan(self, token: str) -> PlanState:
        with self.lock:
            state = self.plans.get(token)
            if state is not None:
                self.plans.move_to_end(token)
                self._sizes.move_to_end(("plan", token))
                return state
        state = self._recover(token)
        if state is None:
            raise HudiError(
                f"hudi-duck plan {token} is no longer known: it was pushed out of memory and its copy in "
                f"{cache.cache_dir()} is gone (the cache was cleared); run the query again"
            )
        self.register_plan(token, state)
        return state

    def _plan_file(self, token: str) -> str:
        return str(cache.cache_dir() / f"{token}.{self._process}.plan")

    def _persist(self, token: str, state: PlanState) -> None:
        """Keep an evicted plan beside the cache (storage options stay in memory)."""
        if state.plan is None:
            return
        plan = state.plan
        options_ref = None
        if plan.location.storage_options:
            options_ref = digest_of(plan.location.storage_options)
            plan = replace(plan, location=replace(plan.location, storage_options=()))
        try:
            payload = pickle.dumps((token, plan, options_ref), protocol=pickle.HIGHEST_PROTOCOL)
            path = self._plan_file(token)
            if cache.read_blob(path, token, self._secret) is None:
                cache.write_blob(path, token, payload, self._secret)
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
            log.warning("hudi-duck could not keep plan %s in %s: %s", token, cache.cache_dir(), exc)

    def _recover(self, token: str) -> PlanState | None:
        payload = cache.read_blob(self._plan_file(token), token, self._secret)
        if payload is None:
            return None
        try:
            stored, plan, options_ref = pickle.loads(payload)
        except (pickle.UnpicklingError, AttributeError, ImportError, EOFError, TypeError, ValueError):
            return None
        if stored != token or not isinstance(plan, ReadPlan):
            return None
        if options_ref is not None:
            with self.lock:
                options = self._storage_options.get(options_ref)
            if options is None:
                return None
            plan = replace(plan, location=replace(plan.location, storage_options=options))
        self.recovered_plans += 1
        return PlanState.of(plan)

    def _keep_storage_options(self, plan: ReadPlan) -> None:
        options = plan.location.storage_options
        ref = digest_of(options)
        with self.lock:
            self._storage_options[ref] = options
            self._storage_options.move_to_end(ref)
            while len(self._storage_options) > _MAX_STORAGE_OPTIONS:
                self._storage_options.popitem(last=False)

    # -- slice jobs ---------------------------------------------------------------------------
    def register(self, job: SliceJob) -> SliceJob:
        with self.lock:
            existing = self.jobs.get(job.key)
            if existing is not None:
                return existing
            self.jobs[job.key] = job
            self._used("job", job.key, job.nbytes)
            self._shrink()
            return self.jobs.get(job.key, job)

    def job(self, key: str) -> SliceJob:
        """The job of slice ``key`` (a new one, loaded from the cache on demand, if it was evicted)."""
        with self.lock:
            existing = self.jobs.get(key)
            if existing is not None:
                self.jobs.move_to_end(key)
                self._sizes.move_to_end(("job", key))
                return existing
        return self.register(SliceJob(key))

    def ensure(self, key: str, token: str, judge: bool = True) -> SliceJob:
        """The merged slice for a plan; reports the corrupt blocks its merge skipped.

        ``judge=False`` (DuckDB probing a file's size while binding, where an
        error would surface as a traceback) leaves warnings and strict
        failures to the actual read.
        """
        state = self.plan(token)
        job = self.job(key)
        if job.ensure(state):
            with self.lock:
                if key in self.jobs:
                    self._used("job", key, job.nbytes)
                    self._shrink()
        if job.skipped and judge:
            clear_line()  # a warning must not run into the progress line
            report_skipped_blocks(job.skipped, state.strict)
        return job

    def open_logrows(self, key: str, token: str) -> int:
        """A descriptor of slice ``key``'s merged log rows, for DuckDB to read."""
        job = self.ensure(key, token)
        return job.open_logrows(self.plan(token))

    def check_strict(self, keys: list[str], token: str | None = None) -> None:
        """Fail a strict plan now, while planning, if a slice it reads has a skipped corrupt block.

        Checking before the scan makes the failure independent of what DuckDB
        prunes and gives a clean error; the merges themselves stay lazy.
        """
        state = self.plan(token) if token is not None else None
        for key in keys:
            report_skipped_blocks(self.job(key).corrupt_blocks(state), strict=True)

    def keep_by_id(self, token: str, files: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Mask of base rows that survive their slice's logs, each row's file known by DuckDB's
        hash of its name (see ``PlanState.file_ids``). A vector holds rows of one file (its first
        and last hash say so); else its files are taken one by one."""
        # (DuckDB's scan threads call this for every vector: a plan and a job already in memory
        # are looked up without taking the registry's lock, one dictionary read each)
        state = self.plans.get(token) or self.plan(token)
        ids = state.file_ids()
        if ids is None:  # (the renderer names files instead then)
            raise HudiError(f"hudi-duck plan {token}: its base files cannot be told apart by hash")
        n = len(rows)
        keep = np.ones(n, dtype=bool)
        if not n:
            return keep
        first = files[0]
        if files[-1] == first and rows[-1] - rows[0] == n - 1:
            # one file's rows n consecutive row numbers apart: a DuckDB vector holds one file's rows
            # in file order, so these are exactly rows[0] .. rows[0] + n - 1 (the unfiltered scan).
            # Two binary searches and no pass over the vector: numpy lets go of the GIL in every
            # pass, and DuckDB's other scan thread waits on it for its own call
            dropped = self._dropped(state, ids, first, token)
            if dropped is not None and len(dropped):
                start = rows[0]
                inside = dropped[np.searchsorted(dropped, start) : np.searchsorted(dropped, start + n)]
                keep[inside - start] = False
            return keep
        one = bool((files == first).all())
        for file_id in (first,) if one else np.unique(files):
            dropped = self._dropped(state, ids, file_id, token)
            if dropped is None or not len(dropped):
                continue
            if one:
                keep = ~_sorted_contains(dropped, rows)
            else:
                positions = np.nonzero(files == file_id)[0]
                keep[positions] = ~_sorted_contains(dropped, rows[positions])
        return keep

    def _dropped(self, state: PlanState, ids: dict[int, str], file_id: Any, token: str) -> np.ndarray | None:
        """The dropped rows (sorted) of the base file DuckDB hashes to ``file_id``; None for a file
        of no merged slice."""
        key = ids.get(int(file_id))
        if key is None:
            return None
        job_key = state.job_of.get(key, key)
        job = self.jobs.get(job_key)
        if job is None or job.dropped is None or job.skipped:  # (merged, loaded or judged there)
            job = self.ensure(job_key, token)
        return job.dropped_of(key)

    def keep(self, token: str, filenames: pa.Array, rows: pa.Array) -> pa.Array:
        """Mask of base rows that survive their slice's logs.

        Runs once per DuckDB vector: files are told apart with Arrow's
        dictionary encoding and rows looked up in the (sorted) dropped rows,
        so no Python object is made per row.
        """
        state = self.plan(token)
        mapping = state.base_files
        encoded = filenames if pa.types.is_dictionary(filenames.type) else pc.dictionary_encode(filenames)
        names = encoded.dictionary.to_pylist()
        row_values = rows.to_numpy(zero_copy_only=False)
        keep = np.ones(len(row_values), dtype=bool)
        indices = encoded.indices.to_numpy(zero_copy_only=False) if len(names) > 1 else None
        for i, name in enumerate(names):
            key = mapping.get(name)
            if key is None:
                continue
            job_key = state.job_of.get(key, key)
            dropped = self.ensure(job_key, token).dropped_of(key)
            if dropped is None or not len(dropped):
                continue
            if indices is None:
                keep = ~_sorted_contains(dropped, row_values)
            else:
                positions = np.nonzero(indices == i)[0]
                keep[positions] = ~_sorted_contains(dropped, row_values[positions])
        return pa.array(keep, pa.bool_())


def _sorted_contains(sorted_values: np.ndarray, probes: np.ndarray) -> np.ndarray:
    """Which probes occur in ``sorted_values`` (ascending)."""
    at = np.searchsorted(sorted_values, probes)
    hit = at < len(sorted_values)
    hit[hit] = sorted_values[at[hit]] == probes[hit]
    return hit


REGISTRY = Registry()


_UNCHANGED: Any = object()


def set_cache_limits(
    max_bytes: int | str | None = _UNCHANGED,
    max_plans: int | None = _UNCHANGED,
    max_memory: int | str | None = _UNCHANGED,
) -> None:
    """Bound hudi-duck's caches; an argument left out keeps its bound, None restores the default.

    * ``max_bytes``: the cache folder on disk (``HUDI_DUCK_CACHE_MAX_BYTES``, default 2 GiB);
    * ``max_plans``: read plans kept in memory (``HUDI_DUCK_MAX_PLANS``, default 256);
    * ``max_memory``: bytes of plans and merged slices kept in memory
      (``HUDI_DUCK_MAX_PLAN_MEMORY``, default 256 MiB).

    Sizes are bytes or text such as ``'2GiB'`` or ``'500MB'``.
    """
    if max_bytes is not _UNCHANGED:
        cache.set_max_bytes(max_bytes)
    plans = REGISTRY._max_plans if max_plans is _UNCHANGED else max_plans
    memory = REGISTRY._max_memory if max_memory is _UNCHANGED else max_memory
    REGISTRY.configure(plans, memory)
    if max_bytes is not _UNCHANGED:
        cache.evict()


def keep_rows_by_id(tokens: pa.Array, files: pa.Array, rows: pa.Array) -> pa.Array:
    """The ``hudi_duck_keep_at`` scalar function (vectorised over Arrow batches): base rows by
    (hash of their file's name, row number)."""
    token = tokens[0].as_py() if len(tokens) else None
    if token is None:
        return pc.is_valid(rows)
    return pa.array(REGISTRY.keep_by_id(token, _numpy(files), _numpy(rows)), pa.bool_())


def _numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.to_numpy(zero_copy_only=False)


_hash_lock = threading.Lock()
_hash_connection: Any = None
#: the connection whose database answers hashes (a weak reference), until one is opened on it
_hash_source: Any = None
_hashes: "OrderedDict[str, int]" = OrderedDict()


def hash_on(con: duckdb.DuckDBPyConnection) -> None:
    """Let ``con``'s database compute base files' hashes, on a cursor of its own: a process that
    has a connection need not open a DuckDB database for them (30-100 ms of a first plan)."""
    global _hash_source
    with _hash_lock:
        if _hash_connection is None and _hash_source is None:
            _hash_source = weakref.ref(con)


def _hashing_connection() -> Any:
    global _hash_connection
    if _hash_connection is None:
        source = _hash_source() if _hash_source is not None else None
        try:
            _hash_connection = source.cursor() if source is not None else duckdb.connect()
        except duckdb.Error:  # (closed meanwhile)
            _hash_connection = duckdb.connect()
    return _hash_connection


def _ask_hashes(names: list[str]) -> list[tuple[str, int]]:
    # (the names as a parameter and the rows as tuples: registering an Arrow table or
    # fetching numpy makes DuckDB import pandas, 0.3 s of a process's first plan)
    query = "SELECT name, hash(name) FROM (SELECT unnest(?::VARCHAR[]) AS name)"
    return _hashing_connection().execute(query, [names]).fetchall()


def duckdb_hashes(names: list[str]) -> list[int]:
    """DuckDB's ``hash`` of each name (what a query computes of a row's ``filename``), kept per
    process for the names asked before."""
    global _hash_connection, _hash_source
    with _hash_lock:
        missing = [n for n in dict.fromkeys(names) if n not in _hashes]
        if missing:
            try:
                found = _ask_hashes(missing)
            except duckdb.ConnectionException:  # the connection the cursor came from was closed
                _hash_connection, _hash_source = duckdb.connect(), None
                found = _ask_hashes(missing)
            for name, value in found:
                _hashes[name] = int(value)
            while len(_hashes) > _MAX_HASHED_NAMES:
                _hashes.popitem(last=False)
        return [_hashes[n] for n in names]


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

    def __init__(self, path: str, fd: int | None = None):
        self._fd = os.open(path, os.O_RDONLY) if fd is None else fd
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

    def __del__(self) -> None:
        # DuckDB drops the file objects it opened without always closing them; like Python's own
        # files, the descriptor goes with the object (else a long session runs out of descriptors)
        try:
            self.close()
        except Exception:  # (at interpreter exit, or an object whose open failed)
            pass

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
        key, token = _key_and_token(path)
        fd = REGISTRY.open_logrows(key, token)
        return PositionalReader(str(path), fd)

    def info(self, path, **kwargs):
        key, token = _key_and_token(path)
        job = REGISTRY.job(key)
        size = 0
        # DuckDB probes every listed file before scanning; only report (and
        # compute) the real size once the file is really being read.
        if str(path).startswith(f"{PROTOCOL}://") or job.dropped is not None:
            job = REGISTRY.ensure(key, token, judge=False)
            size = job.logrows_size(REGISTRY.plan(token))
        return {"name": path, "size": size, "type": "file"}

    def ls(self, path, detail=True, **kwargs):
        entry = self.info(path)
        return [entry] if detail else [entry["name"]]

    def modified(self, path):
        """When the file behind ``path`` was written: DuckDB keeps the bytes it read of a file and
        reuses them while this time is unchanged, so an entry merged again (after damage or
        eviction, with rows in another order) must not pass for the one it replaces."""
        key, _ = _key_and_token(path)
        try:
            mtime_ns = os.stat(REGISTRY.job(key).logrows_file).st_mtime_ns
        except OSError:  # not merged yet
            return _EPOCH
        return _EPOCH + _dt.timedelta(microseconds=mtime_ns // 1000 - _EPOCH_US)

    def created(self, path):
        return _EPOCH
