"""Build sink tables for tests: a TableDefinition and its HMS table, created in the real metastore."""

from __future__ import annotations

from pathlib import Path

from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.metastore.client import MetastoreClient
from sqlext.table import Column, TableDefinition, TableIdentifier

PARQUET = (
    "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
)
_HIVE_TYPES = {"BIGINT": "bigint", "STRING": "string", "DOUBLE": "double", "TIMESTAMP(3)": "timestamp"}


def events_table(database: str, name: str, path: Path, **options: str) -> TableDefinition:
    """``(id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING)``
    partitioned by dt, hr, parquet at ``path``, with extra WITH options."""
    columns = tuple(
        Column(n, t)
        for n, t in (
            ("id", "BIGINT"),
            ("user_id", "STRING"),
            ("amount", "DOUBLE"),
            ("ts", "TIMESTAMP(3)"),
            ("dt", "STRING"),
            ("hr", "STRING"),
        )
    )
    all_options = {"connector": "filesystem", "path": path.as_uri(), "format": "parquet", **options}
    return TableDefinition(TableIdentifier(database, name), columns, all_options, partition_keys=("dt", "hr"))


def keyed_table(database: str, name: str, path: Path, **options: str) -> TableDefinition:
    """``(id BIGINT, p STRING)`` partitioned by p, parquet at ``path``."""
    all_options = {"connector": "filesystem", "path": path.as_uri(), "format": "parquet", **options}
    columns = (Column("id", "BIGINT"), Column("p", "STRING"))
    return TableDefinition(TableIdentifier(database, name), columns, all_options, partition_keys=("p",))


def create_in_hms(client: MetastoreClient, table: TableDefinition) -> None:
    """Create the database (if missing) and the external parquet table in the HMS."""
    client.create_database(table.identifier.database)
    serde, input_format, output_format = PARQUET
    storage = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema(c.name, _HIVE_TYPES[c.type], None) for c in table.data_columns],
        location=table.options["path"],
        inputFormat=input_format,
        outputFormat=output_format,
        serdeInfo=ttypes.SerDeInfo(serializationLib=serde, parameters={}),
        parameters={},
    )
    keys = [ttypes.FieldSchema(k, "string", None) for k in table.partition_keys]
    client.create_table(
        ttypes.Table(
            tableName=table.identifier.name,
            dbName=table.identifier.database,
            sd=storage,
            partitionKeys=keys,
            parameters={"EXTERNAL": "TRUE"},
            tableType="EXTERNAL_TABLE",
        )
    )
