"""Comparing schemas across commits (schema history): fingerprints and column changes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import pyarrow as pa


@lru_cache(maxsize=256)
def schema_fingerprint(schema: str) -> str:
    """Avro's CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form, in hex.

    Identical for schemas that differ only in docs, defaults or properties."""
    import fastavro.schema

    canonical = fastavro.schema.to_parsing_canonical_form(json.loads(schema))
    return fastavro.schema.fingerprint(canonical, "CRC-64-AVRO")


def flatten_fields(schema: pa.Schema) -> dict[str, pa.Field]:
    """Every column and nested struct field by dotted path (``address.city``), in schema order."""
    out: dict[str, pa.Field] = {}

    def visit(fld: pa.Field, prefix: str) -> None:
        path = f"{prefix}{fld.name}"
        out[path] = fld
        if pa.types.is_struct(fld.type):
            for index in range(fld.type.num_fields):
                visit(fld.type.field(index), f"{path}.")

    for fld in schema:
        visit(fld, "")
    return out


@dataclass(frozen=True)
class ColumnChange:
    """A column (or nested field) present in both schemas with another type or nullability."""

    path: str
    old: pa.Field
    new: pa.Field

    @property
    def type_changed(self) -> bool:
        return _leaf_type(self.old) != _leaf_type(self.new)

    @property
    def nullability_changed(self) -> bool:
        return self.old.nullable != self.new.nullable


@dataclass(frozen=True)
class SchemaChange:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[ColumnChange, ...]

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def _leaf_type(fld: pa.Field) -> pa.DataType:
    """A struct's own identity is its fields (compared one by one), not its whole type."""
    return pa.struct([]) if pa.types.is_struct(fld.type) else fld.type


def schema_changes(old: pa.Schema | None, new: pa.Schema) -> SchemaChange:
    """Columns added, removed and changed (type or nullability) from ``old`` to ``new``."""
    before = flatten_fields(old) if old is not None else {}
    after = flatten_fields(new)
    candidates = (ColumnChange(path, before[path], fld) for path, fld in after.items() if path in before)
    changed = tuple(c for c in candidates if c.type_changed or c.nullability_changed)
    return SchemaChange(
        added=tuple(p for p in after if p not in before),
        removed=tuple(p for p in before if p not in after),
        changed=changed,
    )
