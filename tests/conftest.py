"""Shared test fixtures: unzipped Hudi tables and one Spark session per run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import hudi_duck

sys.path.insert(0, str(Path(__file__).resolve().parent))

import executor_env  # noqa: E402
from fixtures import fixture_id, fixture_zips, unzip_fixture  # noqa: E402


def pytest_configure(config):
    """Compile the project's modules once: the run starts hundreds of Python processes (Spark
    workers, killed writers, concurrent jobs) that import them, and where the environment
    sets ``PYTHONDONTWRITEBYTECODE`` each would compile them again. Python checks a ``.pyc``
    against its source, so a stale one is never used."""
    import compileall

    root = Path(__file__).resolve().parent.parent
    for package in ("hudi_duck", "spark_writer", "tests"):
        compileall.compile_dir(str(root / package), quiet=2)


FIXTURE_ZIPS = fixture_zips()
FIXTURE_IDS = [fixture_id(z) for z in FIXTURE_ZIPS]


@pytest.fixture(scope="session")
def fixture_tables(tmp_path_factory) -> dict[str, str]:
    """Every fixture table unzipped once per session: id -> base path."""
    root = tmp_path_factory.mktemp("fixtures")
    return {fixture_id(z): str(unzip_fixture(z, root)) for z in FIXTURE_ZIPS}


@pytest.fixture()
def fresh_fixture(tmp_path):
    """Unzip one fixture into a private folder (for tests that modify it)."""

    def make(fid: str) -> str:
        (zip_path,) = [z for z in FIXTURE_ZIPS if fixture_id(z) == fid]
        return str(unzip_fixture(zip_path, tmp_path))

    return make


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run: tiny inputs in two slices and two shuffle
    partitions, as many as the machine's cores (more only add Python tasks to every write)."""
    from spark_writer.session import local_session

    session = local_session(shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def con():
    """A DuckDB connection with the hudi_* functions, one per test module."""
    connection = hudi_duck.connect()
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def small_spark(spark):
    """The session's Spark with few shuffle partitions (tiny data, 2 cores)."""
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", previous)


def pytest_collection_modifyitems(session, config, items):
    """Start building the executors' virtualenv at once when a selected test needs it, and run
    the modules that need it last, so the build overlaps the rest of the run."""
    wanted = {"executor_env", "executor_archive"}
    needing = {item.module.__name__ for item in items if wanted & set(getattr(item, "fixturenames", ()))}
    if not needing or config.option.collectonly:
        return
    executor_env.start()
    items[:] = [i for i in items if i.module.__name__ not in needing] + [i for i in items if i.module.__name__ in needing]


def pytest_sessionfinish(session, exitstatus):
    executor_env.remove()
