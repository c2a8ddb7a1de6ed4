"""What completed table services did (``<t>.clean``, ``<t>.rollback``, ``<t>.savepoint``,
``<t>.restore``): typed ``HoodieCleanMetadata``, ``HoodieRollbackMetadata``,
``HoodieSavepointMetadata`` and ``HoodieRestoreMetadata``."""

from __future__ import annotations

from dataclasses import dataclass

from .plans import InstantInfo
from .record import LIST, MAP, MAP_OF_LISTS, HudiRecord, TimelinePayload, hudi

# -- clean ----------------------------------------------------------------------------------------


@dataclass
class CleanPartitionMetadata(HudiRecord):
    """``HoodieCleanPartitionMetadata``: what a clean did in one partition (files by name)."""

    partition_path: str = hudi("")
    policy: str = hudi("")
    delete_path_patterns: list[str] = hudi(factory=list)
    success_delete_files: list[str] = hudi(factory=list)
    failed_delete_files: list[str] = hudi(factory=list)
    is_partition_deleted: bool | None = hudi(None)


@dataclass
class CleanMetadata(TimelinePayload):
    """``HoodieCleanMetadata``."""

    MODEL = "HoodieCleanMetadata"

    start_clean_time: str = hudi("")
    time_taken_in_millis: int = hudi(0)
    total_files_deleted: int = hudi(0)
    earliest_commit_to_retain: str = hudi("")
    last_completed_commit_timestamp: str | None = hudi("")
    partition_metadata: dict[str, CleanPartitionMetadata] = hudi(
        record=CleanPartitionMetadata, shape=MAP, factory=dict
    )
    version: int | None = hudi(1)
    bootstrap_partition_metadata: dict[str, CleanPartitionMetadata] | None = hudi(
        None, record=CleanPartitionMetadata, shape=MAP
    )


# -- rollback --------------------------------------------------------------------------------------


@dataclass
class RollbackPartitionMetadata(HudiRecord):
    """``HoodieRollbackPartitionMetadata``: files deleted and rollback blocks appended."""

    partition_path: str = hudi("")
    success_delete_files: list[str] = hudi(factory=list)
    failed_delete_files: list[str] = hudi(factory=list)
    #: log file holding the rollback command block -> its size
    rollback_log_files: dict[str, int] | None = hudi(None)
    #: log file the rolled-back instant appended to -> its size
    log_files_from_failed_commit: dict[str, int] | None = hudi(None)


@dataclass
class RollbackMetadata(TimelinePayload):
    """``HoodieRollbackMetadata``."""

    MODEL = "HoodieRollbackMetadata"

    start_rollback_time: str = hudi("")
    time_taken_in_millis: int = hudi(0)
    total_files_deleted: int = hudi(0)
    commits_rollback: list[str] = hudi(factory=list)
    partition_metadata: dict[str, RollbackPartitionMetadata] = hudi(
        record=RollbackPartitionMetadata, shape=MAP, factory=dict
    )
    version: int | None = hudi(1)
    instants_rollback: list[InstantInfo] = hudi(record=InstantInfo, shape=LIST, factory=list)


# -- savepoint and restore ---------------------------------------------------------------------------


@dataclass
class SavepointPartitionMetadata(HudiRecord):
    partition_path: str = hudi("")
    savepoint_data_file: list[str] = hudi(factory=list)


@dataclass
class SavepointMetadata(TimelinePayload):
    """``HoodieSavepointMetadata``: the base files a savepoint keeps, per partition."""

    MODEL = "HoodieSavepointMetadata"

    savepointed_by: str = hudi("")
    savepointed_at: int = hudi(0)  # seconds since the epoch
    comments: str = hudi("")
    partition_metadata: dict[str, SavepointPartitionMetadata] = hudi(
        record=SavepointPartitionMetadata, shape=MAP, factory=dict
    )
    version: int | None = hudi(1)

    def files(self) -> dict[str, tuple[str, ...]]:
        """Partition -> base file names kept, in partition order."""
        return {
            info.partition_path if info.partition_path is not None else partition: tuple(info.savepoint_data_file or ())
            for partition, info in sorted(self.partition_metadata.items())
        }


@dataclass
class RestoreMetadata(TimelinePayload):
    """``HoodieRestoreMetadata``: the rollback metadata of every instant a restore undid."""

    MODEL = "HoodieRestoreMetadata"

    start_restore_time: str = hudi("")
    time_taken_in_millis: int = hudi(0)
    instants_to_rollback: list[str] = hudi(factory=list)
    hoodie_restore_metadata: dict[str, list[RollbackMetadata]] = hudi(
        record=RollbackMetadata, shape=MAP_OF_LISTS, factory=dict
    )
    version: int | None = hudi(1)
    restore_instant_info: list[InstantInfo] = hudi(record=InstantInfo, shape=LIST, factory=list)


def metadata_class_of(action: str) -> type[TimelinePayload] | None:
    """The metadata a completed ``<t>.<action>`` file of a service holds."""
    from .instant import Action

    return {
        Action.CLEAN: CleanMetadata,
        Action.ROLLBACK: RollbackMetadata,
        Action.SAVEPOINT: SavepointMetadata,
        Action.RESTORE: RestoreMetadata,
    }.get(action)
