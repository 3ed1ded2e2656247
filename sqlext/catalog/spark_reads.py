"""How Spark reads a sqlext table from the metastore: as a Hive table (its partitions those the metastore lists),
or as one of Spark's own data source tables (provider and schema parameters), whose partitions are the metastore's
(``spark.sql.partitionProvider`` = ``catalog``) or the ``k=v`` directories Spark lists under its path at each
query. A partitioned table whose partitions never reach the metastore (no ``metastore`` commit policy) is listed,
as Flink reads a filesystem table, where Spark's own reader reads its format as sqlext writes it."""

from __future__ import annotations

import json

from sqlext.table import TableDefinition

#: Formats Spark reads from the HMS as its own data source tables (provider + schema parameters).
SPARK_PROVIDER_FORMATS = ("json",)
#: Formats whose files Spark's own data source reads as sqlext writes them: a partitioned table of one whose
#: partitions do not reach the metastore is described to Spark as a data source table that finds them by
#: listing its directories (see :func:`lists_partitions`). csv is not: Spark's csv reader does not read Hive's
#: escaped text.
LISTED_FORMATS = ("parquet", "orc", "json")
#: Spark's parameters that make an HMS table one of its data source tables, and that say how.
SPARK_PROVIDER_KEYS = ("spark.sql.sources.", "spark.sql.partitionProvider")


def lists_partitions(table: TableDefinition) -> bool:
    """Whether Spark finds the table's partitions by listing its directories, as Flink reads a filesystem
    table: a partitioned table in a :data:`LISTED_FORMATS` format whose partitions do not reach the metastore
    (no ``metastore`` commit policy). Spark then reads every file of its ``k=v`` directories, which sqlext's
    commit moves there once a batch is committed; staged and in-progress files live under ``_sqlext/``, and
    Spark skips names starting with ``_`` or ``.`` (the success file too)."""
    from sqlext.registry import factory_for

    if table.connector != "filesystem" or not table.partition_keys:
        return False
    if table.options.get("format") not in LISTED_FORMATS:
        return False
    return not factory_for(table).partitions_in_metastore(table)


def unread_by_spark(table: TableDefinition) -> bool:
    """Whether Spark's read of the table through the metastore sees none of its rows: a partitioned
    ``filesystem`` table whose partitions never reach the metastore and that Spark cannot list (csv)."""
    from sqlext.registry import factory_for

    if table.connector != "filesystem" or not table.partition_keys or lists_partitions(table):
        return False
    return not factory_for(table).partitions_in_metastore(table)


def spark_datasource_parameters(table: TableDefinition, listed: bool = False) -> dict[str, str]:
    """The parameters by which Spark reads an HMS table as its own data source table: its partitions those
    the metastore lists, or (``listed``) the ``k=v`` directories Spark finds under its path at each query."""
    from sqlext.sql.types import spark_json_type

    ordered = [*table.data_columns, *(table.column(k) for k in table.partition_keys)]
    schema = {
        "type": "struct",
        "fields": [
            {"name": c.name, "type": spark_json_type(c.type), "nullable": True, "metadata": {}} for c in ordered
        ],
    }
    params = {
        "spark.sql.sources.provider": table.options["format"],
        "spark.sql.sources.schema": json.dumps(schema),
        "spark.sql.sources.schema.numPartCols": str(len(table.partition_keys)),
    }
    if not listed:
        params["spark.sql.partitionProvider"] = "catalog"
    params.update({f"spark.sql.sources.schema.partCol.{i}": key for i, key in enumerate(table.partition_keys)})
    return params
