"""A Hudi table opened for reading: configuration, timeline, files and schema."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..config.table_config import TableConfig
from ..errors import SchemaError
from ..merge.rules import MergeConfig, resolve_merge_config
from ..schema.avro_arrow import avro_to_arrow, parse_avro_schema
from ..schema.meta_fields import with_meta_fields, without_meta_fields
from ..storage.storage import Storage, get_storage
from ..timeline.active import Timeline
from .fs_view import FileSystemView

if TYPE_CHECKING:
    from ..metadata.files_reader import MetadataTable


class HudiTable:
    """Entry point of the core: everything the readers and writer derive from a base path."""

    def __init__(self, base_uri: str, storage_options: dict[str, Any] | None = None, *, metadata_enable: bool = False):
        """``metadata_enable``: Hudi's ``hoodie.metadata.enable`` for this table's file listing
        (reads turn it on; writes and table services list storage)."""
        self.storage: Storage = get_storage(base_uri, storage_options)
        self.config: TableConfig = TableConfig.load(self.storage)
        self.metadata_enable = metadata_enable

    @property
    def base_uri(self) -> str:
        return self.storage.base_uri

    @cached_property
    def timeline(self) -> Timeline:
        return Timeline.load(self.storage, self.config)

    @property
    def uses_metadata_table(self) -> bool:
        """Whether listings come from the metadata table: enabled, and the table's
        ``hoodie.table.metadata.partitions`` lists ``files`` (as Hudi's ``isMetadataTableAvailable``)."""
        from ..metadata.layout import FILES

        return self.metadata_enable and FILES.name in self.config.metadata_partitions

    @cached_property
    def metadata_table(self) -> "MetadataTable":
        """The metadata table, opened against this table's timeline."""
        from ..metadata.files_reader import MetadataTable

        return MetadataTable(self.storage, self.timeline)

    @cached_property
    def file_system_view(self) -> FileSystemView:
        listing = None
        if self.uses_metadata_table:
            from ..metadata.files_reader import MetadataListing

            listing = MetadataListing(self.metadata_table)
        return FileSystemView(self.storage, self.config, self.timeline, listing)

    @cached_property
    def merge_config(self) -> MergeConfig:
        return resolve_merge_config(self.config)

    @cached_property
    def key_generator(self):
        from ..keygen import key_generator_from_table_config

        return key_generator_from_table_config(self.config)

    # -- schema -----------------------------------------------------------------------
    @cached_property
    def avro_schema(self) -> str | None:
        """Table schema (Avro JSON) as readers resolve it: latest commit, then a
        data file, then ``hoodie.table.create.schema``."""
        timeline = self.timeline
        latest = timeline.latest_completed_write
        if latest is not None:
            schema = timeline.commit_schema(latest)
            if schema:
                self._avro_schema_origin = f"the schema of commit {self.storage.uri(timeline.file_of(latest))}"
                return schema
        self._avro_schema_origin = f"hoodie.table.create.schema of {self.storage.uri('.hoodie/hoodie.properties')}"
        return self.config.create_schema

    @cached_property
    def data_schema(self) -> pa.Schema:
        """Arrow schema of the data columns (no meta columns)."""
        avro = self.avro_schema
        if avro:
            try:
                parse_avro_schema(avro)
                return without_meta_fields(avro_to_arrow(avro))
            except (SchemaError, KeyError, TypeError, ValueError, AttributeError) as exc:
                problem = str(exc) if isinstance(exc, SchemaError) else f"malformed Avro schema ({type(exc).__name__}: {exc})"
                raise SchemaError(f"Hudi table {self.base_uri}: {self._avro_schema_origin}: {problem}") from exc
        schema = self._schema_from_data_file()
        if schema is None:
            raise SchemaError(f"{self.base_uri}: cannot determine the table schema (no commits, no create schema)")
        return without_meta_fields(schema)

    def _schema_from_data_file(self) -> pa.Schema | None:
        latest = self.timeline.latest_completed_write
        if latest is None:
            return None
        for stat in self.timeline.commit_metadata(latest).write_stats():
            path = stat.path or ""
            if path.endswith(".parquet"):
                with self.storage.open(path) as handle:
                    return pq.read_schema(handle)
        return None

    @cached_property
    def schema(self) -> pa.Schema:
        """Output schema of queries: meta columns (when stored) then data columns."""
        if self.config.populate_meta_fields:
            return with_meta_fields(self.data_schema)
        return self.data_schema

    @property
    def has_meta_fields(self) -> bool:
        return self.config.populate_meta_fields

    def __repr__(self) -> str:
        cfg = self.config
        return (
            f"HudiTable({self.base_uri!r}, name={cfg.name!r}, type={cfg.table_type.value}, "
            f"version={cfg.version}, partitions={cfg.partition_fields})"
        )
