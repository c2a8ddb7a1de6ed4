"""Table services: compaction, clustering, clean, archival, rollback, savepoint and restore, and which of
them run after a write."""
