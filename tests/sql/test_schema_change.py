"""Column changes applied to a table definition: Flink's rules and messages, and the widenings sqlext allows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sqlext.errors import ValidationError
from sqlext.sql.parser import parse_statement
from sqlext.sql.schema_change import ALTER_FAILED, apply_change, is_widening
from sqlext.sql.statements import AlterTableSchema
from sqlext.table import Column, TableDefinition, TableIdentifier, Watermark

TABLE = TableDefinition(
    identifier=TableIdentifier("db", "t"),
    columns=(
        Column("id", "INT", "the id"),
        Column("name", "VARCHAR(10)"),
        Column("amount", "DECIMAL(10, 2)"),
        Column("ts", "TIMESTAMP(3)"),
        Column("double_id", "", expression="id * 2"),
        Column("dt", "STRING"),
    ),
    options={"connector": "filesystem", "path": "file:///tmp/t", "format": "parquet"},
    partition_keys=("dt",),
    watermark=Watermark("ts", "ts - INTERVAL '5' SECOND", timedelta(seconds=5)),
    primary_key=("id",),
)


def _altered(alter: str, table: TableDefinition = TABLE) -> TableDefinition:
    statement = parse_statement(f"ALTER TABLE db.t {alter}")
    assert isinstance(statement, AlterTableSchema)
    return apply_change(table, statement.change)


def _names(table: TableDefinition) -> list[str]:
    return [column.name for column in table.columns]


def test_add_appends_or_places_columns_in_flinks_order() -> None:
    assert _names(_altered("ADD c STRING")) == [*_names(TABLE), "c"]
    assert _names(_altered("ADD (c STRING FIRST, d INT AFTER c, e INT AFTER amount)")) == [
        "c",
        "d",
        "id",
        "name",
        "amount",
        "e",
        "ts",
        "double_id",
        "dt",
    ]


def test_modify_widens_keeps_the_comment_and_moves() -> None:
    altered = _altered("MODIFY (id BIGINT FIRST, amount DECIMAL(12, 2) AFTER ts, name STRING COMMENT 'who')")
    assert _names(altered) == ["id", "name", "ts", "amount", "double_id", "dt"]
    assert altered.column("id") == Column("id", "BIGINT", "the id")
    assert altered.column("amount").type == "DECIMAL(12, 2)"
    assert altered.column("name") == Column("name", "STRING", "who")


def test_rename_follows_into_the_primary_key() -> None:
    altered = _altered("MODIFY (double_id AS id * 3)")
    assert altered.column("double_id").expression == "id * 3"
    renamed = _altered("RENAME name TO full_name")
    assert _names(renamed) == ["id", "full_name", "amount", "ts", "double_id", "dt"]
    table = _altered("DROP double_id")
    assert _altered("RENAME id TO key", table).primary_key == ("key",)


def test_drop_columns_and_a_computed_column_with_what_it_refers_to() -> None:
    assert _names(_altered("DROP (name, amount)")) == ["id", "ts", "double_id", "dt"]
    table = _altered("DROP PRIMARY KEY")
    assert _names(_altered("DROP (id, double_id)", table)) == ["name", "amount", "ts", "dt"]


def test_watermark_and_primary_key_components() -> None:
    assert _altered("DROP WATERMARK").watermark is None
    assert _altered("MODIFY WATERMARK FOR ts AS ts").watermark == Watermark("ts", "ts", timedelta(0))
    assert _altered("DROP PRIMARY KEY").primary_key == ()
    assert _altered("ADD PRIMARY KEY (id, name) NOT ENFORCED", _altered("DROP PRIMARY KEY")).primary_key == (
        "id",
        "name",
    )


REFUSED = [
    ("ADD id BIGINT", "Column `id` already exists in the table."),
    ("ADD (c INT, c STRING)", "Encounter duplicate column `c`."),
    ("ADD c INT AFTER nope", "Referenced column `nope` by 'AFTER' does not exist in the table."),
    ("ADD c INT NOT NULL", "Column `c` cannot be added as NOT NULL"),
    ("MODIFY nope INT", "Column `nope` does not exist in the table."),
    ("MODIFY name INT", "Column `name` cannot change type from VARCHAR(10) to INT"),
    ("MODIFY id SMALLINT", "Column `id` cannot change type from INT to SMALLINT"),
    ("MODIFY amount DECIMAL(12, 3)", "Column `amount` cannot change type from DECIMAL(10, 2) to DECIMAL(12, 3)"),
    ("MODIFY id INT NOT NULL", "Column `id` cannot become NOT NULL"),
    ("MODIFY dt INT", "The column `dt` is used as the partition keys"),
    ("MODIFY id AS 1", "Column `id` cannot change from a physical column to a computed one"),
    ("RENAME nope TO x", "The column `nope` does not exist in the base table."),
    ("RENAME amount TO name", "The column `name` already existed in table schema."),
    ("RENAME id TO x", "The column `id` is referenced by computed column `double_id`."),
    ("RENAME dt TO day", "The column `dt` is used as the partition keys."),
    (
        "RENAME ts TO event_time",
        "The column `ts` is referenced by watermark expression. (WATERMARK FOR `ts` AS ts - INTERVAL '5' SECOND)",
    ),
    ("DROP (name, name)", "Duplicate column `name`."),
    ("DROP nope", "The column `nope` does not exist in the base table."),
    ("DROP dt", "The column `dt` is used as the partition keys."),
    ("DROP ts", "The column `ts` is referenced by watermark expression"),
    ("DROP (id, double_id)", "The column `id` is used as the primary key."),
    ("ADD WATERMARK FOR ts AS ts", "The current table has already defined the watermark strategy `ts`"),
    ("ADD PRIMARY KEY (name) NOT ENFORCED", "The current table has already defined the primary key constraint [`id`]"),
]


@pytest.mark.parametrize(("alter", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_changes_say_why_in_flinks_words(alter: str, message: str) -> None:
    with pytest.raises(ValidationError) as failure:
        _altered(alter)
    assert failure.value.message.startswith(ALTER_FAILED)
    assert message in failure.value.message


def test_refused_on_a_table_without_watermark_or_key() -> None:
    bare = TableDefinition(TableIdentifier("db", "b"), (Column("a", "INT"),), {"connector": "datagen"})
    for alter, message in [
        ("DROP WATERMARK", "The current table does not define any watermark strategy."),
        ("DROP PRIMARY KEY", "The current table does not define any primary key."),
        ("MODIFY WATERMARK FOR a AS a", "The current table does not define any watermark. You might want to add"),
        ("MODIFY PRIMARY KEY (a) NOT ENFORCED", "The current table does not define any primary key constraint."),
        ("DROP a", "would keep no data column"),
        ("ADD WATERMARK FOR nope AS nope", "Invalid column name 'nope' for rowtime attribute"),
    ]:
        with pytest.raises(ValidationError) as failure:
            _altered(alter, bare)
        assert message in failure.value.message, alter


@pytest.mark.parametrize(
    ("old", "new", "wider"),
    [
        ("TINYINT", "SMALLINT", True),
        ("TINYINT", "BIGINT", True),
        ("SMALLINT", "INT", True),
        ("INT", "BIGINT", True),
        ("BIGINT", "INT", False),
        ("INT", "DOUBLE", False),
        ("FLOAT", "DOUBLE", True),
        ("DOUBLE", "FLOAT", False),
        ("DECIMAL(10, 2)", "DECIMAL(38, 2)", True),
        ("DECIMAL(10, 2)", "DECIMAL(9, 2)", False),
        ("DECIMAL(10, 2)", "DECIMAL(11, 3)", False),
        ("VARCHAR(10)", "VARCHAR(20)", True),
        ("VARCHAR(10)", "VARCHAR(5)", False),
        ("VARCHAR(10)", "STRING", True),
        ("CHAR(3)", "VARCHAR(3)", True),
        ("CHAR(3)", "STRING", True),
        ("VARCHAR(3)", "CHAR(3)", False),
        ("STRING", "VARCHAR(100)", False),
        ("BINARY(4)", "BYTES", True),
        ("VARBINARY(4)", "VARBINARY(8)", True),
        ("TIMESTAMP(3)", "TIMESTAMP(6)", True),
        ("TIMESTAMP(6)", "TIMESTAMP(3)", False),
        ("TIMESTAMP(3)", "TIMESTAMP_LTZ(3)", False),
        ("STRING", "INT", False),
        ("ARRAY<INT>", "ARRAY<BIGINT>", False),
    ],
)
def test_widenings(old: str, new: str, wider: bool) -> None:
    assert is_widening(old, new) is wider
