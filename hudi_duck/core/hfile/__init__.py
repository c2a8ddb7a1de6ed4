"""HFile (HBase HFile v3): the files of Hudi's metadata table and the content of HFile log blocks."""
