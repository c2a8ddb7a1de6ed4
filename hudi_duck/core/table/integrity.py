"""Data files completed commits wrote, checked against the file listing a read plan came from.

Hudi's file system view works from the listing alone: a base file or log file
that went missing makes it serve an older file slice (or drop the file group)
without a word. A completed commit's write stats name every file it wrote and
its size, so a reader can tell a file that is gone or cut short from one that
was never written:

* the newest base file a completed commit wrote for a file group the read
  shows must be the base file of the slice read (or a newer one);
* every log file a completed commit wrote into the slice read must be listed,
  and hold at least the bytes that commit appended (``logOffset`` plus
  ``fileSizeInBytes``), unless the file ends in a corrupt block: a block cut
  short is the log scanner's to skip and report, as Hudi's reader skips it;
* a base file must have the size its commit recorded.

Files a completed clean deleted are not expected (time travel to a cleaned
slice reads what is left, as Hudi does). Corrupt blocks *inside* a log file are
the log scanner's concern (skipped with a warning, or an error when strict).
"""

from __future__ import annotations

import posixpath
from typing import Iterable, NamedTuple

from ..errors import MissingFileError
from ..file_group.file_slice import FileSlice
from ..file_group.log_format import BlockType, read_log_file
from ..file_group.naming import parse_base_file, parse_log_file
from ..timeline.commit_metadata import WrittenFile
from ..timeline.instant import Action, Instant
from . import checked_plans
from .fs_view import CommittedInstants, FileSystemView


class ExpectedFile(NamedTuple):
    """A data file one completed commit wrote, as its write stat records it (a named tuple:
    a plan makes one per file the commits on the timeline wrote)."""

    path: str  # relative to the base path
    instant: str  # the commit that wrote it
    commit_file: str  # the completed commit's timeline file (URI)
    min_size: int  # bytes the file holds at least (exactly, for base files)
    is_log: bool


def _expected_of(written: WrittenFile, path: str, is_log: bool, instant: str, commit_file: str) -> ExpectedFile:
    if is_log:
        return ExpectedFile(path, instant, commit_file, written.log_offset + written.size, True)
    return ExpectedFile(path, instant, commit_file, written.size, False)


def _cleaned_files(view: FileSystemView) -> frozenset[str]:
    """Paths of the files completed cleans deleted (relative to the base path)."""
    timeline = view.timeline
    out: set[str] = set()
    for instant in timeline.completed([Action.CLEAN]):
        metadata = timeline.payload(instant)
        for partition, meta in (getattr(metadata, "partition_metadata", None) or {}).items():
            for name in meta.success_delete_files or ():
                base = posixpath.basename(name)
                out.add(posixpath.join(partition, base) if partition else base)
    return frozenset(out)


def check_plan_files(
    view: FileSystemView,
    slices: Iterable[FileSlice],
    instants: CommittedInstants,
    replaced: Iterable[tuple[str, str]],
    partitions: Iterable[str] | None = None,
    file_groups: Iterable[tuple[str, str]] | None = None,
    read_logs: bool = True,
) -> None:
    """Raise :class:`MissingFileError` when a data file a completed commit (that ``instants``
    admits) wrote for the slices read is missing from the listing or shorter than recorded."""
    timeline = view.timeline
    slices = list(slices)  # (one per file group)
    replaced_set = set(replaced)
    wanted_partitions = set(partitions) if partitions is not None else None
    wanted_groups = set(file_groups) if file_groups is not None else None
    narrowed = bool(replaced_set) or wanted_partitions is not None or wanted_groups is not None
    # the files the read shows, by path: a written file that is one of them, of the size written,
    # needs no further look (nearly every file); the others go through the rules below
    read_bases = {s.base_file.path: s.base_file.size for s in slices if s.base_file is not None}
    read_logs_sizes = {log.path: log.size for s in slices for log in s.log_files} if read_logs else {}
    newest_base: dict[tuple[str, str], tuple] = {}  # group -> (base instant, written, path, commit instant)
    logs: list[tuple[tuple[str, str], WrittenFile, str, Instant]] = []  # (group, written, path, commit instant)
    admitted = [i for i in timeline.completed_writes if instants.admits(i.requested_time)]
    check_key = _check_key(
        timeline, admitted, read_bases, read_logs_sizes,
        (sorted(replaced_set), sorted(wanted_partitions or ()), wanted_partitions is None,
         sorted(wanted_groups or ()), wanted_groups is None, read_logs),
    )
    if check_key is not None and checked_plans.is_checked(*check_key):
        return  # the same commit files and the same listing were checked clean before
    chosen = {s.file_group_id: s for s in slices}
    timeline.prefetch_summaries(admitted)
    for instant in admitted:
        # (one pass per file every commit wrote, its path split and name parsed once per process)
        for partition, name, path, file_id, file_instant, written in timeline.commit_summary(instant).data_files:
            is_log = name.startswith(".")
            if is_log:
                if not read_logs or read_logs_sizes.get(path, -1) >= written.log_offset + written.size:
                    continue  # a log file the read lists, holding at least the bytes written
            else:
                size = read_bases.get(path)
                if size is not None and (size == written.size or not size or not written.size):
                    continue  # the base file read is the one written, of the size written
            group = (partition, file_id)
            if narrowed and (
                (wanted_partitions is not None and partition not in wanted_partitions)
                or group in replaced_set
                or (wanted_groups is not None and group not in wanted_groups)
            ):
                continue
            if is_log:
                logs.append((group, written, path, instant))
                continue
            newest = newest_base.get(group)
            if newest is None or file_instant >= newest[0]:
                newest_base[group] = (file_instant, written, path, instant)
    timeline.keep_summaries()
    doubtful = []
    for group, (file_instant, written, path, instant) in newest_base.items():
        slice_ = chosen.get(group)
        if slice_ is not None and slice_.base_file is not None and slice_.base_file.instant_time > file_instant:
            continue  # an older base file of a group whose read base is newer
        doubtful.append((group, _expected_of(written, path, False, instant.requested_time, _commit_file(view, instant))))
    if not doubtful and not logs:
        if check_key is not None:
            checked_plans.remember(*check_key)
        return
    cleaned = _cleaned_files(view)
    for group, expected in sorted(doubtful):
        _check_base(view, chosen.get(group), expected, cleaned)
    for group, written, path, instant in logs:
        expected = _expected_of(written, path, True, instant.requested_time, _commit_file(view, instant))
        _check_log(view, chosen.get(group), expected, cleaned)


def _check_key(
    timeline, admitted: list[Instant], read_bases: dict[str, int], read_logs: dict[str, int], narrowing: tuple
) -> tuple[str, bytes] | None:
    """(timeline folder, digest) a clean check of these commits and this listing is kept by
    (``checked_plans``); None where commit files are not known by their ``stat`` (object stores)."""
    signatures = timeline.commit_signatures(admitted)
    if signatures is None:
        return None
    folder = timeline.storage.uri(timeline.timeline_dir)
    return folder, checked_plans.digest(signatures, read_bases, read_logs, narrowing)


def _commit_file(view: FileSystemView, instant: Instant) -> str:
    """The URI of a completed commit's timeline file (named in errors)."""
    return view.storage.uri(view.timeline.file_of(instant))


def _instant_of(expected: ExpectedFile) -> str:
    parsed = parse_base_file(posixpath.dirname(expected.path), posixpath.basename(expected.path))
    return parsed.instant_time if parsed else expected.instant


def _check_base(view: FileSystemView, slice_: FileSlice | None, expected: ExpectedFile, cleaned: frozenset[str]) -> None:
    if expected.path in cleaned:
        return
    base = slice_.base_file if slice_ is not None else None
    if base is not None and base.path == expected.path:
        if expected.min_size and base.size and base.size != expected.min_size:
            raise MissingFileError(
                f"{_where(view, expected)} has {base.size} bytes, but commit {expected.instant} wrote "
                f"{expected.min_size}: the base file is damaged. Restore it from a backup, or roll back "
                f"that commit (or restore a savepoint) to repair the table"
            )
        return
    if base is not None and base.instant_time > _instant_of(expected):
        return  # a newer base file (e.g. of a commit the read does not see the write stats of)
    raise MissingFileError(
        f"{_where(view, expected)}, the base file completed commit {expected.instant} wrote, is missing: "
        f"reading without it would serve an older version of its file group or drop its rows. "
        f"Restore the file from a backup, or roll back that commit (or restore a savepoint) to repair the table"
    )


def _check_log(view: FileSystemView, slice_: FileSlice | None, expected: ExpectedFile, cleaned: frozenset[str]) -> None:
    if expected.path in cleaned:
        return
    name = posixpath.basename(expected.path)
    log = parse_log_file(posixpath.dirname(expected.path), name)
    if log is None:
        return
    if slice_ is None:
        if expected.path in _listed_logs(view, posixpath.dirname(expected.path)):
            return  # listed, but in a slice the read does not show
    elif log.instant_time < slice_.base_instant_time:
        return  # the log of an older slice (compacted since)
    else:
        listed = {l.path: l for l in slice_.log_files}
        found = listed.get(expected.path)
        if found is None:
            found = _listed_logs(view, posixpath.dirname(expected.path)).get(expected.path)
            if found is not None:
                return  # listed, but in another slice of the file group
        if found is not None:
            if 0 <= found.size < expected.min_size and not _ends_in_corrupt_block(view, expected.path):
                raise MissingFileError(
                    f"{_where(view, expected)} has {found.size} bytes, but completed commit {expected.instant} "
                    f"wrote its log blocks up to byte {expected.min_size}: the log file is truncated and the "
                    f"records of that commit would be missing. Restore the file from a backup, or roll back that "
                    f"commit (or restore a savepoint) to repair the table"
                )
            return
    raise MissingFileError(
        f"{_where(view, expected)}, a log file completed commit {expected.instant} wrote, is missing: the "
        f"records of that commit would be missing from the result. Restore the file from a backup, or roll back "
        f"that commit (or restore a savepoint) to repair the table"
    )


def _ends_in_corrupt_block(view: FileSystemView, path: str) -> bool:
    """Whether a log file cut short ends in a corrupt block: the log scanner skips and reports
    that block (a warning, or an error when strict), as Hudi's reader skips it. A file cut at a
    block boundary (or emptied) leaves no such trace, and its lost blocks would go unnoticed."""
    try:
        data = view.storage.read(path)
    except FileNotFoundError:
        return False  # gone since the listing
    blocks = read_log_file(data, view.storage.uri(path))
    return bool(blocks) and blocks[-1].block_type is BlockType.CORRUPT_BLOCK


def _listed_logs(view: FileSystemView, partition: str) -> dict:
    _bases, logs = view.list_partition(partition)
    return {l.path: l for l in logs}


def _where(view: FileSystemView, expected: ExpectedFile) -> str:
    kind = "log" if expected.is_log else "base"
    return (
        f"Hudi table {view.storage.uri()}: {kind} file {view.storage.uri(expected.path)} "
        f"(named in the write stats of {expected.commit_file})"
    )
