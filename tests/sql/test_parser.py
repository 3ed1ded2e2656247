"""The Flink dialect: types and statements, parsed without any service."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlglot import exp

from sqlext.errors import ParseError, ValidationError
from sqlext.sql.parser import parse_statement, parse_statements, split_statements
from sqlext.sql.statements import (
    AlterTableOptions,
    CreateDatabase,
    CreateTable,
    CreateTableLike,
    Describe,
    DropTable,
    Insert,
    Passthrough,
    Query,
    ResetOption,
    SetOption,
    ShowCreateTable,
    ShowTables,
)
from sqlext.sql.types import hive_type, normalize, spark_type
from sqlext.table import Column, TableIdentifier, Watermark

# Flink type text -> (canonical Flink text, Spark type, Hive type)
TYPES = [
    ("CHAR(3)", "CHAR(3)", "string", "string"),
    ("char", "CHAR(1)", "string", "string"),
    ("VARCHAR(10)", "VARCHAR(10)", "string", "string"),
    ("STRING", "STRING", "string", "string"),
    ("BOOLEAN", "BOOLEAN", "boolean", "boolean"),
    ("TINYINT", "TINYINT", "tinyint", "tinyint"),
    ("SMALLINT", "SMALLINT", "smallint", "smallint"),
    ("INT", "INT", "int", "int"),
    ("integer", "INT", "int", "int"),
    ("BIGINT", "BIGINT", "bigint", "bigint"),
    ("FLOAT", "FLOAT", "float", "float"),
    ("DOUBLE", "DOUBLE", "double", "double"),
    ("DECIMAL", "DECIMAL(10, 0)", "decimal(10,0)", "decimal(10,0)"),
    ("DECIMAL(12)", "DECIMAL(12, 0)", "decimal(12,0)", "decimal(12,0)"),
    ("DECIMAL(12, 2)", "DECIMAL(12, 2)", "decimal(12,2)", "decimal(12,2)"),
    ("DATE", "DATE", "date", "date"),
    ("TIME", "TIME(0)", "string", "string"),
    ("TIME(3)", "TIME(3)", "string", "string"),
    ("TIMESTAMP", "TIMESTAMP(6)", "timestamp", "timestamp"),
    ("TIMESTAMP(3)", "TIMESTAMP(3)", "timestamp", "timestamp"),
    ("TIMESTAMP(3) WITHOUT TIME ZONE", "TIMESTAMP(3)", "timestamp", "timestamp"),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)", "timestamp", "timestamp"),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)", "timestamp", "timestamp"),
    ("BYTES", "BYTES", "binary", "binary"),
    ("BINARY(4)", "BINARY(4)", "binary", "binary"),
    ("VARBINARY(4)", "VARBINARY(4)", "binary", "binary"),
    ("ARRAY<INT>", "ARRAY<INT>", "array<int>", "array<int>"),
    ("MAP<STRING, BIGINT>", "MAP<STRING, BIGINT>", "map<string,bigint>", "map<string,bigint>"),
    ("MULTISET<STRING>", "MULTISET<STRING>", "map<string,int>", "map<string,int>"),
    ("ROW<a INT, b STRING>", "ROW<`a` INT, `b` STRING>", "struct<a:int,b:string>", "struct<a:int,b:string>"),
    ("ROW(a INT, b STRING)", "ROW<`a` INT, `b` STRING>", "struct<a:int,b:string>", "struct<a:int,b:string>"),
    ("ROW<`a b` INT>", "ROW<`a b` INT>", "struct<`a b`:int>", "struct<a b:int>"),
    (
        "ARRAY<ROW<k STRING, v MAP<STRING, ARRAY<DOUBLE>>>>",
        "ARRAY<ROW<`k` STRING, `v` MAP<STRING, ARRAY<DOUBLE>>>>",
        "array<struct<k:string,v:map<string,array<double>>>>",
        "array<struct<k:string,v:map<string,array<double>>>>",
    ),
]


@pytest.mark.parametrize(("flink", "canonical", "spark", "hive"), TYPES, ids=[t[0] for t in TYPES])
def test_type_mapping(flink: str, canonical: str, spark: str, hive: str) -> None:
    assert normalize(flink) == canonical
    assert normalize(canonical) == canonical, "canonical text is a fixed point"
    assert spark_type(flink) == spark
    assert hive_type(flink) == hive


@pytest.mark.parametrize("text", ["FOO", "TIMESTAMP(3) WITH TIME ZONE", "INTERVAL DAY", "RAW('a', 'b')", "LIST<INT>"])
def test_unsupported_types_name_the_type_and_list_the_supported_ones(text: str) -> None:
    with pytest.raises(ValidationError) as failure:
        normalize(text)
    assert f"Unsupported type '{text}'" in failure.value.message or text.split("(")[0] in failure.value.message
    assert "Supported types: CHAR(n)" in failure.value.message and "MULTISET<T>" in failure.value.message


# -- statements -----------------------------------------------------------------------------------

FULL_DDL = """CREATE TEMPORARY TABLE IF NOT EXISTS cat.db1.Events (
  id BIGINT NOT NULL COMMENT 'the id',
  user_id STRING,
  doubled AS id * 2,
  path STRING METADATA FROM 'file.path' VIRTUAL,
  size BIGINT METADATA,
  tags MULTISET<STRING>,
  ts TIMESTAMP(3),
  dt STRING,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (id) NOT ENFORCED
) COMMENT 'all events'
PARTITIONED BY (dt)
WITH ('connector' = 'filesystem', 'path' = 'file:///tmp/events', 'format' = 'csv', 'csv.field-delimiter' = ';')"""


def test_create_table_reads_every_element_of_flink_ddl() -> None:
    statement = parse_statement(FULL_DDL)
    assert isinstance(statement, CreateTable) and statement.if_not_exists
    table = statement.table
    assert table.identifier == TableIdentifier("db1", "events", "cat")
    assert table.temporary and table.comment == "all events"
    assert table.columns == (
        Column("id", "BIGINT", "the id", nullable=False),
        Column("user_id", "STRING"),
        Column("doubled", "", expression="id * 2"),
        Column("path", "STRING", metadata_key="file.path", virtual=True),
        Column("size", "BIGINT", metadata_key="size"),
        Column("tags", "MULTISET<STRING>"),
        Column("ts", "TIMESTAMP(3)"),
        Column("dt", "STRING"),
    )
    assert table.watermark == Watermark("ts", "ts - INTERVAL '5' SECOND", timedelta(seconds=5))
    assert table.primary_key == ("id",) and table.partition_keys == ("dt",)
    assert table.options == {
        "connector": "filesystem",
        "path": "file:///tmp/events",
        "format": "csv",
        "csv.field-delimiter": ";",
    }
    assert [c.name for c in table.data_columns] == ["id", "user_id", "tags", "ts"]


@pytest.mark.parametrize(
    ("mark", "delay"),
    [
        ("ts", timedelta(0)),
        ("ts - INTERVAL '1' MINUTE", timedelta(minutes=1)),
        ("ts - INTERVAL '2' HOUR", timedelta(hours=2)),
    ],
)
def test_watermark_delays(mark: str, delay: timedelta) -> None:
    statement = parse_statement(
        f"CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS {mark}) WITH ('connector' = 'datagen')"
    )
    assert isinstance(statement, CreateTable)
    assert statement.table.watermark is not None and statement.table.watermark.delay == delay


def test_create_table_like_keeps_its_own_parts_and_the_strategies() -> None:
    statement = parse_statement(
        "CREATE TABLE t (extra INT) WITH ('path' = 'file:///x') LIKE db.base (EXCLUDING ALL INCLUDING OPTIONS)"
    )
    assert isinstance(statement, CreateTableLike)
    assert statement.like == TableIdentifier("db", "base")
    assert statement.like_options == ("EXCLUDING ALL", "INCLUDING OPTIONS")
    assert statement.columns == (Column("extra", "INT"),) and statement.options == {"path": "file:///x"}


STATEMENTS = [
    ("CREATE DATABASE IF NOT EXISTS d1 COMMENT 'c' WITH ('k' = 'v')", CreateDatabase("", "d1", True, "c", {"k": "v"})),
    ("DROP TABLE IF EXISTS d.t", DropTable("", TableIdentifier("d", "t"), if_exists=True)),
    ("DROP TEMPORARY TABLE t", DropTable("", TableIdentifier("", "t"), temporary=True)),
    (
        "ALTER TABLE d.t SET ('a' = '1', 'b' = '2')",
        AlterTableOptions("", TableIdentifier("d", "t"), {"a": "1", "b": "2"}),
    ),
    ("ALTER TABLE t RESET ('a', 'b')", AlterTableOptions("", TableIdentifier("", "t"), reset_keys=("a", "b"))),
    ("SHOW CREATE TABLE d.t", ShowCreateTable("", TableIdentifier("d", "t"))),
    ("DESCRIBE d.t", Describe("", TableIdentifier("d", "t"))),
    ("DESC t", Describe("", TableIdentifier("", "t"))),
    ("SHOW TABLES", ShowTables("")),
    ("SHOW TABLES IN d", ShowTables("", "d")),
    ("SHOW TABLES FROM d LIKE 'a*|b*'", ShowTables("", "d", "a*|b*")),
    ("SHOW TABLES 'p*'", ShowTables("", None, "p*")),
    ("SET", SetOption("")),
    ("SET spark.sql.shuffle.partitions", SetOption("", "spark.sql.shuffle.partitions")),
    ("SET 'execution.runtime-mode' = 'batch'", SetOption("", "execution.runtime-mode", "batch")),
    ("RESET", ResetOption("")),
    ("RESET 'pipeline.name'", ResetOption("", "pipeline.name", flink_form=True)),
    ("RESET spark.sql.shuffle.partitions", ResetOption("", "spark.sql.shuffle.partitions")),
    # Flink's SQL client forms, unquoted, as Flink's Hive docs write them
    ("SET table.sql-dialect=hive", SetOption("", "table.sql-dialect", "hive")),
    ("set table.sql-dialect = default", SetOption("", "table.sql-dialect", "default")),
    ("SET execution.runtime-mode=batch", SetOption("", "execution.runtime-mode", "batch")),
    ("SET pipeline.name='my job'", SetOption("", "pipeline.name", "my job")),
    ("SET table.local-time-zone=Asia/Shanghai", SetOption("", "table.local-time-zone", "Asia/Shanghai")),
    ("SET table.exec.sink.not-null-enforcer=DROP", SetOption("", "table.exec.sink.not-null-enforcer", "DROP")),
    ("RESET table.sql-dialect", ResetOption("", "table.sql-dialect", flink_form=True)),
    ("RESET pipeline.name", ResetOption("", "pipeline.name")),  # Spark takes this key too: reset in both
    (
        "CREATE TABLE IF NOT EXISTS d.b LIKE d.a",
        CreateTableLike("", TableIdentifier("d", "b"), TableIdentifier("d", "a"), plain=True, if_not_exists=True),
    ),
]


@pytest.mark.parametrize(("sql", "expected"), STATEMENTS, ids=[s for s, _ in STATEMENTS])
def test_sqlext_statements(sql: str, expected: object) -> None:
    from dataclasses import replace

    assert parse_statement(sql) == replace(expected, sql=sql)  # type: ignore[type-var]


PASSTHROUGH = [
    "SELECT 1",
    "SET spark.sql.shuffle.partitions=4",
    "SET spark.sql.no-such-key=4",  # a spark. key stays Spark's, its error too
    "SET `table.sql-dialect`=hive",  # back-quoted: Spark's form
    "SET parallelism.default=1",  # neither sqlext's key nor one Spark refuses: Spark's
    "SET -v",
    "SET VAR v = 1",
    "SET TIME ZONE 'UTC'",
    "SHOW DATABASES",
    "USE d",
    "USE NAMESPACE d",
    "USE IDENTIFIER('a' || 'b')",
    "CREATE DATABASE d",
    "CREATE SCHEMA IF NOT EXISTS s",
    "SHOW CREATE TABLE t AS SERDE",
    "SHOW TABLES IN spark_catalog.d",
    "SHOW TABLE EXTENDED IN d LIKE 't'",
    "CREATE TABLE b LIKE a USING parquet",
    "CREATE TABLE t (a INT) USING parquet OPTIONS (a '1') TBLPROPERTIES (t 'x')",
    "CREATE TABLE t (a INT) USING parquet TBLPROPERTIES ('connector' = 'filesystem')",
    "CREATE TABLE t (a STRING COMMENT 'it\\'s') USING parquet",
    "DESC t col",
    "DESC EXTENDED t",
    "DESC QUERY SELECT 1",
    "DESC IDENTIFIER('t')",
    "DROP TABLE t PURGE",
    "DROP TABLE IDENTIFIER('t')",
    "ALTER TABLE t SET TBLPROPERTIES ('a' = '1')",
    "ALTER TABLE t PARTITION (p = 1) RENAME TO PARTITION (p = 2)",
    "INSERT INTO IDENTIFIER('t') VALUES (1)",
    "INSERT OVERWRITE DIRECTORY '/tmp/x' USING parquet SELECT 1",
    "SELECT 1 /* never closed",
    "SELECT 'unterminated",
    "DROP TABLE IF EXISTS",
    "SHOW CREATE TABLE 'x'",
    "CREATE TABLE plain (a INT) USING parquet",
    "CREATE TABLE hive_plain (a INT) STORED AS ORC",
    "CREATE VIEW v AS SELECT 1",
    "DROP VIEW v",
    "ALTER TABLE t ADD PARTITION (p = 'x')",
    "ALTER TABLE t RENAME TO u",
    "EXPLAIN SELECT 1",
    "CACHE TABLE t",
    "SELECT /*+ BROADCAST(t) */ * FROM t",
    "SELECT * FROM t /* OPTIONS('k' = 'v') */",  # a plain comment, not Flink's hint
]


@pytest.mark.parametrize("sql", PASSTHROUGH)
def test_spark_statements_pass_through_unchanged(sql: str) -> None:
    assert parse_statement(sql) == Passthrough(sql)


def test_insert_keeps_the_query_its_sources_and_static_partitions() -> None:
    statement = parse_statement(
        "INSERT OVERWRITE db.sink PARTITION (dt = '2026-11-22') "
        "SELECT s.id, o.name FROM src s JOIN other.names o ON s.id = o.id WHERE s.id IN (SELECT id FROM ids)"
    )
    assert isinstance(statement, Insert) and statement.overwrite
    assert statement.target == TableIdentifier("db", "sink")
    assert statement.static_partitions == {"dt": "2026-11-22"}
    assert set(statement.source_tables) == {
        TableIdentifier("", "src"),
        TableIdentifier("other", "names"),
        TableIdentifier("", "ids"),
    }
    assert statement.query_sql.startswith("SELECT s.id, o.name FROM src AS s JOIN other.names AS o")


def test_a_query_with_options_hints_names_each_hinted_table_and_its_options() -> None:
    statement = parse_statement(
        "WITH recent AS (SELECT * FROM db.events /*+ OPTIONS('incremental-between-timestamp' = '1,2') */) "
        "SELECT r.id FROM recent r JOIN dims /*+ OPTIONS('a' = 'it''s') */ d ON r.id = d.id"
    )
    assert isinstance(statement, Query)
    assert sorted(statement.hints, key=str) == [
        (TableIdentifier("", "dims"), {"a": "it's"}),
        (TableIdentifier("db", "events"), {"incremental-between-timestamp": "1,2"}),
    ]
    assert set(statement.source_tables) == {TableIdentifier("db", "events"), TableIdentifier("", "dims")}
    assert "/*+" not in statement.query_sql  # Spark reads the hints left in it as comments
    with pytest.raises(ParseError, match="Invalid OPTIONS hint"):  # Spark would only say it cannot parse '/*+'
        parse_statement("SELECT * FROM t /*+ OPTIONS('a') */")


def test_a_leading_with_belongs_to_the_insert_query() -> None:
    statement = parse_statement("WITH recent AS (SELECT * FROM events) INSERT INTO sink SELECT * FROM recent")
    assert isinstance(statement, Insert) and not statement.overwrite
    assert statement.target == TableIdentifier("", "sink")
    assert statement.source_tables == (TableIdentifier("", "events"),)
    assert statement.query_sql == "WITH recent AS (SELECT * FROM events) SELECT * FROM recent"


def test_hive_dialect_ddl_of_flinks_hive_streaming_docs_is_a_filesystem_table() -> None:
    statement = parse_statement(
        "CREATE TABLE hive_table (user_id STRING, order_amount DOUBLE) PARTITIONED BY (dt STRING, hr STRING) "
        "STORED AS parquet TBLPROPERTIES ('sink.partition-commit.trigger'='partition-time')"
    )
    assert isinstance(statement, CreateTable)
    assert statement.table.options["connector"] == "filesystem" and statement.table.options["format"] == "parquet"
    assert statement.table.partition_keys == ("dt", "hr")
    assert statement.table.extra == {"path-from-database": "true"}


def test_scripts_split_on_semicolons_outside_strings_and_comments() -> None:
    script = """-- a comment; with a semicolon
    SET 'pipeline.name' = 'a;b';  /* block; comment */
    CREATE TABLE t (a INT COMMENT 'x;y') WITH ('connector' = 'datagen');
    ;
    SELECT ';' AS s -- trailing; comment
    """
    statements = parse_statements(script)
    assert [type(s).__name__ for s in statements] == ["SetOption", "CreateTable", "Passthrough"]
    assert statements[0] == SetOption(statements[0].sql, "pipeline.name", "a;b")
    assert len(split_statements(script)) == 3


MALFORMED = [
    ("CREATE TABLE t (a INT WITH ('connector' = 'datagen')", 1, "Expected: CREATE [TEMPORARY] TABLE"),
    ("CREATE TABLE t (a FOO) WITH ('connector' = 'datagen')", 1, "near 'FOO'"),
    ("CREATE DATABASE WITH ('k' = 'v')", 1, "Expected: CREATE DATABASE [IF NOT EXISTS] name"),
    ("ALTER TABLE t SET ('k' = )", 1, "Expected: ALTER TABLE [IF EXISTS] [db.]table SET"),
    ("CREATE TABLE t (\n  a INT,\n  b STRING STRING\n) WITH ('connector' = 'datagen')", 3, "near 'STRING'"),
    ("CREATE TABLE t (a INT) WITH ('connector' = 'datagen') LIKE base (INCLUDING NOTHING)", None, "INCLUDING NOTHING"),
    ("SET 'a' = 'b' 'c'", None, "Expected SET 'key' = 'value'"),
    ("SET pipeline.name=a b", None, "Expected SET key=value (a value with spaces quoted"),
    ("SET table.sql-dialect hive", None, "Expected SET key=value"),
    ("ALTER TABLE t RESET 'k'", None, "Expected ALTER TABLE name RESET ('key', ...)"),
]


@pytest.mark.parametrize(("sql", "line", "message"), MALFORMED, ids=[m[0][:40] for m in MALFORMED])
def test_malformed_statements_name_statement_position_and_what_is_allowed(
    sql: str, line: int | None, message: str
) -> None:
    with pytest.raises(ParseError) as failure:
        parse_statement(sql)
    error = failure.value
    assert message in error.message
    assert error.statement == sql
    if line is not None:
        assert error.line == line and error.column is not None
        assert "^" in error.message, "the offending token is underlined"


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("CREATE TABLE t (a TIMESTAMP(3) WITH TIME ZONE) WITH ('connector' = 'datagen')", "Column 'a'"),
        ("CREATE TABLE t (a INT) WITH ('connector' = 1)", "Option 'connector' must have a quoted string value"),
        ("CREATE TABLE t (a INT) WITH ('k' = 'v')", "do not contain an option key 'connector'"),
    ],
)
def test_invalid_parts_of_a_statement_are_named(sql: str, named: str) -> None:
    with pytest.raises(ValidationError) as failure:
        parse_statement(sql)
    assert named in failure.value.message and failure.value.statement == sql


@pytest.mark.parametrize(
    "sql", ["SET table.sql-dialect=mysql", "SET 'table.sql-dialect' = 'flink'", "SET 'table.sql-dialect' = ''"]
)
def test_a_sql_dialect_flink_has_not_is_refused_naming_key_value_and_the_dialects(sql: str) -> None:
    with pytest.raises(ValidationError) as failure:
        parse_statement(sql)
    error = failure.value
    value = sql.rsplit("=", 1)[1].strip().strip("'")
    assert f"Invalid value for 'table.sql-dialect': '{value}'. Expected 'default' or 'hive'" in error.message
    assert (error.statement, error.option, error.value) == (sql, "table.sql-dialect", value)


def test_flinks_sql_dialects_are_taken_in_any_case() -> None:
    statement = parse_statement("SET 'table.sql-dialect' = 'HIVE'")
    assert isinstance(statement, SetOption) and (statement.key, statement.value) == ("table.sql-dialect", "HIVE")


def test_string_literals_follow_flinks_rules_a_backslash_is_itself_and_unicode_strings_decode() -> None:
    create = parse_statement(
        "CREATE TABLE t (a STRING) WITH ('connector' = 'filesystem', 'path' = 'file:///t', 'format' = 'csv', "
        r"'csv.escape-character' = '\', 'csv.null-literal' = '\N', 'csv.field-delimiter' = U&'\0009', "
        "'k' = 'it''s')"
    )
    assert isinstance(create, CreateTable)
    options = create.table.options
    assert options["csv.escape-character"] == "\\" and options["csv.null-literal"] == "\\N"
    assert options["csv.field-delimiter"] == "\t" and options["k"] == "it's"
    insert = parse_statement(r"INSERT INTO t SELECT 'a\tb', U&'\+01F600' FROM s")
    assert isinstance(insert, Insert)
    assert [literal.this for literal in insert.query.find_all(exp.Literal)] == ["a\\tb", "\U0001f600"]
    assert "'a\\\\tb'" in insert.query_sql  # Spark reads 'a\\tb' as a, backslash, t, b
    assert parse_statement(r"SET 'csv.x' = '\t'") == SetOption(r"SET 'csv.x' = '\t'", "csv.x", "\\t")
    # Spark's own statements with Spark's escapes still pass through.
    assert isinstance(parse_statement(r"SELECT 'it\'s'"), Passthrough)


def test_spark_forms_sqlext_shares_leave_the_decision_to_the_session() -> None:
    """A dynamic partition is Spark's unless the table is sqlext's; an INSERT sqlext cannot read keeps its
    target, so that the session refuses it for a sqlext table rather than let Spark write there."""
    dynamic = parse_statement("INSERT INTO t PARTITION (p) SELECT 1, 'x'")
    assert isinstance(dynamic, Insert) and dynamic.dynamic_partitions == ("p",)
    unread = parse_statement(r"INSERT INTO db.t VALUES ('it\'s')")
    assert isinstance(unread, Passthrough) and unread.guard == TableIdentifier("db", "t")
    assert isinstance(unread.error, ParseError)
    malformed = parse_statement("INSERT INTO t PARTITION (dt = ) SELECT 1")
    assert isinstance(malformed, Passthrough) and malformed.guard == TableIdentifier("", "t")
    assert malformed.error is not None and "Expected: [WITH ...] INSERT INTO|OVERWRITE" in malformed.error.message


def test_the_session_keys_sqlext_owns_are_the_ones_its_jobs_read() -> None:
    """An unquoted ``SET key=value`` of an option sqlext reads is sqlext's: the list must not drift from the
    modules that read the options."""
    from sqlext.jobs.checkpoint import START_OPTION
    from sqlext.jobs.insert import CHECKPOINT_INTERVAL, GATHER_STATISTICS, PIPELINE_NAME, RUNTIME_MODE
    from sqlext.jobs.time_zone import LOCAL_TIME_ZONE
    from sqlext.sql.ownership import SESSION_KEYS

    read = {START_OPTION, CHECKPOINT_INTERVAL, GATHER_STATISTICS.key, PIPELINE_NAME, RUNTIME_MODE, LOCAL_TIME_ZONE}
    assert read | {"table.sql-dialect"} == SESSION_KEYS


def test_flinks_unquoted_set_after_a_comment_is_read_as_one() -> None:
    script = "-- the docs' first line\nSET table.sql-dialect=hive;\n-- and back\nRESET table.sql-dialect;"
    assert [(type(s).__name__, s.key) for s in parse_statements(script)] == [  # type: ignore[attr-defined]
        ("SetOption", "table.sql-dialect"),
        ("ResetOption", "table.sql-dialect"),
    ]
