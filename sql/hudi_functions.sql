-- hudi-duck table functions for DuckDB.
--
-- Each macro asks the Python planner (hudi_duck_read for reads, hudi_duck_plan
-- for metadata) for a query over read_parquet and runs it; DuckDB's parquet
-- reader scans the base files. Named parameters take either spelling:
-- as_of := '...' or as_of => '...'.

-- Times (as_of, begin_time, end_time): an instant time 'yyyyMMddHHmmssSSS' or
-- 'yyyyMMddHHmmss', or 'yyyy-MM-dd HH:mm:ss[.SSS]' / 'yyyy-MM-dd'.

-- extract_partition_values_from_path: take partition column values from the
-- partition folder (true: files of other partitions are skipped unopened on a
-- partition filter) or from the data files (false, Hudi's read default; no
-- file skipping). With true, a record whose own value differs from its folder
-- fails the query instead of returning the folder's value.

-- strict: a corrupt or truncated log block (a crashed write, a damaged file)
-- is skipped as Apache Hudi's reader skips it, with a warning on the hudi_duck
-- logger; with strict := true the query fails instead (CorruptFileError naming
-- the log file and the block's offset).

-- metadata_enable (Hudi's hoodie.metadata.enable): a table whose
-- hoodie.properties lists the metadata table's files partition
-- (hoodie.table.metadata.partitions) is planned from its metadata table, no
-- data folder is listed; false lists the table's folders instead.

-- filters: 'column op value' terms joined by AND (op: = != <> < <= > >=;
-- values bare or single-quoted), e.g. filters := 'city = sf AND fare > 10'.
-- Only rows passing every term are returned, and with a metadata table the
-- files its column_stats / partition_stats rule out are never opened.

-- memory_merge_max_size (Hudi's hoodie.memory.merge.max.size; default 1GiB)
-- and memory_spillable_map_path (hoodie.memory.spillable.map.path; default the
-- temporary folder): a file slice whose decoded log records pass the size is
-- merged from spill files in that folder, with DuckDB's memory_limit set to it.

-- Latest snapshot, or the table as of an instant time.
CREATE OR REPLACE TEMP MACRO hudi_snapshot(path, as_of := NULL, extract_partition_values_from_path := true,
                                      strict := false, metadata_enable := true, filters := NULL,
                                      memory_merge_max_size := NULL, memory_spillable_map_path := NULL) AS TABLE
    SELECT * FROM query(hudi_duck_read('snapshot', path, CAST(as_of AS VARCHAR), NULL,
                                       CAST(extract_partition_values_from_path AS BOOLEAN), CAST(strict AS BOOLEAN),
                                       CAST(metadata_enable AS BOOLEAN), CAST(filters AS VARCHAR),
                                       CAST(memory_merge_max_size AS VARCHAR), CAST(memory_spillable_map_path AS VARCHAR)));

-- Base files only (merge-on-read tables without their logs; no log block is read).
CREATE OR REPLACE TEMP MACRO hudi_read_optimized(path, as_of := NULL, extract_partition_values_from_path := true,
                                            metadata_enable := true, filters := NULL) AS TABLE
    SELECT * FROM query(hudi_duck_read('read_optimized', path, CAST(as_of AS VARCHAR), NULL,
                                       CAST(extract_partition_values_from_path AS BOOLEAN), false,
                                       CAST(metadata_enable AS BOOLEAN), CAST(filters AS VARCHAR), NULL, NULL));

-- Records whose commit falls in (begin_time, end_time]. begin_time '000' (or
-- '0', or 'earliest') or NULL: from the first commit, archived ones included;
-- end_time '000': before every commit (an empty window); NULL: the latest.
CREATE OR REPLACE TEMP MACRO hudi_incremental(path, begin_time := NULL, end_time := NULL,
                                         extract_partition_values_from_path := true, strict := false,
                                         metadata_enable := true, filters := NULL,
                                         memory_merge_max_size := NULL, memory_spillable_map_path := NULL) AS TABLE
    SELECT * FROM query(hudi_duck_read('incremental', path, CAST(begin_time AS VARCHAR), CAST(end_time AS VARCHAR),
                                       CAST(extract_partition_values_from_path AS BOOLEAN), CAST(strict AS BOOLEAN),
                                       CAST(metadata_enable AS BOOLEAN), CAST(filters AS VARCHAR),
                                       CAST(memory_merge_max_size AS VARCHAR), CAST(memory_spillable_map_path AS VARCHAR)));

-- One row per instant of the timeline.
CREATE OR REPLACE TEMP MACRO hudi_timeline(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('timeline', path, NULL, NULL, true));

-- One row per file slice a snapshot (as of an instant) reads.
CREATE OR REPLACE TEMP MACRO hudi_file_slices(path, as_of := NULL, metadata_enable := true) AS TABLE
    SELECT * FROM query(hudi_duck_inspect('file_slices', path, CAST(as_of AS VARCHAR), NULL, true,
                                          CAST(metadata_enable AS BOOLEAN)));
