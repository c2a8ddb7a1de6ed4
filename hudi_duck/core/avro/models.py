"""Avro schemas of Hudi's own records (``org.apache.hudi.avro.model``).

These are the shapes Hudi 0.14/0.15 (table version 6) writes; payloads such as
delete blocks carry no embedded schema, so the exact field order, unions and
defaults matter for byte compatibility.

Besides the delete-block models this module holds the timeline models Hudi
0.14 serialises with ``TimelineMetadataUtils.serializeAvroMetadata`` (clean,
rollback, compaction, clustering, savepoint, restore, index plans/metadata)
and the archived-timeline entry ``HoodieArchivedMetaEntry``.

Schemas are kept in ``.avsc`` form (plain ``"string"``, cross-file references by
name).  :func:`schema` expands them the way Avro's ``SpecificCompiler`` does
(a named type is defined at its first occurrence, referenced by name after),
and :func:`java_schema_json` renders the text Java's
``SCHEMA$.toString()`` produces, with the ``avro.java.string`` properties the
compiler adds; that text is what Hudi embeds in container files and puts in
the SCHEMA header of archive-log blocks.

The module is long because most of it is schema data: Hudi's record definitions,
transcribed field by field, with the few functions that expand and encode them.

Version notes (see also :data:`SCHEMA_NOTES`): Hudi 1.x added fields to several
of these records (write stats, ``compacted``, ``missingSchedulePartitions``,
``extraMetadata`` ...). Readers decode with the writer schema embedded in the
file, so both versions interoperate; the schemas here are the 0.14 ones that a
table-version-6 writer must produce.
"""

from __future__ import annotations

import copy
import io
import json
import os
from functools import lru_cache
from typing import Any

import fastavro

from ..errors import CorruptFileError

NAMESPACE = "org.apache.hudi.avro.model"
AVRO_MAGIC = b"Obj\x01"


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    """Single-field records Hudi uses to carry typed ordering/stat values."""
    return {
        "type": "record",
        "name": name,
        "namespace": NAMESPACE,
        "fields": [{"name": "value", "type": value_type}],
    }


#: Union branches of ``orderingVal`` in order (index 0 is null).
VALUE_WRAPPERS: list[dict[str, Any]] = [
    _wrapper("BooleanWrapper", "boolean"),
    _wrapper("IntWrapper", "int"),
    _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"),
    _wrapper("DoubleWrapper", "double"),
    _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", "string"),
    _wrapper("DateWrapper", "int"),
    _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _wrapper("TimestampMicrosWrapper", "long"),
]

DELETE_RECORD_LIST: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": NAMESPACE,
    "doc": "A list of delete records stored in the delete block in log block version 3",
    "fields": [
        {
            "name": "deleteRecordList",
            "doc": "A list of Hudi records to delete",
            "type": {
                "type": "array",
                "items": {
                    "name": "HoodieDeleteRecord",
                    "type": "record",
                    "doc": "Individual Hudi record to delete",
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None, "doc": "Record key in String"},
                        {
                            "name": "partitionPath",
                            "type": ["null", "string"],
                            "default": None,
                            "doc": "Partition path in String",
                        },
                        {
                            "name": "orderingVal",
                            "type": ["null"] + VALUE_WRAPPERS,
                            "default": None,
                            "doc": "Ordering value determining the order of merging on the same key",
                        },
                    ],
                },
            },
        }
    ],
}


# -- schema construction helpers ----------------------------------------------------------

_NO_DEFAULT = object()


def _f(name: str, type_: Any, default: Any = _NO_DEFAULT, doc: str | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {"name": name, "type": type_}
    if doc is not None:
        field["doc"] = doc
    if default is not _NO_DEFAULT:
        field["default"] = default
    return field


def _opt(type_: Any) -> list[Any]:
    """``["null", type]`` (the usual nullable union)."""
    return ["null", type_]


def _rec(name: str, fields: list[dict[str, Any]], doc: str | None = None, top: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "record", "name": name}
    if top:
        out["namespace"] = NAMESPACE
    if doc is not None:
        out["doc"] = doc
    out["fields"] = fields
    return out


def _arr(items: Any, **props: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **props}


def _map(values: Any, **props: Any) -> dict[str, Any]:
    return {"type": "map", "values": values, **props}


_VERSION_1 = _f("version", ["int", "null"], 1)
_EXTRA_METADATA = _f("extraMetadata", _opt(_map("string")), None)
_NULL_STR = ["null", "string"]


# -- 0.14 / 0.15 timeline models --------------------------------------------------------------
# Field order, unions and defaults follow hudi-common/src/main/avro/*.avsc of the 0.14.x
# releases; docs are kept because they are part of the schema text Java embeds.

HOODIE_INSTANT_INFO = _rec(
    "HoodieInstantInfo",
    [_f("commitTime", "string"), _f("action", "string")],
)

HOODIE_ACTION_INSTANT = _rec(
    "HoodieActionInstant",
    [_f("timestamp", "string"), _f("action", "string"), _f("state", "string")],
    top=False,
)

HOODIE_CLEAN_FILE_INFO = _rec(
    "HoodieCleanFileInfo",
    [_f("filePath", _NULL_STR, None), _f("isBootstrapBaseFile", ["null", "boolean"], None)],
    top=False,
)

HOODIE_CLEANER_PLAN = _rec(
    "HoodieCleanerPlan",
    [
        _f("earliestInstantToRetain", ["null", HOODIE_ACTION_INSTANT], None),
        _f("lastCompletedCommitTimestamp", "string", ""),
        _f("policy", "string"),
        # deprecated, replaced by filePathsToBeDeletedPerPartition; the item's "name" is
        # an ignored property of a primitive type in Avro
        _f("filesToBeDeletedPerPartition", ["null", _map(_arr({"name": "filePath", "type": "string"}))], None),
        _VERSION_1,
        _f(
            "filePathsToBeDeletedPerPartition",
            ["null", _map(_arr(HOODIE_CLEAN_FILE_INFO))],
            None,
            doc="This field replaces the field filesToBeDeletedPerPartition",
        ),
        _f("partitionsToBeDeleted", ["null", _arr("string")], None, doc="partitions to be deleted"),
    ],
)

HOODIE_CLEAN_PARTITION_METADATA = _rec(
    "HoodieCleanPartitionMetadata",
    [
        _f("partitionPath", "string"),
        _f("policy", "string"),
        _f("deletePathPatterns", _arr("string")),
        _f("successDeleteFiles", _arr("string")),
        _f("failedDeleteFiles", _arr("string")),
        _f("isPartitionDeleted", ["null", "boolean"], None),
    ],
)

HOODIE_CLEAN_METADATA = _rec(
    "HoodieCleanMetadata",
    [
        _f("startCleanTime", "string"),
        _f("timeTakenInMillis", "long"),
        _f("totalFilesDeleted", "int"),
        _f("earliestCommitToRetain", "string"),
        _f("lastCompletedCommitTimestamp", "string", ""),
        _f("partitionMetadata", _map("HoodieCleanPartitionMetadata")),
        _VERSION_1,
        _f("bootstrapPartitionMetadata", ["null", _map("HoodieCleanPartitionMetadata", default=None)], None),
    ],
)

HOODIE_ROLLBACK_REQUEST = _rec(
    "HoodieRollbackRequest",
    [
        _f("partitionPath", "string"),
        _f("fileId", _NULL_STR, None),
        _f("latestBaseInstant", _NULL_STR, None),
        _f("filesToBeDeleted", _arr("string", default=[]), []),
        _f("logBlocksToBeDeleted", ["null", _map("long")], None),
    ],
    top=False,
)

HOODIE_ROLLBACK_PLAN = _rec(
    "HoodieRollbackPlan",
    [
        _f("instantToRollback", ["null", "HoodieInstantInfo"], None, doc="Hoodie instant that needs to be rolled back"),
        _f("RollbackRequests", ["null", _arr(HOODIE_ROLLBACK_REQUEST)], None),
        _VERSION_1,
    ],
)

HOODIE_ROLLBACK_PARTITION_METADATA = _rec(
    "HoodieRollbackPartitionMetadata",
    [
        _f("partitionPath", "string"),
        _f("successDeleteFiles", _arr("string")),
        _f("failedDeleteFiles", _arr("string")),
        _f("rollbackLogFiles", ["null", _map("long")], None),
        _f("logFilesFromFailedCommit", ["null", _map("long")], None),
    ],
    top=False,
)

HOODIE_ROLLBACK_METADATA = _rec(
    "HoodieRollbackMetadata",
    [
        _f("startRollbackTime", "string"),
        _f("timeTakenInMillis", "long"),
        _f("totalFilesDeleted", "int"),
        _f("commitsRollback", _arr("string")),
        _f("partitionMetadata", _map(HOODIE_ROLLBACK_PARTITION_METADATA)),
        _VERSION_1,
        _f("instantsRollback", _arr("HoodieInstantInfo", default=[]), []),
    ],
)

HOODIE_COMPACTION_OPERATION = _rec(
    "HoodieCompactionOperation",
    [
        _f("baseInstantTime", _NULL_STR),
        _f("deltaFilePaths", ["null", _arr("string")], None),
        _f("dataFilePath", _NULL_STR, None),
        _f("fileId", _NULL_STR),
        _f("partitionPath", _NULL_STR, None),
        _f("metrics", ["null", _map("double")], None),
        _f("bootstrapFilePath", _NULL_STR, None),
    ],
    top=False,
)

HOODIE_COMPACTION_STRATEGY = _rec(
    "HoodieCompactionStrategy",
    [
        _f(
            "compactorClassName",
            _NULL_STR,
            None,
            doc="The class name that is provided here should extend CompactionExecutionStrategy abstract class, "
            "idea is that the plan generator will also provide the execution strategy to use.",
        ),
        _f(
            "strategyParams",
            ["null", _map("string")],
            None,
            doc="These parameters play a key role in determining which action type it is i.e. compaction or "
            "logcompaction and it will also include configs that determine how compaction needs to be executed.",
        ),
        _VERSION_1,
    ],
)

HOODIE_COMPACTION_PLAN = _rec(
    "HoodieCompactionPlan",
    [
        _f("operations", ["null", _arr(HOODIE_COMPACTION_OPERATION)], None),
        _EXTRA_METADATA,
        _VERSION_1,
        _f("strategy", ["null", "HoodieCompactionStrategy"], None),
        _f("preserveHoodieMetadata", ["boolean", "null"], False),
    ],
)

HOODIE_SLICE_INFO = _rec(
    "HoodieSliceInfo",
    [
        _f("dataFilePath", _NULL_STR, None),
        _f("deltaFilePaths", ["null", _arr("string")], None),
        _f("fileId", _NULL_STR),
        _f("partitionPath", _NULL_STR, None),
        _f("bootstrapFilePath", _NULL_STR, None),
        _VERSION_1,
    ],
)

HOODIE_CLUSTERING_GROUP = _rec(
    "HoodieClusteringGroup",
    [
        _f("slices", ["null", _arr("HoodieSliceInfo")], None),
        _f("metrics", ["null", _map("double")], None),
        _f("numOutputFileGroups", ["int", "null"], 1),
        _EXTRA_METADATA,
        _VERSION_1,
    ],
)

HOODIE_CLUSTERING_STRATEGY = _rec(
    "HoodieClusteringStrategy",
    [
        _f("strategyClassName", _NULL_STR, None),
        _f("strategyParams", ["null", _map("string")], None),
        _VERSION_1,
    ],
)

HOODIE_CLUSTERING_PLAN = _rec(
    "HoodieClusteringPlan",
    [
        _f("inputGroups", ["null", _arr("HoodieClusteringGroup")], None),
        _f("strategy", ["null", "HoodieClusteringStrategy"], None),
        _EXTRA_METADATA,
        _VERSION_1,
        _f("preserveHoodieMetadata", ["null", "boolean"], None),
    ],
)

HOODIE_REQUESTED_REPLACE_METADATA = _rec(
    "HoodieRequestedReplaceMetadata",
    [
        _f("operationType", _NULL_STR, None),
        _f("clusteringPlan", ["null", "HoodieClusteringPlan"], None),
        _EXTRA_METADATA,
        _VERSION_1,
    ],
)

HOODIE_SAVEPOINT_PARTITION_METADATA = _rec(
    "HoodieSavepointPartitionMetadata",
    [_f("partitionPath", "string"), _f("savepointDataFile", _arr("string"))],
    top=False,
)

HOODIE_SAVEPOINT_METADATA = _rec(
    "HoodieSavepointMetadata",
    [
        _f("savepointedBy", "string"),
        _f("savepointedAt", "long"),
        _f("comments", "string"),
        _f("partitionMetadata", _map(HOODIE_SAVEPOINT_PARTITION_METADATA)),
        _VERSION_1,
    ],
)

HOODIE_RESTORE_PLAN = _rec(
    "HoodieRestorePlan",
    [
        _f("instantsToRollback", _arr("HoodieInstantInfo", default=None), []),
        _VERSION_1,
    ],
)

HOODIE_RESTORE_METADATA = _rec(
    "HoodieRestoreMetadata",
    [
        _f("startRestoreTime", "string"),
        _f("timeTakenInMillis", "long"),
        _f("instantsToRollback", _arr("string")),
        # the avsc gives this array a "name" (ignored) and a "default" property
        _f(
            "hoodieRestoreMetadata",
            _map({"type": "array", "default": None, "items": ["null", "HoodieRollbackMetadata"], "name": "hoodieRollbackMetadata"}),
        ),
        _VERSION_1,
        _f("restoreInstantInfo", {"type": "array", "default": None, "items": "HoodieInstantInfo"}, []),
    ],
)

#: ``HoodieWriteStat`` as the Avro model of 0.14 has it (17 fields; 1.x appends many).
HOODIE_WRITE_STAT = _rec(
    "HoodieWriteStat",
    [
        _f("fileId", _NULL_STR, None),
        _f("path", _NULL_STR, None),
        _f("prevCommit", _NULL_STR, None),
        _f("numWrites", ["null", "long"], None),
        _f("numDeletes", ["null", "long"], None),
        _f("numUpdateWrites", ["null", "long"], None),
        _f("totalWriteBytes", ["null", "long"], None),
        _f("totalWriteErrors", ["null", "long"], None),
        _f("partitionPath", _NULL_STR, None),
        _f("totalLogRecords", ["null", "long"], None),
        _f("totalLogFiles", ["null", "long"], None),
        _f("totalUpdatedRecordsCompacted", ["null", "long"], None),
        _f("numInserts", ["null", "long"], None),
        _f("totalLogBlocks", ["null", "long"], None),
        _f("totalCorruptLogBlock", ["null", "long"], None),
        _f("totalRollbackBlocks", ["null", "long"], None),
        _f("fileSizeInBytes", ["null", "long"], None),
    ],
    top=False,
)

HOODIE_COMMIT_METADATA = _rec(
    "HoodieCommitMetadata",
    [
        _f("partitionToWriteStats", ["null", _map(_arr(HOODIE_WRITE_STAT))], None),
        _f("extraMetadata", ["null", _map("string", default=None)], None),
        _VERSION_1,
        _f("operationType", _NULL_STR, None),
    ],
)

HOODIE_REPLACE_COMMIT_METADATA = _rec(
    "HoodieReplaceCommitMetadata",
    [
        _f("partitionToWriteStats", ["null", _map(_arr("HoodieWriteStat"))], None),
        _EXTRA_METADATA,
        _VERSION_1,
        _f("operationType", _NULL_STR, None),
        _f("partitionToReplaceFileIds", ["null", _map(_arr("string"))], None),
    ],
)

#: Deprecated; still a member of the archived entry.
HOODIE_COMPACTION_METADATA = _rec(
    "HoodieCompactionMetadata",
    [
        _f(
            "partitionToCompactionWriteStats",
            [
                "null",
                _map(
                    _arr(
                        _rec(
                            "HoodieCompactionWriteStat",
                            [
                                _f("partitionPath", _NULL_STR),
                                _f("totalLogRecords", ["null", "long"]),
                                _f("totalLogFiles", ["null", "long"]),
                                _f("totalUpdatedRecordsCompacted", ["null", "long"]),
                                _f("hoodieWriteStat", ["null", "HoodieWriteStat"]),
                            ],
                            top=False,
                        )
                    )
                ),
            ],
        )
    ],
)

HOODIE_INDEX_PARTITION_INFO = _rec(
    "HoodieIndexPartitionInfo",
    [
        _VERSION_1,
        _f("metadataPartitionPath", _NULL_STR, None),
        _f("indexUptoInstant", _NULL_STR, None),
    ],
)

HOODIE_INDEX_PLAN = _rec(
    "HoodieIndexPlan",
    [
        _VERSION_1,
        _f("indexPartitionInfos", ["null", _arr("HoodieIndexPartitionInfo")], None),
    ],
)

HOODIE_INDEX_COMMIT_METADATA = _rec(
    "HoodieIndexCommitMetadata",
    [
        _f("version", ["int", "null"], 1, doc="This field replaces the field filesToBeDeletedPerPartition"),
        _f("operationType", _NULL_STR, None, doc="This field replaces the field filesToBeDeletedPerPartition"),
        _f(
            "indexPartitionInfos",
            ["null", _arr("HoodieIndexPartitionInfo")],
            None,
            doc="This field contains the info for each partition that got indexed",
        ),
    ],
)

#: One record per archived instant *state* in layout-1 archive logs (0.14 form).
HOODIE_ARCHIVED_META_ENTRY = _rec(
    "HoodieArchivedMetaEntry",
    [
        _f("hoodieCommitMetadata", ["null", "HoodieCommitMetadata"], None),
        _f("hoodieCleanMetadata", ["null", "HoodieCleanMetadata"], None),
        _f("hoodieCompactionMetadata", ["null", "HoodieCompactionMetadata"], None),
        _f("hoodieRollbackMetadata", ["null", "HoodieRollbackMetadata"], None),
        _f("hoodieSavePointMetadata", ["null", "HoodieSavepointMetadata"], None),
        _f("commitTime", _NULL_STR, None),
        _f("actionType", _NULL_STR, None),
        _VERSION_1,
        _f("hoodieCompactionPlan", ["null", "HoodieCompactionPlan"], None),
        _f("hoodieCleanerPlan", ["null", "HoodieCleanerPlan"], None),
        _f("actionState", _NULL_STR, None),
        _f("hoodieReplaceCommitMetadata", ["null", "HoodieReplaceCommitMetadata"], None),
        _f("hoodieRequestedReplaceMetadata", ["null", "HoodieRequestedReplaceMetadata"], None),
        _f("HoodieInflightReplaceMetadata", ["null", "HoodieCommitMetadata"], None),
        _f("hoodieIndexCommitMetadata", ["null", "HoodieIndexCommitMetadata"], None),
        _f("stateTransitionTime", _NULL_STR, None),
    ],
)

#: Rows of the layout-2 (table version 8+) LSM timeline parquet files.
HOODIE_LSM_TIMELINE_INSTANT = _rec(
    "HoodieLSMTimelineInstant",
    [
        _f("instantTime", _NULL_STR, None),
        _f("completionTime", _NULL_STR, None),
        _f("action", _NULL_STR, None),
        _f("metadata", ["null", "bytes"], None),
        _f("plan", ["null", "bytes"], None),
        _f("version", "int", 1),
    ],
)



# -- the metadata table's record (hudi-common/src/main/avro/HoodieMetadata.avsc, 0.14) ---------------
# Kept out of the timeline models' registry: its value wrappers carry docs that the delete-block
# wrappers above do not, and both are named like the same Java classes.


def _doc_wrapper(name: str, what: str, value_type: Any) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "namespace": NAMESPACE,
        "doc": f"A record wrapping {what} type to be able to be used it w/in Avro's Union",
        "fields": [{"name": "value", "type": value_type}],
    }


#: Value wrappers of ``minValue``/``maxValue`` in 0.14, in union order after ``null``.
METADATA_VALUE_WRAPPERS: list[dict[str, Any]] = [
    _doc_wrapper("BooleanWrapper", "boolean", "boolean"),
    _doc_wrapper("IntWrapper", "int", "int"),
    _doc_wrapper("LongWrapper", "long", "long"),
    _doc_wrapper("FloatWrapper", "float", "float"),
    _doc_wrapper("DoubleWrapper", "double", "double"),
    _doc_wrapper("BytesWrapper", "bytes", "bytes"),
    _doc_wrapper("StringWrapper", "string", "string"),
    _doc_wrapper("DateWrapper", "Date logical", "int"),
    _doc_wrapper(
        "DecimalWrapper", "Decimal logical", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}
    ),
    _doc_wrapper("TimeMicrosWrapper", "Time-micros logical", {"type": "long", "logicalType": "time-micros"}),
    _doc_wrapper("TimestampMicrosWrapper", "Timestamp-micros logical", "long"),
]

_FILE_ID_PIECES = (
    "\nA UUID based fileId is stored as 3 pieces in RLI (fileIdHighBits, fileIdLowBits and fileIndex). "
    "\nFileID format is {UUID}-{fileIndex}."
)

HOODIE_METADATA_RECORD: dict[str, Any] = _rec(
    "HoodieMetadataRecord",
    [
        _f("key", "string"),
        _f("type", "int", doc="Type of the metadata record"),
        _f(
            "filesystemMetadata",
            _opt(
                _map(
                    _rec(
                        "HoodieMetadataFileInfo",
                        [
                            _f("size", "long", doc="Size of the file"),
                            _f("isDeleted", "boolean", doc="True if this file has been deleted"),
                        ],
                        top=False,
                    )
                )
            ),
            doc="Contains information about partitions and files within the dataset",
        ),
        _f(
            "BloomFilterMetadata",
            _opt(
                _rec(
                    "HoodieMetadataBloomFilter",
                    [
                        _f("type", "string", doc="Bloom filter type code"),
                        _f("timestamp", "string", doc="Instant timestamp when this metadata was created/updated"),
                        _f("bloomFilter", "bytes", doc="Bloom filter binary byte array"),
                        _f("isDeleted", "boolean", doc="Bloom filter entry valid/deleted flag"),
                    ],
                    doc="Data file bloom filter details",
                    top=False,
                )
            ),
            None,
            doc="Metadata Index of bloom filters for all data files in the user table",
        ),
        _f(
            "ColumnStatsMetadata",
            _opt(
                _rec(
                    "HoodieMetadataColumnStats",
                    [
                        _f("fileName", _NULL_STR, None, "File name for which this column statistics applies"),
                        _f("columnName", _NULL_STR, None, "Column name for which this column statistics applies"),
                        _f(
                            "minValue",
                            ["null"] + METADATA_VALUE_WRAPPERS,
                            None,
                            "Minimum value in the range. Based on user data table schema, we can convert this "
                            "to appropriate type",
                        ),
                        _f(
                            "maxValue",
                            ["null"] + [w["name"] for w in METADATA_VALUE_WRAPPERS],
                            None,
                            "Maximum value in the range. Based on user data table schema, we can convert it "
                            "to appropriate type",
                        ),
                        _f("valueCount", ["null", "long"], None, "Total count of values"),
                        _f("nullCount", ["null", "long"], None, "Total count of null values"),
                        _f("totalSize", ["null", "long"], None, "Total storage size on disk"),
                        _f("totalUncompressedSize", ["null", "long"], None, "Total uncompressed storage size on disk"),
                        _f("isDeleted", "boolean", doc="Column range entry valid/deleted flag"),
                    ],
                    doc="Data file column statistics",
                    top=False,
                )
            ),
            None,
            doc="Metadata Index of column statistics for all data files in the user table",
        ),
        _f(
            "recordIndexMetadata",
            _opt(
                _rec(
                    "HoodieRecordIndexInfo",
                    [
                        _f("partitionName", _NULL_STR, None, "Refers to the partition name the record belongs to"),
                        _f(
                            "fileIdHighBits",
                            ["null", "long"],
                            None,
                            "Refers to high 64 bits if the fileId is based on UUID format. " + _FILE_ID_PIECES,
                        ),
                        _f(
                            "fileIdLowBits",
                            ["null", "long"],
                            None,
                            "Refers to low 64 bits if the fileId is based on UUID format. " + _FILE_ID_PIECES,
                        ),
                        _f(
                            "fileIndex",
                            ["null", "int"],
                            None,
                            "Index representing file index which is used to re-construct UUID based fileID. "
                            "Applicable when the fileId is based on UUID format. " + _FILE_ID_PIECES,
                        ),
                        _f(
                            "fileId",
                            _NULL_STR,
                            None,
                            "Represents fileId of the location where record belongs to. When the encoding is 1, "
                            "fileID is stored in raw string format.",
                        ),
                        _f(
                            "instantTime",
                            ["null", "long"],
                            None,
                            "Epoch time in millisecond representing the commit time at which record was added",
                        ),
                        _f(
                            "fileIdEncoding",
                            "int",
                            0,
                            "Represents fileId encoding. Possible values are 0 and 1. O represents UUID based "
                            "fileID, and 1 represents raw string format of the fileId. \nWhen the encoding is 0, "
                            "reader can deduce fileID from fileIdLowBits, fileIdHighBits and fileIndex.",
                        ),
                    ],
                    top=False,
                )
            ),
            None,
            doc="Metadata Index that contains information about record keys and their location in the dataset",
        ),
    ],
    doc="A record saved within the Metadata Table",
)


def _collect_named(node: Any, out: dict[str, dict[str, Any]]) -> None:
    if isinstance(node, list):
        for branch in node:
            _collect_named(branch, out)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            out.setdefault(node["name"], node)
            for field in node.get("fields", []):
                _collect_named(field["type"], out)
        elif kind == "array":
            _collect_named(node["items"], out)
        elif kind == "map":
            _collect_named(node["values"], out)


_TOP_LEVEL: dict[str, dict[str, Any]] = {
    s["name"]: s
    for s in (
        DELETE_RECORD_LIST,
        HOODIE_INSTANT_INFO,
        HOODIE_CLEANER_PLAN,
        HOODIE_CLEAN_PARTITION_METADATA,
        HOODIE_CLEAN_METADATA,
        HOODIE_ROLLBACK_PLAN,
        HOODIE_ROLLBACK_METADATA,
        HOODIE_COMPACTION_STRATEGY,
        HOODIE_COMPACTION_PLAN,
        HOODIE_SLICE_INFO,
        HOODIE_CLUSTERING_GROUP,
        HOODIE_CLUSTERING_STRATEGY,
        HOODIE_CLUSTERING_PLAN,
        HOODIE_REQUESTED_REPLACE_METADATA,
        HOODIE_SAVEPOINT_METADATA,
        HOODIE_RESTORE_PLAN,
        HOODIE_RESTORE_METADATA,
        HOODIE_COMMIT_METADATA,
        HOODIE_REPLACE_COMMIT_METADATA,
        HOODIE_COMPACTION_METADATA,
        HOODIE_INDEX_PARTITION_INFO,
        HOODIE_INDEX_PLAN,
        HOODIE_INDEX_COMMIT_METADATA,
        HOODIE_ARCHIVED_META_ENTRY,
        HOODIE_LSM_TIMELINE_INSTANT,
    )
}

#: Every named type (top-level and nested) by simple name.
NAMED_TYPES: dict[str, dict[str, Any]] = {}
for _schema in _TOP_LEVEL.values():
    _collect_named(_schema, NAMED_TYPES)
NAMED_TYPES.update(_TOP_LEVEL)

#: Names accepted by :func:`schema`, :func:`parsed`, :func:`write_container`.
SCHEMA_NAMES: tuple[str, ...] = tuple(sorted(NAMED_TYPES))

#: Differences between these 0.14 schemas and Hudi 1.x (table version 8/9), as far as the
#: fixtures and the 1.x sources show them. Readers are unaffected (writer schemas are
#: embedded); writers for table version 6 must not emit the 1.x-only fields.
SCHEMA_NOTES: dict[str, str] = {
    "HoodieCommitMetadata": "1.x adds 'compacted' (after partitionToWriteStats); 0.14 encodes compaction "
    "as operationType=COMPACT in the archive conversion",
    "HoodieReplaceCommitMetadata": "1.x adds 'compacted'",
    "HoodieWriteStat": "1.x appends logVersion, logOffset, baseFile, logFiles, cdcStats, prevBaseFile, "
    "minEventTime, maxEventTime, runtimeStats (HoodieRuntimeStats), totalLogFilesCompacted, "
    "totalLogReadTimeMs, totalLogSizeCompacted, tempPath, numUpdates",
    "HoodieCompactionPlan": "1.x appends missingSchedulePartitions",
    "HoodieClusteringPlan": "1.x appends missingSchedulePartitions",
    "HoodieIndexPartitionInfo": "1.x appends extraMetadata",
    "HoodieCleanerPlan": "later versions append extraMetadata (savepoint tracking)",
    "HoodieCleanMetadata": "later versions append extraMetadata",
    "HoodieRestorePlan": "1.x appends savepointToRestoreTimestamp and bumps the version default to 2",
    "HoodieRestoreMetadata": "later versions append extraMetadata",
}


# -- expansion and Java rendering -------------------------------------------------------------

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_NAMED_KINDS = {"record", "error", "enum", "fixed"}
#: Keys Java's Schema parser does not keep as properties of a type.
_SCHEMA_RESERVED = {"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"}
_FIELD_RESERVED = {"default", "doc", "name", "order", "type", "aliases"}


def _simple(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _expand(node: Any, defined: set[str]) -> Any:
    """Inline named references at their first occurrence (depth-first, field order)."""
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return node
        simple = _simple(node)
        if simple in defined:
            return node
        if simple not in NAMED_TYPES:
            raise KeyError(f"unknown Avro type {node!r}")
        return _expand(NAMED_TYPES[simple], defined)
    if isinstance(node, list):
        return [_expand(branch, defined) for branch in node]
    node = dict(node)
    kind = node.get("type")
    if kind in _NAMED_KINDS:
        name = _simple(node["name"])
        if name in defined:
            return node["name"]
        defined.add(name)
        if "fields" in node:
            node["fields"] = [dict(f, type=_expand(f["type"], defined)) for f in node["fields"]]
    elif kind == "array":
        node["items"] = _expand(node["items"], defined)
    elif kind == "map":
        node["values"] = _expand(node["values"], defined)
    elif isinstance(kind, (dict, list)):
        node["type"] = _expand(kind, defined)
    return node


@lru_cache(maxsize=None)
def _expanded(name: str) -> dict[str, Any]:
    if name not in NAMED_TYPES:
        raise KeyError(f"unknown Hudi Avro model {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    top = dict(NAMED_TYPES[name])
    top.setdefault("namespace", NAMESPACE)
    return _expand(top, set())


def schema(name: str) -> dict[str, Any]:
    """The fully expanded schema of a model (a fresh copy, safe to modify)."""
    return copy.deepcopy(_expanded(name))


@lru_cache(maxsize=None)
def parsed(name: str) -> Any:
    """fastavro-parsed schema by model name (parsing is costly; do it once)."""
    return fastavro.parse_schema(schema(name))


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _render(node: Any, space: str | None, names: set[str]) -> str:
    if isinstance(node, str):
        if node == "string":
            return '{"type":"string","avro.java.string":"String"}'
        if node in _PRIMITIVES:
            return _dump(node)
        full = node if "." in node else f"{space}.{node}"
        if full not in names:
            raise ValueError(f"reference to undefined type {node!r}")
        ns, _, short = full.rpartition(".")
        return _dump(short if ns == space else full)
    if isinstance(node, list):
        return "[" + ",".join(_render(branch, space, names) for branch in node) + "]"
    kind = node["type"]
    if isinstance(kind, (dict, list)):
        return _render(kind, space, names)
    props = [(k, v) for k, v in node.items() if k not in _SCHEMA_RESERVED]
    if kind in _NAMED_KINDS:
        ns = node.get("namespace", space)
        if "." in node["name"]:
            ns, _, short = node["name"].rpartition(".")
        else:
            short = node["name"]
        full = f"{ns}.{short}"
        if full in names:
            return _dump(short if ns == space else full)
        names.add(full)
        parts = [f'"type":{_dump(kind)}', f'"name":{_dump(short)}']
        if ns is not None and ns != space:
            parts.append(f'"namespace":{_dump(ns)}')
        if node.get("doc") is not None:
            parts.append(f'"doc":{_dump(node["doc"])}')
        if kind in ("record", "error"):
            fields = []
            for field in node["fields"]:
                fparts = [f'"name":{_dump(field["name"])}', f'"type":{_render(field["type"], ns, names)}']
                if field.get("doc") is not None:
                    fparts.append(f'"doc":{_dump(field["doc"])}')
                if "default" in field:
                    fparts.append(f'"default":{_dump(field["default"])}')
                if field.get("order", "ascending") != "ascending":
                    fparts.append(f'"order":{_dump(field["order"])}')
                fparts += [f"{_dump(k)}:{_dump(v)}" for k, v in field.items() if k not in _FIELD_RESERVED]
                fields.append("{" + ",".join(fparts) + "}")
            parts.append('"fields":[' + ",".join(fields) + "]")
        elif kind == "enum":
            parts.append(f'"symbols":{_dump(node["symbols"])}')
        elif kind == "fixed":
            parts.append(f'"size":{_dump(node["size"])}')
        parts += [f"{_dump(k)}:{_dump(v)}" for k, v in props]
        return "{" + ",".join(parts) + "}"
    if kind == "array":
        parts = ['"type":"array"', f'"items":{_render(node["items"], space, names)}']
        parts += [f"{_dump(k)}:{_dump(v)}" for k, v in props]
        return "{" + ",".join(parts) + "}"
    if kind == "map":
        parts = ['"type":"map"', f'"values":{_render(node["values"], space, names)}', '"avro.java.string":"String"']
        parts += [f"{_dump(k)}:{_dump(v)}" for k, v in props if k != "avro.java.string"]
        return "{" + ",".join(parts) + "}"
    if kind in _PRIMITIVES:
        if kind == "string" and "logicalType" not in node:
            props = [("avro.java.string", "String")] + [(k, v) for k, v in props if k != "avro.java.string"]
        if not props:
            return _dump(kind)
        return "{" + ",".join([f'"type":{_dump(kind)}'] + [f"{_dump(k)}:{_dump(v)}" for k, v in props]) + "}"
    raise ValueError(f"cannot render Avro type {node!r}")


def java_schema_json(schema_or_name: Any) -> str:
    """The schema text Java's generated ``SCHEMA$.toString()`` yields for this model.

    Hudi compiles its models with ``stringType=String``, so every ``string`` (and
    every ``map``) carries ``"avro.java.string":"String"``; docs and defaults stay;
    named types appear in full once and by name after that.
    """
    node = _expanded(schema_or_name) if isinstance(schema_or_name, str) else _expand(schema_or_name, set())
    return _render(node, None, set())


@lru_cache(maxsize=None)
def java_schema(name: str) -> str:
    """Cached :func:`java_schema_json` of a model name."""
    return java_schema_json(name)


def canonical_form(schema_text_or_dict: Any) -> str:
    """Avro Parsing Canonical Form (ignores docs, defaults and properties)."""
    value = json.loads(schema_text_or_dict) if isinstance(schema_text_or_dict, str) else schema_text_or_dict
    return fastavro.schema.to_parsing_canonical_form(value)


# -- container files (TimelineMetadataUtils.serializeAvroMetadata) ---------------------------


def _zigzag(n: int) -> bytes:
    value = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _avro_bytes(data: bytes) -> bytes:
    return _zigzag(len(data)) + data


def encode_record(name: str, record: dict[str, Any]) -> bytes:
    """Binary (schemaless) Avro encoding of one record of a model."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed(name), record)
    return buffer.getvalue()


@lru_cache(maxsize=64)
def _parsed_text(schema_text: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text))


def write_container(
    name: str, record: dict[str, Any] | None, sync_marker: bytes | None = None, schema_text: str | None = None
) -> bytes:
    """An Avro object container holding ``record``, as Hudi writes timeline files.

    Java's ``DataFileWriter`` without ``setCodec``: the header metadata has only
    ``avro.schema`` (no ``avro.codec``, i.e. null codec), the sync marker is random,
    and the one record goes in one block. ``record=None`` yields a header-only file.
    ``schema_text`` writes with another schema of the model than the 0.14 one (the
    writer schema of a file decoded earlier, e.g. Hudi 1.x's), embedded as given.
    """
    sync = sync_marker if sync_marker is not None else os.urandom(16)
    if len(sync) != 16:
        raise ValueError("an Avro sync marker has 16 bytes")
    text = schema_text if schema_text is not None else java_schema(name)
    header = AVRO_MAGIC + _zigzag(1) + _avro_bytes(b"avro.schema") + _avro_bytes(text.encode("utf-8"))
    header += _zigzag(0) + sync
    if record is None:
        return header
    if schema_text is None:
        data = encode_record(name, record)
    else:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, _parsed_text(schema_text), record)
        data = buffer.getvalue()
    return header + _zigzag(1) + _zigzag(len(data)) + data + sync


def container_schema(data: bytes) -> str:
    """The writer schema text embedded in a container file."""
    reader = fastavro.reader(io.BytesIO(data))
    return reader.metadata["avro.schema"]


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def container_sync_marker(data: bytes) -> bytes:
    """The 16-byte sync marker of a container file (the bytes after the header map)."""
    if not data.startswith(AVRO_MAGIC):
        raise CorruptFileError("not an Avro container file")
    pos = len(AVRO_MAGIC)
    while True:
        count, pos = _read_long(data, pos)
        if count == 0:
            break
        if count < 0:  # a negative count is followed by the block's byte size
            _, pos = _read_long(data, pos)
            count = -count
        for _ in range(count * 2):  # key and value of each entry
            length, pos = _read_long(data, pos)
            pos += length
    return bytes(data[pos : pos + 16])


def read_container(data: bytes, name: str | None = None, source: str = "") -> dict[str, Any] | None:
    """Decode the (first) record of a container file; ``None`` when it holds none.

    With ``name`` the record is resolved against that model (Avro schema
    resolution: unknown writer fields dropped, missing ones defaulted).
    """
    if not data.startswith(AVRO_MAGIC):
        raise CorruptFileError(f"{source or 'data'}: not an Avro container file")
    try:
        reader = fastavro.reader(io.BytesIO(data), reader_schema=parsed(name) if name else None)
        for record in reader:
            return record
    except Exception as exc:  # fastavro raises many types
        raise CorruptFileError(f"{source or 'data'}: cannot decode Avro container ({exc})") from exc
    return None


def read_container_records(data: bytes, name: str | None = None) -> list[dict[str, Any]]:
    reader = fastavro.reader(io.BytesIO(data), reader_schema=parsed(name) if name else None)
    return list(reader)


__all__ = [
    "NAMESPACE",
    "VALUE_WRAPPERS",
    "DELETE_RECORD_LIST",
    "HOODIE_METADATA_RECORD",
    "METADATA_VALUE_WRAPPERS",
    "NAMED_TYPES",
    "SCHEMA_NAMES",
    "SCHEMA_NOTES",
    "schema",
    "parsed",
    "java_schema",
    "java_schema_json",
    "canonical_form",
    "encode_record",
    "write_container",
    "read_container",
    "read_container_records",
    "container_schema",
    "container_sync_marker",
]
