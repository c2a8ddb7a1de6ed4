"""Storage access through fsspec, in paths relative to a table's base path."""
