"""The change-event formats' declarations and planning, without Spark: options checked as Flink's factories
check them, which INSERTs may carry a changelog, and how the row kind is added to a query."""

from __future__ import annotations

import pytest
import sqlglot

from sqlext.catalog.changelog_formats import CHANGELOG_FORMATS, ROW_KIND, check_options
from sqlext.connectors.changelog.planning import carry_row_kind, check_insert, is_changelog_table
from sqlext.errors import OptionError, ValidationError
from sqlext.registry import validate_table
from sqlext.sql.parser import parse_statement
from sqlext.table import TableDefinition


def _table(name: str, fmt: str, connector: str = "filesystem", extra: str = "") -> TableDefinition:
    where = (
        "'path' = 'file:///tmp/x'"
        if connector == "filesystem"
        else "'topic' = 't', 'properties.bootstrap.servers' = 'h:9092'"
    )
    key = "value.format" if connector == "kafka" else "format"
    ddl = (
        f"CREATE TABLE db.{name} (id INT, name STRING) WITH ('connector' = '{connector}', {where}, "
        f"'{key}' = '{fmt}'{extra})"
    )
    table: TableDefinition = parse_statement(ddl).table  # type: ignore[attr-defined]
    return table


@pytest.mark.parametrize("fmt", CHANGELOG_FORMATS)
def test_each_format_is_a_changelog_of_filesystem_and_kafka(fmt: str) -> None:
    for connector in ("filesystem", "kafka"):
        table = _table("t", fmt, connector)
        validate_table(table)
        assert is_changelog_table(table)
    assert not is_changelog_table(_table("t", "json"))


def test_options_are_checked_as_flinks_factories_check_them() -> None:
    check_options("canal-json", {"database.include": "inv.*", "ignore-parse-errors": "TRUE"})
    with pytest.raises(OptionError, match=r"Expected 'true' or 'false'"):
        check_options("debezium-json", {"schema-include": "yes"})
    with pytest.raises(OptionError, match=r"one of 'SQL', 'ISO-8601'"):
        check_options("maxwell-json", {"timestamp-format.standard": "sql"})
    with pytest.raises(OptionError, match=r"Unsupported options found for 'maxwell-json': maxwell-json.table.include"):
        check_options("maxwell-json", {"table.include": "x"})
    with pytest.raises(OptionError, match=r"Invalid regular expression for option 'canal-json.table.include'"):
        check_options("canal-json", {"table.include": "(unclosed"})
    with pytest.raises(OptionError, match=r"'debezium-json.schema-include': 'x'"):
        validate_table(_table("t", "debezium-json", "kafka", ", 'value.debezium-json.schema-include' = 'x'"))


def test_a_kafka_key_cannot_be_a_changelog() -> None:
    table = _table("t", "json", "kafka", ", 'key.format' = 'debezium-json', 'key.fields' = 'id'")
    with pytest.raises(OptionError, match=r"A key format should only deal with INSERT-only records"):
        validate_table(table)


def test_kafka_offers_each_formats_metadata_only() -> None:
    extra = "ts TIMESTAMP_LTZ(3) METADATA FROM 'value.ingestion-timestamp' VIRTUAL"
    ddl = (
        f"CREATE TABLE db.k (id INT, {extra}) WITH ('connector' = 'kafka', 'topic' = 't', "
        "'properties.bootstrap.servers' = 'h:9092', 'value.format' = '{fmt}')"
    )
    validate_table(parse_statement(ddl.format(fmt="maxwell-json")).table)  # type: ignore[attr-defined]
    wrong = ddl.format(fmt="maxwell-json").replace("value.ingestion-timestamp", "value.source.table")
    with pytest.raises(OptionError, match=r"unknown metadata 'value.source.table'"):
        validate_table(parse_statement(wrong).table)  # type: ignore[attr-defined]


def test_an_insert_only_sink_and_batch_mode_refuse_a_changelog_with_flinks_reasons() -> None:
    cdc, out = _table("cdc", "debezium-json"), _table("out", "json")
    with pytest.raises(ValidationError, match=r"^Table sink 'db.out' doesn't support consuming update and delete"):
        check_insert([cdc], out, batch=False, sql=None)
    with pytest.raises(ValidationError, match=r"^Querying a table in batch mode is currently only possible for INSERT"):
        check_insert([cdc], _table("sink", "debezium-json"), batch=True, sql=None)
    assert check_insert([cdc], _table("sink", "canal-json"), batch=False, sql=None)
    assert not check_insert([out], _table("sink", "debezium-json"), batch=True, sql=None)
    with pytest.raises(ValidationError, match=r"doesn't support consuming"):
        check_insert([cdc], _table("k", "debezium-json", "kafka"), batch=False, sql=None)


@pytest.mark.parametrize(
    ("query", "carried"),
    [
        ("SELECT a, b FROM v WHERE a > 1", f"SELECT a, b, {ROW_KIND} FROM v WHERE a > 1"),
        ("SELECT * FROM v", "SELECT * FROM v"),
        ("SELECT v.* FROM v", "SELECT v.* FROM v"),
    ],
)
def test_the_row_kind_is_carried_through_a_projection_and_filter(query: str, carried: str) -> None:
    assert carry_row_kind(sqlglot.parse_one(query, read="spark"), None).sql(dialect="spark") == carried


@pytest.mark.parametrize(
    "query",
    [
        "SELECT a, COUNT(*) FROM v GROUP BY a",
        "SELECT DISTINCT a FROM v",
        "SELECT v.a FROM v JOIN w ON v.a = w.a",
        "SELECT a FROM v UNION ALL SELECT a FROM w",
        "SELECT a FROM (SELECT a FROM v)",
    ],
)
def test_what_combines_rows_of_a_changelog_is_refused(query: str) -> None:
    with pytest.raises(ValidationError, match=r"from a projection and filter of one changelog table"):
        carry_row_kind(sqlglot.parse_one(query, read="spark"), None)
