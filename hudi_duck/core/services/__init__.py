"""Table services: compaction, clustering, clean, archival, rollback and savepoint."""
