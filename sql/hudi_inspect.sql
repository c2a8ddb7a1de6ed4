-- hudi-duck inspection functions: a table's timeline, plans and files as rows,
-- the views Hudi's CLI prints (commits show, compaction show, show logfile
-- metadata ...). Each macro asks the Python side (hudi_duck_plan) for a scan
-- of the view's rows, built from the timeline and cached as parquet.
-- Instant times are VARCHAR in Hudi's form 'yyyyMMddHHmmssSSS'.

-- One row per write instant (commit, deltacommit, replacecommit; pending ones
-- without statistics) with its write statistics; archived commits on request.
CREATE OR REPLACE TEMP MACRO hudi_commits(path, include_archived := false) AS TABLE
    SELECT * FROM query(hudi_duck_plan('commits', path, NULL, NULL, CAST(include_archived AS BOOLEAN)));

-- One row per file a completed commit wrote (its write stat), for every commit or one instant.
CREATE OR REPLACE TEMP MACRO hudi_commit_files(path, instant := NULL, include_archived := false) AS TABLE
    SELECT * FROM query(hudi_duck_plan('commit_files', path, CAST(instant AS VARCHAR), NULL,
                                       CAST(include_archived AS BOOLEAN)));

-- One row per partition of the latest snapshot (or as of an instant): file groups, files, bytes, records.
CREATE OR REPLACE TEMP MACRO hudi_partitions(path, as_of := NULL, metadata_enable := true) AS TABLE
    SELECT * FROM query(hudi_duck_inspect('partitions', path, CAST(as_of AS VARCHAR), NULL, false,
                                          CAST(metadata_enable AS BOOLEAN)));

-- One row per operation (file slice) of every compaction and log compaction plan, pending or completed.
CREATE OR REPLACE TEMP MACRO hudi_compactions(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('compactions', path, NULL, NULL, false));

-- One row per input file slice of every clustering plan, pending or completed.
CREATE OR REPLACE TEMP MACRO hudi_clustering(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('clustering', path, NULL, NULL, false));

-- One row per clean instant.
CREATE OR REPLACE TEMP MACRO hudi_cleans(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('cleans', path, NULL, NULL, false));

-- One row per partition a clean planned or cleaned.
CREATE OR REPLACE TEMP MACRO hudi_clean_partitions(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('clean_partitions', path, NULL, NULL, false));

-- One row per rollback instant.
CREATE OR REPLACE TEMP MACRO hudi_rollbacks(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('rollbacks', path, NULL, NULL, false));

-- One row per file a rollback deleted, or whose log got a rollback block.
CREATE OR REPLACE TEMP MACRO hudi_rollback_files(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('rollback_files', path, NULL, NULL, false));

-- One row per savepoint.
CREATE OR REPLACE TEMP MACRO hudi_savepoints(path) AS TABLE
    SELECT * FROM query(hudi_duck_plan('savepoints', path, NULL, NULL, false));

-- One row per column of the table schema, latest or as of an instant.
CREATE OR REPLACE TEMP MACRO hudi_schema(path, as_of := NULL) AS TABLE
    SELECT * FROM query(hudi_duck_plan('schema', path, CAST(as_of AS VARCHAR), NULL, false));

-- One row per commit whose schema differs from the previous commit's.
CREATE OR REPLACE TEMP MACRO hudi_schema_history(path, include_archived := false) AS TABLE
    SELECT * FROM query(hudi_duck_plan('schema_history', path, NULL, NULL, CAST(include_archived AS BOOLEAN)));

-- One row per log block of every log file of the table.
CREATE OR REPLACE TEMP MACRO hudi_log_blocks(path, metadata_enable := true) AS TABLE
    SELECT * FROM query(hudi_duck_inspect('log_blocks', path, NULL, NULL, false, CAST(metadata_enable AS BOOLEAN)));
