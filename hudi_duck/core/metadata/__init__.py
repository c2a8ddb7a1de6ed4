"""The metadata table (``.hoodie/metadata``): its records, layout rules, the ``files`` listing reads
plan from, and data skipping with its column and partition statistics."""
