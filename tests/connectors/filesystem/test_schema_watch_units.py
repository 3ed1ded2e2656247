"""A running insert's log when its sink table's columns change under it (no metastore: the table as the
metastore would hand it over is built with the catalog's own mapping)."""

from __future__ import annotations

import logging

import pytest

from sqlext.catalog.hms import to_hms
from sqlext.connectors.filesystem.commit.schema_watch import SchemaWatch, schema_changes
from sqlext.sql.parser import parse_statement
from sqlext.sql.schema_change import apply_change
from sqlext.sql.statements import AlterTableSchema
from sqlext.table import Column, TableDefinition, TableIdentifier

STARTED = TableDefinition(
    identifier=TableIdentifier("db", "events"),
    columns=(Column("id", "INT"), Column("name", "STRING"), Column("dt", "STRING")),
    options={"connector": "filesystem", "path": "file:///tmp/events", "format": "parquet"},
    partition_keys=("dt",),
)


def _altered(alter: str, table: TableDefinition = STARTED) -> TableDefinition:
    statement = parse_statement(f"ALTER TABLE db.events {alter}")
    assert isinstance(statement, AlterTableSchema)
    return apply_change(table, statement.change)


def test_what_changed_in_the_insert_s_words() -> None:
    assert schema_changes(STARTED, _altered("ADD (score DOUBLE AFTER name)")) == [
        "gained `score` DOUBLE, which this insert writes as NULL"
    ]
    assert schema_changes(STARTED, _altered("MODIFY id BIGINT")) == [
        "has `id` as BIGINT, which this insert writes as INT (read as the new type)"
    ]
    assert schema_changes(STARTED, _altered("DROP name")) == [
        "no longer has `name`, which this insert still writes (and no reader reads)"
    ]
    assert schema_changes(STARTED, _altered("ADD (x AS id + 1)")) == []  # computed: nothing in the files


def test_each_change_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    watch = SchemaWatch(STARTED, "insert_db_events", None)
    caplog.set_level(logging.INFO, logger="sqlext.commit")
    watch.observe(to_hms(STARTED))
    assert not caplog.records
    added = to_hms(_altered("ADD score DOUBLE"))
    watch.observe(added)
    watch.observe(added)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "insert_db_events: sink table db.events changed (ALTER TABLE) since this insert started" in record.message
    assert "gained `score` DOUBLE, which this insert writes as NULL" in record.message
    assert "restart it with a SELECT that fills the new columns" in record.message
