"""Replay the Spark SQL of an Apache-Hudi fixture with ``spark_writer``.

Not a SQL parser: it understands exactly the statement shapes the fixture
scripts use (CREATE TABLE ... USING HUDI, INSERT INTO ... VALUES, UPDATE ...
SET ... WHERE, DELETE FROM ... WHERE, ``call rollback_to_instant``). Literals,
types and expressions are handed to Spark's own SQL parser, so values are
exactly what Spark SQL made of them.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field

HUDI_TABLE_TYPES = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}
META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


@dataclass
class Statement:
    kind: str  # create | insert | update | delete | rollback
    text: str
    values: str = ""  # insert: the VALUES rows
    assignments: str = ""  # update: the SET list
    condition: str = ""  # update/delete: the WHERE condition


@dataclass
class TableDef:
    name: str
    columns_ddl: str
    partition_fields: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)


def strip_comments(sql: str) -> str:
    sql = re.sub(r"/\*.*?\*/", "", sql, flags=re.S)
    return re.sub(r"--[^\n]*", "", sql)


def _matching_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def statements(sql: str) -> list[Statement]:
    out = []
    for text in (s.strip() for s in strip_comments(sql).split(";")):
        if not text:
            continue
        head = text.split(None, 2)[0].lower()
        if head == "create":
            out.append(Statement("create", text))
        elif head == "insert":
            m = re.match(r"insert\s+into\s+\w+\s+values\s*(.*)$", text, re.I | re.S)
            out.append(Statement("insert", text, values=m.group(1)))
        elif head == "update":
            m = re.match(r"update\s+\w+\s+set\s+(.*?)\s+where\s+(.*)$", text, re.I | re.S)
            out.append(Statement("update", text, assignments=m.group(1), condition=m.group(2)))
        elif head == "delete":
            m = re.match(r"delete\s+from\s+\w+\s+where\s+(.*)$", text, re.I | re.S)
            out.append(Statement("delete", text, condition=m.group(1)))
        elif head == "call" and "rollback_to_instant" in text:
            out.append(Statement("rollback", text))
        else:
            raise ValueError(f"statement not understood by the replay: {text[:80]}")
    return out


def table_def(create: Statement) -> TableDef:
    text = create.text
    name = re.match(r"create\s+table\s+(\w+)", text, re.I).group(1)
    open_at = text.index("(")
    close_at = _matching_paren(text, open_at)
    columns = " ".join(text[open_at + 1 : close_at].split())
    rest = text[close_at + 1 :]
    partitions: list[str] = []
    m = re.search(r"partitioned\s+by\s*\(([^)]*)\)", rest, re.I)
    if m:
        partitions = [p.strip() for p in m.group(1).split(",") if p.strip()]
    props: dict[str, str] = {}
    m = re.search(r"tblproperties\s*\(", rest, re.I)
    if m:
        body = rest[m.end() - 1 : _matching_paren(rest, m.end() - 1)]
        for km in re.finditer(
            r"""(?:'([^']*)'|"([^"]*)"|([\w.]+))\s*=\s*(?:'([^']*)'|"([^"]*)")""", body
        ):
            key = km.group(1) or km.group(2) or km.group(3)
            value = km.group(4) if km.group(4) is not None else km.group(5)
            props[key] = value
    return TableDef(name, columns, partitions, props)


def write_options(table: TableDef) -> dict[str, str]:
    """TBLPROPERTIES / PARTITIONED BY of a Spark SQL Hudi table -> datasource options."""
    props = dict(table.properties)
    opts = {
        "hoodie.table.name": table.name,
        "hoodie.datasource.write.table.type": HUDI_TABLE_TYPES[props.pop("type", "cow").lower()],
        "hoodie.datasource.write.recordkey.field": props.pop("primaryKey"),
        "hoodie.datasource.write.partitionpath.field": ",".join(table.partition_fields),
        # Spark SQL tables are hive-style partitioned unless the table says otherwise
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }
    precombine = props.pop("preCombineField", None)
    if precombine:
        opts["hoodie.datasource.write.precombine.field"] = precombine
    for key, value in props.items():
        if not key.startswith("hoodie."):
            raise ValueError(f"table property {key} not understood by the replay")
        opts[key] = value
    return opts


@contextmanager
def session_time_zone(spark, zone: str):
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


def _conform(spark, df, schema):
    """Cast ``df``'s columns (by position) to ``schema``, nullability included."""
    from pyspark.sql import functions as F

    cast = df.select([F.col(c).cast(f.dataType).alias(f.name) for c, f in zip(df.columns, schema.fields)])
    return spark.createDataFrame(cast.toArrow(), schema)


def _current_rows(spark, path: str, schema):
    import hudi_duck

    data = hudi_duck.read_snapshot(path).read_all()
    return _conform(spark, spark.createDataFrame(data.select(schema.names)), schema)


def replay(spark, sql: str, path: str, time_zone: str = "UTC") -> dict:
    """Replay ``sql`` into a new table at ``path``; returns what was done, per statement."""
    import spark_writer
    from pyspark.sql.types import _parse_datatype_string
    from hudi_duck.core.services import rollback as rollbacks
    from hudi_duck.core.table.table import HudiTable
    from spark_writer.client import WriteClient
    from spark_writer.config import parse_options

    stmts = statements(sql)
    assert stmts[0].kind == "create", "a fixture script starts with CREATE TABLE"
    table = table_def(stmts[0])
    schema = _parse_datatype_string(table.columns_ddl)
    options = write_options(table)
    done = []
    with session_time_zone(spark, time_zone):
        if len(stmts) == 1:
            # CREATE TABLE alone: only hoodie.properties, through the writer's own table creation
            client = WriteClient(spark, path, parse_options(options))
            data_schema, _ = client.writer_schema(spark.createDataFrame([], schema), None)
            client._new_table_config(data_schema).initialize_table(client.storage)
            done.append("create")
        for stmt in stmts[1:]:
            if stmt.kind == "insert":
                rows = spark.sql(f"SELECT * FROM VALUES {stmt.values}")
                df = _conform(spark, rows, schema)
                spark_writer.write(df, path, {**options, "hoodie.datasource.write.operation": "upsert"})
                done.append("upsert")
            elif stmt.kind == "update":
                current = _current_rows(spark, path, schema)
                current.createOrReplaceTempView("_parity_current")
                sets = {}
                for assignment in stmt.assignments.split(","):
                    column, expr = (p.strip() for p in assignment.split("=", 1))
                    sets[column.lower()] = expr
                exprs = [f"{sets.get(f.name.lower(), f'`{f.name}`')} AS `{f.name}`" for f in schema.fields]
                updated = spark.sql(f"SELECT {', '.join(exprs)} FROM _parity_current WHERE {stmt.condition}")
                df = _conform(spark, updated, schema)
                spark_writer.write(df, path, {**options, "hoodie.datasource.write.operation": "upsert"})
                done.append("upsert (UPDATE)")
            elif stmt.kind == "delete":
                current = _current_rows(spark, path, schema)
                current.createOrReplaceTempView("_parity_current")
                doomed = _conform(spark, spark.sql(f"SELECT * FROM _parity_current WHERE {stmt.condition}"), schema)
                spark_writer.write(doomed, path, {**options, "hoodie.datasource.write.operation": "delete"})
                done.append("delete")
            elif stmt.kind == "rollback":
                # the script names an instant of the run that wrote the fixture; it is the
                # latest completed write at that point, so that is what we roll back
                hudi = HudiTable(path)
                latest = hudi.timeline.latest_completed_write
                rollbacks.rollback(hudi.storage, hudi.config, hudi.timeline, latest)
                done.append("rollback of the latest write")
    return {"options": options, "schema": schema, "statements": done}
