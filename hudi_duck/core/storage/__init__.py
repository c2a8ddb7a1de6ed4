"""File system access (local and fsspec) under a table's base path."""
