"""The sqlext gateway used as users use it: ``sqlext gateway start`` in the background, then PyHive and
pyspark's bundled beeline over the HiveServer2 protocol (SASL PLAIN and NOSASL), against the real
metastore. What is asserted is what the clients read back and what the HMS lists."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyhive import hive
from pyhive.exc import OperationalError
from TCLIService import ttypes

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.streams import write_hourly_events
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow, pytest.mark.timeout(900)]

HOURS = ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01", "dt=2026-11-22/hr=02"]
S = ttypes.TOperationState


@dataclass(frozen=True)
class RunningGateway:
    port: int
    home: Path
    flags: tuple[str, ...]

    @property
    def url(self) -> str:
        return f"jdbc:hive2://127.0.0.1:{self.port}/default"


def _sqlext(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLEXT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "sqlext.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def gateway(metastore: MetastoreSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """``sqlext gateway start`` on a free port, on the tests' metastore; stopped after the module."""
    home = tmp_path_factory.mktemp("gateway")
    conf = {
        "spark.sqlext.metastore.uris": metastore.uri,
        "spark.sqlext.warehouse": (home / "warehouse").as_uri(),
        "spark.sqlext.checkpoint.root": (home / "checkpoints").as_uri(),
        "spark.sql.shuffle.partitions": "2",
        # The tests' tables live in their tmp_path (docs/authorization.md: locations).
        "spark.sqlext.gateway.allowed-locations": tmp_path_factory.getbasetemp().as_uri(),
    }
    port = free_port()
    flags = ("--port", str(port), *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")))
    started = _sqlext("gateway", "start", *flags, home=home)
    assert started.returncode == 0, started.stderr[-3000:]
    running = RunningGateway(port, home, flags)
    assert started.stdout.strip() == running.url
    try:
        yield running
    finally:
        stopped = _sqlext("gateway", "stop", *flags, home=home)
        assert stopped.stdout.strip() == "stopped", stopped.stdout + stopped.stderr


@contextlib.contextmanager
def _connect(gateway: RunningGateway, **kwargs: Any) -> Iterator[Any]:
    connection = hive.connect(host="127.0.0.1", port=gateway.port, username="tester", **kwargs)
    try:
        yield connection
    finally:
        with contextlib.suppress(Exception):
            connection.close()


def _rows(cursor: Any, statement: str) -> list[tuple[Any, ...]]:
    cursor.execute(statement)
    return [tuple(row) for row in cursor.fetchall()]


def _error_of(failure: pytest.ExceptionInfo[OperationalError]) -> Any:
    """The TStatus of a failed call, or the status response of a failed operation."""
    response = failure.value.args[0]
    return response.status if response.status.statusCode != ttypes.TStatusCode.SUCCESS_STATUS else response


def _source_ddl(database: str, name: str, path: Path) -> str:
    return f"""CREATE TABLE {database}.{name} (
        id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
      ) WITH ('connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = 'parquet')"""


def _hourly_sink_ddl(database: str, name: str, path: Path) -> str:
    return f"""CREATE TABLE {database}.{name} (id BIGINT, user_id STRING, ts TIMESTAMP(3), dt STRING, `hr` STRING)
      PARTITIONED BY (dt, `hr`) WITH (
        'connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = 'parquet',
        'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
        'sink.partition-commit.trigger' = 'partition-time',
        'sink.partition-commit.delay' = '1 h',
        'sink.partition-commit.policy.kind' = 'metastore,success-file')"""


def _generated_ddl(database: str, name: str) -> str:
    return f"""CREATE TABLE {database}.{name} (user_id BIGINT, amount DOUBLE, ts TIMESTAMP(3))
      WITH ('connector' = 'datagen', 'rows-per-second' = '20', 'fields.ts.max-past' = '1 h')"""


def _daily_sink_ddl(database: str, name: str, path: Path) -> str:
    return f"""CREATE TABLE {database}.{name} (user_id BIGINT, amount DOUBLE, dt STRING) PARTITIONED BY (dt)
      WITH ('connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = 'parquet')"""


HOURLY_INSERT = (
    "INSERT INTO {db}.{sink} SELECT id, user_id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') "
    "FROM {db}.{source}"
)
DAILY_INSERT = "INSERT INTO {db}.{sink} SELECT user_id, amount, DATE_FORMAT(ts, 'yyyy-MM-dd') FROM {db}.{source}"


def _job_status(cursor: Any, job_id: str) -> str | None:
    return next((row[2] for row in _rows(cursor, "SHOW JOBS") if row[0] == job_id), None)


# -- PyHive ----------------------------------------------------------------------------------------


def test_pyhive_flink_ddl_bounded_insert_commits_partitions_that_queries_read(
    gateway: RunningGateway, hms: MetastoreClient, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "in", datetime(2026, 11, 22), hours=3, rows_per_hour=40)
    with _connect(gateway) as connection:
        cursor = connection.cursor()
        assert _rows(cursor, "CREATE DATABASE IF NOT EXISTS gw_py") == []  # as Spark's: no rows
        assert [column[0] for column in cursor.description] == ["Result"]
        cursor.execute(_source_ddl("gw_py", "events_in", tmp_path / "in"))
        cursor.execute(_hourly_sink_ddl("gw_py", "events", tmp_path / "out"))
        cursor.execute("SET 'pipeline.name' = 'gw_py_bounded'")
        ((job_id, job_name, sink),) = _rows(cursor, HOURLY_INSERT.format(db="gw_py", sink="events", source="events_in"))
    assert (job_name, sink) == ("gw_py_bounded", "gw_py.events")

    wait_for(lambda: hms.get_partition_names("gw_py", "events") == HOURS, 180, what="three hours committed")
    with _connect(gateway) as connection:
        cursor = connection.cursor()
        wait_for(lambda: _job_status(cursor, job_id) == "FINISHED", 60, what="the bounded job FINISHED")
        counts = _rows(cursor, "SELECT hr, count(*), count(DISTINCT id) FROM gw_py.events GROUP BY hr ORDER BY hr")
        assert counts == [("00", 40, 40), ("01", 40, 40), ("02", 40, 40)]
        assert _rows(cursor, "SHOW PARTITIONS gw_py.events") == [(name,) for name in HOURS]


def test_a_streaming_job_outlives_its_client_and_another_client_stops_it(
    gateway: RunningGateway, hms: MetastoreClient, tmp_path: Path
) -> None:
    with _connect(gateway) as connection:
        cursor = connection.cursor()
        cursor.execute("CREATE DATABASE IF NOT EXISTS gw_py")
        cursor.execute(_generated_ddl("gw_py", "generated"))
        cursor.execute(_daily_sink_ddl("gw_py", "daily", tmp_path / "daily"))
        cursor.execute("SET 'pipeline.name' = 'gw_py_stream'")
        cursor.execute("SET 'execution.checkpointing.interval' = '1 s'")
        ((job_id, _, _),) = _rows(cursor, DAILY_INSERT.format(db="gw_py", sink="daily", source="generated"))
    # The client is gone; the job goes on writing and committing.
    wait_for(lambda: hms.get_partition_names("gw_py", "daily"), 120, what="a partition committed after disconnect")

    with _connect(gateway) as connection:
        cursor = connection.cursor()
        assert (job_id, "gw_py_stream", "RUNNING") in [row[:3] for row in _rows(cursor, "SHOW JOBS")]
        assert _rows(cursor, f"STOP JOB '{job_id}'") == [("OK",)]
        assert _job_status(cursor, job_id) == "CANCELED"
        with pytest.raises(OperationalError) as again:
            cursor.execute(f"STOP JOB '{job_id}'")
        assert "is not running: it is CANCELED" in _error_of(again).errorMessage
        assert _rows(cursor, "SELECT count(*) > 0 FROM gw_py.daily") == [(True,)]


def test_a_bad_statement_is_a_hiveserver2_error_with_sqlexts_message_and_harms_no_session(
    gateway: RunningGateway,
) -> None:
    with _connect(gateway) as first, _connect(gateway) as second:
        one, two = first.cursor(), second.cursor()
        assert _rows(one, "CREATE DATABASE IF NOT EXISTS gw_err") == []
        with pytest.raises(OperationalError) as bad_option:
            one.execute("CREATE TABLE gw_err.bad (a INT) WITH ('connector' = 'datagen', 'rows-per-secnd' = '1')")
        status = _error_of(bad_option)
        assert status.statusCode == ttypes.TStatusCode.ERROR_STATUS
        assert status.errorMessage.startswith("Unsupported options found for 'datagen'.")
        assert "rows-per-secnd" in status.errorMessage and status.sqlState == "42000"

        with pytest.raises(OperationalError) as spark_error:
            one.execute("SELECT * FROM gw_err.no_such_table")
        assert "TABLE_OR_VIEW_NOT_FOUND" in _error_of(spark_error).errorMessage
        assert _error_of(spark_error).sqlState == "42P01"

        # Asynchronous: the error arrives through GetOperationStatus.
        one.execute("CREATE TABLE gw_err.bad2 (a INT, WITH ('connector' = 'datagen')", async_=True)
        polled = wait_for(lambda: (status := one.poll()).operationState == S.ERROR_STATE and status, 30)
        assert "Expected" in polled.errorMessage and polled.sqlState == "42601"

        assert _rows(one, "SELECT 1 + 1") == [(2,)], "the failing session goes on"
        assert _rows(two, "SELECT 'unaffected'") == [("unaffected",)]


def test_set_options_and_current_database_belong_to_each_session(gateway: RunningGateway) -> None:
    with _connect(gateway) as first, _connect(gateway) as second:
        one, two = first.cursor(), second.cursor()
        one.execute("CREATE DATABASE IF NOT EXISTS gw_set")
        assert _rows(one, "SET 'pipeline.name' = 'only_mine'") == [("pipeline.name", "only_mine")]
        one.execute("USE gw_set")
        assert ("pipeline.name", "only_mine") in _rows(one, "SET")
        assert ("pipeline.name", "only_mine") not in _rows(two, "SET")
        assert _rows(one, "SELECT current_database()") == [("gw_set",)]
        assert _rows(two, "SELECT current_database()") == [("default",)]
        one.execute("CREATE TEMPORARY TABLE gw_set.mine (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '1')")
        assert ("gw_set", "mine", True) in _rows(one, "SHOW TABLES IN gw_set")
        assert ("gw_set", "mine", True) not in _rows(two, "SHOW TABLES IN gw_set")
    with _connect(gateway, database="gw_set", configuration={"execution.runtime-mode": "batch"}) as third:
        cursor = third.cursor()
        assert _rows(cursor, "SELECT current_database()") == [("gw_set",)]
        assert ("execution.runtime-mode", "batch") in _rows(cursor, "SET")


def test_results_are_typed_columns_with_nulls_fetched_in_batches(gateway: RunningGateway) -> None:
    with _connect(gateway) as connection:
        cursor = connection.cursor()
        cursor.execute(
            "SELECT true AS b, CAST(1 AS TINYINT) AS t, CAST(2 AS SMALLINT) AS s, 3 AS i, 4L AS l, "
            "CAST(1.1 AS FLOAT) AS f, 2.5D AS d, CAST(12.30 AS DECIMAL(10, 2)) AS dec, 'x' AS str, "
            "DATE'2026-11-22' AS dt, TIMESTAMP'2026-11-22 01:02:03.456' AS ts, X'0A0B' AS bin, "
            "array(1, 2) AS arr, map('k', 1) AS m, named_struct('a', 1, 'b', 'z') AS st"
        )
        types = [column[1] for column in cursor.description]
        assert types == [
            "BOOLEAN_TYPE",
            "TINYINT_TYPE",
            "SMALLINT_TYPE",
            "INT_TYPE",
            "BIGINT_TYPE",
            "FLOAT_TYPE",
            "DOUBLE_TYPE",
            "DECIMAL_TYPE",
            "STRING_TYPE",
            "DATE_TYPE",
            "TIMESTAMP_TYPE",
            "BINARY_TYPE",
            "ARRAY_TYPE",
            "MAP_TYPE",
            "STRUCT_TYPE",
        ]
        assert cursor.fetchall() == [
            (
                True,
                1,
                2,
                3,
                4,
                1.1,
                2.5,
                Decimal("12.30"),
                "x",
                "2026-11-22",
                datetime(2026, 11, 22, 1, 2, 3, 456000),
                b"\n\x0b",
                "[1,2]",
                '{"k":1}',
                '{"a":1,"b":"z"}',
            )
        ]
        nulls = "CAST(NULL AS {})"
        kinds = ["BOOLEAN", "TINYINT", "INT", "BIGINT", "DOUBLE", "DECIMAL(5,1)", "STRING", "TIMESTAMP", "BINARY"]
        assert _rows(cursor, "SELECT " + ", ".join(nulls.format(kind) for kind in kinds)) == [(None,) * len(kinds)]

        cursor.arraysize = 7
        rows = _rows(cursor, "SELECT id, IF(id % 3 = 0, NULL, CAST(id AS STRING)) FROM range(25) ORDER BY id")
        assert rows == [(i, None if i % 3 == 0 else str(i)) for i in range(25)]


def test_jdbc_browsing_calls_list_databases_tables_and_columns(gateway: RunningGateway, tmp_path: Path) -> None:
    with _connect(gateway) as connection:
        cursor = connection.cursor()
        cursor.execute("CREATE DATABASE IF NOT EXISTS gw_meta")
        cursor.execute(_daily_sink_ddl("gw_meta", "daily_sink", tmp_path / "t"))
        client, session = connection.client, connection.sessionHandle

        def fetch(response: Any) -> list[tuple[Any, ...]]:
            assert response.status.statusCode == ttypes.TStatusCode.SUCCESS_STATUS, response.status
            handle = response.operationHandle
            names = [
                c.columnName
                for c in client.GetResultSetMetadata(ttypes.TGetResultSetMetadataReq(handle)).schema.columns
            ]
            fetched = client.FetchResults(ttypes.TFetchResultsReq(handle, ttypes.TFetchOrientation.FETCH_NEXT, 1000))
            columns = [next(v for v in vars(c).values() if v is not None).values for c in fetched.results.columns]
            client.CloseOperation(ttypes.TCloseOperationReq(handle))
            return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]

        assert fetch(client.GetCatalogs(ttypes.TGetCatalogsReq(session))) == []
        schemas = fetch(client.GetSchemas(ttypes.TGetSchemasReq(session, schemaName="gw_m%")))
        assert [row["TABLE_SCHEM"] for row in schemas] == ["gw_meta"]
        tables = fetch(client.GetTables(ttypes.TGetTablesReq(session, schemaName="gw_meta", tableName="daily_%")))
        assert [(t["TABLE_SCHEM"], t["TABLE_NAME"], t["TABLE_TYPE"]) for t in tables] == [
            ("gw_meta", "daily_sink", "TABLE")
        ]
        columns = fetch(client.GetColumns(ttypes.TGetColumnsReq(session, schemaName="gw_meta", tableName="daily_sink")))
        assert [(c["COLUMN_NAME"], c["TYPE_NAME"], c["DATA_TYPE"], c["ORDINAL_POSITION"]) for c in columns] == [
            ("user_id", "BIGINT", -5, 1),
            ("amount", "DOUBLE", 8, 2),
            ("dt", "STRING", 12, 3),
        ]
        assert [t["TABLE_TYPE"] for t in fetch(client.GetTableTypes(ttypes.TGetTableTypesReq(session)))] == [
            "TABLE",
            "VIEW",
        ]
        assert "BIGINT" in [t["TYPE_NAME"] for t in fetch(client.GetTypeInfo(ttypes.TGetTypeInfoReq(session)))]
        info = client.GetInfo(ttypes.TGetInfoReq(session, ttypes.TGetInfoType.CLI_DBMS_NAME))
        assert info.infoValue.stringValue == "sqlext"
        unsupported = client.GetFunctions(ttypes.TGetFunctionsReq(session, functionName="%"))
        assert unsupported.status.statusCode == ttypes.TStatusCode.ERROR_STATUS
        assert unsupported.status.errorMessage == "GetFunctions is not supported by the sqlext gateway."


def test_cancel_stops_a_running_query_and_the_session_goes_on(gateway: RunningGateway) -> None:
    with _connect(gateway) as connection:
        cursor = connection.cursor()
        cursor.execute("SELECT count(*) FROM range(0, 100000000000, 1, 8) WHERE hash(id, rand()) = 7", async_=True)
        wait_for(lambda: cursor.poll().operationState == S.RUNNING_STATE, 30, what="the query running")
        cursor.cancel()
        assert cursor.poll().operationState == S.CANCELED_STATE
        assert _rows(cursor, "SELECT 'next'") == [("next",)]


def test_twenty_concurrent_clients_get_their_own_results_and_errors(gateway: RunningGateway) -> None:
    clients = 20
    failures: list[str] = []
    results: dict[int, list[Any]] = {}

    def client(number: int) -> None:
        try:
            with _connect(gateway, auth="NOSASL" if number % 4 == 0 else "NONE") as connection:
                cursor = connection.cursor()
                seen: list[Any] = [_rows(cursor, f"SET 'pipeline.name' = 'client_{number}'")]
                seen.append(_rows(cursor, f"SELECT {number}, count(*), sum(id) FROM range({number * 1000})"))
                if number % 2:
                    with pytest.raises(OperationalError) as failure:
                        cursor.execute(f"SELECT * FROM gw_load.missing_{number}")
                    seen.append(f"missing_{number}" in _error_of(failure).errorMessage)
                seen.append([row for row in _rows(cursor, "SET") if row[0] == "pipeline.name"])
                results[number] = seen
        except Exception as exc:  # reported below with the client's number
            failures.append(f"client {number}: {exc!r}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(1, clients + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert failures == []
    for number in range(1, clients + 1):
        total = number * 1000
        expected: list[Any] = [[("pipeline.name", f"client_{number}")], [(number, total, total * (total - 1) // 2)]]
        if number % 2:
            expected.append(True)
        expected.append([("pipeline.name", f"client_{number}")])
        assert results[number] == expected, f"client {number}"


# -- the transport and the command line -------------------------------------------------------------


def test_sasl_mechanisms_other_than_plain_are_refused_with_the_reason(gateway: RunningGateway) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(struct.pack(">BI", 1, 6) + b"GSSAPI")
        status, length = struct.unpack(">BI", sock.recv(5))
        reason = sock.recv(length).decode()
    assert status == 3 and "Unsupported SASL mechanism 'GSSAPI'" in reason
    with _connect(gateway) as connection:
        assert _rows(connection.cursor(), "SELECT 1") == [(1,)]


def test_status_start_again_and_help(gateway: RunningGateway) -> None:
    status = _sqlext("gateway", "status", *gateway.flags, home=gateway.home)
    assert status.returncode == 0 and status.stdout.startswith(f"running at {gateway.url} (pid ")
    again = _sqlext("gateway", "start", *gateway.flags, home=gateway.home)
    assert again.returncode == 0 and "already running" in again.stderr
    other = _sqlext("gateway", "status", "--port", str(free_port()), *gateway.flags[2:], home=gateway.home)
    assert other.returncode == 3 and other.stdout.startswith("not running on port")
    shown = _sqlext("gateway", "--help", home=gateway.home)
    assert "HiveServer2-protocol endpoint" in shown.stdout and "STOP JOB" in shown.stdout


# -- beeline ------------------------------------------------------------------------------------------


def _beeline(gateway: RunningGateway, statements: str, url_suffix: str = "") -> subprocess.CompletedProcess[str]:
    import pyspark

    beeline = Path(pyspark.__file__).resolve().parent / "bin" / "beeline"
    url = f"jdbc:hive2://127.0.0.1:{gateway.port}/default{url_suffix}"
    command = [str(beeline), "-u", url, "-n", "tester", "--silent=true", "--outputformat=csv2", "-e", statements]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=dict(os.environ))


def _tables(output: str) -> list[list[list[str]]]:
    """beeline's csv2 output as one list of rows per result (each begins with its header; a DDL statement's
    result is the header ``Result`` alone, as from Spark's Thrift server)."""
    results: list[list[list[str]]] = []
    for row in csv.reader(io.StringIO(output)):
        if row and row[0] in ("result", "Result", "job_id", "hr", "key"):
            results.append([row])
        elif row and results:
            results[-1].append(row)
    return results


def test_beeline_runs_flink_ddl_a_bounded_insert_queries_and_stops_a_streaming_job(
    gateway: RunningGateway, hms: MetastoreClient, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "in", datetime(2026, 11, 22), hours=3, rows_per_hour=30)
    setup = ";\n".join(
        [
            "CREATE DATABASE IF NOT EXISTS gw_bl",
            _source_ddl("gw_bl", "events_in", tmp_path / "in"),
            _hourly_sink_ddl("gw_bl", "events", tmp_path / "out"),
            "SET 'pipeline.name' = 'gw_bl_bounded'",
            HOURLY_INSERT.format(db="gw_bl", sink="events", source="events_in"),
        ]
    )
    created = _beeline(gateway, setup + ";")
    assert created.returncode == 0, created.stderr[-3000:]
    job = _tables(created.stdout)[-1]
    assert job[0] == ["job_id", "job_name", "sink"] and job[1][1:] == ["gw_bl_bounded", "gw_bl.events"]
    wait_for(lambda: hms.get_partition_names("gw_bl", "events") == HOURS, 180, what="three hours committed")

    streaming = ";\n".join(
        [
            "SELECT hr, count(*) AS n FROM gw_bl.events GROUP BY hr ORDER BY hr",
            _generated_ddl("gw_bl", "generated"),
            _daily_sink_ddl("gw_bl", "daily", tmp_path / "daily"),
            "SET 'pipeline.name' = 'gw_bl_stream'",
            "SET 'execution.checkpointing.interval' = '1 s'",
            DAILY_INSERT.format(db="gw_bl", sink="daily", source="generated"),
        ]
    )
    started = _beeline(gateway, streaming + ";")
    assert started.returncode == 0, started.stderr[-3000:]
    counts, *_, stream = _tables(started.stdout)
    assert counts == [["hr", "n"], ["00", "30"], ["01", "30"], ["02", "30"]]
    stream_id = stream[1][0]
    wait_for(lambda: hms.get_partition_names("gw_bl", "daily"), 120, what="the streaming job committing")

    # Another connection (NOSASL this time) lists the jobs of the closed ones and stops the stream.
    stopped = _beeline(gateway, f"SHOW JOBS; STOP JOB '{stream_id}'; SHOW JOBS;", ";auth=noSasl")
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    before, ok, after = _tables(stopped.stdout)
    assert [stream_id, "gw_bl_stream", "RUNNING"] in [row[:3] for row in before]
    assert [job[1][0], "gw_bl_bounded", "FINISHED"] in [row[:3] for row in before]
    assert ok == [["result"], ["OK"]]
    assert [stream_id, "gw_bl_stream", "CANCELED"] in [row[:3] for row in after]


def test_beeline_shows_sqlexts_error_and_exits_non_zero(gateway: RunningGateway) -> None:
    failed = _beeline(gateway, "CREATE TABLE default.gw_no_factory (a INT) WITH ('connector' = 'nosuch');")
    assert failed.returncode != 0
    assert "Could not find any factory for identifier 'nosuch'" in failed.stderr
