"""The executors' virtualenv of the cluster tests, built in the background from the start of a run.

What the README tells users to build: a virtualenv with hudi-duck installed (not editable) and
nothing else, and the same packed with venv-pack for ``spark.archives``. Installing and packing
take a minute of mostly one core; started when the run is collected, they overlap the tests
before ``test_cluster.py`` instead of adding to the run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT = 900

_SCRIPT = """
import subprocess, sys
from pathlib import Path
python, repo, env, archive = sys.executable, sys.argv[1], Path(sys.argv[2]), sys.argv[3]
subprocess.run([python, "-m", "venv", "--without-pip", str(env)], check=True)
subprocess.run([python, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q", repo], check=True)
import venv_pack
venv_pack.pack(prefix=str(env), output=archive, compress_level=1)
"""


class ExecutorEnvBuild:
    """One background build per run: ``env`` (installed) and ``archive`` (packed)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="hudi-duck-executor-"))
        self.env = self.root / "env"
        self.archive = self.root / "executor-env.tar.gz"
        self.log = self.root / "build.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _SCRIPT, str(REPO_ROOT), str(self.env), str(self.archive)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )

    def wait(self) -> "ExecutorEnvBuild":
        code = self.process.wait(timeout=BUILD_TIMEOUT)
        assert code == 0, f"building the executors' virtualenv failed (exit {code}):\n{self.log.read_text()[-5000:]}"
        return self

    def remove(self) -> None:
        try:  # the build and the pip it runs
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


_build: ExecutorEnvBuild | None = None


def start() -> None:
    """Start the build (once per run)."""
    global _build
    if _build is None:
        _build = ExecutorEnvBuild()


def finished() -> ExecutorEnvBuild:
    """The build, waited for (started now if the run did not start it)."""
    start()
    return _build.wait()


def remove() -> None:
    global _build
    if _build is not None:
        _build.remove()
        _build = None
