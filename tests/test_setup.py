"""The first minutes: README commands = CI, extras, the demo, progress logs, clear executor errors."""

from __future__ import annotations

import io
import logging
import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from hudi_duck.core.errors import WriteError

REPO_ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    """The command lines of the README's first code block."""
    text = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_commands():
    printed = subprocess.run(["bash", str(REPO_ROOT / ".ci" / "run"), "--print"], capture_output=True, text=True, check=True)
    demo, tests = _readme_commands()
    assert printed.stdout.splitlines() == [demo, tests]
    assert "python3 -m venv .venv" in demo and "-e '.[spark]'" in demo and demo.endswith("-m hudi_duck.demo")
    assert "python3 -m venv .venv" in tests and "-e '.[test]'" in tests and tests.endswith("-m pytest -q")


def _requirements(dist: str, extra: str) -> set[str]:
    """Distribution names an extra pulls in, following extras of other distributions one level."""
    names = set()
    for requirement in metadata.requires(dist) or []:
        spec, _, marker = requirement.partition(";")
        if f'extra == "{extra}"' not in marker.replace("'", '"'):
            continue
        match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]+)\])?", spec)
        name, extras = match.group(1).lower(), match.group(2)
        names.add(name)
        for sub in (extras or "").split(","):
            if sub.strip() and name != "hudi-duck":
                names |= _requirements(name, sub.strip())
            elif sub.strip():
                names |= _requirements(dist, sub.strip())
    return names


def test_extras_bring_what_their_path_needs():
    spark = _requirements("hudi-duck", "spark")
    assert {"pyspark", "pandas", "pyarrow"} <= spark, spark  # mapInArrow needs pandas on the driver
    test = _requirements("hudi-duck", "test")
    assert spark <= test and {"pytest", "hudi", "venv-pack"} <= test, test


def test_local_session_progress_bar_follows_the_terminal(monkeypatch):
    from spark_writer.session import local_session_config

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stderr", Terminal())
    assert local_session_config()["spark.ui.showConsoleProgress"] == "true"
    assert local_session_config(progress=False)["spark.ui.showConsoleProgress"] == "false"
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert local_session_config()["spark.ui.showConsoleProgress"] == "false"
    assert local_session_config(progress=True)["spark.ui.showConsoleProgress"] == "true"


# -- the demo ---------------------------------------------------------------------------------------------------


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    from hudi_duck import demo

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    with pytest.raises(SystemExit, match="not empty"):
        demo.main([str(folder)])
    assert (folder / "notes.txt").read_text() == "keep me"


def test_demo_writes_and_queries(small_spark, tmp_path, capsys, caplog):
    from hudi_duck import demo

    path = str(tmp_path / "trips")
    demo.prepare_path(path)
    with caplog.at_level(logging.INFO, logger="spark_writer"):
        first, second, third = demo.write_table(small_spark, path)
    phases = [r.getMessage() for r in caplog.records if r.name == "spark_writer"]
    for instant in (first.instant_time, second.instant_time, third.instant_time):
        assert any(m.endswith(f"{instant}: started a deltacommit on {path}") for m in phases), phases
        assert any(f"{instant}: committing" in m for m in phases), phases
    demo.query_table(path, first.instant_time)
    out = capsys.readouterr().out
    assert re.search(r"rider-D\s+│\s+25\.0", out), out  # the update
    assert "rider-F" not in out.split("-- fares per city")[0].split("-- latest snapshot")[1]  # the delete
    assert re.search(r"sao_paulo\s+│\s+1\s+│\s+43\.4", out), out


# -- phases ------------------------------------------------------------------------------------------------------


def test_write_phases_are_logged_in_order(small_spark, tmp_path, caplog):
    """A job that enables the spark_writer logger sees each phase, services included, as it starts."""
    import spark_writer
    from hudi_duck.demo import COLUMNS, OPTIONS, TRIPS
    from spark_writer import preflight

    preflight._checked.clear()
    path = str(tmp_path / "t")
    options = {**OPTIONS, "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
    with caplog.at_level(logging.INFO, logger="spark_writer"):
        spark_writer.write(small_spark.createDataFrame(TRIPS, COLUMNS), path, options)
        result = spark_writer.write(small_spark.createDataFrame(TRIPS[:2], COLUMNS), path, options)
    messages = [r.getMessage() for r in caplog.records if r.name == "spark_writer"]
    assert sum("checking the executors' Python" in m for m in messages) == 1, messages  # once per SparkContext
    second = [m for m in messages if result.instant_time in m or m.startswith("compaction")]
    expected = ["started a deltacommit", "locating records", "writing files", "wrote", "committing", "compaction", "WriteResult"]
    positions = [next((i for i, m in enumerate(second) if word in m), None) for word in expected]
    assert None not in positions and positions == sorted(positions), second
    assert any(s.startswith("compaction") for s in result.services), result


def test_bulk_insert_phases(small_spark, tmp_path, caplog):
    import spark_writer
    from hudi_duck.demo import COLUMNS, OPTIONS, TRIPS

    options = {**OPTIONS, "hoodie.datasource.write.operation": "bulk_insert"}
    with caplog.at_level(logging.INFO, logger="spark_writer"):
        result = spark_writer.write(small_spark.createDataFrame(TRIPS, COLUMNS), str(tmp_path / "t"), options)
    messages = [r.getMessage() for r in caplog.records if result.instant_time in r.getMessage()]
    words = ["started a deltacommit", "writing files", f"wrote {result.files_written} files", "committing", "WriteResult"]
    positions = [next((i for i, m in enumerate(messages) if w in m), None) for w in words]
    assert None not in positions and positions == sorted(positions), messages


# -- errors from the executors -----------------------------------------------------------------------------------


def test_worker_exception_is_named_in_full(small_spark, tmp_path, con):
    """A Python exception on an executor (here in the job's own UDF) reaches the user whole, with nothing committed."""
    import spark_writer
    from hudi_duck.demo import COLUMNS, OPTIONS, TRIPS
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    spark_writer.write(small_spark.createDataFrame(TRIPS, COLUMNS), path, OPTIONS)
    before = sorted(str(p.relative_to(path)) for p in Path(path).rglob("*") if ".crc" not in p.name)

    def checked_fare(fare):  # (no type hints: a plain row UDF, not a pandas one)
        if fare > 90:
            raise ValueError(f"fare {fare} is above the limit of 90 for this city")
        return fare

    checked = F.udf(checked_fare, "double")
    df = small_spark.createDataFrame(TRIPS, COLUMNS).withColumn("fare", checked("fare"))
    with pytest.raises(WriteError) as info:
        spark_writer.write(df, path, OPTIONS)
    message = str(info.value)
    assert message == f"{path}: write failed, nothing was committed: ValueError: fare 93.5 is above the limit of 90 for this city"
    after = sorted(str(p.relative_to(path)) for p in Path(path).rglob("*") if ".crc" not in p.name)
    new = [p for p in after if p not in before]
    rollbacks = {Path(p).name.split(".")[0] for p in new if p.startswith(".hoodie/") and ".rollback" in p}
    assert len(rollbacks) == 1, new
    rollback_time = rollbacks.pop()

    def rollbacks_own(p: str) -> bool:
        """The rollback's instant, and its delta commit on the metadata table (as Hudi syncs every rollback)."""
        return (
            p.startswith(f".hoodie/{rollback_time}.rollback")
            or p.startswith(f".hoodie/metadata/.hoodie/{rollback_time}.deltacommit")
            or p.startswith(".hoodie/metadata/files/.files-")
            or p.startswith(".hoodie/.temp")
        )

    assert all(rollbacks_own(p) for p in new), new  # only the rollback's own record
    assert con.sql(f"SELECT count(*) FROM hudi_snapshot('{path}')").fetchall()[0][0] == len(TRIPS)


def test_root_cause_of_spark_errors():
    from spark_writer.preflight import advice, root_cause

    py4j = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times, "
        "most recent failure: Lost task 0.3 in stage 3.0 (TID 9) (10.0.0.7 executor 1): "
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/opt/spark/python/lib/pyspark.zip/pyspark/worker.py", line 1200, in main\n'
        "    func, profiler, deserializer, serializer = read_command(pickleSer, infile)\n"
        "ModuleNotFoundError: No module named 'hudi_duck'\n"
        "\n\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:572)\n"
        "\tat org.apache.spark.api.python.PythonRunner$$anon$3.read(PythonRunner.scala:784)\n"
    )
    assert root_cause(py4j) == "ModuleNotFoundError: No module named 'hudi_duck'"
    assert "Running on a cluster" in advice(root_cause(py4j))
    lost = (
        "Job aborted due to stage failure: Task 1 in stage 0.0 failed 1 times, most recent failure: Lost task 1.0 in "
        "stage 0.0 (TID 1) (node-3 executor driver): java.lang.OutOfMemoryError: Java heap space\n\tat java.base/x.y(Z.java:1)"
    )
    assert root_cause(lost) == "java.lang.OutOfMemoryError: Java heap space"
    assert advice("java.lang.OutOfMemoryError: Java heap space") == ""
    assert "cannot import mylib" in advice("ModuleNotFoundError: No module named 'mylib'")


def test_describe_keeps_the_whole_cause():
    from spark_writer.preflight import describe

    class Py4JLike(Exception):
        pass

    text = (
        "An error occurred while calling o88.collectToPython.\n"
        ": java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext. This stopped SparkContext "
        "was created at: org.apache.spark.api.java.JavaSparkContext.<init>(JavaSparkContext.scala:58)\n"
        "\tat org.apache.spark.SparkContext.assertNotStopped(SparkContext.scala:122)\n"
    )
    assert describe(Py4JLike(text)) == text.splitlines()[1][2:]
    assert describe(Py4JLike("")) == "Py4JLike"


def test_probe_findings_name_what_is_wrong():
    from spark_writer.preflight import ExecutorPython, problems

    missing = "ModuleNotFoundError: No module named 'pyarrow'"
    no_pyarrow = ExecutorPython("node-1", "/usr/bin/python3", "3.11.2", None, (
        ("hudi_duck", missing), ("spark_writer.executor", missing), ("pyarrow", missing),
    ))
    old = ExecutorPython("node-2", "/opt/env/bin/python", "3.11.7", "0.0.9", ())
    broken = ExecutorPython("node-3", "/opt/env/bin/python", "3.11.7", None, (("duckdb", "ImportError: libstdc++.so.6: cannot open"),))
    good = ExecutorPython("node-4", "/opt/env/bin/python", "3.11.9", "0.1.0", ())
    other = ExecutorPython("node-5", "/opt/py312/bin/python", "3.12.1", "0.1.0", ())
    assert problems([no_pyarrow, old, broken, good, other], "3.11.7", "0.1.0") == [
        "/usr/bin/python3 (Python 3.11.2 on node-1): not installed: pyarrow",
        "/opt/env/bin/python (Python 3.11.7 on node-2): has hudi-duck 0.0.9, the driver 0.1.0",
        "/opt/env/bin/python (Python 3.11.7 on node-3): import duckdb fails: ImportError: libstdc++.so.6: cannot open",
        "/opt/py312/bin/python (Python 3.12.1 on node-5): runs Python 3.12.1, the driver 3.11.7",
    ]
