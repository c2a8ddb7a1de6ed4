"""A Hudi table: configuration, timeline and file system view together, and read plans over it."""
