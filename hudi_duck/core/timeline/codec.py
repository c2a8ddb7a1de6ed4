"""The one codec of timeline files: Avro containers and Jackson JSON.

Hudi writes every plan and every service's metadata as an Avro object
container holding one record (``TimelineMetadataUtils.serializeAvroMetadata``).
Commit metadata is Jackson-pretty-printed JSON in table version 6 and an Avro
container in versions 8+. Everything that reads or writes a timeline file's
bytes goes through :func:`decode` / :func:`encode_avro` / :func:`encode_json`,
so the format rules (magic, empty files, error messages) live here only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..avro import models as avro_models
from ..errors import CorruptFileError

AVRO_MAGIC = avro_models.AVRO_MAGIC


@dataclass(frozen=True)
class Decoded:
    """One timeline file's record and, for Avro, the writer schema it embeds."""

    record: dict[str, Any] | None
    #: The Avro schema text of the container (None for JSON); re-encoding with it
    #: reproduces a file written by another Hudi version field for field.
    writer_schema: str | None = None

    @property
    def is_avro(self) -> bool:
        return self.writer_schema is not None


def decode(data: bytes, source: str = "", resolve_to: str | None = None) -> Decoded | None:
    """Decode a timeline file: Avro container or JSON; ``None`` for an empty file.

    Hudi leaves some state files empty (requested commits, inflight compactions);
    they carry no record. ``resolve_to`` reads an Avro record as that 0.14 model
    (Avro schema resolution: fields of newer writers dropped, missing ones defaulted).
    """
    if not data or not data.strip():
        return None
    if data.startswith(AVRO_MAGIC):
        try:
            schema_text = avro_models.container_schema(data)
        except Exception as exc:  # fastavro raises many types
            raise CorruptFileError(f"{source or 'data'}: cannot decode Avro container ({exc})") from exc
        record = avro_models.read_container(data, resolve_to, source)
        return Decoded(record, avro_models.java_schema(resolve_to) if resolve_to else schema_text)
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptFileError(f"{source or 'data'}: neither an Avro container nor JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise CorruptFileError(f"{source or 'data'}: expected a JSON object, found {type(value).__name__}")
    return Decoded(value)


def decode_record(data: bytes, source: str = "", resolve_to: str | None = None) -> dict[str, Any] | None:
    """The record of a timeline file as a plain dict (``None`` when empty)."""
    decoded = decode(data, source, resolve_to)
    return decoded.record if decoded is not None else None


def encode_avro(
    model: str, record: dict[str, Any], writer_schema: str | None = None, sync_marker: bytes | None = None
) -> bytes:
    """An Avro container of one record of ``model`` (Hudi 0.14's schema unless
    ``writer_schema`` names the schema of the file the record came from)."""
    return avro_models.write_container(model, record, sync_marker, writer_schema)


def encode_json(record: dict[str, Any]) -> bytes:
    """JSON as Hudi's Jackson writes commit metadata (table version 6)."""
    return jackson_pretty(record).encode("utf-8")


# -- Jackson's default pretty printer -----------------------------------------------


_encode_string = json.encoder.encode_basestring  # json.dumps(s, ensure_ascii=False), in C
#: a backslash-u00xx escape (a control character), not an escaped backslash before a literal "u00"
_CONTROL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")


def _json_string(text: str) -> str:
    """A JSON string literal as Jackson writes it: non-ASCII kept, control characters without a
    short escape in upper-case hex, as Jackson's ``CharTypes`` has them (Python writes lower case)."""
    literal = _encode_string(text)
    if "\\u00" in literal:
        literal = _CONTROL_ESCAPE.sub(lambda m: f"{m.group(1)}\\u00{m.group(2).upper()}", literal)
    return literal


def _json_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is str:
        return _json_string(value)
    if type(value) is int:
        return int.__repr__(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return _json_string(str(value))


def jackson_pretty(value: Any, indent: int = 0) -> str:
    """Render JSON the way Jackson's ``DefaultPrettyPrinter`` does.

    Objects break lines with two-space indents and ``" : "`` separators;
    arrays stay on one line (``[ a, b ]``); empty containers are ``{ }`` / ``[ ]``.
    Hudi's v6 commit files look like this, and matching it keeps diffs clean.
    """
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = "  " * (indent + 1)
        parts = [f"{inner}{_json_string(str(k))} : {jackson_pretty(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(parts) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, indent) for v in value) + " ]"
    return _json_scalar(value)
