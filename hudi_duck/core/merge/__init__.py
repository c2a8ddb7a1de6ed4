"""Record merging: the merge mode of a table (``mode``), ordering (precombine) values and
how Java compares them (``ordering``), how log records fold and combine with base records
(``fold``), the same rule as SQL (``sql``), and the incoming records Hudi refuses
(``incoming``)."""
