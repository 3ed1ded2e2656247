"""What the files already written can follow, per format, checked before anything changes (no metastore here:
the checks read table definitions only; ``test_schema_evolution.py`` reads the files back)."""

from __future__ import annotations

import pytest

from sqlext.catalog.evolution import check_files_follow, file_fields, file_fields_after
from sqlext.errors import ValidationError
from sqlext.sql.parser import parse_statement
from sqlext.sql.schema_change import apply_change
from sqlext.sql.statements import AlterTableSchema
from sqlext.table import Column, TableDefinition, TableIdentifier


def _table(fmt: str, connector: str = "filesystem") -> TableDefinition:
    return TableDefinition(
        identifier=TableIdentifier("db", "t"),
        columns=(Column("a", "INT"), Column("b", "STRING"), Column("c", "INT"), Column("dt", "STRING")),
        options={"connector": connector, "path": "file:///tmp/t", "format": fmt},
        partition_keys=("dt",),
    )


def _follow(
    table: TableDefinition, alter: str, retired: list[dict[str, str]] | None = None
) -> tuple[TableDefinition, list[dict[str, str]]]:
    statement = parse_statement(f"ALTER TABLE db.t {alter}")
    assert isinstance(statement, AlterTableSchema)
    updated = apply_change(table, statement.change)
    return updated, check_files_follow(table, updated, statement.change, retired or [])


BY_NAME = ("parquet", "orc", "json")


@pytest.mark.parametrize("fmt", [*BY_NAME, "csv"])
def test_every_format_takes_a_column_added_last_and_drops_the_last(fmt: str) -> None:
    _follow(_table(fmt), "ADD d BIGINT")
    _follow(_table(fmt), "ADD d BIGINT AFTER c")  # after the last data column, before the partition key
    _, retired = _follow(_table(fmt), "DROP c")
    assert retired == [{"name": "c", "type": "INT"}]


@pytest.mark.parametrize("fmt", BY_NAME)
def test_formats_read_by_name_take_any_position_and_drop_but_no_rename(fmt: str) -> None:
    _follow(_table(fmt), "ADD d BIGINT FIRST")
    _follow(_table(fmt), "MODIFY c INT FIRST")
    _follow(_table(fmt), "DROP b")
    with pytest.raises(ValidationError) as failure:
        _follow(_table(fmt), "RENAME b TO bee")
    assert f"format '{fmt}' is read by name" in failure.value.message
    assert "column `b` cannot be renamed to `bee`" in failure.value.message


@pytest.mark.parametrize("fmt", BY_NAME)
def test_a_dropped_name_is_not_added_again_in_formats_read_by_name(fmt: str) -> None:
    table, retired = _follow(_table(fmt), "DROP b")
    with pytest.raises(ValidationError) as failure:
        _follow(table, "ADD b BIGINT", retired)
    assert "a column `b` (STRING) was dropped before" in failure.value.message
    _follow(table, "ADD b2 BIGINT", retired)


def test_csv_renames_but_adds_only_last_and_drops_only_from_the_end() -> None:
    table = _table("csv")
    renamed, _ = _follow(table, "RENAME b TO bee")
    assert [c.name for c in renamed.data_columns] == ["a", "bee", "c"]
    for alter, message in [
        ("ADD d INT FIRST", "column `d` cannot be placed before column `a`: format 'csv' is read by position"),
        ("ADD d INT AFTER a", "column `d` cannot be placed before column `b`"),
        ("MODIFY a INT AFTER b", "column `b` cannot move"),
        ("DROP b", "column `b` cannot be dropped: format 'csv' is read by position"),
    ]:
        with pytest.raises(ValidationError) as failure:
            _follow(table, alter)
        assert message in failure.value.message, alter
        assert "Table db.t" in failure.value.message
    _follow(table, "DROP (b, c)")


def test_csv_adds_nothing_after_a_column_was_dropped_from_the_end() -> None:
    table, retired = _follow(_table("csv"), "DROP c")
    with pytest.raises(ValidationError) as failure:
        _follow(table, "ADD d INT", retired)
    assert "the files written before `c` was dropped still hold its values" in failure.value.message


def test_computed_columns_and_other_connectors_change_only_the_definition() -> None:
    _follow(_table("csv"), "ADD (x AS a + 1 FIRST)")
    table = _table("csv", connector="datagen")
    _follow(table, "RENAME b TO bee")
    _follow(table, "DROP a")


def test_a_csv_table_records_the_field_counts_its_lines_may_hold_after_each_change() -> None:
    table = _table("csv")
    added, _ = _follow(table, "ADD d BIGINT")
    assert file_fields_after(table, added, None) == (3, 4)  # old lines: 3 fields, new ones: 4
    twice, _ = _follow(added, "ADD e BIGINT")
    assert file_fields_after(added, twice, (3, 4)) == (3, 5)
    dropped, _ = _follow(twice, "DROP e")
    assert file_fields_after(twice, dropped, (3, 5)) == (3, 5)  # lines of 5 fields stay: the last is not read
    renamed, _ = _follow(table, "RENAME b TO bee")
    assert file_fields_after(table, renamed, None) is None  # every line still holds the table's 3 columns
    assert file_fields({"sqlext.file-fields": "3,5"}) == (3, 5)
    assert file_fields({}) is None


@pytest.mark.parametrize("fmt", BY_NAME)
def test_tables_read_by_name_record_no_field_counts(fmt: str) -> None:
    table = _table(fmt)
    added, _ = _follow(table, "ADD d BIGINT")
    assert file_fields_after(table, added, None) is None
