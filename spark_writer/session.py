"""A local Spark session for tests, demos and notebooks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from hudi_duck.core.errors import HudiError


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


def local_session(app_name: str = "hudi-duck", cores: str = "*", shuffle_partitions: int = 4):
    """A small local[*] Spark session with Arrow enabled.

    Python workers run the driver's own interpreter, so that the packages of this
    environment (pyarrow, fastavro, hudi_duck) are importable on executors too.
    """
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("HUDI_DUCK_SPARK_DRIVER_MEMORY", "3g"))
        .getOrCreate()
    )
