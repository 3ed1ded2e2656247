"""Every SQL file in sql/: parsed, its tables created in a real HMS, read back equal from a new catalog
and from Spark SQL."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.sql.ddl import show_create_table
from sqlext.sql.parser import parse_statement, parse_statements
from sqlext.sql.statements import CreateTable
from sqlext.sql.types import hive_type
from sqlext.table import TableDefinition, TableIdentifier
from tests.support.services import spark_own_sql
from tests.support.tables import created_database

pytestmark = [pytest.mark.hms]

SQL_FILES = sorted((Path(__file__).resolve().parents[2] / "sql").glob("*.sql"))


def _in_default_database(table: TableDefinition) -> TableDefinition:
    ident = table.identifier
    return table if ident.database else replace(table, identifier=TableIdentifier("default", ident.name))


def test_the_examples_are_there() -> None:
    names = {f.name for f in SQL_FILES}
    assert {
        "demo.sql",
        "flink_filesystem_docs.sql",
        "flink_hive_streaming_docs.sql",
        "landing_zone.sql",
        "backfill_batch.sql",
    } <= names


@pytest.mark.parametrize("sql_file", SQL_FILES, ids=lambda f: f.name)
def test_show_create_table_of_each_table_parses_back_equal(sql_file: Path) -> None:
    creates = [s for s in parse_statements(sql_file.read_text()) if isinstance(s, CreateTable)]
    for create in creates:
        again = parse_statement(show_create_table(create.table))
        assert isinstance(again, CreateTable)
        # Hive-dialect DDL leaves the path to the catalog; SHOW CREATE TABLE writes Flink DDL.
        assert again.table == replace(create.table, extra={}), create.table.identifier


@pytest.mark.parametrize("sql_file", SQL_FILES, ids=lambda f: f.name)
def test_tables_of_each_file_round_trip_through_the_metastore(sql_file: Path, hms: MetastoreClient, spark) -> None:
    statements = parse_statements(sql_file.read_text())
    creates = [s for s in statements if isinstance(s, CreateTable)]
    assert creates, f"{sql_file.name} creates no table"
    writer = Catalog(hms)
    for statement in statements:
        database = created_database(statement)
        if database:
            writer.create_database(database, if_not_exists=True)
    declared_tables = [_in_default_database(create.table) for create in creates]
    for table in declared_tables:
        writer.create_table(table, if_not_exists=True)

    reader = Catalog(MetastoreClient(hms.uri))  # a new session's view
    for declared in declared_tables:
        stored = reader.get_table(declared.identifier)
        if declared.connector == "filesystem" and "path" not in declared.options:  # Hive-dialect DDL
            assert stored.options["path"].endswith(f"/{declared.identifier.name}")
            declared = replace(declared, options={**declared.options, "path": stored.options["path"]}, extra={})
        assert stored == declared, f"{declared.identifier} changed on its way through the metastore"
        if declared.connector != "filesystem":
            continue
        rows = spark_own_sql(spark)(f"DESCRIBE {declared.identifier.database}.{declared.identifier.name}").collect()
        names = [r.col_name for r in rows]
        columns = names[: names.index("# Partition Information")] if "# Partition Information" in names else names
        expected = [c.name.lower() for c in declared.data_columns] + [k.lower() for k in declared.partition_keys]
        assert [c.lower() for c in columns] == expected
        types = {r.col_name.lower(): r.data_type for r in rows}
        for column in declared.physical_columns:
            assert types[column.name.lower()] == hive_type(column.type)
        if declared.partition_keys:
            partition_section = names[names.index("# Partition Information") + 2 :]
            assert [n.lower() for n in partition_section] == [k.lower() for k in declared.partition_keys]
