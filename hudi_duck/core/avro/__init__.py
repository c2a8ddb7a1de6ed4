"""Hudi's own Avro record schemas (0.14/0.15) for timeline, archive and log payloads."""
