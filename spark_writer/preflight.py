"""Can the executors run the writer? Asked once per SparkContext, before a write touches the table.

Executors run ``spark_writer``'s functions in their own Python (``PYSPARK_PYTHON``). When
that Python lacks hudi-duck or its dependencies, a task fails deep inside a Spark job
and the cause is buried in a JVM stack trace. A tiny job first asks the executors what
they can import, so a write on a misconfigured cluster stops before it starts an
instant, with the cause and the fix in a few lines.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from hudi_duck.core.errors import WriteError

log = logging.getLogger("spark_writer")

#: What the executor side of a write imports: the executor functions, the core they call, its dependencies.
EXECUTOR_MODULES = ("hudi_duck", "spark_writer.executor", "pyarrow", "fastavro", "numpy", "fsspec")
SEE_README = '(see "Running on a cluster" in the README)'
CLUSTER_HELP = (
    "Executors need hudi-duck and its dependencies in the Python they run (PYSPARK_PYTHON): install them there "
    f"on every node, or ship a packed virtualenv with spark.archives {SEE_README}."
)
_TRACEBACK = "Traceback (most recent call last):"
_JVM_LINE = re.compile(r"^\s*(at [\w$.]+\(|\.\.\. \d+ more|Caused by: |Driver stacktrace:|JVM stacktrace:)")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]*)"[^\n]*')
_LOST_TASK = re.compile(r"most recent failure: Lost task [^\n]*?\): ([^\n]+)")
_NOT_INSTALLED = re.compile(r"^ModuleNotFoundError: No module named '([^']+)'$")
_MISSING_MODULE = re.compile(r"No module named '([^']+)'")
_EXECUTOR_PACKAGES = {name.split(".")[0] for name in EXECUTOR_MODULES}

_checked: set[tuple[str, str]] = set()


class ExecutorEnvironmentError(WriteError):
    """The executors' Python cannot run the writer (missing packages, another Python version)."""


@dataclass(frozen=True)
class ExecutorPython:
    """What one probe task found in its executor's Python."""

    host: str
    executable: str
    python_version: str
    hudi_duck_version: str | None
    import_errors: tuple[tuple[str, str], ...]  # (module, "ErrorType: message")

    @property
    def minor_version(self) -> str:
        return ".".join(self.python_version.split(".")[:2])


def _probe_fn(modules: tuple[str, ...]) -> Callable[[Iterable[int]], Iterator[str]]:
    """The probe task. A closure, so Spark ships its code by value: it runs in a Python without hudi-duck."""

    def probe(_: Iterable[int]) -> Iterator[str]:
        import importlib
        import json
        import socket
        import sys

        errors, version = [], None
        for name in modules:
            try:
                module = importlib.import_module(name)
            except BaseException as exc:  # noqa: BLE001 - any failure to import is the finding
                errors.append((name, f"{type(exc).__name__}: {exc}"))
                continue
            if name == "hudi_duck":
                version = getattr(module, "__version__", None)
        python = ".".join(str(v) for v in sys.version_info[:3])
        yield json.dumps([socket.gethostname(), sys.executable, python, version, errors])

    return probe


def probe_executors(spark) -> list[ExecutorPython]:
    """Run the probe on (at least) as many tasks as the cluster has cores."""
    sc = spark.sparkContext
    tasks = max(1, int(sc.defaultParallelism))
    rows = sc.parallelize(range(tasks), tasks).mapPartitions(_probe_fn(EXECUTOR_MODULES)).collect()
    found = set()
    for row in rows:
        host, executable, python, version, errors = json.loads(row)
        found.add(ExecutorPython(host, executable, python, version, tuple((m, e) for m, e in errors)))
    return sorted(found, key=lambda p: (p.host, p.executable))


def problems(found: list[ExecutorPython], driver_python: str, driver_version: str) -> list[str]:
    """One line per distinct executor Python that cannot run what the driver sends it."""
    driver_minor = ".".join(driver_python.split(".")[:2])
    lines = []
    for python in found:
        issues = []
        not_installed = []  # the missing modules themselves (importing spark_writer.executor may lack pyarrow)
        for _, error in python.import_errors:
            match = _NOT_INSTALLED.match(error)
            if match and match.group(1) not in not_installed:
                not_installed.append(match.group(1))
        if not_installed:
            issues.append("not installed: " + ", ".join(not_installed))
        issues += [f"import {m} fails: {e}" for m, e in python.import_errors if not _NOT_INSTALLED.match(e)]
        if python.minor_version != driver_minor:
            issues.append(f"runs Python {python.python_version}, the driver {driver_python}")
        if python.hudi_duck_version is not None and python.hudi_duck_version != driver_version:
            issues.append(f"has hudi-duck {python.hudi_duck_version}, the driver {driver_version}")
        if issues:
            lines.append(f"{python.executable} (Python {python.python_version} on {python.host}): " + "; ".join(issues))
    return lines


def check_executors(spark, path: str) -> None:
    """Raise ExecutorEnvironmentError unless every executor can import the writer; once per SparkContext."""
    import hudi_duck

    sc = spark.sparkContext
    key = (sc.applicationId, sc.pythonExec)
    if key in _checked:
        return
    started = time.perf_counter()
    log.info("checking the executors' Python (%s) ...", sc.pythonExec)
    driver_python = ".".join(str(v) for v in sys.version_info[:3])
    try:
        found = probe_executors(spark)
    except Exception as exc:  # the probe job itself failed: the Python workers do not even start
        raise ExecutorEnvironmentError(_failure_message(path, "the Spark executors cannot run Python", exc)) from None
    issues = problems(found, driver_python, hudi_duck.__version__)
    if issues:
        raise ExecutorEnvironmentError(
            f"{path}: the Spark executors cannot run the writer, nothing was written:\n"
            + "\n".join(f"  {line}" for line in issues)
            + f"\n{CLUSTER_HELP}"
        )
    _checked.add(key)
    log.info(
        "executors ready: %s, hudi-duck %s (%.1fs)",
        ", ".join(sorted({f"{p.executable} (Python {p.python_version})" for p in found})),
        hudi_duck.__version__,
        time.perf_counter() - started,
    )


def _failure_message(path: str, what: str, exc: BaseException) -> str:
    cause = describe(exc)
    return f"{path}: {what}, nothing was written: {cause}\n{advice(cause)}".rstrip()


def describe(exc: BaseException) -> str:
    """The root cause of a failed Spark job in one or a few lines (never Py4J's "An error occurred while calling")."""
    text = str(exc)
    cause = root_cause(text)
    if cause:
        return cause
    for line in text.splitlines():
        line = line.strip().lstrip(":").strip()
        if line and not line.startswith("An error occurred while calling"):
            return line if ": " in line else f"{type(exc).__name__}: {line}"
    return type(exc).__name__


def root_cause(text: str) -> str | None:
    """The exception a Python worker raised (or why its Python could not start), from a Spark error's text.

    Spark wraps the worker's traceback in a job-abort message and a JVM stack trace;
    the worker's own exception (the last lines of its last traceback) is what names the problem.
    """
    start = text.rfind(_TRACEBACK)
    if start >= 0:
        lines: list[str] = []
        for line in text[start + len(_TRACEBACK):].splitlines():
            if not lines:
                if line.strip() and not line[:1].isspace():
                    lines.append(line.strip())
                continue
            if not line.strip() or line[:1].isspace() or _JVM_LINE.match(line):
                break
            lines.append(line.strip())
        if lines:
            return " ".join(lines[:4])
    match = _CANNOT_RUN.search(text)
    if match:
        return match.group(0).strip()
    match = _LOST_TASK.search(text)
    if match:
        return match.group(1).strip()
    return None


def advice(cause: str) -> str:
    """What to do about an executor-side failure, when its cause says the environment is wrong."""
    if "PYTHON_VERSION_MISMATCH" in cause or "different version" in cause:
        minor = ".".join(str(v) for v in sys.version_info[:2])
        return (
            f"The executors must run Python {minor} like the driver: point PYSPARK_PYTHON at a Python {minor} "
            f"that has hudi-duck installed {SEE_README}."
        )
    if "Cannot run program" in cause:
        return (
            "The executors' Python (PYSPARK_PYTHON) does not exist where the executors run: install hudi-duck into "
            f"a Python on every node and point PYSPARK_PYTHON at it, or ship a packed virtualenv with spark.archives "
            f"{SEE_README}."
        )
    missing = _MISSING_MODULE.search(cause)
    if missing and missing.group(1).split(".")[0] not in _EXECUTOR_PACKAGES:
        return (
            f"The executors' Python (PYSPARK_PYTHON) cannot import {missing.group(1)}, which the job's own functions "
            "need: install it there, or ship it with the job (spark.archives, --py-files)."
        )
    if "ModuleNotFoundError" in cause or "ImportError" in cause:
        return CLUSTER_HELP
    return ""
