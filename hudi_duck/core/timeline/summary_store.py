"""Commit summaries kept across processes.

Every plan checks the files each completed commit on the active timeline wrote
(``core/table/integrity.py``), so a fresh process would read and decode every
commit file of the timeline before its first plan: 500 commits of a table that
archives late are 5 MB of JSON, about 50 ms. A completed commit's file never
changes, so what a process decoded of it (its :class:`CommitSummary`, the names
of its files parsed) is kept for the next process in one entry per timeline
folder, known per commit file by its ``stat`` signature (device, inode, size,
modified and changed times), as the process's own cache knows it.

The bytes live where the reader's layer keeps its cache (:mod:`~hudi_duck.core.storage.kept`);
without a store (a Spark executor, a writer) nothing is kept. The entry is plain
MessagePack decoded into fixed shapes: a damaged or foreign entry is ignored
(and written again), never trusted into a plan.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterable

import google_crc32c

from ..storage import kept
from ..storage.storage import Signature as StorageSignature

from .commit_metadata import CommitSummary, DataFileWritten, WrittenFile

log = logging.getLogger("hudi_duck")

#: A commit file's identity on local storage (:meth:`Storage.signature`).
Signature = StorageSignature
#: Bumped whenever the shape of an entry changes; older entries are ignored.
FORMAT = 4


#: The kind of bytes :mod:`~hudi_duck.core.storage.kept` keeps for a timeline folder.
KIND = "commit-summaries"


def save_later(timeline_uri: str, entries: list[tuple[tuple[str, Signature], "CommitSummary | KeptSummary"]]) -> None:
    """Encode and save ``entries`` for ``timeline_uri`` off the plan's thread (:func:`kept.save_later`)."""
    kept.save_later(
        KIND,
        timeline_uri,
        lambda: encode((name, sig, summary) for (name, sig), summary in entries),
        lambda data: _remember(
            timeline_uri, data, {key: s if isinstance(s, KeptSummary) else KeptSummary.of(s) for key, s in entries}
        ),
    )


def encode(entries: Iterable[tuple[str, Signature, "CommitSummary | KeptSummary"]]) -> bytes:
    """One entry of (commit file name, its signature, its summary) for a timeline folder; a
    kept summary nobody asked for goes in as the bytes it was kept as."""
    import msgspec

    schemas: dict[str, int] = {}
    commits = []
    for name, signature, summary in entries:
        if isinstance(summary, KeptSummary):
            if summary.raw is not None:
                schema = -1 if summary.schema is None else schemas.setdefault(summary.schema, len(schemas))
                commits.append((name, signature, schema, summary.raw))
                continue
            summary = summary.summary()
        written_at = {id(w): i for i, w in enumerate(summary.files)}
        schema = -1 if summary.schema is None else schemas.setdefault(summary.schema, len(schemas))
        body = (
            summary.operation_type,
            summary.replaced,
            [(w.partition_path, w.file_id, w.path, w.size, w.log_offset) for w in summary.files],
            [(written_at[id(d.written)], d.file_id, d.instant) for d in summary.data_files],
        )
        commits.append((name, signature, schema, msgspec.Raw(msgspec.msgpack.encode(body))))
    return msgspec.msgpack.encode((FORMAT, list(schemas), commits))


class KeptSummary:
    """One commit's summary in a kept entry, decoded only when a plan asks for it: the table's
    schema needs the latest commit alone, and a plan whose check was kept needs no other
    (``core/table/checked_plans.py``)."""

    __slots__ = ("schema", "raw", "_summary")

    def __init__(self, schema: str | None, raw: Any, summary: CommitSummary | None = None) -> None:
        self.schema, self.raw, self._summary = schema, raw, summary

    @classmethod
    def of(cls, summary: CommitSummary) -> "KeptSummary":
        return cls(summary.schema, None, summary)

    def summary(self) -> CommitSummary | None:
        """The summary; None for a damaged one (its commit file is decoded instead)."""
        if self._summary is None and self.raw is not None:
            self._summary = _decode_commit(self.schema, self.raw)
            if self._summary is not None:
                self.raw = None
        return self._summary


def decode(data: bytes) -> dict[tuple[str, Signature], KeptSummary]:
    """Summaries by (commit file name, signature), each decoded when asked for; empty for an
    entry of another shape."""
    import msgspec

    try:
        fmt, schemas, commits = msgspec.msgpack.decode(
            data, type=tuple[int, list[str], list[tuple[str, tuple[int, int, int, int, int], int, msgspec.Raw]]]
        )
        if fmt != FORMAT:
            return {}
        return {
            (name, signature): KeptSummary(schemas[schema] if schema >= 0 else None, raw)
            for name, signature, schema, raw in commits
        }
    except (msgspec.MsgspecError, ValueError, TypeError, IndexError) as exc:
        log.debug("ignoring a damaged commit summary entry: %s", exc)
        return {}


def _decode_commit(schema: str | None, raw: Any) -> CommitSummary | None:
    import msgspec

    new = tuple.__new__  # (a named tuple's own constructor costs more than the rest of a file's decoding)
    try:
        operation, replaced, files, data_files = _body_decoder().decode(raw)
        written = [WrittenFile(*f) for f in files]
        summary = CommitSummary(
            files=tuple(written),
            schema=schema,
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
        return summary
    except (msgspec.MsgspecError, IndexError, TypeError, ValueError, AttributeError) as exc:
        log.debug("ignoring a damaged commit summary in a kept entry: %s", exc)
        return None


#: The entry this process last decoded or wrote per timeline folder: (its identity, its
#: summaries, its bytes).
_SEEN: dict[str, tuple[tuple[int, int], dict[tuple[str, Signature], KeptSummary], bytes]] = {}
_seen_lock = threading.Lock()


def _identity(data: bytes) -> tuple[int, int]:
    """What tells an entry this process saw from another: its length and CRC-32C (a tenth of a
    hash's cost). Only an optimisation rests on it: every summary in an entry is known by its
    commit file's signature, so even an entry taken for another holds only true summaries."""
    return len(data), google_crc32c.value(data)


def decode_for(timeline_uri: str, data: bytes) -> dict[tuple[str, Signature], KeptSummary]:
    """:func:`decode`, skipped for an entry this process decoded or wrote itself: a long-lived
    process that plans after every new commit does not decode the whole entry each time."""
    with _seen_lock:
        seen = _SEEN.get(timeline_uri)
    if seen is not None and seen[2] is data:  # (the very bytes: the store had them in memory)
        return seen[1]
    digest = _identity(data)
    if seen is not None and seen[0] == digest:
        with _seen_lock:
            _SEEN[timeline_uri] = (digest, seen[1], data)
        return seen[1]
    entries = decode(data)
    _remember(timeline_uri, data, entries, digest)
    return entries


def _remember(
    timeline_uri: str, data: bytes, entries: dict[tuple[str, Signature], KeptSummary], digest: tuple[int, int] | None = None
) -> None:
    digest = digest or _identity(data)
    with _seen_lock:
        _SEEN[timeline_uri] = (digest, entries, data)


def forget_entries() -> None:
    """Forget the entries this process decoded (tests: a process that starts afresh)."""
    with _seen_lock:
        _SEEN.clear()


_BODY_DECODER: Any = None


def _body_decoder() -> Any:
    """The decoder of one commit's summary in an entry (built once, with real types: a plan
    without a kept check decodes one per commit on the timeline)."""
    global _BODY_DECODER
    if _BODY_DECODER is None:
        from typing import Optional

        import msgspec

        text = Optional[str]
        _BODY_DECODER = msgspec.msgpack.Decoder(tuple[
            text,
            list[tuple[str, list[str]]],
            list[tuple[text, text, text, int, int]],
            list[tuple[int, str, str]],
        ])
    return _BODY_DECODER
