"""Malformed and invalid statements: the error class, a message that names what is wrong and what is
allowed, and nothing written to the HMS."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.errors import FactoryError, OptionError, ParseError, SqlextError, TableExistsError, ValidationError
from sqlext.sql.parser import parse_statement
from sqlext.sql.statements import CreateTable

pytestmark = [pytest.mark.hms]

DB = "errors_db"


def _table(columns: str = "a INT, dt STRING", partitioned: str = "", **options: str) -> str:
    base = {"connector": "filesystem", "path": "file:///tmp/sqlext-errors/t", "format": "parquet"}
    merged = {**base, **options}
    with_clause = ", ".join(f"'{k}' = '{v}'" for k, v in merged.items() if v is not None)
    return f"CREATE TABLE {DB}.t ({columns}) {partitioned} WITH ({with_clause})"


PARSE_ERRORS = [
    ("CREATE TABLE t (a INT WITH ('connector' = 'datagen')", "Cannot parse statement at line 1"),
    ("CREATE TABLE (a INT) WITH ('connector' = 'datagen')", "Cannot parse statement"),
    ("SET 'a' 'b'", "Expected SET 'key' = 'value'"),
    ("SET 'a' = b", "Expected a quoted string"),
    ("RESET 'a' 'b'", "Expected RESET or RESET 'key'"),
    ("ALTER TABLE t RESET 'k'", "Expected ALTER TABLE name RESET ('key', ...)"),
    ("ALTER TABLE t RESET (k)", "Expected a quoted string"),
    ("STOP JOB abc", "Expected a quoted string"),
    ("CREATE TABLE t (a INT, WATERMARK FOR AS a) WITH ('connector' = 'datagen')", "Cannot parse statement"),
]


@pytest.mark.parametrize(("sql", "message"), PARSE_ERRORS)
def test_statements_that_do_not_parse(sql: str, message: str) -> None:
    with pytest.raises(ParseError) as failure:
        parse_statement(sql)
    assert message in failure.value.message
    assert failure.value.statement is not None


def test_parse_errors_carry_line_and_column() -> None:
    with pytest.raises(ParseError) as failure:
        parse_statement("CREATE TABLE t (\n  a INT,\n  b STRING STRING\n) WITH ('connector' = 'datagen')")
    assert failure.value.line == 3
    assert failure.value.column is not None
    assert "line 3" in failure.value.message


INVALID = [
    (_table(connector="pulsar"), FactoryError, "Could not find any factory for identifier 'pulsar'"),
    (_table(connector="pulsar"), FactoryError, "Available factory identifiers are:\n\nblackhole\ndatagen\nfilesystem"),
    (_table(connector="filesytem"), FactoryError, "Did you mean 'filesystem'?"),
    (
        _table(path=None),
        OptionError,
        "One or more required options are missing.\n\nMissing required options are:\n\npath",
    ),
    (_table(**{"sink.bogus": "1"}), OptionError, "Unsupported options found for 'filesystem'."),
    (_table(**{"sink.bogus": "1"}), OptionError, "Supported options:"),
    (_table(**{"sink.partition-commit.delya": "1 h"}), OptionError, "Did you mean 'sink.partition-commit.delay'?"),
    (
        _table(**{"sink.partition-commit.delay": "1 fortnight"}),
        OptionError,
        "Invalid value for option 'sink.partition-commit.delay': '1 fortnight'. Expected a duration",
    ),
    (_table(**{"sink.partition-commit.delay": "-1 h"}), OptionError, "Expected a duration such as"),
    (_table(**{"sink.rolling-policy.file-size": "big"}), OptionError, "Expected a memory size such as '512kb'"),
    (_table(**{"sink.rolling-policy.file-size": "0 mb"}), OptionError, "greater than 0"),
    (
        _table(**{"sink.partition-commit.trigger": "event-time"}),
        OptionError,
        "Expected one of 'process-time', 'partition-time'",
    ),
    (_table(**{"sink.shuffle-by-partition.enable": "yes"}), OptionError, "Expected 'true' or 'false'"),
    (
        _table(**{"sink.partition-commit.watermark-time-zone": "Mars/Olympus"}),
        OptionError,
        "Time Zone Database (TZDB) id",
    ),
    (
        _table(**{"sink.partition-commit.policy.kind": "metastore,email"}),
        OptionError,
        "Expected one of 'metastore', 'success-file', 'custom'",
    ),
    (
        _table(**{"sink.partition-commit.policy.kind": "custom"}),
        OptionError,
        "'sink.partition-commit.policy.class' is required",
    ),
    (
        _table(**{"partition.time-extractor.kind": "custom", "sink.partition-commit.trigger": "partition-time"}),
        OptionError,
        "'partition.time-extractor.class' is required",
    ),
    (_table(**{"csv.field-delimiter": ";"}), OptionError, "is for format 'csv', but the table's format is 'parquet'"),
    (
        _table(format="xml"),
        OptionError,
        "Expected one of 'parquet', 'orc', 'csv', 'json', 'avro', 'raw', 'debezium-json', 'canal-json', "
        "'maxwell-json'.",
    ),
    (_table(**{"sink.parallelism": "0"}), OptionError, "It must be at least 1, or -1 for the default"),
    (_table(**{"sink.parallelism": "-2"}), OptionError, "It must be at least 1, or -1 for the default"),
    (_table(**{"sink.parallelism": "4294967296"}), OptionError, "Expected an integer from -2147483648 to 2147483647"),
    (_table(**{"sink.partition-commit.delay": "99999999999999999999 d"}), OptionError, "at most 36500 d"),
    (_table(**{"sink.rolling-policy.rollover-interval": "1 lightyear"}), OptionError, "Expected a duration"),
    (_table(**{"sink.rolling-policy.file-size": "16 eb"}), OptionError, "Expected a memory size such as"),
    (_table(**{"sink.rolling-policy.file-size": "9999999 tb"}), OptionError, "less than 8 EiB"),
    (_table(**{"source.max-files-per-trigger": "many"}), OptionError, "Expected an integer"),
    (_table(**{"source.monitor-interval": "0 s"}), OptionError, "It must be greater than 0"),
    (_table(partitioned="PARTITIONED BY (x)"), ValidationError, "Partition key 'x'"),
    (_table(columns="a INT, a STRING"), ValidationError, "declares column(s) a twice"),
    (_table(columns="a GEOMETRY"), ValidationError, "Unsupported type"),
    (
        _table(columns="a INT, m MAP<STRING, INT>", format="csv"),
        ValidationError,
        "Column 'm' has type MAP<STRING, INT>, which format 'csv' cannot hold",
    ),
    (
        _table(columns="a INT, r ROW<x INT>", format="csv"),
        ValidationError,
        "Column 'r' has type ROW<`x` INT>, which format 'csv' cannot hold",
    ),
    (_table(format="csv", **{"csv.field-delimiter": "ab"}), OptionError, "must be a single character"),
    (_table(format="csv", **{"csv.escape-character": ","}), OptionError, "must differ from each other"),
    (_table(columns="a INT, f STRING METADATA FROM 'file.owner'"), OptionError, "unknown metadata 'file.owner'"),
    (_table(columns="a INT, ts TIMESTAMP(3), WATERMARK FOR nope AS nope"), ValidationError, "Watermark column 'nope'"),
    (
        "CREATE TABLE errors_db.g (a INT) WITH ('connector' = 'datagen', 'fields.nope.kind' = 'random')",
        OptionError,
        "names field 'nope', which is not a column",
    ),
    (
        "CREATE TABLE errors_db.g (a INT) WITH ('connector' = 'datagen', 'fields.a.kind' = 'sometimes')",
        OptionError,
        "Expected one of 'random', 'sequence'",
    ),
    (
        "CREATE TABLE errors_db.g (a INT) WITH ('connector' = 'datagen', 'fields.a.kind' = 'sequence')",
        OptionError,
        "'fields.a.start' and 'fields.a.end' are required",
    ),
    (
        "CREATE TABLE errors_db.g (a INT) WITH ('connector' = 'datagen', 'rows-per-second' = 'fast')",
        OptionError,
        "Invalid value for option 'rows-per-second': 'fast'",
    ),
    (
        "CREATE TABLE errors_db.g (a INT) WITH ('connector' = 'print', 'print-identifier' = 'x', 'color' = 'red')",
        OptionError,
        "Unsupported options found for 'print'",
    ),
    ("CREATE TABLE nodb.t (a INT) WITH ('connector' = 'blackhole')", ValidationError, "Database 'nodb' does not exist"),
    (
        "CREATE TABLE errors_db.t (a INT) WITH ('connector' = 1)",
        ValidationError,
        "Option 'connector' must have a quoted string value",
    ),
]


def _tables(hms: MetastoreClient) -> tuple[list[str], list[str]]:
    return hms.get_all_databases(), hms.get_all_tables(DB)


@pytest.mark.parametrize(("sql", "error", "message"), INVALID)
def test_invalid_create_table_fails_clearly_and_writes_nothing(
    sql: str, error: type[SqlextError], message: str, hms: MetastoreClient
) -> None:
    hms.create_database(DB)
    before = _tables(hms)
    with pytest.raises(error) as failure:
        statement = parse_statement(sql)
        assert isinstance(statement, CreateTable)
        Catalog(hms).create_table(statement.table)
    assert message in failure.value.message
    assert failure.value.option or failure.value.statement or failure.value.value or "'" in failure.value.message
    assert _tables(hms) == before, "a failed CREATE left something in the metastore"


def test_creating_a_table_twice_is_an_error_unless_if_not_exists(hms: MetastoreClient, tmp_path: Path) -> None:
    hms.create_database(DB)
    sql = (
        f"CREATE TABLE {DB}.twice (a INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path.as_uri()}', "
        "'format' = 'parquet')"
    )
    catalog = Catalog(hms)
    statement = parse_statement(sql)
    assert isinstance(statement, CreateTable)
    assert catalog.create_table(statement.table) is True
    with pytest.raises(TableExistsError, match="already exists"):
        catalog.create_table(statement.table)
    assert catalog.create_table(statement.table, if_not_exists=True) is False
