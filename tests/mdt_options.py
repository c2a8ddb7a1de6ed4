"""Write options of the metadata-table tests: a table keyed by ``id``, ordered by ``ts``,
partitioned by ``p`` or not."""

from __future__ import annotations


def mdt_test_options(name: str, table_type: str, partitioned: bool, **extra) -> dict:
    opts = {
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": "upsert",
    }
    if partitioned:
        opts["hoodie.datasource.write.partitionpath.field"] = "p"
    else:
        opts["hoodie.datasource.write.keygenerator.class"] = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    opts.update({k: str(v) for k, v in extra.items()})
    return opts
