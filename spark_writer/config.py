"""Write options: Apache Hudi's option names and defaults, validated up front.

Every option a job passes is checked before anything is written: unknown
names (with a did-you-mean hint), bad values and contradictions are errors.
Options Hudi has but that do not apply here (Hive sync ...)
are accepted and reported as ignored.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping

from hudi_duck.core.config.write_settings import (
    LOG_BLOCK_FORMATS,
    BloomFilterSettings,
    FileSettings,
    LogSettings,
    ParquetSettings,
)
from hudi_duck.core.concurrency.settings import OPTION_NAMES as CONCURRENCY_OPTIONS
from hudi_duck.core.concurrency.settings import ConcurrencySettings
from hudi_duck.core.errors import WriteError
from hudi_duck.core.metadata.indexes import IndexSettings
from hudi_duck.core.metadata.writer import MetadataSettings
from hudi_duck.core.services.archival import ArchivalSettings
from hudi_duck.core.services.clean import CleanSettings
from hudi_duck.core.services.clustering import ClusteringSettings
from hudi_duck.core.services.compaction import CompactionSettings
from hudi_duck.core.services.inline import ServiceSettings
from hudi_duck.core.merge.mode import (
    DEFAULT_PAYLOAD,
    MERGE_MODE_OPTION,
    OVERWRITE_WITH_LATEST_PAYLOAD,
    SUPPORTED_PAYLOADS,
    WRITE_PAYLOAD_OPTION,
    MergeConfig,
    MergeMode,
    resolve_write_merge,
)

log = logging.getLogger("spark_writer")

OPERATIONS = (
    "upsert",
    "insert",
    "bulk_insert",
    "delete",
    "delete_partition",
    "insert_overwrite",
    "insert_overwrite_table",
)
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
INDEX_TYPES = ("SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM", "BUCKET", "RECORD_INDEX")


def _bool(value: str) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError("expected true or false")
    return text == "true"


def _int(value: str) -> int:
    return int(str(value).strip())


def _float(value: str) -> float:
    return float(str(value).strip())


def _choice(*allowed: str, upper: bool = True) -> Callable[[str], str]:
    def check(value: str) -> str:
        text = str(value).strip()
        norm = text.upper() if upper else text.lower()
        if norm not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return norm

    return check


def _text(value: str) -> str:
    return str(value)


@dataclass(frozen=True)
class Option:
    key: str
    default: Any
    parse: Callable[[str], Any] = _text
    doc: str = ""
    aliases: tuple[str, ...] = ()
    ignored: bool = False


#: Hudi's defaults, as the core's settings objects carry them.
_PARQUET = ParquetSettings()
_BLOOM = _PARQUET.bloom_filter
_LOG = LogSettings()

_OPTIONS: list[Option] = [
    Option("hoodie.table.name", None, doc="table name (required)", aliases=("hoodie.datasource.write.table.name",)),
    Option("hoodie.database.name", None),
    Option("hoodie.datasource.write.table.type", "COPY_ON_WRITE", _choice(*TABLE_TYPES), aliases=("hoodie.table.type",)),
    Option("hoodie.datasource.write.operation", "upsert", _choice(*OPERATIONS, upper=False)),
    Option("hoodie.datasource.write.recordkey.field", None, aliases=("hoodie.table.recordkey.fields",)),
    Option("hoodie.datasource.write.precombine.field", None, aliases=("hoodie.table.precombine.field", "hoodie.table.ordering.fields")),
    Option("hoodie.datasource.write.partitionpath.field", None, aliases=("hoodie.table.partition.fields",)),
    Option("hoodie.datasource.write.hive_style_partitioning", False, _bool),
    Option("hoodie.datasource.write.partitionpath.urlencode", False, _bool),
    Option("hoodie.datasource.write.keygenerator.class", None, aliases=("hoodie.table.keygenerator.class",)),
    Option("hoodie.datasource.write.keygenerator.type", None),
    Option("hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled", False, _bool),
    Option("hoodie.datasource.write.drop.partition.columns", False, _bool),
    Option(WRITE_PAYLOAD_OPTION, OVERWRITE_WITH_LATEST_PAYLOAD, aliases=("hoodie.compaction.payload.class",)),
    Option(MERGE_MODE_OPTION, None, _choice(*MergeMode.__members__)),
    Option("hoodie.datasource.write.record.merger.impls", None),
    Option("hoodie.datasource.write.insert.drop.duplicates", False, _bool),
    Option("hoodie.datasource.write.partitions.to.delete", None),
    Option("hoodie.datasource.write.reconcile.schema", False, _bool),
    Option("hoodie.populate.meta.fields", True, _bool),
    Option("hoodie.combine.before.insert", False, _bool),
    Option("hoodie.combine.before.upsert", True, _bool),
    Option("hoodie.combine.before.delete", True, _bool),
    Option("hoodie.index.type", "SIMPLE", _choice(*INDEX_TYPES)),
    Option("hoodie.simple.index.update.partition.path", True, _bool),
    Option("hoodie.bloom.index.update.partition.path", True, _bool),
    Option("hoodie.record.index.update.partition.path", False, _bool),
    Option("hoodie.bloom.index.filter.type", _BLOOM.type, _choice("SIMPLE", "DYNAMIC_V0")),
    Option("hoodie.index.bloom.num_entries", _BLOOM.num_entries, _int),
    Option("hoodie.index.bloom.fpp", _BLOOM.fpp, _float),
    Option("hoodie.bloom.index.filter.dynamic.max.entries", _BLOOM.max_entries, _int),
    Option("hoodie.bloom.index.prune.by.ranges", True, _bool),
    Option("hoodie.bucket.index.num.buckets", 256, _int),
    Option("hoodie.bucket.index.hash.field", None),
    Option("hoodie.parquet.max.file.size", _PARQUET.max_file_size, _int),
    Option("hoodie.parquet.small.file.limit", 104857600, _int),
    Option("hoodie.parquet.block.size", _PARQUET.block_size, _int),
    Option("hoodie.parquet.page.size", _PARQUET.page_size, _int),
    Option("hoodie.parquet.compression.codec", _PARQUET.compression, _choice("gzip", "snappy", "zstd", "uncompressed", "lz4", upper=False)),
    Option("hoodie.parquet.compression.ratio", 0.1, _float),
    Option("hoodie.copyonwrite.record.size.estimate", 1024, _int),
    Option("hoodie.copyonwrite.insert.split.size", 500000, _int),
    Option("hoodie.copyonwrite.insert.auto.split", True, _bool),
    Option("hoodie.bulkinsert.shuffle.parallelism", 0, _int),
    Option("hoodie.insert.shuffle.parallelism", 0, _int),
    Option("hoodie.upsert.shuffle.parallelism", 0, _int),
    Option("hoodie.delete.shuffle.parallelism", 0, _int),
    Option("hoodie.bulkinsert.sort.mode", "NONE", _choice("NONE", "GLOBAL_SORT", "PARTITION_SORT", "PARTITION_PATH_REPARTITION")),
    Option("hoodie.logfile.data.block.format", _LOG.block_format, _choice(*LOG_BLOCK_FORMATS, upper=False)),
    Option("hoodie.logfile.max.size", _LOG.max_size, _int),
    Option("hoodie.table.log.file.format", "HOODIE_LOG"),
    Option("hoodie.metadata.enable", True, _bool, doc="keep the metadata table (files partition)"),
    Option("hoodie.metadata.compact.max.delta.commits", 10, _int),
    Option("hoodie.metadata.index.column.stats.enable", False, _bool),
    Option("hoodie.metadata.index.bloom.filter.enable", False, _bool),
    Option("hoodie.metadata.index.column.stats.column.list", None),
    Option("hoodie.metadata.index.column.stats.file.group.count", 2, _int),
    Option("hoodie.metadata.record.index.enable", False, _bool),
    Option("hoodie.metadata.record.index.min.filegroup.count", 10, _int),
    Option("hoodie.metadata.record.index.max.filegroup.count", 10000, _int),
    Option("hoodie.write.markers.type", "DIRECT", _choice("DIRECT", "TIMELINE_SERVER_BASED")),
    Option("hoodie.datasource.write.schema.allow.auto.evolution.column.drop", False, _bool),
    Option("hoodie.schema.on.read.enable", False, _bool),
    Option("hoodie.avro.schema.validate", False, _bool),
    Option("hoodie.table.timeline.timezone", "LOCAL", _choice("LOCAL", "UTC")),
    # table services
    Option("hoodie.compact.inline", False, _bool),
    Option("hoodie.compact.schedule.inline", False, _bool),
    Option("hoodie.compact.inline.max.delta.commits", 5, _int),
    Option("hoodie.compact.inline.max.delta.seconds", 3600, _int),
    Option("hoodie.compact.inline.trigger.strategy", "NUM_COMMITS", _choice("NUM_COMMITS", "TIME_ELAPSED", "NUM_OR_TIME", "NUM_AND_TIME", "NUM_COMMITS_AFTER_LAST_REQUEST")),
    Option("hoodie.compaction.strategy", "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy"),
    Option("hoodie.compaction.target.io", 512000, _int),
    Option("hoodie.compaction.logfile.size.threshold", 0, _int),
    Option("hoodie.compaction.logfile.num.threshold", 0, _int),
    Option("hoodie.clean.automatic", True, _bool),
    Option("hoodie.clean.async", False, _bool, ignored=True),
    Option("hoodie.cleaner.policy", "KEEP_LATEST_COMMITS", _choice("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS")),
    Option("hoodie.cleaner.commits.retained", 10, _int),
    Option("hoodie.cleaner.fileversions.retained", 3, _int),
    Option("hoodie.cleaner.hours.retained", 24, _int),
    Option("hoodie.clean.trigger.strategy", "NUM_COMMITS", _choice("NUM_COMMITS")),
    Option("hoodie.clean.max.commits", 1, _int),
    Option("hoodie.cleaner.parallelism", 200, _int),
    Option("hoodie.archive.automatic", True, _bool),
    Option("hoodie.keep.min.commits", 20, _int),
    Option("hoodie.keep.max.commits", 30, _int),
    Option("hoodie.clustering.inline", False, _bool),
    Option("hoodie.clustering.inline.max.commits", 4, _int),
    Option("hoodie.clustering.plan.strategy.small.file.limit", 314572800, _int),
    Option("hoodie.clustering.plan.strategy.target.file.max.bytes", 1073741824, _int),
    Option("hoodie.clustering.plan.strategy.sort.columns", None),
    Option("hoodie.clustering.plan.strategy.max.num.groups", 30, _int),
    Option("hoodie.clustering.plan.strategy.max.bytes.per.group", 2147483648, _int),
    Option("hoodie.clustering.async.enabled", False, _bool, ignored=True),
    # concurrency: heartbeats of in-flight writes, optimistic concurrency control
    Option(
        "hoodie.cleaner.policy.failed.writes", None, _choice("EAGER", "LAZY", "NEVER"),
        doc="EAGER for a single writer, LAZY under optimistic concurrency control",
        aliases=("hoodie.failed.writes.cleaner.policy",),
    ),
    Option("hoodie.client.heartbeat.interval_in_ms", 60_000, _int),
    Option("hoodie.client.heartbeat.tolerable.misses", 2, _int),
    Option("hoodie.write.concurrency.mode", "SINGLE_WRITER", _choice("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL")),
    Option("hoodie.write.lock.provider", None),
    Option("hoodie.write.lock.filesystem.path", None),
    Option("hoodie.write.lock.filesystem.expire", 0, _int),
    Option("hoodie.write.lock.wait_time_ms", 60_000, _int),
    Option("hoodie.write.lock.wait_time_ms_between_retry", 1_000, _int),
    Option("hoodie.fail.writes.on.inline.table.service.exception", True, _bool),
    Option("hoodie.fail.on.timeline.archiving", True, _bool),
    # accepted for compatibility, no effect here
    Option("hoodie.datasource.hive_sync.enable", False, _bool, ignored=True),
    Option("hoodie.datasource.meta.sync.enable", False, _bool, ignored=True),
    Option("hoodie.embed.timeline.server", True, _bool, ignored=True),
    Option("hoodie.datasource.write.streaming.ignore.failed.batch", False, _bool, ignored=True),
    Option("hoodie.upsert.shuffle.parallelism.auto", True, _bool, ignored=True),
]

_KEY_GENERATOR_PREFIX = "hoodie.keygen."
OPTIONS: dict[str, Option] = {o.key: o for o in _OPTIONS}
ALIASES: dict[str, str] = {alias: o.key for o in _OPTIONS for alias in o.aliases}


def _unknown(key: str) -> WriteError:
    close = difflib.get_close_matches(key, list(OPTIONS) + list(ALIASES), n=3, cutoff=0.75)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return WriteError(f"unknown write option {key!r}.{hint} (options use Apache Hudi's names)")


@dataclass
class WriteConfig:
    """Parsed write options; ``raw`` keeps the options as given."""

    values: dict[str, Any]
    raw: dict[str, str] = field(default_factory=dict)
    keygen_options: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        value = self.values.get(key)
        return default if value is None else value

    # -- convenient views --------------------------------------------------------
    @property
    def table_name(self) -> str:
        return self.values["hoodie.table.name"]

    @property
    def operation(self) -> str:
        return self.values["hoodie.datasource.write.operation"]

    @property
    def table_type(self) -> str:
        return self.values["hoodie.datasource.write.table.type"]

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def record_key_fields(self) -> list[str]:
        return _split(self.values["hoodie.datasource.write.recordkey.field"])

    @property
    def partition_fields(self) -> list[str]:
        return _split(self.values["hoodie.datasource.write.partitionpath.field"])

    @property
    def precombine_field(self) -> str | None:
        fields = _split(self.values["hoodie.datasource.write.precombine.field"])
        return fields[0] if fields else None

    @property
    def index_type(self) -> str:
        return self.values["hoodie.index.type"]

    @property
    def is_global_index(self) -> bool:
        return self.index_type.startswith("GLOBAL_") or self.index_type == "RECORD_INDEX"

    @property
    def update_partition_path(self) -> bool:
        if self.index_type == "RECORD_INDEX":
            return self.values["hoodie.record.index.update.partition.path"]
        if self.index_type == "GLOBAL_BLOOM":
            return self.values["hoodie.bloom.index.update.partition.path"]
        return self.values["hoodie.simple.index.update.partition.path"]

    @property
    def merge(self) -> MergeConfig:
        """The write's merge mode, resolved by the core from the payload class and merge mode options."""
        return resolve_write_merge(self.values[WRITE_PAYLOAD_OPTION], self.values.get(MERGE_MODE_OPTION), self.precombine_field)

    @property
    def payload_class(self) -> str:
        return self.merge.payload_class

    @property
    def event_time_ordering(self) -> bool:
        return self.merge.event_time

    def parallelism(self, operation: str | None = None) -> int:
        op = operation or self.operation
        key = {
            "bulk_insert": "hoodie.bulkinsert.shuffle.parallelism",
            "insert": "hoodie.insert.shuffle.parallelism",
            "delete": "hoodie.delete.shuffle.parallelism",
        }.get(op, "hoodie.upsert.shuffle.parallelism")
        return int(self.values[key])

    @cached_property
    def file_settings(self) -> FileSettings:
        """How data files are written (``hoodie.parquet.*``, bloom filter, ``hoodie.logfile.*``):
        built once, used by writes, compaction and clustering alike."""
        v = self.values
        return FileSettings(
            parquet=ParquetSettings(
                compression=v["hoodie.parquet.compression.codec"],
                max_file_size=v["hoodie.parquet.max.file.size"],
                block_size=v["hoodie.parquet.block.size"],
                page_size=v["hoodie.parquet.page.size"],
                bloom_filter=BloomFilterSettings(
                    type=v["hoodie.bloom.index.filter.type"],
                    num_entries=v["hoodie.index.bloom.num_entries"],
                    fpp=v["hoodie.index.bloom.fpp"],
                    max_entries=v["hoodie.bloom.index.filter.dynamic.max.entries"],
                ),
            ),
            log=LogSettings(block_format=v["hoodie.logfile.data.block.format"], max_size=v["hoodie.logfile.max.size"]),
        )

    @cached_property
    def metadata_settings(self) -> MetadataSettings:
        """The metadata table: kept or not, and its own services' settings."""
        v = self.values
        return MetadataSettings(
            enabled=v["hoodie.metadata.enable"],
            compact_max_delta_commits=v["hoodie.metadata.compact.max.delta.commits"],
            cleaner_commits_retained=min(v["hoodie.cleaner.commits.retained"], 20),
            archive_min_commits=v["hoodie.keep.min.commits"],
            archive_max_commits=v["hoodie.keep.max.commits"],
            indexes=IndexSettings(
                column_stats=v["hoodie.metadata.index.column.stats.enable"],
                column_stats_columns=tuple(_split(v["hoodie.metadata.index.column.stats.column.list"])),
                column_stats_file_groups=v["hoodie.metadata.index.column.stats.file.group.count"],
                record_index=v["hoodie.metadata.record.index.enable"],
                record_index_min_file_groups=v["hoodie.metadata.record.index.min.filegroup.count"],
                record_index_max_file_groups=v["hoodie.metadata.record.index.max.filegroup.count"],
            ),
        )

    @cached_property
    def service_settings(self) -> ServiceSettings:
        """The table services' settings (planning, inline triggers, failure handling)."""
        v = self.values
        sort = v.get("hoodie.clustering.plan.strategy.sort.columns")
        return ServiceSettings(
            compaction=CompactionSettings(
                strategy=v["hoodie.compaction.strategy"],
                target_io_mb=v["hoodie.compaction.target.io"],
                log_file_size_threshold=v["hoodie.compaction.logfile.size.threshold"],
                log_file_num_threshold=v["hoodie.compaction.logfile.num.threshold"],
                max_delta_commits=v["hoodie.compact.inline.max.delta.commits"],
                max_delta_seconds=v["hoodie.compact.inline.max.delta.seconds"],
                trigger_strategy=v["hoodie.compact.inline.trigger.strategy"],
            ),
            clustering=ClusteringSettings(
                small_file_limit=v["hoodie.clustering.plan.strategy.small.file.limit"],
                target_file_max_bytes=v["hoodie.clustering.plan.strategy.target.file.max.bytes"],
                max_bytes_per_group=v["hoodie.clustering.plan.strategy.max.bytes.per.group"],
                max_num_groups=v["hoodie.clustering.plan.strategy.max.num.groups"],
                sort_columns=tuple(_split(sort)) or None,
            ),
            clean=CleanSettings(
                policy=v["hoodie.cleaner.policy"],
                commits_retained=v["hoodie.cleaner.commits.retained"],
                file_versions_retained=v["hoodie.cleaner.fileversions.retained"],
                hours_retained=v["hoodie.cleaner.hours.retained"],
                max_commits=v["hoodie.clean.max.commits"],
            ),
            archival=ArchivalSettings(v["hoodie.keep.min.commits"], v["hoodie.keep.max.commits"]),
            compact_inline=v["hoodie.compact.inline"],
            schedule_compaction_inline=v["hoodie.compact.schedule.inline"],
            cluster_inline=v["hoodie.clustering.inline"],
            cluster_inline_max_commits=v["hoodie.clustering.inline.max.commits"],
            clean_automatic=v["hoodie.clean.automatic"],
            archive_automatic=v["hoodie.archive.automatic"],
            fail_on_service_error=v["hoodie.fail.writes.on.inline.table.service.exception"],
            fail_on_archival_error=v["hoodie.fail.on.timeline.archiving"],
        )

    @cached_property
    def concurrency_settings(self) -> ConcurrencySettings:
        """Heartbeats, failed-write rollback and optimistic concurrency control (core settings)."""
        return ConcurrencySettings.from_options(
            {key: str(self.values[key]) for key in CONCURRENCY_OPTIONS if self.values.get(key) is not None}
        )

    def hoodie_options(self) -> dict[str, str]:
        """Options the core's key generator reads (Hudi names)."""
        out = {k: str(v) for k, v in self.raw.items()}
        for key in (
            "hoodie.datasource.write.recordkey.field",
            "hoodie.datasource.write.partitionpath.field",
            "hoodie.datasource.write.hive_style_partitioning",
            "hoodie.datasource.write.partitionpath.urlencode",
            "hoodie.datasource.write.keygenerator.class",
            "hoodie.datasource.write.keygenerator.type",
            "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled",
        ):
            value = self.values.get(key)
            if value is not None:
                out[key] = str(value).lower() if isinstance(value, bool) else str(value)
        out.update(self.keygen_options)
        return out


def _split(value: Any) -> list[str]:
    if value is None:
        return []
    return [p.strip() for p in str(value).split(",") if p.strip()]


def parse_options(options: Mapping[str, Any], for_write: bool = True) -> WriteConfig:
    """Validate and parse write options (Hudi names), filling Hudi's defaults.

    ``for_write=False`` parses options of a table service (no record key needed).
    """
    values: dict[str, Any] = {o.key: o.default for o in _OPTIONS}
    raw: dict[str, str] = {}
    keygen: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise WriteError(f"write option names must be strings, got {key!r}")
        if value is None:
            raise WriteError(f"write option {key!r} has no value (None)")
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if key.startswith(_KEY_GENERATOR_PREFIX):
            keygen[key] = text
            raw[key] = text
            continue
        canonical = ALIASES.get(key, key)
        option = OPTIONS.get(canonical)
        if option is None:
            raise _unknown(key)
        if canonical in seen and seen[canonical] != text:
            raise WriteError(f"options {key!r} and {canonical!r} disagree ({text!r} vs {seen[canonical]!r})")
        seen[canonical] = text
        try:
            values[canonical] = option.parse(text)
        except ValueError as exc:
            raise WriteError(f"write option {key}={text!r} is invalid: {exc}") from exc
        raw[canonical] = text
        if option.ignored:
            log.warning("write option %s has no effect in spark_writer and is ignored", key)
    config = WriteConfig(values, raw, keygen)
    config.concurrency_settings  # refuses contradicting concurrency options up front
    if for_write:
        _check(config)
    else:
        _check_services(config)
    return config


def _check_services(config: WriteConfig) -> None:
    v = config.values
    if v["hoodie.keep.min.commits"] > v["hoodie.keep.max.commits"]:
        raise WriteError("hoodie.keep.min.commits must not exceed hoodie.keep.max.commits")
    if v["hoodie.keep.min.commits"] <= v["hoodie.cleaner.commits.retained"]:
        raise WriteError(
            "hoodie.keep.min.commits must be greater than hoodie.cleaner.commits.retained "
            f"({v['hoodie.keep.min.commits']} <= {v['hoodie.cleaner.commits.retained']}), as in Hudi"
        )


def _check(config: WriteConfig) -> None:
    v = config.values
    if not v.get("hoodie.table.name"):
        raise WriteError("missing write option hoodie.table.name (the table's name)")
    op = config.operation
    if not config.record_key_fields and op not in ("insert", "bulk_insert", "delete_partition", "insert_overwrite_table"):
        raise WriteError(
            f"operation {op} needs hoodie.datasource.write.recordkey.field (the record key column(s))"
        )
    if config.payload_class not in SUPPORTED_PAYLOADS:
        raise WriteError(
            f"{WRITE_PAYLOAD_OPTION}={config.payload_class} is not supported; use "
            f"{OVERWRITE_WITH_LATEST_PAYLOAD} (commit-time ordering) or {DEFAULT_PAYLOAD} (event-time ordering)"
        )
    if config.event_time_ordering and not config.precombine_field:
        raise WriteError(
            f"payload {config.payload_class} orders records by event time and needs "
            "hoodie.datasource.write.precombine.field"
        )
    if len(_split(v.get("hoodie.datasource.write.precombine.field"))) > 1:
        raise WriteError("hoodie.datasource.write.precombine.field accepts one field in table version 6")
    if v["hoodie.parquet.small.file.limit"] > v["hoodie.parquet.max.file.size"]:
        raise WriteError(
            "hoodie.parquet.small.file.limit must not exceed hoodie.parquet.max.file.size "
            f"({v['hoodie.parquet.small.file.limit']} > {v['hoodie.parquet.max.file.size']})"
        )
    if v["hoodie.keep.min.commits"] > v["hoodie.keep.max.commits"]:
        raise WriteError("hoodie.keep.min.commits must not exceed hoodie.keep.max.commits")
    if v["hoodie.keep.min.commits"] <= v["hoodie.cleaner.commits.retained"]:
        raise WriteError(
            "hoodie.keep.min.commits must be greater than hoodie.cleaner.commits.retained "
            f"({v['hoodie.keep.min.commits']} <= {v['hoodie.cleaner.commits.retained']}), as in Hudi"
        )
    if not v["hoodie.populate.meta.fields"]:
        if config.index_type in ("BLOOM", "GLOBAL_BLOOM"):
            raise WriteError(
                f"hoodie.index.type={config.index_type} needs the record keys stored in the files; with "
                "hoodie.populate.meta.fields=false use SIMPLE, GLOBAL_SIMPLE or BUCKET"
            )
        if not config.record_key_fields:
            raise WriteError(
                "hoodie.populate.meta.fields=false needs hoodie.datasource.write.recordkey.field: "
                "generated keys cannot be derived again from the data"
            )
    if config.index_type == "BUCKET" and v["hoodie.bucket.index.num.buckets"] <= 0:
        raise WriteError("hoodie.bucket.index.num.buckets must be positive")
    if v["hoodie.metadata.compact.max.delta.commits"] < 1:
        raise WriteError("hoodie.metadata.compact.max.delta.commits must be at least 1")
    if v["hoodie.metadata.index.bloom.filter.enable"]:
        raise WriteError(
            "hoodie.metadata.index.bloom.filter.enable=true: the writer keeps the metadata table's files, "
            "column_stats and record_index partitions, not bloom_filters; leave it false"
        )
    indexes_wanted = v["hoodie.metadata.index.column.stats.enable"] or v["hoodie.metadata.record.index.enable"]
    if indexes_wanted and not v["hoodie.metadata.enable"]:
        raise WriteError(
            "hoodie.metadata.index.column.stats.enable / hoodie.metadata.record.index.enable need the metadata "
            "table: set hoodie.metadata.enable=true"
        )
    if v["hoodie.metadata.record.index.enable"] and not v["hoodie.populate.meta.fields"]:
        raise WriteError(
            "hoodie.metadata.record.index.enable=true needs the record keys stored in the files: "
            "set hoodie.populate.meta.fields=true"
        )
    if config.index_type == "RECORD_INDEX" and not (v["hoodie.metadata.enable"] and v["hoodie.metadata.record.index.enable"]):
        raise WriteError(
            "hoodie.index.type=RECORD_INDEX looks records up in the metadata table's record index: set "
            "hoodie.metadata.enable=true and hoodie.metadata.record.index.enable=true, or use another hoodie.index.type"
        )
    if v["hoodie.metadata.index.column.stats.file.group.count"] < 1:
        raise WriteError("hoodie.metadata.index.column.stats.file.group.count must be at least 1")
    if not 1 <= v["hoodie.metadata.record.index.min.filegroup.count"] <= v["hoodie.metadata.record.index.max.filegroup.count"]:
        raise WriteError(
            "hoodie.metadata.record.index.min.filegroup.count must be at least 1 and at most "
            "hoodie.metadata.record.index.max.filegroup.count"
        )
    if v.get("hoodie.write.markers.type") == "TIMELINE_SERVER_BASED":
        log.info("hoodie.write.markers.type=TIMELINE_SERVER_BASED: using DIRECT markers (no timeline server)")
