"""Locate and unzip the Apache-Hudi-written fixture tables."""

from __future__ import annotations

import glob
import json
import os
import shutil
import zipfile
from pathlib import Path

from hudi_duck.core.storage.storage import Storage

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES_DIR = Path(
    os.environ.get("HUDI_DUCK_FIXTURES", REPO_ROOT.parent / "shared" / "fixtures" / "hudi-tables")
)


def fixture_zips() -> list[Path]:
    if not FIXTURES_DIR.is_dir():
        raise RuntimeError(
            f"fixture tables not found at {FIXTURES_DIR}; clone the project next to ../shared "
            "or set HUDI_DUCK_FIXTURES"
        )
    return sorted(FIXTURES_DIR.rglob("*.zip"))


def fixture_id(zip_path: Path) -> str:
    """e.g. ``sample_table/cow/v6_nonpartitioned``."""
    return zip_path.relative_to(FIXTURES_DIR).with_suffix("").as_posix()


def unzip_fixture(zip_path: Path, dest_root: Path) -> Path:
    """Unzip one fixture (skipping ``__MACOSX/``) and return the table's base path."""
    dest = dest_root / fixture_id(zip_path).replace("/", "__")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as archive:
        members = [m for m in archive.namelist() if not m.startswith("__MACOSX/")]
        archive.extractall(dest, members)
    tops = sorted({m.split("/", 1)[0] for m in members if "/" in m})
    candidates = [dest / top for top in tops if (dest / top / ".hoodie").is_dir()]
    if len(candidates) != 1:
        raise RuntimeError(f"{zip_path}: expected one table folder, found {tops}")
    return candidates[0]


def sql_of(zip_path: Path) -> str:
    return zip_path.with_suffix(".sql").read_text()


class CountingStorage(Storage):
    """A storage that records every read, whole (``0, size``) or ranged, by absolute path: what a
    test counts to show a read stays within the ranges it needs."""

    def __init__(self, base_uri: str, log: list[tuple[str, int, int]] | None = None):
        super().__init__(base_uri)
        self.log = log if log is not None else []

    def child(self, rel: str) -> CountingStorage:
        return CountingStorage(self.uri(rel), self.log)

    def read(self, rel: str) -> bytes:
        data = super().read(rel)
        self.log.append((self.abs(rel), 0, len(data)))
        return data

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        data = super().read_range(rel, start, end)
        self.log.append((self.abs(rel), start, end))
        return data


def record_base_file_size(table: str, file_name: str, size: int) -> None:
    """Record a rewritten base file's new size in the commit that wrote it, so the plan's write-stat
    check takes the rewritten file as the one written."""
    for commit in glob.glob(f"{table}/.hoodie/*commit"):
        with open(commit) as handle:
            text = handle.read()
        if file_name not in text:
            continue
        meta = json.loads(text)
        for stats in meta["partitionToWriteStats"].values():
            for stat in stats:
                if stat["path"].endswith(file_name):
                    stat["fileSizeInBytes"] = size
        with open(commit, "w") as handle:
            json.dump(meta, handle)
