"""Table services after a write: which run, in which order, and what a failure means.

The decisions are here; an engine only runs the heavy part of a compaction or a
clustering (:class:`ServiceEngine`). As in Hudi, the write's instant has committed
before any service starts, so a service failure never undoes the write: it is raised
as :class:`~hudi_duck.core.errors.TableServiceError` naming the committed instant
(``hoodie.fail.writes.on.inline.table.service.exception=true``, Hudi's default, and
``hoodie.fail.on.timeline.archiving=true`` for archival), or logged and reported
when those options are ``false`` (a clean follows the first option: with ``false`` nothing
that fails after the commit is raised). A pending clean whose plan cannot be read never
fails a write: writers drop it first (``hudi_duck.core.concurrency.recovery``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Protocol

from ..concurrency.settings import ConcurrencySettings
from ..errors import TableServiceError
from ..table.table import HudiTable
from . import archival, clean, clustering, compaction

log = logging.getLogger("hudi_duck")


@dataclass(frozen=True)
class ServiceSettings:
    """How table services plan (per service) and which run inline after a write."""

    compaction: compaction.CompactionSettings = field(default_factory=compaction.CompactionSettings)
    clustering: clustering.ClusteringSettings = field(default_factory=clustering.ClusteringSettings)
    clean: clean.CleanSettings = field(default_factory=clean.CleanSettings)
    archival: archival.ArchivalSettings = field(default_factory=archival.ArchivalSettings)
    #: hoodie.compact.inline / hoodie.compact.schedule.inline
    compact_inline: bool = False
    schedule_compaction_inline: bool = False
    #: hoodie.clustering.inline / hoodie.clustering.inline.max.commits
    cluster_inline: bool = False
    cluster_inline_max_commits: int = 4
    #: hoodie.clean.automatic / hoodie.archive.automatic
    clean_automatic: bool = True
    archive_automatic: bool = True
    #: hoodie.fail.writes.on.inline.table.service.exception / hoodie.fail.on.timeline.archiving
    fail_on_service_error: bool = True
    fail_on_archival_error: bool = True


class ServiceEngine(Protocol):
    """Runs a scheduled compaction or clustering where the data is (e.g. Spark executors)."""

    def compact(self, instant_time: str) -> None: ...

    def cluster(self, instant_time: str) -> None: ...


@dataclass
class InlineServices:
    """What ran after a write, and the failures that were reported instead of raised."""

    ran: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run_inline_services(
    open_table: Callable[[], HudiTable],
    settings: ServiceSettings,
    engine: ServiceEngine,
    committed: str | None = None,
    concurrency: ConcurrencySettings | None = None,
) -> InlineServices:
    """Run the services ``settings`` asks for after the write ``committed``; a clean keeps a
    heartbeat and commits under the lock with the write's ``concurrency`` options (the
    engine runs compaction and clustering with them)."""
    outcome = InlineServices()
    table = open_table()
    if table.config.is_mor and (settings.compact_inline or settings.schedule_compaction_inline):
        _guarded(outcome, "compaction", committed, settings.fail_on_service_error, lambda: _compaction(open_table, settings, engine, outcome))
        table = open_table()
    if settings.cluster_inline:
        _guarded(outcome, "clustering", committed, settings.fail_on_service_error, lambda: _clustering(table, settings, engine, outcome))
        table = open_table()
    if settings.clean_automatic and clean.needs_clean(table, settings.clean):
        _guarded(outcome, "clean", committed, settings.fail_on_service_error, lambda: _clean(table, settings, outcome, concurrency))
        table = open_table()
    if settings.archive_automatic:
        _guarded(outcome, "archival", committed, settings.fail_on_archival_error, lambda: _archive(table, settings, outcome))
    return outcome


def _compaction(
    open_table: Callable[[], HudiTable], settings: ServiceSettings, engine: ServiceEngine, outcome: InlineServices
) -> None:
    table = open_table()
    pending = table.timeline.pending_compaction_times() if settings.compact_inline else []
    # runAnyPendingCompactions: a plan scheduled earlier (or a failed attempt) runs first;
    # left pending, its file groups would never be compacted again
    for time_ in pending:
        engine.compact(time_)
        outcome.ran.append(f"compaction {time_}")
    if pending:
        table = open_table()
    if compaction.needs_compaction(table, settings.compaction):
        scheduled = compaction.schedule_compaction(table, settings.compaction, table.timeline.next_instant_time())
        if scheduled is not None:
            outcome.ran.append(f"schedule compaction {scheduled.requested_time}")
            if settings.compact_inline:
                engine.compact(scheduled.requested_time)
                outcome.ran.append(f"compaction {scheduled.requested_time}")


def _clustering(table: HudiTable, settings: ServiceSettings, engine: ServiceEngine, outcome: InlineServices) -> None:
    if clustering.commits_since_last_clustering(table) < settings.cluster_inline_max_commits:
        return
    for time_ in clustering.clusterings_to_run(table, settings.clustering):
        engine.cluster(time_)
        outcome.ran.append(f"clustering {time_}")


def _clean(
    table: HudiTable, settings: ServiceSettings, outcome: InlineServices, concurrency: ConcurrencySettings | None
) -> None:
    done = clean.run_clean(table, settings.clean, concurrency) if concurrency else clean.run_clean(table, settings.clean)
    if done:
        outcome.ran.append(f"clean {done}")


def _archive(table: HudiTable, settings: ServiceSettings, outcome: InlineServices) -> None:
    archived = archival.archive(table, settings.archival)
    if archived:
        log.info("archived %d instants of %s", len(archived), table.base_uri)
        outcome.ran.append(f"archive {len(archived)} instants")


def _guarded(
    outcome: InlineServices, service: str, committed: str | None, fail: bool, run: Callable[[], None]
) -> None:
    """Run one service; its failure is raised (``fail``) or logged and reported."""
    try:
        run()
    except TableServiceError:
        raise
    except Exception as exc:
        where = f"instant {committed} committed; " if committed else ""
        message = f"{where}the inline {service} that followed failed: {exc}"
        if fail:
            raise TableServiceError(message, committed) from exc
        log.warning("%s (the write stands; the service runs again later)", message)
        outcome.errors.append(message)
