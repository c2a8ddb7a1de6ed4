"""HFile, the format of HFile log blocks and metadata-table files."""
