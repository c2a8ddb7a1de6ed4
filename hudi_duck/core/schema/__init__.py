"""Table schemas: Hudi's meta columns, Avro <-> Arrow mapping and schema evolution."""
