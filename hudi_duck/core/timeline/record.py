"""Typed views of Hudi's timeline records, and how they map to Hudi's field names.

Every plan and metadata record Hudi writes on the timeline is a dataclass here.
A field's Hudi name is its attribute in camelCase unless given; nested records
are declared once (``hudi(record=..., shape=...)``). Decoding keeps the values
exactly as written (``None`` where Hudi wrote null) and keeps fields this version
does not know in ``extra``, so what is read encodes back to the same record.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, ClassVar, Mapping, TypeVar

from . import codec

R = TypeVar("R", bound="HudiRecord")

#: How a record-valued field holds its records.
ONE, LIST, MAP, MAP_OF_LISTS = "one", "list", "map", "map_of_lists"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def hudi(
    default: Any = None,
    *,
    key: str | None = None,
    record: type | None = None,
    shape: str = ONE,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A dataclass field of a Hudi record: its Hudi ``key`` and nested ``record`` type."""
    meta = {"hudi": (key, record, shape)}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class _Spec:
    attr: str
    key: str
    record: type | None
    shape: str


def _decode_value(spec: _Spec, value: Any) -> Any:
    if value is None or spec.record is None:
        return value
    make = spec.record.from_record
    if spec.shape == ONE:
        return make(value)
    if spec.shape == LIST:
        return [make(v) if v is not None else None for v in value]
    if spec.shape == MAP:
        return {k: make(v) if v is not None else None for k, v in value.items()}
    return {k: [make(v) if v is not None else None for v in items] if items is not None else None for k, items in value.items()}


def _encode_value(spec: _Spec, value: Any) -> Any:
    if value is None or spec.record is None:
        return value

    def one(v: Any) -> Any:
        return v.to_record() if v is not None else None

    if spec.shape == ONE:
        return one(value)
    if spec.shape == LIST:
        return [one(v) for v in value]
    if spec.shape == MAP:
        return {k: one(v) for k, v in value.items()}
    return {k: [one(v) for v in items] if items is not None else None for k, items in value.items()}


@dataclass
class HudiRecord:
    """Base of every typed Hudi record; ``extra`` keeps fields of newer Hudi versions."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True, repr=False)

    @classmethod
    def specs(cls) -> tuple[_Spec, ...]:
        return _specs_of(cls)

    @classmethod
    def from_record(cls: type[R], raw: Mapping[str, Any]) -> R:
        """The typed record of a decoded Avro / JSON record."""
        plain, nested, known = _decoding_of(cls)
        values = {attr: raw[key] for key, attr in plain if key in raw}
        for spec in nested:
            if spec.key in raw:
                values[spec.attr] = _decode_value(spec, raw[spec.key])
        # (a commit's metadata holds a record per file written: skip the scan for unknown keys when none can be)
        extra = {k: v for k, v in raw.items() if k not in known} if len(values) != len(raw) else {}
        return cls(**values, extra=extra)

    def to_record(self) -> dict[str, Any]:
        """The record with Hudi's field names, in declaration order, unknown fields last."""
        out = {s.key: _encode_value(s, getattr(self, s.attr)) for s in self.specs()}
        out.update(self.extra)
        return out


@lru_cache(maxsize=None)
def _decoding_of(cls: type) -> tuple[tuple[tuple[str, str], ...], tuple[_Spec, ...], frozenset[str]]:
    """A record type's fields split for decoding: (Hudi key, attribute) of plain values, the
    specs of record-valued fields, and every Hudi key it knows."""
    specs = _specs_of(cls)
    plain = tuple((s.key, s.attr) for s in specs if s.record is None)
    nested = tuple(s for s in specs if s.record is not None)
    return plain, nested, frozenset(s.key for s in specs)


@lru_cache(maxsize=None)
def _specs_of(cls: type) -> tuple[_Spec, ...]:
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("hudi")
        if meta is None:
            continue
        key, record, shape = meta
        out.append(_Spec(f.name, key or _camel(f.name), record, shape))
    return tuple(out)


@dataclass
class TimelinePayload(HudiRecord):
    """A record that is a timeline file of its own (a plan or an action's metadata).

    ``writer_schema`` is the Avro schema of the file it was read from: encoding
    reuses it, so a plan written by Hudi 1.x re-encodes with 1.x's fields.
    """

    MODEL: ClassVar[str] = ""
    writer_schema: str | None = field(default=None, kw_only=True, compare=False, repr=False)

    @classmethod
    def from_bytes(cls: type[R], data: bytes, source: str = "") -> R | None:
        """Decode a timeline file; ``None`` for an empty one."""
        decoded = codec.decode(data, source)
        if decoded is None or decoded.record is None:
            return None
        out = cls.from_record(decoded.record)
        out.writer_schema = decoded.writer_schema
        return out

    def to_bytes(self, sync_marker: bytes | None = None) -> bytes:
        """The Avro container Hudi writes for this record."""
        return codec.encode_avro(self.MODEL, self.to_record(), self.writer_schema, sync_marker)
