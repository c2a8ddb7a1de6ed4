"""The Apache Hudi format, shared by the DuckDB reader and the Spark writer; imports no engine."""
