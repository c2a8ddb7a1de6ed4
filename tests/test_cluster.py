"""Writes from a user's own Spark session whose executors run another Python.

Each job runs in a subprocess (``tests/user_job.py``): PySpark takes the executors' Python
from PYSPARK_PYTHON when a SparkContext starts. Broken executor Pythons must fail with the
cause and the fix in a few lines and leave the table as it was; the README's recipes
("Running on a cluster") must write tables hudi_duck reads: an installed virtualenv on a
local master, and a packed virtualenv shipped with ``spark.archives`` to a standalone cluster
(a master and a worker as separate processes on loopback).
"""

from __future__ import annotations

import glob
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import executor_env as executor_env_build

pyspark = pytest.importorskip("pyspark")

USER_JOB = Path(__file__).resolve().parent / "user_job.py"
JOB_TIMEOUT = 420


def _python_version(executable: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([executable, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def other_python() -> str:
    """A Python 3 of another minor version than this one (pyenv's or the system's)."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3")))
    candidates += sorted(glob.glob("/usr/bin/python3.*[0-9]")) + sorted(glob.glob("/usr/local/bin/python3.*[0-9]"))
    for candidate in candidates:
        version = _python_version(candidate)
        if version and version[0] == 3 and version[1] >= 9 and version != sys.version_info[:2]:
            return candidate
    raise AssertionError(
        f"this test needs a Python 3.9+ of another minor version than {sys.version_info[:2]} "
        f"(looked at {candidates}); install one, e.g. with pyenv"
    )


@pytest.fixture(scope="session")
def executor_env() -> Path:
    """A virtualenv with hudi-duck installed (not editable) and nothing else: what the README tells users to build."""
    return executor_env_build.finished().env


@pytest.fixture(scope="session")
def executor_archive(executor_env) -> Path:
    """The executor virtualenv packed with venv-pack, as shipped with ``spark.archives``."""
    return executor_env_build.finished().archive


def _table_files(path: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".crc" not in p.name
    }


def _job(tmp_path: Path, master: str, runs: list[dict], conf: dict | None = None,
         env: dict | None = None) -> tuple[list[str], dict, Path]:
    """The command and environment of a ``user_job.py`` run, and the file its outcomes go to."""
    spec = tmp_path / f"spec-{len(list(tmp_path.glob('spec-*')))}.json"
    result = spec.with_suffix(".result.json")
    spec.write_text(json.dumps({"master": master, "conf": conf or {}, "result": str(result), "runs": runs}))
    return [sys.executable, str(USER_JOB), str(spec)], {**os.environ, **(env or {})}, result


def _outcomes(result: Path, output: str) -> tuple[list[dict], str]:
    assert result.exists(), f"the job wrote no result:\n{output[-5000:]}"
    return json.loads(result.read_text()), output


def _run_job(tmp_path: Path, master: str, runs: list[dict], conf: dict | None = None,
             env: dict | None = None) -> tuple[list[dict], str]:
    """Run ``user_job.py``; returns each run's outcome and what the job printed."""
    command, job_env, result = _job(tmp_path, master, runs, conf, env)
    # from the job's own folder: local-mode Python workers start in the driver's working directory and would
    # import hudi_duck from a checkout there
    return _outcomes(result, _in_pipes(command, job_env, tmp_path))


def _in_pipes(command: list[str], env: dict, cwd: Path) -> str:
    done = subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, timeout=JOB_TIMEOUT, stdin=subprocess.DEVNULL
    )
    return done.stdout + done.stderr


class TerminalRun:
    """A command with stdin/stdout/stderr on a pseudo-terminal, as in an interactive shell,
    started at once; what it prints is read in the background until it ends."""

    def __init__(self, command: list[str], env: dict, cwd: Path) -> None:
        import pty
        import threading

        self.master_fd, slave_fd = pty.openpty()
        self.proc = subprocess.Popen(
            command, env=env, cwd=cwd, stdin=slave_fd, stdout=slave_fd, stderr=slave_fd, start_new_session=True
        )
        os.close(slave_fd)
        self.chunks: list[bytes] = []
        self.timed_out = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        deadline = time.monotonic() + JOB_TIMEOUT
        poller = select.poll()  # (select() refuses descriptors past 1023)
        poller.register(self.master_fd, select.POLLIN)
        while time.monotonic() < deadline:
            ready = poller.poll(500)
            if ready:
                try:
                    data = os.read(self.master_fd, 65536)
                except OSError:  # EIO: every process holding the terminal is gone
                    return
                if not data:
                    return
                self.chunks.append(data)
            elif self.proc.poll() is not None:
                return
        self.timed_out = True

    def output(self) -> str:
        """What the command printed, once it ended."""
        self.reader.join(JOB_TIMEOUT + 60)
        try:
            assert not self.timed_out and not self.reader.is_alive(), "the job did not finish in time"
            self.proc.wait(timeout=60)
        finally:
            self.stop()
        return b"".join(self.chunks).decode(errors="replace")

    def stop(self) -> None:
        _stop(self.proc)
        if self.master_fd is not None:
            self.reader.join(5)
            os.close(self.master_fd)
            self.master_fd = None


def _stop(proc: subprocess.Popen) -> None:
    """End a process we started and its children (its own session)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=20)
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # children left in its session (a JVM)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.fixture(scope="module")
def local_jobs(tmp_path_factory, small_spark, executor_env):
    """One job with a local master, four executor Pythons: three broken, one the README's installed env."""
    import spark_writer
    from hudi_duck.demo import COLUMNS, OPTIONS, TRIPS

    root = tmp_path_factory.mktemp("local-jobs")
    existing = root / "existing"
    spark_writer.write(small_spark.createDataFrame(TRIPS, COLUMNS), str(existing), OPTIONS)
    before = _table_files(existing)
    bare = root / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    pythons = {
        "bare": str(bare / "bin" / "python"),
        "missing": str(root / "no-such-env" / "bin" / "python"),
        "other-version": other_python(),
    }
    runs = [{"name": name, "pyspark_python": python, "table": str(existing), "rows": "update"} for name, python in pythons.items()]
    runs.append({"name": "installed", "pyspark_python": str(executor_env / "bin" / "python"), "table": str(root / "new"), "rows": "trips"})
    # local_session with output to a pipe (CI, log files): no progress bar
    runs.append({"name": "local-session", "pyspark_python": sys.executable, "table": str(root / "piped"), "rows": "update",
                 "local_session": True, "slow_stage": True})
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # (Spark 4 shows it by default, terminal or not)
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
    }
    outcomes, output = _run_job(root, "local[2]", runs, conf)
    return {
        "outcomes": {o["name"]: o for o in outcomes},
        "output": output,
        "pythons": pythons,
        "existing": existing,
        "before": before,
        "new": root / "new",
        "executor_env": executor_env,
    }


def _assert_clear(message: str) -> None:
    assert "Traceback" not in message and "\tat " not in message, message
    assert len(message.splitlines()) <= 4 and len(message) < 1200, message
    assert "nothing was written" in message, message
    assert "Running on a cluster" in message, message


def test_executors_without_hudi_duck_are_named(local_jobs):
    outcome = local_jobs["outcomes"]["bare"]
    assert not outcome["ok"] and outcome["error_type"] == "ExecutorEnvironmentError", outcome
    message = outcome["error"]
    _assert_clear(message)
    assert local_jobs["pythons"]["bare"] in message
    assert "not installed: hudi_duck, spark_writer, pyarrow, fastavro, numpy, fsspec" in message, message
    assert "duckdb" not in message  # executors write files without the DuckDB layer
    assert str(local_jobs["existing"]) in message


def test_missing_executor_python_is_named(local_jobs):
    outcome = local_jobs["outcomes"]["missing"]
    assert not outcome["ok"] and outcome["error_type"] == "ExecutorEnvironmentError", outcome
    message = outcome["error"]
    _assert_clear(message)
    assert f'Cannot run program "{local_jobs["pythons"]["missing"]}"' in message, message
    assert "does not exist where the executors run" in message, message


def test_other_python_version_is_named(local_jobs):
    outcome = local_jobs["outcomes"]["other-version"]
    assert not outcome["ok"] and outcome["error_type"] == "ExecutorEnvironmentError", outcome
    message = outcome["error"]
    _assert_clear(message)
    assert "PYTHON_VERSION_MISMATCH" in message, message
    assert f"must run Python {sys.version_info[0]}.{sys.version_info[1]} like the driver" in message, message


def test_failed_preflight_leaves_the_table_unchanged(local_jobs, con):
    assert _table_files(local_jobs["existing"]) == local_jobs["before"]
    rows = con.sql(f"SELECT count(*), sum(fare) FROM hudi_snapshot('{local_jobs['existing']}')").fetchall()[0]
    assert rows[0] == 8


def test_installed_executor_env_writes(local_jobs, con):
    """README recipe: hudi-duck installed in the executors' Python, PYSPARK_PYTHON pointing at it."""
    outcome = local_jobs["outcomes"]["installed"]
    assert outcome["ok"], outcome
    assert len(outcome["instants"]) == 2
    fares = dict(con.sql(f"SELECT rider, fare FROM hudi_snapshot('{local_jobs['new']}')").fetchall())
    assert len(fares) == 8 and fares["rider-A"] == 99.0
    assert f"executors ready: {local_jobs['executor_env'] / 'bin' / 'python'} (Python" in local_jobs["output"]


def test_no_progress_bar_without_a_terminal(local_jobs):
    assert local_jobs["outcomes"]["local-session"]["ok"], local_jobs["outcomes"]["local-session"]
    assert "locating records" in local_jobs["output"]  # the phases, though
    assert "[Stage " not in local_jobs["output"], local_jobs["output"][-3000:]


TERMINAL_TEST = "test_console_progress_and_phases_in_a_terminal"


@pytest.fixture(scope="module", autouse=True)
def terminal_job(request, tmp_path_factory):
    """The interactive run starts with the module (when its test is selected), so it runs
    while the local jobs run instead of after them."""
    if not any(item.originalname == TERMINAL_TEST for item in request.session.items):
        yield None
        return
    root = tmp_path_factory.mktemp("terminal")
    runs = [{"name": "terminal", "pyspark_python": sys.executable, "table": str(root / "t"), "rows": "update",
             "local_session": True, "slow_stage": True}]
    command, env, result = _job(root, "local[2]", runs)
    run = TerminalRun(command, env, root)
    try:
        yield root, run, result
    finally:
        run.stop()


def test_console_progress_and_phases_in_a_terminal(terminal_job, con):
    """Interactive runs show Spark's progress bar and the writer's phases as they happen."""
    root, run, result = terminal_job
    outcomes, output = _outcomes(result, run.output())
    assert outcomes[0]["ok"], outcomes
    assert "[Stage " in output, output[-3000:]
    for phase in ("starting Spark", "checking the executors' Python", "locating records", "writing files", "committing"):
        assert phase in output, (phase, output[-3000:])
    assert con.sql(f"SELECT count(*) FROM hudi_snapshot('{root / 't'}')").fetchall()[0][0] == 1


# -- standalone cluster ------------------------------------------------------------------------------------------


def _spark_class(spark_home: Path, cls: str, args: list[str], log: Path, env: dict) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(spark_home / "bin" / "spark-class"), cls, *args],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float = 120) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        match = re.search(pattern, text)
        if match:
            return match
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{pattern!r} not in {log}:\n{log.read_text(errors='replace')[-3000:] if log.exists() else ''}")


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class StandaloneCluster:
    """A Spark standalone master and one worker, separate processes on loopback."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.spark_home = Path(pyspark.__file__).resolve().parent
        self.env = {**os.environ, "SPARK_HOME": str(self.spark_home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
        self.env.pop("PYSPARK_PYTHON", None)
        self.started: list[subprocess.Popen] = []
        port = _free_port()
        self.url = f"spark://127.0.0.1:{port}"
        self.started.append(_spark_class(
            self.spark_home, "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"], root / "master.log", self.env,
        ))
        # the worker retries until the master is up
        self.started.append(_spark_class(
            self.spark_home, "org.apache.spark.deploy.worker.Worker",
            [self.url, "--host", "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", "0",
             "--work-dir", str(root / "work")],
            root / "worker.log", self.env,
        ))

    def ready(self) -> str:
        """The master's URL once the worker registered with it."""
        master, worker = self.started
        _wait_for(self.root / "master.log", r"Starting Spark master at spark://127\.0\.0\.1:\d+", master)
        _wait_for(self.root / "worker.log", r"Successfully registered with master", worker)
        return self.url

    def stop(self) -> None:
        for proc in reversed(self.started):
            _stop(proc)


@pytest.fixture(scope="module", autouse=True)
def cluster_processes(tmp_path_factory):
    """The standalone cluster starts with the module, so it boots while the local jobs run."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture()
def standalone_cluster(cluster_processes) -> StandaloneCluster:
    cluster_processes.ready()
    return cluster_processes


def test_standalone_cluster_with_packed_env(standalone_cluster, executor_archive, tmp_path, con):
    """README recipe: a venv-pack archive shipped with spark.archives, PYSPARK_PYTHON=./environment/bin/python."""
    table = tmp_path / "trips"
    conf = {
        "spark.archives": f"{executor_archive}#environment",
        "spark.executor.memory": "1g",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
    }
    runs = [{"name": "standalone", "pyspark_python": "./environment/bin/python", "table": str(table), "rows": "trips"}]
    outcomes, output = _run_job(tmp_path, standalone_cluster.url, runs, conf, env={"SPARK_LOCAL_IP": "127.0.0.1"})
    assert outcomes[0]["ok"], (outcomes, output[-5000:])
    assert re.search(r"executors ready: \S*/work/app-[^/]+/\d+/environment/bin/python \(Python", output), output[-3000:]
    fares = dict(con.sql(f"SELECT rider, fare FROM hudi_snapshot('{table}')").fetchall())
    assert len(fares) == 8 and fares["rider-A"] == 99.0
    executors = list((standalone_cluster.root / "work").glob("app-*/*/environment/bin/python"))
    assert executors, "the worker did not unpack the shipped environment"
