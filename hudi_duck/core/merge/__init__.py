"""Record merging: merge modes, ordering fields and how log records combine with base records."""
