"""Transparent to Spark SQL: an extended session runs every Spark statement exactly as Spark does.

The differential suite runs the corpus of Spark statements (``spark_statements.sql``) in a plain Hive-enabled
session, drops what it made, then runs it in a session extended with sqlext on the same metastore, and
compares every statement's outcome: Spark's error class, or the result's schema and rows. Then sqlext's own
part of the statements Flink and Spark share: ``SHOW TABLES`` with sqlext's temporary tables in Spark's shape,
``SET`` listing both, ``RESET`` resetting both, and sqlext's answers for sqlext tables only.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.spark.session import extend

pytestmark = [pytest.mark.spark, pytest.mark.hms]

CORPUS = Path(__file__).with_name("spark_statements.sql")
SHAPE_ONLY = "-- shape-only"
DATABASES = ("tp_a", "tp_b", "tp_c", "tp_d")


@dataclass(frozen=True)
class Case:
    line: int
    sql: str

    @property
    def shape_only(self) -> bool:
        return SHAPE_ONLY in self.sql.splitlines()


def corpus(directory: Path) -> list[Case]:
    """The corpus's statements: blocks of lines between blank lines, comment-only blocks left out."""
    cases: list[Case] = []
    block: list[str] = []
    start = 0
    for number, line in enumerate([*CORPUS.read_text().splitlines(), ""], start=1):
        if line.strip():
            start = start or number
            block.append(line)
            continue
        if any(not text.lstrip().startswith("--") for text in block):
            cases.append(Case(start, "\n".join(block).replace("${dir}", directory.as_uri())))
        block, start = [], 0
    return cases


def outcome(session: Any, case: Case) -> tuple[Any, ...]:
    """What a statement did: ``('error', class)`` or ``('rows', schema, rows)`` (row count if shape-only)."""
    try:
        frame = session.sql(case.sql)
        rows = [tuple(row) for row in frame.collect()]
    except Exception as exc:
        condition = getattr(exc, "getCondition", None)
        return ("error", (condition() if condition else None) or type(exc).__name__)
    schema = frame.schema.simpleString()
    return ("rows", schema, len(rows)) if case.shape_only else ("rows", schema, [masked(row) for row in rows])


#: What differs between two runs of one statement: DDL times, expression ids in plans.
_MASKS = [
    (re.compile(r"'transient_lastDdlTime' = '\d+'"), "'transient_lastDdlTime' = '?'"),
    (re.compile(r"#\d+"), "#?"),
]


def masked(row: tuple[Any, ...]) -> tuple[Any, ...]:
    def mask(value: Any) -> Any:
        if isinstance(value, str):
            for pattern, replacement in _MASKS:
                value = pattern.sub(replacement, value)
        return value

    return tuple(mask(value) for value in row)


def _drop_databases(spark: Any, databases: tuple[str, ...] = DATABASES) -> None:
    own_sql = getattr(spark, "_sqlext_session", None)
    run = own_sql.spark_sql if own_sql is not None else spark.sql
    for database in databases:
        try:
            run(f"DROP DATABASE IF EXISTS {database} CASCADE")
        except Exception:
            # Spark's Hive client retries a call whose connection dropped; a retried drop that the metastore
            # had done already fails with NoSuchObjectException. Gone is what counts.
            if spark.catalog.databaseExists(database):
                raise


@pytest.fixture(scope="module")
def outcomes(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[Case, Any, Any]]]:
    """Each case with its outcome in a plain session and in an extended one (same metastore, same names)."""
    directory = tmp_path_factory.mktemp("transparency")
    cases = corpus(directory)
    _drop_databases(spark)
    plain_session = spark.newSession()
    plain = [outcome(plain_session, case) for case in cases]
    _drop_databases(spark)
    shutil.rmtree(directory)
    directory.mkdir()
    extended_session = spark.newSession()
    extend(extended_session)
    extended = [outcome(extended_session, case) for case in cases]
    _drop_databases(spark)
    yield list(zip(cases, plain, extended, strict=True))


def test_every_spark_statement_has_the_same_outcome_in_an_extended_session(outcomes: list[Any]) -> None:
    different = [
        f"line {case.line}: {case.sql!r}\n  Spark:  {plain}\n  sqlext: {extended}"
        for case, plain, extended in outcomes
        if plain != extended
    ]
    assert different == [], "\n".join(different)


def test_the_corpus_has_every_shape_the_issue_names_and_they_ran(outcomes: list[Any]) -> None:
    """Each shape that once went wrong is in the corpus, and most statements succeed (not all errors)."""
    texts = [case.sql for case, _, _ in outcomes]
    shapes = [
        "SHOW CREATE TABLE tp_a.src",
        "SHOW CREATE TABLE tp_a.hive_src AS SERDE",
        "SHOW TABLES IN tp_a",
        "SHOW TABLES FROM tp_a LIKE 'hive*|ct*'",
        "SHOW TABLES IN tp_a 'p*'",
        "CREATE TABLE tp_a.copy LIKE tp_a.src",
        "CREATE SCHEMA IF NOT EXISTS tp_b",
        "USE NAMESPACE tp_b",
        "USE IDENTIFIER('tp_' || 'b')",
        "DROP TABLE tv",
        "DROP TABLE IF EXISTS tv",
        "DESC tp_a.src name",
        "DESC QUERY",
        "IDENTIFIER(",
        "OPTIONS (compression 'snappy')",
        "TBLPROPERTIES (t 'x')",
        "RENAME TO PARTITION",
        "'it\\'s'",
        "SELECT 1 /* never closed",
        "SET\n",
        "RESET\n",
        "RESET spark.sql.shuffle.partitions",
        "INSERT INTO tp_a.parts PARTITION (p) SELECT",
        "COMMENT 'it\\'s'",
        "DECLARE VARIABLE",
        "SET VAR",
        "WITH a AS",
        "/*+ BROADCAST(b) */",
        "CREATE DATABASE tp_a",
        "USE tp_a",
    ]
    joined = "\n".join(texts) + "\n"
    assert [shape for shape in shapes if shape not in joined] == []
    succeeded = [case for case, plain, _ in outcomes if plain[0] == "rows"]
    assert len(succeeded) > 0.75 * len(outcomes)
    ddl = next(e for case, _, e in outcomes if case.sql == "CREATE DATABASE tp_a")
    assert ddl == ("rows", "struct<>", []), "DDL returns no columns and no rows, as Spark's"


# -- sqlext's part of the statements Flink and Spark share ----------------------------------------------


@pytest.fixture
def ext(spark: Any, tmp_path: Path) -> Iterator[Any]:
    session = spark.newSession()
    extend(session)
    session.sql("CREATE DATABASE IF NOT EXISTS tp_own")
    yield session
    _drop_databases(session, ("tp_own",))


def _rows(session: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in session.sql(sql).collect()]


def test_show_tables_is_sparks_shape_with_sqlexts_tables_in_it(ext: Any, tmp_path: Path) -> None:
    ext.sql("CREATE TABLE tp_own.spark_t (a INT) USING parquet")
    ext.sql(
        f"CREATE TABLE tp_own.flink_t (a INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path.as_uri()}', "
        "'format' = 'csv')"
    )
    ext.sql("CREATE TEMPORARY TABLE tp_own.flink_tmp (a INT) WITH ('connector' = 'datagen')")
    ext.sql("CREATE TEMPORARY VIEW spark_tmp AS SELECT 1")
    shown = ext.sql("SHOW TABLES IN tp_own")
    assert shown.columns == ["namespace", "tableName", "isTemporary"]
    assert sorted(tuple(r) for r in shown.collect()) == [
        ("", "spark_tmp", True),
        ("tp_own", "flink_t", False),
        ("tp_own", "flink_tmp", True),
        ("tp_own", "spark_t", False),
    ]
    assert _rows(ext, "SHOW TABLES IN tp_own LIKE 'flink*'") == [
        ("tp_own", "flink_t", False),
        ("tp_own", "flink_tmp", True),
    ]
    # sqlext answers for its own tables, Spark for the others.
    assert _rows(ext, "SHOW CREATE TABLE tp_own.flink_t")[0][0].startswith("CREATE TABLE `tp_own`.`flink_t`")
    assert "USING parquet" in _rows(ext, "SHOW CREATE TABLE tp_own.spark_t")[0][0]
    assert ("# Options", "", None) in _rows(ext, "DESCRIBE tp_own.flink_t")
    assert _rows(ext, "DESCRIBE tp_own.spark_t") == [("a", "int", None)]
    assert ext.sql("CREATE TABLE tp_own.again (a INT) WITH ('connector' = 'datagen')").collect() == []
    assert ext.sql("DROP TABLE tp_own.flink_t").columns == []


def test_set_lists_and_reset_resets_sparks_settings_and_sqlexts_options(ext: Any) -> None:
    ext.sql("SET spark.sql.shuffle.partitions = 7")
    assert _rows(ext, "SET 'pipeline.name' = 'p1'") == [("pipeline.name", "p1")]
    listed = _rows(ext, "SET")
    assert ("pipeline.name", "p1") in listed and ("spark.sql.shuffle.partitions", "7") in listed
    assert listed == sorted(listed)
    assert _rows(ext, "SET pipeline.name") == [("pipeline.name", "p1")]

    ext.sql("RESET pipeline.name")  # Spark's RESET key: the key wherever it lives
    assert "pipeline.name" not in dict(_rows(ext, "SET"))
    ext.sql("SET 'pipeline.name' = 'p2'")
    ext.sql("RESET 'spark.sql.shuffle.partitions'")  # Flink's form resets Spark's setting too
    assert ext.conf.get("spark.sql.shuffle.partitions") != "7"

    ext.sql("SET spark.sql.shuffle.partitions = 7")
    assert ext.sql("RESET").collect() == []
    assert extend(ext).options == {}
    assert ext.conf.get("spark.sql.shuffle.partitions") != "7"


def test_flinks_sql_client_set_and_reset_unquoted_are_sqlexts_for_its_keys(ext: Any) -> None:
    """``SET table.sql-dialect=hive`` (Flink's Hive docs) and ``RESET key`` as Flink's SQL client takes them, where
    Spark would refuse the key or the key is one sqlext reads; Spark keeps every other ``SET k=v``."""
    assert _rows(ext, "SET table.sql-dialect=hive") == [("table.sql-dialect", "hive")]
    assert _rows(ext, "SET execution.runtime-mode = batch") == [("execution.runtime-mode", "batch")]
    assert _rows(ext, "SET pipeline.name='a b'") == [("pipeline.name", "a b")]
    assert extend(ext).options == {
        "table.sql-dialect": "hive",
        "execution.runtime-mode": "batch",
        "pipeline.name": "a b",
    }
    assert ext.conf.get("pipeline.name", None) is None  # sqlext's option, not a Spark setting
    assert _rows(ext, "SET table.sql-dialect") == [("table.sql-dialect", "hive")]
    ext.sql("RESET table.sql-dialect")
    ext.sql("RESET execution.runtime-mode")
    assert extend(ext).options == {"pipeline.name": "a b"}
    ext.sql("SET spark.sql.shuffle.partitions=5")  # Spark's keys stay Spark's
    assert (
        ext.conf.get("spark.sql.shuffle.partitions") == "5"
        and "spark.sql.shuffle.partitions" not in extend(ext).options
    )
    ext.sql("RESET")


def test_dynamic_partitions_into_a_sqlext_table_are_refused_and_spark_tables_take_them(
    ext: Any, hms: MetastoreClient, tmp_path: Path
) -> None:
    from sqlext.errors import ValidationError

    ext.sql(
        f"CREATE TABLE tp_own.sink (a INT, p STRING) PARTITIONED BY (p) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path.as_uri()}', 'format' = 'parquet')"
    )
    with pytest.raises(ValidationError, match="Only static partitions"):
        ext.sql("INSERT INTO tp_own.sink PARTITION (p) SELECT 1, 'x'")
    ext.sql("CREATE TABLE tp_own.plain (a INT, p STRING) USING parquet PARTITIONED BY (p)")
    ext.sql("INSERT INTO tp_own.plain PARTITION (p) SELECT 1, 'x'")
    assert hms.get_partition_names("tp_own", "plain") == ["p=x"]
    assert hms.get_partition_names("tp_own", "sink") == []
