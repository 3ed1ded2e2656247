"""Every SQL file in sql/: parsed, its tables created in a real HMS, read back equal from a new catalog
and from Spark SQL; and each file run through sqlext, as ``sqlext run`` runs it (bounded where it would stream
forever, paths in temp dirs), with what its queries return and what it committed checked."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.frames import StatementResult
from sqlext.spark.session import extend
from sqlext.sql.ddl import show_create_table
from sqlext.sql.parser import parse_statement, parse_statements, split_statements
from sqlext.sql.statements import CreateTable
from sqlext.sql.types import hive_type
from sqlext.table import TableDefinition, TableIdentifier
from tests.support.kafka import DEMO_EVENTS, KafkaBroker, produce_demo_events
from tests.support.services import spark_own_sql
from tests.support.tables import created_database

pytestmark = [pytest.mark.hms]

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
SQL_FILES = sorted(SQL_DIR.glob("*.sql"))


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


# -- each file run, its results checked -------------------------------------------------------------------------


def _run_file(spark: Any, text: str) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Run a file's statements in order on an extended session, as ``sqlext run`` does, except that each
    streaming insert (over a bounded source here) is waited for, committed, before the next statement: each
    statement's text and rows."""
    session = extend(spark)
    done: list[tuple[str, list[tuple[Any, ...]]]] = []
    for statement in split_statements(text):
        result = session.run(statement)
        if isinstance(result, StatementResult):
            columns, rows = result.columns, [tuple(row) for row in result.rows]
        else:
            columns, rows = result.columns, [tuple(row) for row in result.collect()]
        if "job_id" in columns:
            insert = running_insert(rows[0][0])
            assert insert is not None, statement
            assert insert.wait(600), f"the insert did not end: {statement}"
            assert insert.query.exception() is None, insert.query.exception()
        done.append((statement, rows))
    return done


def _rows_of(results: list[tuple[str, list[tuple[Any, ...]]]], start: str) -> list[tuple[Any, ...]]:
    """The rows of the one statement that starts with ``start``."""
    (rows,) = [rows for statement, rows in results if statement.startswith(start)]
    return rows


def _fresh(spark: Any, text: str) -> None:
    """Drop the tables a file creates (an earlier test of this module made some of them)."""
    for statement in parse_statements(text):
        if isinstance(statement, CreateTable):
            ident = _in_default_database(statement.table).identifier
            extend(spark).sql(f"DROP TABLE IF EXISTS `{ident.database}`.`{ident.name}`")


def _json_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "part-0.json").write_text("".join(json.dumps(row) + "\n" for row in rows))


def _hive_streaming_docs(spark: Any, tmp_path: Path) -> None:
    """Flink's Hive streaming writing example as the docs give it (sql/flink_hive_streaming_docs.sql), its Kafka
    sources replaced by bounded json files: each docs SELECT returns the rows written into its partition."""
    text = (SQL_DIR / "flink_hive_streaming_docs.sql").read_text()
    orders = [
        {"user_id": f"u{i}", "order_amount": float(i), "log_ts": f"2020-05-20 {hour}:{i:02d}:00.000"}
        for i, hour in enumerate(["11", "12", "12", "12", "13"])
    ]
    shanghai_noon_utc = int(datetime(2020, 5, 20, 4, tzinfo=UTC).timestamp() * 1000)  # 12:00 in Asia/Shanghai
    orders_ltz = [
        {"user_id": f"v{i}", "order_amount": float(i), "ts": shanghai_noon_utc + offset_s * 1000}
        for i, offset_s in enumerate([-60, 0, 1800, 3599, 3600])
    ]
    _json_lines(tmp_path / "kafka_table", orders)
    _json_lines(tmp_path / "kafka_table_ltz", orders_ltz)
    for name in ("kafka_table", "kafka_table_ltz"):
        source = f"'connector' = 'filesystem', 'path' = '{(tmp_path / name).as_uri()}', 'format' = 'json'"
        text = re.sub(
            rf"(CREATE TABLE {name} \((?:(?!;).)*?\) WITH \()'connector' = 'datagen'",
            rf"\g<1>{source}",
            text,
            flags=re.S,
        )
    assert text.count("'connector' = 'datagen'") == 0
    _fresh(spark, text)

    results = _run_file(spark, text)

    assert extend(spark).options["table.sql-dialect"] == "default"
    assert sorted(_rows_of(results, "-- batch sql, select with partition pruning\nSELECT * FROM hive_table WHERE")) == [
        ("u1", 1.0, "2020-05-20", "12"),
        ("u2", 2.0, "2020-05-20", "12"),
        ("u3", 3.0, "2020-05-20", "12"),
    ]
    assert sorted(_rows_of(results, "-- batch sql, select with partition pruning\nSELECT * FROM hive_table_ltz")) == [
        ("v1", 1.0, "2020-05-20", "12"),
        ("v2", 2.0, "2020-05-20", "12"),
        ("v3", 3.0, "2020-05-20", "12"),
    ]
    client = extend(spark).catalog.client
    assert client.get_partition_names("default", "hive_table") == [
        "dt=2020-05-20/hr=11",
        "dt=2020-05-20/hr=12",
        "dt=2020-05-20/hr=13",
    ]
    assert client.get_partition_names("default", "hive_table_ltz") == [
        "dt=2020-05-20/hr=11",
        "dt=2020-05-20/hr=12",
        "dt=2020-05-20/hr=13",
    ]


def _in_temp_dirs(text: str, tmp_path: Path) -> str:
    """A file's text with its paths under ``tmp_path``."""
    for root in ("sqlext-examples", "sqlext-demo"):
        text = text.replace(f"file:///tmp/{root}", (tmp_path / root).as_uri())
    return text


def _backfill_batch(spark: Any, tmp_path: Path) -> None:
    """The orc archive read once in batch mode, its days written and committed at the end of input."""
    archive = tmp_path / "sqlext-examples" / "archive" / "clicks"
    rows = [(n, f"/page/{n}", datetime(2026, 1, 1 + n % 2, 10, n), f"2026010{1 + n % 2}") for n in range(5)]
    frame = spark.createDataFrame(rows, "user_id BIGINT, url STRING, clicked_at TIMESTAMP, day STRING")
    frame.write.partitionBy("day").orc(str(archive))
    text = _in_temp_dirs((SQL_DIR / "backfill_batch.sql").read_text(), tmp_path)
    _fresh(spark, text)

    _run_file(spark, text)

    assert extend(spark).catalog.client.get_partition_names("backfill", "clicks_daily") == [
        "day=20260101",
        "day=20260102",
    ]
    counted = spark.sql("SELECT day, count(*) AS n FROM backfill.clicks_daily GROUP BY day ORDER BY day").collect()
    assert [(r.day, r.n) for r in counted] == [("20260101", 3), ("20260102", 2)]
    assert (tmp_path / "sqlext-examples" / "warehouse" / "clicks_daily" / "day=20260101" / "_SUCCESS").exists()


def _demo(spark: Any, tmp_path: Path) -> None:
    """The demo's 21,600 datagen events in six hourly partitions (its commits in detail: tests/cli/test_demo.py)."""
    text = _in_temp_dirs((SQL_DIR / "demo.sql").read_text(), tmp_path)
    _fresh(spark, text)

    _run_file(spark, text)

    hours = [f"dt=2026-01-01/hr=0{hour}" for hour in range(6)]
    assert extend(spark).catalog.client.get_partition_names("demo", "events_by_hour") == hours
    assert spark.sql("SELECT count(*) AS n FROM demo.events_by_hour").first().n == 21600


def _filesystem_docs(spark: Any, tmp_path: Path) -> None:
    """The FileSystem connector page's tables; its "Available Metadata" table read with its ``file.path``. (The
    "Full Example"'s success-file table read back is tests/connectors/filesystem/test_flink_full_example.py's.)"""
    text = _in_temp_dirs((SQL_DIR / "flink_filesystem_docs.sql").read_text(), tmp_path)
    _fresh(spark, text)

    _run_file(spark, text)

    # Spark lists the session's temporary views too, which other tests of this worker's session made.
    tables = {row.tableName for row in spark.sql("SHOW TABLES IN flink_docs").collect() if not row.isTemporary}
    assert tables == {
        "myusertable",
        "myusertablewithfilepath",
        "kafka_table",
        "fs_table",
        "kafka_table_ltz",
        "fs_table_ltz",
    }
    data = tmp_path / "sqlext-examples" / "my_user_table_with_filepath"
    _json_lines(data, [{"column_name1": 1, "column_name2": "a"}, {"column_name1": 2, "column_name2": "b"}])
    rows = spark.sql("SELECT column_name1, `file.path` FROM flink_docs.MyUserTableWithFilepath").collect()
    assert sorted(tuple(row) for row in rows) == [(1, str(data / "part-0.json")), (2, str(data / "part-0.json"))]


def _landing_zone(spark: Any, tmp_path: Path) -> None:
    """The landing zone's csv files, read once (the file watches its directory forever: run in batch mode
    here), their positive orders in hourly partitions."""
    landing = tmp_path / "sqlext-examples" / "landing" / "orders"
    landing.mkdir(parents=True)
    (landing / "orders-1.csv").write_text(
        "1,alice,10.50,2026-01-01 10:15:00\n2,bob,-3.00,2026-01-01 10:20:00\n3,carol,7.25,2026-01-01 11:05:00\n"
    )
    text = "SET 'execution.runtime-mode' = 'batch';\n" + _in_temp_dirs(
        (SQL_DIR / "landing_zone.sql").read_text(), tmp_path
    )
    _fresh(spark, text)

    _run_file(spark, text)

    assert extend(spark).catalog.client.get_partition_names("landing", "orders") == [
        "dt=2026-01-01/hr=10",
        "dt=2026-01-01/hr=11",
    ]
    rows = spark.sql("SELECT order_id, customer, CAST(amount AS STRING) AS amount, hr FROM landing.orders").collect()
    assert sorted(tuple(row) for row in rows) == [(1, "alice", "10.50", "10"), (3, "carol", "7.25", "11")]


#: How each file of sql/ is run: a function(spark, tmp_path) that prepares its input, runs it and checks what
#: it wrote; or the reason it is not run here.
RUNS: dict[str, Any] = {
    "backfill_batch.sql": _backfill_batch,
    "demo.sql": _demo,
    "flink_filesystem_docs.sql": _filesystem_docs,
    "flink_hive_streaming_docs.sql": _hive_streaming_docs,
    "landing_zone.sql": _landing_zone,
}
#: Files that need a service the session starts, run by their own tests below.
ON_SERVICES = {"kafka_demo.sql": "test_the_kafka_demo_streams_the_brokers_events_into_hourly_partitions"}


def test_every_file_is_run() -> None:
    assert {f.name for f in SQL_FILES} == set(RUNS) | set(ON_SERVICES)
    assert all(test in globals() for test in ON_SERVICES.values())


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_file_runs_and_its_queries_return_what_it_wrote(name: str, spark: Any, tmp_path: Path) -> None:
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    RUNS[name](spark, tmp_path)


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.jars
@pytest.mark.slow
def test_the_kafka_demo_streams_the_brokers_events_into_hourly_partitions(
    kafka_broker: KafkaBroker, spark: Any, tmp_path: Path
) -> None:
    """sql/kafka_demo.sql on the session's broker, its topic holding the demo events (``python -m
    tests.support.kafka --demo-events``), read up to the offsets at its start (``scan.bounded.mode``; the file
    streams until stopped): six hourly partitions in the HMS with _SUCCESS, every event once with its offset."""
    topic = f"events_{uuid.uuid4().hex[:8]}"
    assert produce_demo_events(kafka_broker, topic) == DEMO_EVENTS
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    text = _in_temp_dirs((SQL_DIR / "kafka_demo.sql").read_text(), tmp_path)
    bounded = f"""'topic' = '{topic}',
  'properties.bootstrap.servers' = '{kafka_broker.bootstrap}',
  'scan.bounded.mode' = 'latest-offset',"""
    text = text.replace(
        """'topic' = 'events',
  'properties.bootstrap.servers' = '127.0.0.1:9092',""",
        bounded,
    )
    assert bounded in text
    _fresh(spark, text)

    _run_file(spark, text)

    hours = [f"dt=2026-01-01/hr=0{hour}" for hour in range(6)]
    assert extend(spark).catalog.client.get_partition_names("kafka_demo", "events_by_hour") == hours
    table = tmp_path / "sqlext-demo" / "kafka_events_by_hour"
    assert all((table / hour / "_SUCCESS").exists() for hour in hours)
    counted = spark.sql(
        "SELECT hr, count(*) AS n, count(DISTINCT id) AS ids FROM kafka_demo.events_by_hour GROUP BY hr ORDER BY hr"
    ).collect()
    assert [(r.hr, r.n, r.ids) for r in counted] == [(f"0{hour}", 360, 360) for hour in range(6)]
    sources = spark.sql("SELECT id, src_partition, src_offset FROM kafka_demo.events_by_hour").collect()
    assert all((r.src_partition, r.src_offset) == (r.id % 3, r.id // 3) for r in sources), (
        "id n is record n // 3 of n % 3"
    )
