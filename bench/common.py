"""Shared helpers of the benchmarks: timing, result tables, JSON output, environment."""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DEFAULT_DATA_DIR = os.environ.get("HUDI_DUCK_BENCH_DIR", "/tmp/hudi_duck_bench")

if str(ROOT) not in sys.path:  # `python bench/x.py` from anywhere
    sys.path.insert(0, str(ROOT))


@dataclass
class Samples:
    """Wall-clock seconds of one case, over several runs."""

    name: str
    seconds: list[float] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> float:
        return min(self.seconds) if self.seconds else float("nan")

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "best": self.best, "median": self.median, "n": len(self.seconds), **self.info}


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
        return False


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def rotated(items: list, k: int) -> list:
    """``items`` starting at position k (alternating the order of compared cases between rounds)."""
    if not items:
        return items
    k %= len(items)
    return items[k:] + items[:k]


def fmt_s(x: float) -> str:
    if x != x:  # nan
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.2f}"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None or x != x else f"{x:.2f}x"


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-markdown table (readable in a terminal too)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, r in enumerate(cells):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def verdict(ratio: float, target: float, lower_is_better: bool = True) -> str:
    if ratio != ratio:
        return "n/a"
    ok = ratio <= target if lower_is_better else ratio >= target
    return "PASS" if ok else "FAIL"


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    try:
        env["load_avg"] = os.getloadavg()
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as fh:
            env["mem_total_kb"] = int(fh.readline().split()[1])
    except OSError:
        pass
    for module in ("duckdb", "pyarrow", "pyspark", "hudi", "fastavro", "numpy"):
        try:
            env[module] = __import__(module).__version__
        except Exception:
            pass
    return env


def write_results(kind: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS_DIR / f"{kind}-{stamp}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    return path


def remove(path: str | Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def dir_size(path: str | Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def count_files(path: str | Path, suffix: str) -> int:
    n = 0
    for root, _, files in os.walk(path):
        if "/.hoodie" in root or root.endswith(".hoodie"):
            continue
        n += sum(1 for f in files if f.endswith(suffix) or (suffix == ".log" and ".log." in f))
    return n


def quiet_spark_logs() -> None:
    import logging

    logging.getLogger("py4j").setLevel(logging.ERROR)


def spark_session(app: str, shuffle_partitions: int | None = None):
    # no console progress bars in benchmark output
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--conf spark.ui.showConsoleProgress=false pyspark-shell")
    from spark_writer.session import local_session

    parts = shuffle_partitions or int(os.environ.get("HUDI_DUCK_BENCH_SHUFFLE_PARTITIONS", "4"))
    spark = local_session(app_name=app, shuffle_partitions=parts)
    spark.sparkContext.setLogLevel("ERROR")
    quiet_spark_logs()
    return spark
