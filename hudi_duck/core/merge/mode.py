"""The merge mode of a table or a write, resolved once from its configuration.

Hudi names how records of one key combine in three ways, depending on the
table version: a payload class (``hoodie.compaction.payload.class``, the write
option ``hoodie.datasource.write.payload.class``), a merge strategy id
(``hoodie.record.merge.strategy.id``, in table version 6
``hoodie.compaction.record.merger.strategy``) and, from Hudi 1.0, a merge mode
(``hoodie.record.merge.mode``). Table version 8 decides by the strategy first,
older versions by the payload class first. Every reader, table service and
writer asks :func:`resolve_merge_config` (tables) or
:func:`resolve_write_merge` (write options); the class names and ids below are
defined nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Mapping

from ..config.table_config import Keys, TableConfig
from ..errors import UnsupportedFeatureError

OVERWRITE_WITH_LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
SUPPORTED_PAYLOADS = (OVERWRITE_WITH_LATEST_PAYLOAD, DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD)
EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"

#: Write options that name the merge (Hudi's spelling).
WRITE_PAYLOAD_OPTION = "hoodie.datasource.write.payload.class"
MERGE_MODE_OPTION = Keys.RECORD_MERGE_MODE


class MergeMode(str, Enum):
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"


@dataclass(frozen=True)
class MergeConfig:
    """How records of one key merge in a table (or a write)."""

    mode: MergeMode
    ordering_field: str | None
    #: Why merging is impossible (custom payloads...); raised only when a merge is needed.
    unsupported: str | None = None
    #: The payload class a version 6 table records for this mode.
    payload_class: str = OVERWRITE_WITH_LATEST_PAYLOAD
    #: Table version: decides how delete-block ordering values compare (see ``ordering``).
    table_version: int = 6

    def require_supported(self, where: str) -> None:
        if self.unsupported:
            raise UnsupportedFeatureError(f"{where}: {self.unsupported}")

    @property
    def event_time(self) -> bool:
        return self.mode is MergeMode.EVENT_TIME_ORDERING

    @property
    def base_ordering_field(self) -> str | None:
        """The field a base row's ordering value is read from: only event-time ordering compares
        it (under commit-time ordering a log record always replaces the base row, ``fold.base_wins``)."""
        return self.ordering_field if self.event_time else None

    @property
    def soft_deletes_ordered(self) -> bool:
        """Does an incoming ``_hoodie_is_deleted`` record yield to a greater stored ordering value?

        ``DefaultHoodieRecordPayload.combineAndGetUpdateValue`` compares it like any
        record; ``EventTimeAvroPayload`` deletes before comparing."""
        return self.payload_class != EVENT_TIME_PAYLOAD


def _first(props: Mapping[str, str], *keys: str) -> str:
    for key in keys:
        value = (props.get(key) or "").strip()
        if value:
            return value
    return ""


def payload_for_mode(mode: MergeMode) -> str:
    """The payload class that stands for a merge mode in table version 6."""
    return DEFAULT_PAYLOAD if mode is MergeMode.EVENT_TIME_ORDERING else OVERWRITE_WITH_LATEST_PAYLOAD


def _mode_of_payload(payload: str) -> MergeMode | None:
    if payload in (DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD):
        return MergeMode.EVENT_TIME_ORDERING
    if payload == OVERWRITE_WITH_LATEST_PAYLOAD:
        return MergeMode.COMMIT_TIME_ORDERING
    return None


def _mode_of_strategy(strategy: str) -> MergeMode | None:
    if strategy == EVENT_TIME_STRATEGY_ID:
        return MergeMode.EVENT_TIME_ORDERING
    if strategy == COMMIT_TIME_STRATEGY_ID:
        return MergeMode.COMMIT_TIME_ORDERING
    return None


def merge_config_from_props(props: Mapping[str, str], version: int, ordering_fields: list[str]) -> MergeConfig:
    """The merge of a table version's properties: merge mode, then strategy / payload (by version)."""
    unsupported = None
    if len(ordering_fields) > 1:
        unsupported = f"multiple ordering fields {','.join(ordering_fields)!r} are not supported"
    ordering_field = ordering_fields[0] if ordering_fields else None

    def config(mode: MergeMode, payload: str | None = None, why: str | None = unsupported) -> MergeConfig:
        return MergeConfig(mode, ordering_field, why, payload or payload_for_mode(mode), version)

    payload = _first(props, Keys.PAYLOAD_CLASS, WRITE_PAYLOAD_OPTION, "hoodie.table.legacy.payload.class")
    mode_text = _first(props, Keys.RECORD_MERGE_MODE).upper()
    if mode_text:
        if mode_text in MergeMode.__members__:
            mode = MergeMode(mode_text)
            # a payload of the same mode keeps its own delete rule (EventTimeAvroPayload)
            return config(mode, payload if _mode_of_payload(payload) is mode else None)
        return config(
            MergeMode.COMMIT_TIME_ORDERING,
            why=f"{Keys.RECORD_MERGE_MODE}={mode_text} (a custom merger) cannot be applied outside the JVM",
        )
    strategy = _first(props, Keys.RECORD_MERGE_STRATEGY_ID, Keys.RECORD_MERGER_STRATEGY)
    if not payload and not strategy:
        return config(MergeMode.EVENT_TIME_ORDERING if ordering_field else MergeMode.COMMIT_TIME_ORDERING)
    if version >= 8:
        mode = _mode_of_strategy(strategy) if strategy else _mode_of_payload(payload)
    else:
        mode = _mode_of_payload(payload) if payload else _mode_of_strategy(strategy)
    if mode is None:
        return config(
            MergeMode.COMMIT_TIME_ORDERING,
            payload,
            f"records merge with payload {payload or '-'} / strategy {strategy or '-'}, a merger of its own "
            "that only the JVM can run; read it read-optimized or compact it with Apache Hudi",
        )
    return config(mode, payload if _mode_of_payload(payload) is mode else None)


def resolve_merge_config(config: TableConfig, options: Mapping[str, str] | None = None) -> MergeConfig:
    """Merge mode and ordering field of a table (``options`` override its properties)."""
    props = dict(config.props)
    props.update(options or {})
    return merge_config_from_props(props, config.version, config.ordering_fields)


def resolve_write_merge(payload_class: str | None, merge_mode: str | None, ordering_field: str | None) -> MergeConfig:
    """The merge of a write (table version 6) from its options: ``hoodie.record.merge.mode``
    wins over ``hoodie.datasource.write.payload.class``, as in Hudi."""
    props = {Keys.PAYLOAD_CLASS: payload_class or OVERWRITE_WITH_LATEST_PAYLOAD}
    if merge_mode:
        props[Keys.RECORD_MERGE_MODE] = merge_mode
    return merge_config_from_props(props, 6, [ordering_field] if ordering_field else [])
