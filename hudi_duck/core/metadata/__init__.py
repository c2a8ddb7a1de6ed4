"""The metadata table (``.hoodie/metadata``): its records, layout rules and the ``files`` listing."""
