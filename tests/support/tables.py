"""Build sink tables for tests: a TableDefinition and its HMS table, created in the real metastore."""

from __future__ import annotations

from pathlib import Path

from sqlext.catalog import Catalog
from sqlext.metastore.client import MetastoreClient
from sqlext.table import Column, TableDefinition, TableIdentifier


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
    """Create the database (if missing) and the table, as sqlext DDL would (through the catalog)."""
    client.create_database(table.identifier.database)
    Catalog(client).create_table(table)
