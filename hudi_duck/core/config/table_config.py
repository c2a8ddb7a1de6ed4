"""``.hoodie/hoodie.properties``: the table's persisted configuration.

The file is a Java properties file. Hudi validates it with a CRC32 checksum of
``"<database>.<table name>"`` and falls back to ``hoodie.properties.backup``
when the main file fails that check (a crash while updating it).
"""

from __future__ import annotations

import re

import datetime as _dt
import zlib
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable, Mapping

from ..errors import (
    ConcurrentWriteError,
    InvalidTableConfigError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from ..storage.storage import Storage

METAFOLDER = ".hoodie"
PROPERTIES_FILE = f"{METAFOLDER}/hoodie.properties"
PROPERTIES_BACKUP_FILE = f"{METAFOLDER}/hoodie.properties.backup"


class TableType(str, Enum):
    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class Keys:
    """Names of ``hoodie.properties`` keys (Hudi's own spelling)."""

    NAME = "hoodie.table.name"
    DATABASE_NAME = "hoodie.database.name"
    TYPE = "hoodie.table.type"
    VERSION = "hoodie.table.version"
    INITIAL_VERSION = "hoodie.table.initial.version"
    TIMELINE_LAYOUT_VERSION = "hoodie.timeline.layout.version"
    TIMELINE_PATH = "hoodie.timeline.path"
    TIMELINE_HISTORY_PATH = "hoodie.timeline.history.path"
    TIMELINE_TIMEZONE = "hoodie.table.timeline.timezone"
    ARCHIVELOG_FOLDER = "hoodie.archivelog.folder"
    RECORDKEY_FIELDS = "hoodie.table.recordkey.fields"
    PARTITION_FIELDS = "hoodie.table.partition.fields"
    PRECOMBINE_FIELD = "hoodie.table.precombine.field"
    ORDERING_FIELDS = "hoodie.table.ordering.fields"
    BASE_FILE_FORMAT = "hoodie.table.base.file.format"
    LOG_FILE_FORMAT = "hoodie.table.log.file.format"
    KEY_GENERATOR_CLASS = "hoodie.table.keygenerator.class"
    KEY_GENERATOR_TYPE = "hoodie.table.keygenerator.type"
    HIVE_STYLE_PARTITIONING = "hoodie.datasource.write.hive_style_partitioning"
    URL_ENCODE_PARTITIONING = "hoodie.datasource.write.partitionpath.urlencode"
    DROP_PARTITION_COLUMNS = "hoodie.datasource.write.drop.partition.columns"
    POPULATE_META_FIELDS = "hoodie.populate.meta.fields"
    CREATE_SCHEMA = "hoodie.table.create.schema"
    PAYLOAD_CLASS = "hoodie.compaction.payload.class"
    RECORD_MERGER_STRATEGY = "hoodie.compaction.record.merger.strategy"
    RECORD_MERGE_MODE = "hoodie.record.merge.mode"
    RECORD_MERGE_STRATEGY_ID = "hoodie.record.merge.strategy.id"
    BOOTSTRAP_BASE_PATH = "hoodie.bootstrap.base.path"
    CHECKSUM = "hoodie.table.checksum"
    METADATA_PARTITIONS = "hoodie.table.metadata.partitions"
    METADATA_PARTITIONS_INFLIGHT = "hoodie.table.metadata.partitions.inflight"
    CDC_ENABLED = "hoodie.table.cdc.enabled"
    TABLE_FORMAT = "hoodie.table.format"


# -- Java properties text format ----------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Join backslash-continued lines, drop comments and blank lines."""
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


#: one escape: ``\\uXXXX`` or a backslash and the character after it (a lone trailing backslash stays)
_ESCAPE = re.compile(r"\\(u.{4}|.)", re.DOTALL)


def _unescaped(match: re.Match) -> str:
    code = match.group(1)
    return chr(int(code[1:], 16)) if len(code) == 5 else _ESCAPES.get(code, code)


def _unescape(text: str) -> str:
    return _ESCAPE.sub(_unescaped, text) if "\\" in text else text


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text into a dict (last key wins)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        props[key] = value
    return props


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == " " and (is_key or index == 0):
            out.append("\\ ")
        elif ch in "\\":
            out.append("\\\\")
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\f":
            out.append("\\f")
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def format_properties(props: Mapping[str, str], now: _dt.datetime | None = None) -> str:
    """Render properties the way Hudi stores them (two comment lines, escaped)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    iso = now.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    java_date = now.astimezone(_dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    lines = [f"#Updated at {iso}", f"#{java_date}"]
    for key in sorted(props):
        lines.append(f"{_escape(key, True)}={_escape(str(props[key]), False)}")
    return "\n".join(lines) + "\n"


def table_checksum(props: Mapping[str, str]) -> int:
    """CRC32 of ``"<database>.<table name>"``, as Hudi validates the file."""
    name = props.get(Keys.NAME)
    if not name:
        raise InvalidTableConfigError(f"{Keys.NAME} is required to compute {Keys.CHECKSUM}")
    database = props.get(Keys.DATABASE_NAME, "")
    return zlib.crc32(f"{database}.{name}".encode("utf-8"))


def _is_valid(props: Mapping[str, str]) -> bool:
    if Keys.CHECKSUM not in props:
        return True  # older tables carry no checksum
    try:
        return int(props[Keys.CHECKSUM]) == table_checksum(props)
    except (ValueError, InvalidTableConfigError):
        return False


def _as_bool(value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() == "true"


def _as_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


@dataclass
class TableConfig:
    """Typed view of ``hoodie.properties``; ``props`` keeps every key as read."""

    props: dict[str, str] = field(default_factory=dict)
    source: str = ""

    # -- loading / saving ---------------------------------------------------
    @classmethod
    def load(cls, storage: Storage) -> "TableConfig":
        """Read ``hoodie.properties`` (its backup when it is missing or damaged); the table's
        folder itself is looked at only to explain a missing file."""
        if not storage.exists(PROPERTIES_FILE):
            if not storage.exists(""):
                raise TableNotFoundError(f"table path does not exist: {storage.uri()}")
            if storage.exists(PROPERTIES_BACKUP_FILE):
                return cls._load_file(storage, PROPERTIES_BACKUP_FILE, fallback=None)
            raise TableNotFoundError(
                f"not a Hudi table: {storage.uri()} has no {PROPERTIES_FILE}"
            )
        fallback = PROPERTIES_BACKUP_FILE if storage.exists(PROPERTIES_BACKUP_FILE) else None
        return cls._load_file(storage, PROPERTIES_FILE, fallback)

    @classmethod
    def _load_file(cls, storage: Storage, rel: str, fallback: str | None) -> "TableConfig":
        try:
            text = storage.read(rel).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidTableConfigError(f"{storage.uri(rel)} is not UTF-8 text") from exc
        props = parse_properties(text)
        if not _is_valid(props):
            if fallback is not None:
                return cls._load_file(storage, fallback, None)
            raise InvalidTableConfigError(
                f"{storage.uri(rel)}: {Keys.CHECKSUM}={props.get(Keys.CHECKSUM)!r} does not match "
                f"the table name {props.get(Keys.NAME)!r}; the file is corrupt and no valid "
                f"{PROPERTIES_BACKUP_FILE} exists"
            )
        config = cls(props=props, source=storage.uri(rel))
        config.validate()
        return config

    def to_text(self, now: _dt.datetime | None = None) -> str:
        props = dict(self.props)
        props[Keys.CHECKSUM] = str(table_checksum(props))
        return format_properties(props, now)

    def save(self, storage: Storage) -> None:
        """Write ``hoodie.properties`` (backup first, as Hudi does on update)."""
        text = self.to_text().encode("utf-8")
        if storage.exists(PROPERTIES_FILE):
            storage.write_atomic(PROPERTIES_BACKUP_FILE, storage.read(PROPERTIES_FILE))
            storage.write_atomic(PROPERTIES_FILE, text)
            storage.delete(PROPERTIES_BACKUP_FILE)
        else:
            storage.write_atomic(PROPERTIES_FILE, text)
        self.props[Keys.CHECKSUM] = str(table_checksum(self.props))

    # -- validation --------------------------------------------------------
    def _require(self, key: str) -> str:
        value = self.props.get(key)
        if value is None or value == "":
            raise InvalidTableConfigError(f"{self.source or PROPERTIES_FILE}: missing required key {key}")
        return value

    def validate(self) -> None:
        self._require(Keys.NAME)
        table_type = self.props.get(Keys.TYPE, TableType.COPY_ON_WRITE.value)
        if table_type not in (t.value for t in TableType):
            raise InvalidTableConfigError(
                f"{self.source}: {Keys.TYPE}={table_type!r} is neither COPY_ON_WRITE nor MERGE_ON_READ"
            )
        version = self.props.get(Keys.VERSION, "0")
        if not version.isdigit():
            raise InvalidTableConfigError(f"{self.source}: {Keys.VERSION}={version!r} is not a number")

    def check_readable(self) -> None:
        """Refuse tables whose features would make us return wrong rows."""
        if self.version < 6:
            raise UnsupportedFeatureError(
                f"{self.source}: table version {self.version} is not supported (versions 6, 8 and 9 "
                "are); upgrade the table with Apache Hudi first"
            )
        if self.version > 9:
            raise UnsupportedFeatureError(
                f"{self.source}: table version {self.version} is newer than the versions hudi-duck reads (6, 8, 9)"
            )
        if self.version == 7:
            raise UnsupportedFeatureError(f"{self.source}: table version 7 is not supported")
        fmt = self.base_file_format
        if fmt != "PARQUET":
            raise UnsupportedFeatureError(
                f"{self.source}: base file format {fmt} is not supported (only PARQUET base files are)"
            )
        if self.props.get(Keys.BOOTSTRAP_BASE_PATH):
            raise UnsupportedFeatureError(
                f"{self.source}: bootstrap tables ({Keys.BOOTSTRAP_BASE_PATH}) are not supported"
            )
        if self.props.get(Keys.TABLE_FORMAT, "native") not in ("native", ""):
            raise UnsupportedFeatureError(
                f"{self.source}: {Keys.TABLE_FORMAT}={self.props[Keys.TABLE_FORMAT]} is not supported"
            )

    # -- typed accessors ---------------------------------------------------
    @property
    def name(self) -> str:
        return self.props[Keys.NAME]

    @property
    def database(self) -> str:
        return self.props.get(Keys.DATABASE_NAME, "")

    @property
    def table_type(self) -> TableType:
        return TableType(self.props.get(Keys.TYPE, TableType.COPY_ON_WRITE.value))

    @property
    def is_mor(self) -> bool:
        return self.table_type is TableType.MERGE_ON_READ

    @property
    def version(self) -> int:
        return int(self.props.get(Keys.VERSION, "0"))

    @property
    def timeline_layout_version(self) -> int:
        default = "2" if self.version >= 8 else "1"
        return int(self.props.get(Keys.TIMELINE_LAYOUT_VERSION, default))

    @property
    def timeline_path(self) -> str:
        """Folder of the active timeline, relative to the base path."""
        if self.version >= 8:
            return f"{METAFOLDER}/{self.props.get(Keys.TIMELINE_PATH, 'timeline')}"
        return METAFOLDER

    @property
    def archive_path(self) -> str:
        """Folder of the archived timeline (v6 archive logs, v8+ LSM history)."""
        if self.version >= 8:
            return f"{self.timeline_path}/{self.props.get(Keys.TIMELINE_HISTORY_PATH, 'history')}"
        folder = self.props.get(Keys.ARCHIVELOG_FOLDER, "archived")
        return f"{METAFOLDER}/{folder}"

    @property
    def timeline_timezone_utc(self) -> bool:
        return self.props.get(Keys.TIMELINE_TIMEZONE, "LOCAL").upper() == "UTC"

    @property
    def record_key_fields(self) -> list[str]:
        return _as_list(self.props.get(Keys.RECORDKEY_FIELDS))

    @property
    def partition_fields_spec(self) -> list[str]:
        """Partition fields as stored, possibly with custom-keygen ``:TYPE`` suffixes."""
        return _as_list(self.props.get(Keys.PARTITION_FIELDS))

    @property
    def partition_fields(self) -> list[str]:
        return [spec.split(":", 1)[0] for spec in self.partition_fields_spec]

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields)

    @property
    def ordering_fields(self) -> list[str]:
        value = self.props.get(Keys.ORDERING_FIELDS) or self.props.get(Keys.PRECOMBINE_FIELD)
        return _as_list(value)

    @property
    def base_file_format(self) -> str:
        return self.props.get(Keys.BASE_FILE_FORMAT, "PARQUET").upper()

    @property
    def base_file_extension(self) -> str:
        return "." + self.base_file_format.lower()

    @property
    def log_file_format(self) -> str:
        return self.props.get(Keys.LOG_FILE_FORMAT, "HOODIE_LOG").upper()

    @property
    def key_generator_class(self) -> str | None:
        return self.props.get(Keys.KEY_GENERATOR_CLASS)

    @property
    def key_generator_type(self) -> str | None:
        return self.props.get(Keys.KEY_GENERATOR_TYPE)

    @property
    def hive_style_partitioning(self) -> bool:
        return _as_bool(self.props.get(Keys.HIVE_STYLE_PARTITIONING), False)

    @property
    def url_encode_partitioning(self) -> bool:
        return _as_bool(self.props.get(Keys.URL_ENCODE_PARTITIONING), False)

    @property
    def drop_partition_columns(self) -> bool:
        return _as_bool(self.props.get(Keys.DROP_PARTITION_COLUMNS), False)

    @property
    def populate_meta_fields(self) -> bool:
        return _as_bool(self.props.get(Keys.POPULATE_META_FIELDS), True)

    @property
    def create_schema(self) -> str | None:
        return self.props.get(Keys.CREATE_SCHEMA)

    @property
    def payload_class(self) -> str | None:
        return self.props.get(Keys.PAYLOAD_CLASS)

    @property
    def record_merge_mode(self) -> str | None:
        return self.props.get(Keys.RECORD_MERGE_MODE)

    @property
    def metadata_partitions(self) -> list[str]:
        return _as_list(self.props.get(Keys.METADATA_PARTITIONS))

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    # -- creating a table --------------------------------------------------------------
    def initialize_table(self, storage: Storage) -> None:
        """Create ``.hoodie/`` with the folders Hudi lays out, then ``hoodie.properties``.

        ``hoodie.properties`` is written last: its presence is what makes the
        folder a Hudi table. It is created, never replaced: of two writers creating
        the table at the same moment exactly one does; the other is told so.
        """
        if storage.exists(PROPERTIES_FILE):
            raise InvalidTableConfigError(f"{storage.uri()} is already a Hudi table")
        self.validate()
        for folder in (
            f"{METAFOLDER}/.aux/.bootstrap/.partitions",
            f"{METAFOLDER}/.aux/.bootstrap/.fileids",
            f"{METAFOLDER}/.schema",
            f"{METAFOLDER}/.temp",
            self.archive_path,
        ):
            storage.makedirs(folder)
        if self.version >= 8:
            storage.makedirs(self.timeline_path)
        if not storage.create_atomic(PROPERTIES_FILE, self.to_text().encode("utf-8")):
            raise ConcurrentWriteError(
                f"{storage.uri()}: another writer created this table at the same moment, nothing was written; "
                "write again: the table exists now and the write goes into it"
            )
        self.props[Keys.CHECKSUM] = str(table_checksum(self.props))
        self.source = storage.uri(PROPERTIES_FILE)

    def __repr__(self) -> str:
        return (
            f"TableConfig(name={self.name!r}, type={self.table_type.value}, version={self.version}, "
            f"record_key={self.record_key_fields}, partition={self.partition_fields_spec}, "
            f"ordering={self.ordering_fields})"
        )
