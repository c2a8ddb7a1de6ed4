"""A local Spark session for tests, demos and notebooks."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import time

from hudi_duck.core.errors import HudiError

log = logging.getLogger("spark_writer")


def java_version() -> int:
    """Major version of the ``java`` on PATH (or JAVA_HOME); raises a clear error if none."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    found = shutil.which("java")
    if found:
        candidates.append(found)
    for java in candidates:
        if not os.path.exists(java):
            continue
        try:
            out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
        if match:
            major = int(match.group(1))
            return int(match.group(2)) if major == 1 and match.group(2) else major
    raise HudiError(
        "Spark needs Java 17 or newer, but no `java` was found on PATH or in JAVA_HOME. "
        "Install a JDK (e.g. `apt-get install openjdk-17-jre-headless`) and try again."
    )


def check_java() -> None:
    major = java_version()
    if major < 17:
        raise HudiError(f"Spark needs Java 17 or newer; found Java {major}. Point JAVA_HOME at a newer JDK.")


def console_progress() -> bool:
    """Spark's console progress bar only for people watching: stderr is a terminal (not CI, not a log file)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def local_session_config(
    app_name: str = "hudi-duck", cores: str = "*", shuffle_partitions: int = 4, progress: bool | None = None
) -> dict[str, str]:
    """The Spark settings of :func:`local_session`; ``progress=None`` shows the bar when stderr is a terminal."""
    show = console_progress() if progress is None else progress
    return {
        "spark.master": f"local[{cores}]",
        "spark.app.name": app_name,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(shuffle_partitions),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "true" if show else "false",
        "spark.driver.memory": os.environ.get("HUDI_DUCK_SPARK_DRIVER_MEMORY", "3g"),
    }


def local_session(
    app_name: str = "hudi-duck", cores: str = "*", shuffle_partitions: int = 4, progress: bool | None = None
):
    """A small local[*] Spark session with Arrow enabled.

    Python workers run the driver's own interpreter, so that the packages of this
    environment (pyarrow, fastavro, hudi_duck) are importable on executors too.
    PySpark takes the workers' Python from ``PYSPARK_PYTHON`` when the session starts.
    """
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = local_session_config(app_name, cores, shuffle_partitions, progress)
    settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    log.info("starting Spark (%s) ...", settings["spark.master"])
    started = time.perf_counter()
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    log.info("Spark %s ready in %.1fs", spark.version, time.perf_counter() - started)
    return spark
