"""Readers during writes: snapshot reads while a writer commits and runs its services.

A writer process (``crash_job.py --writer``) upserts into a merge-on-read table, each
commit followed by the inline services (compaction every two delta commits, clean
keeping two commits, archival), and reports each commit on stdout, then waits for a
line on stdin. This process reads snapshots through the DuckDB table function in a
loop the whole time:

* right after a commit is reported (the writer waits), a read must see exactly that
  commit's state;
* while the writer works on the next commit (and its compaction, clean, archival),
  every read must see one of the two committed states around it — never a torn state,
  duplicate keys, a missing file, or a state older than one already seen.

The commits are paced by the reader's handshake, not by sleeping: each commit is
overlapped by reads.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from test_crash_matrix import TESTS, Model, read_ours, write

import crash_job

COMMITS = 8


@dataclass
class Tally:
    reads: int = 0
    overlapping: int = 0
    torn: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def _state_index(rows: list[tuple], states: list[list[tuple]]) -> int | None:
    for i, state in enumerate(states):
        if rows == state:
            return i
    return None


def read_while_writing(tmp_path: Path, commits: int = COMMITS) -> Tally:
    path = str(tmp_path / "table")
    crash_job.create_table(path, "MERGE_ON_READ")
    model = Model()
    write(path, model, "insert")
    states = [sorted(model.rows.values())]
    batches = []
    for _ in range(commits):
        batch = model.batch("upsert")
        batches.append(batch)
        model.commit(str(len(batches)), Model.apply(model.rows, "upsert", batch))
        states.append(sorted(model.rows.values()))
    spec = tmp_path / "writer.json"
    spec.write_text(json.dumps({"path": path, "batches": batches}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]))
    writer = subprocess.Popen(
        [sys.executable, str(TESTS / "crash_job.py"), "--writer", str(spec)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    reports: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(writer.stdout, reports), daemon=True).start()
    tally = Tally()
    committed, newest_seen = 0, 0

    def read(exact: bool) -> None:
        nonlocal newest_seen
        tally.reads += 1
        try:
            rows = read_ours(path)
        except Exception as exc:  # noqa: BLE001 - a failed read is a finding
            tally.torn.append(f"read {tally.reads} while at commit {committed} failed: {exc}")
            return
        allowed = [committed] if exact else [committed, committed + 1]
        index = _state_index(rows, states)
        if index not in allowed or index < newest_seen:
            keys = [r[0] for r in rows]
            tally.torn.append(
                f"read {tally.reads} while at commit {committed}: state {index} (allowed {allowed}, newest seen "
                f"{newest_seen}), {len(rows)} rows, {len(keys) - len(set(keys))} duplicate keys"
            )
            return
        newest_seen = index

    try:
        read(exact=True)
        while True:
            try:
                line = reports.get_nowait()
            except queue.Empty:
                if committed < commits:
                    tally.overlapping += 1
                    read(exact=False)
                    continue
                line = reports.get(timeout=300)
            if line is None:
                break
            report = json.loads(line)
            committed = report["commit"]
            tally.services += report["ran"]
            read(exact=True)
            if committed < commits:
                writer.stdin.write("go\n")
                writer.stdin.flush()
    finally:
        writer.stdin.close()
        stderr = writer.stderr.read()
        code = writer.wait(timeout=300)
    assert code == 0, f"the writer failed: {stderr[-3000:]}"
    assert committed == commits, f"the writer reported {committed} of {commits} commits"
    return tally


def test_snapshot_reads_during_writes_and_services(tmp_path: Path):
    tally = read_while_writing(tmp_path)
    assert not tally.torn, f"{len(tally.torn)} of {tally.reads} reads saw no committed state:\n" + "\n".join(tally.torn[:10])
    # every commit was overlapped by reads, and the services ran in between
    assert tally.overlapping >= COMMITS
    ran = " ".join(tally.services)
    assert "compaction" in ran and "clean" in ran and "archive" in ran, tally.services


if __name__ == "__main__":
    import tempfile
    import time

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = read_while_writing(Path(tmp), int(sys.argv[1]) if len(sys.argv) > 1 else COMMITS)
    print(
        f"reads: {result.reads} ({result.overlapping} while the writer worked); torn or failed: {len(result.torn)}; "
        f"services: {result.services}; {time.perf_counter() - started:.0f}s"
    )
    for problem in result.torn[:10]:
        print("  " + problem)
