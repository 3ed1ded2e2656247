"""ALTER TABLE's column DDL read into statements: Flink's forms, the forms Spark and Hive share (sqlext's only
for a sqlext table), and what stays Spark's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sqlext.errors import ParseError, ValidationError
from sqlext.sql.parser import parse_statement
from sqlext.sql.schema_change import (
    AddSchema,
    DropColumns,
    DropPrimaryKey,
    DropWatermark,
    ModifySchema,
    PlacedColumn,
    Position,
    RenameColumn,
)
from sqlext.sql.statements import AlterTableSchema, Passthrough
from sqlext.table import Column, TableIdentifier, Watermark

T = TableIdentifier("", "t")


def _placed(name: str, type_: str, position: Position | None = None, **fields: object) -> PlacedColumn:
    return PlacedColumn(Column(name, type_, **fields), position)  # type: ignore[arg-type]


FLINK_FORMS = [
    ("ALTER TABLE t ADD c INT", AddSchema((_placed("c", "INT"),))),
    (
        "ALTER TABLE t ADD c BIGINT NOT NULL COMMENT 'it''s c' FIRST",
        AddSchema((_placed("c", "BIGINT", Position(first=True), comment="it's c", nullable=False),)),
    ),
    (
        "ALTER TABLE t ADD (c DECIMAL(12, 2) AFTER b, `d e` STRING FIRST, f AS c * 2)",
        AddSchema(
            (
                _placed("c", "DECIMAL(12, 2)", Position(after="b")),
                _placed("d e", "STRING", Position(first=True)),
                _placed("f", "", expression="c * 2"),
            )
        ),
    ),
    (
        "ALTER TABLE t ADD (m TIMESTAMP_LTZ(3) METADATA FROM 'file.modification-time' VIRTUAL)",
        AddSchema((_placed("m", "TIMESTAMP_LTZ(3)", metadata_key="file.modification-time", virtual=True),)),
    ),
    (
        "ALTER TABLE t ADD WATERMARK FOR ts AS ts - INTERVAL '5' SECOND",
        AddSchema(watermark=Watermark("ts", "ts - INTERVAL '5' SECOND", timedelta(seconds=5))),
    ),
    ("ALTER TABLE t ADD PRIMARY KEY (a, b) NOT ENFORCED", AddSchema(primary_key=("a", "b"))),
    ("ALTER TABLE t MODIFY c BIGINT", ModifySchema((_placed("c", "BIGINT"),))),
    (
        "ALTER TABLE t MODIFY (c BIGINT COMMENT 'wider' AFTER a, d DOUBLE)",
        ModifySchema((_placed("c", "BIGINT", Position(after="a"), comment="wider"), _placed("d", "DOUBLE"))),
    ),
    ("ALTER TABLE t RENAME a TO b", RenameColumn("a", "b")),
    ("ALTER TABLE t RENAME `a b` TO `c`", RenameColumn("a b", "c")),
    ("ALTER TABLE t DROP c", DropColumns(("c",))),
    ("ALTER TABLE t DROP (c, d)", DropColumns(("c", "d"))),
    ("ALTER TABLE t DROP WATERMARK", DropWatermark()),
    ("ALTER TABLE t DROP PRIMARY KEY", DropPrimaryKey()),
]


@pytest.mark.parametrize(("sql", "change"), FLINK_FORMS, ids=[sql for sql, _ in FLINK_FORMS])
def test_flink_column_ddl(sql: str, change: object) -> None:
    assert parse_statement(sql) == AlterTableSchema(sql, T, change)  # type: ignore[arg-type]


def test_if_exists_and_a_qualified_name() -> None:
    sql = "ALTER TABLE IF EXISTS db.t ADD c INT"
    assert parse_statement(sql) == AlterTableSchema(
        sql, TableIdentifier("db", "t"), AddSchema((_placed("c", "INT"),)), if_exists=True
    )


SHARED_FORMS = [
    (
        "ALTER TABLE t ADD COLUMNS (c INT COMMENT 'x', d STRING)",
        AddSchema((_placed("c", "INT", comment="x"), _placed("d", "STRING"))),
        None,
    ),
    ("ALTER TABLE t ADD COLUMNS (c INT) CASCADE", AddSchema((_placed("c", "INT"),)), True),
    ("ALTER TABLE t ADD COLUMNS (c INT) RESTRICT", AddSchema((_placed("c", "INT"),)), False),
    ("ALTER TABLE t ADD COLUMN c bigint AFTER a", AddSchema((_placed("c", "BIGINT", Position(after="a")),)), None),
    ("ALTER TABLE t ADD COLUMNS c INT, d INT", AddSchema((_placed("c", "INT"), _placed("d", "INT"))), None),
    ("ALTER TABLE t RENAME COLUMN a TO b", RenameColumn("a", "b"), None),
    ("ALTER TABLE t DROP COLUMN c", DropColumns(("c",)), None),
    ("ALTER TABLE t DROP COLUMNS (c, d)", DropColumns(("c", "d")), None),
    ("ALTER TABLE t DROP COLUMN IF EXISTS c", DropColumns(("c",), if_exists=True), None),
]


@pytest.mark.parametrize(("sql", "change", "cascade"), SHARED_FORMS, ids=[s[0] for s in SHARED_FORMS])
def test_spark_and_hive_forms_are_shared(sql: str, change: object, cascade: bool | None) -> None:
    assert parse_statement(sql) == AlterTableSchema(sql, T, change, shared=True, cascade=cascade)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE t ALTER COLUMN c TYPE BIGINT",
        "ALTER TABLE t CHANGE COLUMN c c BIGINT",
        "ALTER TABLE t CHANGE c d BIGINT CASCADE",
        "ALTER TABLE t REPLACE COLUMNS (a INT)",
    ],
)
def test_spark_column_changes_are_refused_on_a_sqlext_table_naming_flinks_form(sql: str) -> None:
    statement = parse_statement(sql)
    assert isinstance(statement, Passthrough) and statement.guard == T
    assert isinstance(statement.error, ValidationError) and "MODIFY" in statement.error.message


def test_a_shared_form_sqlext_cannot_read_stays_sparks_unless_it_names_a_sqlext_table() -> None:
    sql = "ALTER TABLE t ADD COLUMNS (c STRING COMMENT 'it\\'s')"  # Spark's backslash escape
    statement = parse_statement(sql)
    assert isinstance(statement, Passthrough) and statement.guard == T and statement.error is not None


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE t ADD PARTITION (p = 'x')",
        "ALTER TABLE t ADD IF NOT EXISTS PARTITION (p = 'x')",
        "ALTER TABLE t DROP PARTITION (p = 'x')",
        "ALTER TABLE t DROP IF EXISTS PARTITION (p = 'x')",
        "ALTER TABLE t RENAME TO u",
        "ALTER TABLE t SET TBLPROPERTIES ('a' = '1')",
        "ALTER TABLE t PARTITION (p = 'x') ADD COLUMNS (c INT)",
        "ALTER TABLE t ADD CONSTRAINT c CHECK (a > 0)",
    ],
)
def test_other_alter_statements_stay_sparks(sql: str) -> None:
    assert parse_statement(sql) == Passthrough(sql)


MALFORMED = [
    ("ALTER TABLE t ADD (c INT COMMNT 'x')", 1, 31, "near 'COMMNT'"),
    ("ALTER TABLE t\n  ADD (a INT,\n    c FOO)", 3, 9, "near 'FOO'"),
    ("ALTER TABLE t ADD c INT, d INT", None, None, "parentheses around more than one component"),
    ("ALTER TABLE t DROP a, b", None, None, "parentheses around more than one component"),
    ("ALTER TABLE t MODIFY", None, None, "a column after MODIFY"),
    ("ALTER TABLE t ADD ()", None, None, "a component between commas"),
    ("ALTER TABLE t RENAME a b", None, None, "RENAME column TO new_name"),
    ("ALTER TABLE t DROP (a b)", None, None, "DROP column | DROP (column, ...)"),
    ("ALTER TABLE IF EXISTS t ADD COLUMNS (c FOO)", 1, 42, "near 'FOO'"),
]


@pytest.mark.parametrize(("sql", "line", "column", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_flink_forms_are_sqlexts_errors(sql: str, line: int | None, column: int | None, message: str) -> None:
    with pytest.raises(ParseError) as failure:
        parse_statement(sql)
    assert message in failure.value.message
    assert "Expected: ALTER TABLE [IF EXISTS] [db.]table" in failure.value.message
    assert failure.value.statement == sql
    assert (failure.value.line, failure.value.column) == (line, column)
