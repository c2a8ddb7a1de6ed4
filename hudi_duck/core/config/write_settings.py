"""How data files are written: base files (parquet) and log files.

Built once from a write's options (``spark_writer.config`` maps Hudi's option names
onto them) and passed as objects to every writer of data files: write handles,
compaction and clustering write with the same settings. Defaults are Hudi 0.14's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..index import bloom

_MB = 1024 * 1024


@dataclass(frozen=True)
class BloomFilterSettings:
    """The record-key bloom filter in base file footers (``hoodie.bloom.index.filter.type``,
    ``hoodie.index.bloom.num_entries``, ``hoodie.index.bloom.fpp``,
    ``hoodie.bloom.index.filter.dynamic.max.entries``)."""

    type: str = bloom.DEFAULT_TYPE
    num_entries: int = bloom.DEFAULT_NUM_ENTRIES
    fpp: float = bloom.DEFAULT_FPP
    max_entries: int = bloom.DEFAULT_MAX_ENTRIES


@dataclass(frozen=True)
class ParquetSettings:
    """Base files (``hoodie.parquet.*``)."""

    #: hoodie.parquet.compression.codec (gzip in 0.x); ``none``/``uncompressed`` for none
    compression: str = "gzip"
    #: the codec's level; None: parquet-mr's default for the codec
    compression_level: int | None = None
    #: hoodie.parquet.max.file.size: a new file group starts beyond it
    max_file_size: int = 120 * _MB
    #: hoodie.parquet.block.size: row group size
    block_size: int = 120 * _MB
    #: hoodie.parquet.page.size
    page_size: int = 1 * _MB
    #: dictionary encoding with parquet-mr's fall back to plain
    dictionary_enabled: bool = True
    bloom_filter: BloomFilterSettings = field(default_factory=BloomFilterSettings)


#: Log data block formats (``hoodie.logfile.data.block.format``).
LOG_BLOCK_FORMATS = ("avro", "parquet")


@dataclass(frozen=True)
class LogSettings:
    """Log files of merge-on-read tables (``hoodie.logfile.*``)."""

    #: hoodie.logfile.data.block.format: records as an Avro or a parquet data block
    block_format: str = "avro"
    #: hoodie.logfile.max.size: Hudi rolls over to a new log file beyond it. Every write
    #: here appends to a new log file version, so a file holds one write's blocks.
    max_size: int = 1024 * _MB

    def __post_init__(self) -> None:
        if self.block_format not in LOG_BLOCK_FORMATS:
            raise ValueError(f"log block format {self.block_format!r}: use one of {', '.join(LOG_BLOCK_FORMATS)}")


@dataclass(frozen=True)
class FileSettings:
    """Everything about writing data files: base files and log files."""

    parquet: ParquetSettings = field(default_factory=ParquetSettings)
    log: LogSettings = field(default_factory=LogSettings)
