"""Which tables Spark reads by listing their directories (no partition reaches the metastore), as the HMS
table describes them to Spark: a data source table without ``spark.sql.partitionProvider`` (Spark then finds
the partitions under its path at each query)."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from sqlext.catalog.hms import Catalog, to_hms
from sqlext.catalog.spark_reads import lists_partitions, unread_by_spark
from sqlext.table import Column, TableDefinition, TableIdentifier

COLUMNS = (Column("user_id", "STRING"), Column("order_amount", "DOUBLE"), Column("dt", "STRING"))


def _table(fmt: str = "parquet", partitioned: bool = True, **options: str) -> TableDefinition:
    return TableDefinition(
        TableIdentifier("db", "fs_table"),
        COLUMNS,
        {"connector": "filesystem", "path": "file:///data/fs_table", "format": fmt, **options},
        partition_keys=("dt",) if partitioned else (),
    )


SUCCESS_FILE = {"sink.partition-commit.policy.kind": "success-file"}


@pytest.mark.parametrize("fmt", ["parquet", "orc", "json"])
def test_a_table_no_policy_registers_in_the_metastore_is_listed_by_spark(fmt: str) -> None:
    table = _table(fmt, **SUCCESS_FILE)
    assert lists_partitions(table)
    params = to_hms(table).parameters
    assert params["spark.sql.sources.provider"] == fmt
    assert params["spark.sql.sources.schema.partCol.0"] == "dt"
    assert "spark.sql.partitionProvider" not in params  # partitions found by listing, not asked of the HMS
    assert to_hms(table).sd.serdeInfo.parameters["path"] == "file:///data/fs_table"


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"sink.partition-commit.policy.kind": "metastore"},
        {"sink.partition-commit.policy.kind": "success-file,metastore"},
    ],
)
def test_a_table_the_metastore_policy_commits_is_read_from_the_metastore(options: dict[str, str]) -> None:
    table = _table("parquet", **options)  # no policy given: metastore,success-file
    assert not lists_partitions(table)
    assert not any(key.startswith("spark.sql.") for key in to_hms(table).parameters)
    json_params = to_hms(_table("json", **options)).parameters
    assert json_params["spark.sql.partitionProvider"] == "catalog"


def test_unpartitioned_tables_and_csv_are_not_listed() -> None:
    assert not lists_partitions(_table("parquet", partitioned=False, **SUCCESS_FILE))
    assert not unread_by_spark(_table("parquet", partitioned=False, **SUCCESS_FILE))
    csv = _table("csv", **SUCCESS_FILE)
    assert not lists_partitions(csv) and unread_by_spark(csv)
    assert not any(key.startswith("spark.sql.") for key in to_hms(csv).parameters)


def test_an_alter_of_the_policies_switches_how_spark_finds_the_partitions() -> None:
    hive = to_hms(_table("parquet"))
    hive.parameters["spark.sql.sources.schema"] = "{}"  # as Spark saves a Hive table's inferred schema
    listed = to_hms(_table("parquet", **SUCCESS_FILE), hive)
    assert listed.parameters["spark.sql.sources.provider"] == "parquet"
    back = to_hms(replace(_table("parquet"), options={**_table("parquet").options}), listed)
    assert not any(key.startswith(("spark.sql.sources.", "spark.sql.partitionProvider")) for key in back.parameters)
    assert "path" not in back.sd.serdeInfo.parameters


class _NoMetastore:
    """A metastore client that has the database and no table, and takes any table."""

    uri = "thrift://nowhere:9083"

    def __init__(self) -> None:
        self.created: list[object] = []

    def get_table(self, database: str, name: str) -> None:
        return None

    def get_database(self, name: str) -> object:
        return object()

    def create_table(self, table: object) -> None:
        self.created.append(table)


def test_create_warns_that_spark_reads_no_row_of_a_partitioned_csv_table_without_the_metastore_policy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    catalog = Catalog(_NoMetastore())  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="sqlext.catalog"):
        catalog.create_table(_table("parquet", **SUCCESS_FILE))
        assert caplog.records == []
        catalog.create_table(replace(_table("csv", **SUCCESS_FILE), identifier=TableIdentifier("db", "csv_t")))
    [warning] = caplog.records
    assert "db.csv_t" in warning.getMessage() and "'metastore'" in warning.getMessage()
    assert "sink.partition-commit.policy.kind" in warning.getMessage()
