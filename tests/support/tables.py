"""Build sink tables for tests: a TableDefinition and its HMS table, created in the real metastore."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sqlglot import exp

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.sql.statements import CreateDatabase, Passthrough, Statement
from sqlext.sql.syntax import parse_tree
from sqlext.table import Column, TableDefinition, TableIdentifier


def created_database(statement: Statement) -> str | None:
    """The database a ``CREATE DATABASE`` creates, whether sqlext reads it (with Flink's options) or it
    goes to Spark as written; None for any other statement."""
    if isinstance(statement, CreateDatabase):
        return statement.name
    if isinstance(statement, Passthrough):
        tree = parse_tree(statement.sql)
        if isinstance(tree, exp.Create) and tree.args.get("kind") in ("DATABASE", "SCHEMA"):
            return tree.this.name.lower()
    return None


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


def assert_partitions_committed(
    hms: MetastoreClient,
    database: str,
    name: str,
    table_dir: Path,
    names: Sequence[str] | Mapping[str, int],
    rows_each: int | None = None,
) -> None:
    """The HMS lists exactly the partitions ``names`` (``k=v/k=v``; or a dict of name to its rows) of the
    table, and each has its success file and numFiles/totalSize/numRows matching the data files in its
    directory."""
    rows = dict(names) if isinstance(names, Mapping) else dict.fromkeys(names, rows_each)
    assert sorted(hms.get_partition_names(database, name)) == sorted(rows)
    table = hms.get_table(database, name)
    assert table is not None
    keys = [key.name for key in table.partitionKeys]
    for partition in hms.get_partitions_by_names(database, name, list(rows)):
        parts = [f"{k}={v}" for k, v in zip(keys, partition.values, strict=True)]
        directory = table_dir.joinpath(*parts)
        data_files = [f for f in directory.iterdir() if not f.name.startswith(("_", "."))]
        assert (directory / "_SUCCESS").is_file(), f"no _SUCCESS in {directory}"
        assert partition.parameters["numFiles"] == str(len(data_files))
        assert partition.parameters["totalSize"] == str(sum(f.stat().st_size for f in data_files))
        assert partition.parameters["numRows"] == str(rows["/".join(parts)])
