"""Commit summaries kept across processes.

Every plan checks the files each completed commit on the active timeline wrote
(``core/table/integrity.py``), so a fresh process would read and decode every
commit file of the timeline before its first plan: 500 commits of a table that
archives late are 5 MB of JSON, about 50 ms. A completed commit's file never
changes, so what a process decoded of it (its :class:`CommitSummary`, the names
of its files parsed) is kept for the next process in one entry per timeline
folder, known per commit file by its ``stat`` signature (device, inode, size,
modified and changed times), as the process's own cache knows it.

The bytes live where the reader's layer keeps its cache (:func:`use_store`);
without a store (a Spark executor, a writer) nothing is kept. The entry is plain
MessagePack decoded into fixed shapes: a damaged or foreign entry is ignored
(and written again), never trusted into a plan.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Any, Iterable, Protocol

from .commit_metadata import CommitSummary, DataFileWritten, WrittenFile

log = logging.getLogger("hudi_duck")

#: A commit file's identity on local storage: (device, inode, size, mtime_ns, ctime_ns).
Signature = tuple[int, int, int, int, int]
#: Bumped whenever the shape of an entry changes; older entries are ignored.
FORMAT = 3


class SummaryStore(Protocol):
    """Bytes kept per timeline folder (a URI) for later processes."""

    def load(self, timeline_uri: str) -> bytes | None: ...

    def save(self, timeline_uri: str, data: bytes) -> None: ...


_store: SummaryStore | None = None


def use_store(store: SummaryStore | None) -> None:
    """Keep commit summaries in ``store`` (``None``: only in this process)."""
    global _store
    _store = store


def store() -> SummaryStore | None:
    return _store


_saving: list[threading.Thread] = []
_saving_lock = threading.Lock()


def save_later(
    store: SummaryStore, timeline_uri: str, entries: list[tuple[tuple[str, Signature], CommitSummary]]
) -> None:
    """Encode and save ``entries`` on a thread of their own: a plan does not wait for the
    write (nor for the cache's size check at a process's first write). The thread is not a
    daemon, so a process that ends right after its query still saves them."""

    def save() -> None:
        try:
            data = encode((name, sig, summary) for (name, sig), summary in entries)
            store.save(timeline_uri, data)
            _remember(timeline_uri, data, dict(entries))
        except Exception as exc:  # a cache that cannot be written only costs the next process time
            log.debug("commit summaries of %s not kept: %s", timeline_uri, exc)

    thread = threading.Thread(target=save, name="hudi-duck-commit-summaries")
    with _saving_lock:
        _saving[:] = [t for t in _saving if t.is_alive()] + [thread]
    thread.start()


def wait_for_saves() -> None:
    """Wait until the summaries being saved are written (tests; a process exiting waits anyway)."""
    with _saving_lock:
        threads = list(_saving)
    for thread in threads:
        thread.join()


def encode(entries: Iterable[tuple[str, Signature, CommitSummary]]) -> bytes:
    """One entry of (commit file name, its signature, its summary) for a timeline folder."""
    import msgspec

    schemas: dict[str, int] = {}
    commits = []
    for name, signature, summary in entries:
        written_at = {id(w): i for i, w in enumerate(summary.files)}
        schema = -1 if summary.schema is None else schemas.setdefault(summary.schema, len(schemas))
        commits.append((
            name,
            signature,
            schema,
            summary.operation_type,
            summary.replaced,
            [(w.partition_path, w.file_id, w.path, w.size, w.log_offset) for w in summary.files],
            [(written_at[id(d.written)], d.file_id, d.instant) for d in summary.data_files],
        ))
    return msgspec.msgpack.encode((FORMAT, list(schemas), commits))


def decode(data: bytes) -> dict[tuple[str, Signature], CommitSummary]:
    """Summaries by (commit file name, signature); empty for an entry of another shape."""
    import msgspec

    try:
        fmt, schemas, commits = msgspec.msgpack.decode(data, type=tuple[int, list[str], list[_entry_type()]])
        if fmt != FORMAT:
            return {}
    except (msgspec.MsgspecError, ValueError, TypeError) as exc:
        log.debug("ignoring a damaged commit summary entry: %s", exc)
        return {}
    out = {}
    new = tuple.__new__  # (a named tuple's own constructor costs more than the rest of a file's decoding)
    try:
        for name, signature, schema, operation, replaced, files, data_files in commits:
            written = [WrittenFile(*f) for f in files]
            summary = CommitSummary(
                files=tuple(written),
                schema=schemas[schema] if schema >= 0 else None,
                operation_type=operation,
                replaced=tuple((p, tuple(ids)) for p, ids in replaced),
            )
            # (the names parsed by the process that decoded the commit; folder and name split
            # off the written path as ``CommitSummary.data_files`` splits them)
            parsed = []
            for at, file_id, instant in data_files:
                file = written[at]
                path = file.path.strip("/")
                partition, _, name_ = path.rpartition("/")
                parsed.append(new(DataFileWritten, (partition, name_, path, file_id, instant, file)))
            summary.__dict__["data_files"] = tuple(parsed)
            out[(name, tuple(signature))] = summary
    except (IndexError, TypeError, ValueError, AttributeError) as exc:
        log.debug("ignoring a damaged commit summary entry: %s", exc)
        return {}
    return out


#: The entry this process last decoded or wrote per timeline folder: (its digest, its summaries).
_SEEN: dict[str, tuple[bytes, dict[tuple[str, Signature], CommitSummary]]] = {}
_seen_lock = threading.Lock()


def decode_for(timeline_uri: str, data: bytes) -> dict[tuple[str, Signature], CommitSummary]:
    """:func:`decode`, skipped for an entry this process decoded or wrote itself: a long-lived
    process that plans after every new commit does not decode the whole entry each time."""
    digest = hashlib.blake2b(data, digest_size=16).digest()
    with _seen_lock:
        seen = _SEEN.get(timeline_uri)
    if seen is not None and seen[0] == digest:
        return seen[1]
    entries = decode(data)
    _remember(timeline_uri, data, entries, digest)
    return entries


def _remember(
    timeline_uri: str, data: bytes, entries: dict[tuple[str, Signature], CommitSummary], digest: bytes | None = None
) -> None:
    digest = digest or hashlib.blake2b(data, digest_size=16).digest()
    with _seen_lock:
        _SEEN[timeline_uri] = (digest, entries)


def forget_entries() -> None:
    """Forget the entries this process decoded (tests: a process that starts afresh)."""
    with _seen_lock:
        _SEEN.clear()


_ENTRY_TYPE: Any = None


def _entry_type() -> Any:
    """The typed shape of one commit in an entry (built once, with real types)."""
    global _ENTRY_TYPE
    if _ENTRY_TYPE is None:
        from typing import Optional

        text = Optional[str]
        _ENTRY_TYPE = tuple[
            str,
            tuple[int, int, int, int, int],
            int,
            text,
            list[tuple[str, list[str]]],
            list[tuple[text, text, text, int, int]],
            list[tuple[int, str, str]],
        ]
    return _ENTRY_TYPE
