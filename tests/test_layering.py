"""Layering: the core and the Spark writer run without DuckDB; the core imports no engine.

Spark executors import ``spark_writer`` and ``hudi_duck.core`` only; DuckDB is the
reader's engine and must not load there. Each check runs in a fresh interpreter so
modules the test session already imported cannot hide an import.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import hudi_duck.core
import spark_writer

CORE_DIR = Path(hudi_duck.core.__path__[0])

#: modules the core may not import, directly or through another module
ENGINE_MODULES = ("duckdb", "pyspark", "hudi_duck.duck", "hudi_duck.shell", "hudi_duck.api", "spark_writer")

BLOCK_DUCKDB = """
import sys

class BlockDuckDB:
    def find_spec(self, name, path=None, target=None):
        if name == "duckdb" or name.startswith("duckdb."):
            raise ImportError(f"{name} is blocked in this test")
        return None

sys.meta_path.insert(0, BlockDuckDB())
"""


def _run(code: str) -> str:
    """Run ``code`` in a fresh interpreter; its stdout, or the failure with its stderr."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def _modules(package) -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."))


def test_core_and_spark_writer_import_without_duckdb():
    modules = ["hudi_duck", *_modules(hudi_duck.core), "spark_writer", *_modules(spark_writer)]
    assert "hudi_duck.core.write.handles" in modules and "spark_writer.executor" in modules
    code = BLOCK_DUCKDB + f"""
import importlib, json
try:
    import duckdb
except ImportError:
    pass
else:
    raise SystemExit("the duckdb block does not work")
for name in {modules!r}:
    importlib.import_module(name)
import hudi_duck
print(json.dumps([hudi_duck.__version__, sorted(m for m in sys.modules if m.split(".")[0] == "duckdb")]))
"""
    version, loaded = json.loads(_run(code))
    assert version == hudi_duck.__version__
    assert loaded == []


def test_duckdb_block_catches_the_duck_layer():
    """The block above is real: the DuckDB layer itself fails to import under it."""
    code = BLOCK_DUCKDB + """
try:
    import hudi_duck.duck
except ImportError as exc:
    print(exc)
"""
    assert "duckdb is blocked" in _run(code)


def test_core_modules_load_no_engine():
    modules = _modules(hudi_duck.core)
    code = f"""
import importlib, json, sys
for name in {modules!r}:
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
"""
    loaded = json.loads(_run(code))
    engines = [m for m in loaded if any(m == e or m.startswith(e + ".") for e in ENGINE_MODULES)]
    assert engines == []


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Absolute names of every module ``path`` imports, also inside functions."""
    package = "hudi_duck." + ".".join(path.relative_to(CORE_DIR.parent).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    else:
        package = package.rsplit(".__init__", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [(node.lineno, target)] + [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def test_core_sources_import_no_engine_even_lazily():
    """Imports inside functions run late; the sources must not name an engine either."""
    offending = []
    for path in sorted(CORE_DIR.rglob("*.py")):
        for line, name in _imported_modules(path):
            if any(name == e or name.startswith(e + ".") for e in ENGINE_MODULES):
                offending.append(f"{path.relative_to(CORE_DIR)}:{line} imports {name}")
    assert offending == []


def test_source_scan_sees_relative_imports():
    """The scan resolves relative imports (else the check above proves nothing)."""
    names = {name for _, name in _imported_modules(CORE_DIR / "table" / "table.py")}
    assert "hudi_duck.core.timeline.active" in names
    assert "hudi_duck.core.keygen" in names  # imported inside a method


def test_package_loads_the_duckdb_layer_on_first_use():
    code = """
import json, sys
import hudi_duck
before = "duckdb" in sys.modules or "hudi_duck.duck" in sys.modules
con = hudi_duck.connect()
macros = con.sql("SELECT count(*) FROM duckdb_functions() WHERE function_name = 'hudi_snapshot'").fetchall()[0][0]
from hudi_duck import read_snapshot, set_progress, HudiTableReader
try:
    hudi_duck.no_such_name
except AttributeError as exc:
    missing = str(exc)
print(json.dumps([before, macros, callable(read_snapshot), "connect" in dir(hudi_duck), missing]))
"""
    before, macros, readable, listed, missing = json.loads(_run(code))
    assert before is False
    assert macros >= 1
    assert readable and listed
    assert "no_such_name" in missing
