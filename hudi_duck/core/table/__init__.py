"""A Hudi table: configuration, timeline and file system view together (listed from storage or the
metadata table), read plans over it and the filters a read knows while planning."""
