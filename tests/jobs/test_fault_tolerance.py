"""The metastore goes away during a streaming insert: writing goes on, partition commits wait and
happen once it is back, nothing is lost. Two queries write one table while a reader counts it. Both on a
Derby-backed and on a PostgreSQL-backed metastore.

A metastore that is down when an insert starts is waited for up to spark.sqlext.metastore.retry.deadline:
the insert runs if it comes back in time, else fails with an error naming its URI and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import Backend, MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
from sqlext.io.fs import BACKEND_ENV, FileSystem, backend_name
from sqlext.sink import InsertPlan
from tests.support.services import BACKENDS, BackendMetastore, own_metastore_settings
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

OUTAGE_S = 30.0
START = datetime(2026, 11, 22)


def _partitions(settings: MetastoreSettings) -> list[str]:
    with MetastoreClient(settings.uri) as client:
        return sorted(client.get_partition_names("outage_db", "events"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_metastore_outage_during_a_streaming_insert_delays_commits_and_loses_nothing(
    spark,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    backend: Backend,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The commit path on Hadoop's FileSystem for one backend, on pyarrow for the other.
    monkeypatch.setenv(BACKEND_ENV, "hadoop" if backend is Backend.DERBY else "pyarrow")
    own = own_metastore_settings(backend, tmp_path / "hms", request)
    launcher.start(own)
    table = events_table("outage_db", "events", tmp_path / "table")  # process-time, delay 0
    with MetastoreClient(own.uri) as client:
        create_in_hms(client, table)
    input_dir = tmp_path / "input"
    next_id = write_hourly_events(input_dir, START, hours=1, rows_per_hour=50)
    rows = hourly_event_stream(spark, input_dir, None)
    context = SimpleNamespace(spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=own.uri), config=None)
    plan = InsertPlan("outage_insert", (tmp_path / "checkpoint").as_uri(), trigger_interval="1 second")
    query = FileSystemSink(context).start_stream(rows, plan)
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    assert backend_name(table.options["path"]) == os.environ[BACKEND_ENV]
    try:
        wait_for(lambda: _partitions(own) == ["dt=2026-11-22/hr=00"], 120, what="hour 00 committed")

        launcher.stop(own)
        stopped_at = time.monotonic()
        write_hourly_events(input_dir, datetime(2026, 11, 22, 1), hours=1, rows_per_hour=50, first_id=next_id)

        def hour_one_files_committed() -> bool:
            return any(
                e.state is State.COMPLETED and "dt=2026-11-22/hr=01" in e.partitions
                for e in log.entries("outage_insert")
            )

        wait_for(hour_one_files_committed, 120, what="hour 01's files committed while the metastore is down")
        assert query.isActive
        wait_for(lambda: time.monotonic() - stopped_at >= OUTAGE_S, OUTAGE_S + 5, what="the outage to last")
        assert not launcher.status(own).answering
        assert "wait to be committed" in caplog.text

        launcher.start(own)
        # Committed: in the HMS and its success file written (the policies run in that order; the query is
        # stopped below without waiting for a commit round in progress).
        hour_one_success = tmp_path / "table" / "dt=2026-11-22" / "hr=01" / "_SUCCESS"
        wait_for(
            lambda: _partitions(own) == ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"] and hour_one_success.is_file(),
            120,
            what="hour 01 committed once the metastore is back",
        )
    finally:
        query.stop()
        launcher.stop(own)

    ids = sorted(
        ds.dataset(tmp_path / "table", format="parquet", partitioning="hive", exclude_invalid_files=True)
        .to_table(columns=["id"])["id"]
        .to_pylist()
    )
    assert ids == list(range(100))
    assert (tmp_path / "table" / "dt=2026-11-22" / "hr=01" / "_SUCCESS").is_file()


def _committed_row_count(spark, backend: BackendMetastore, database: str, name: str) -> Callable[[], int]:
    """How a reader counts the table: Spark SQL on the HMS table when Spark's catalog is this metastore,
    else as a Hive-protocol reader does it: the partitions the HMS lists, their files read by Spark."""

    def through_spark_sql() -> int:
        spark.catalog.refreshTable(f"{database}.{name}")
        return int(spark.sql(f"SELECT count(*) AS n FROM {database}.{name}").first().n)

    def through_hms_partitions() -> int:
        with MetastoreClient(backend.uri) as client:
            names = client.get_partition_names(database, name)
            locations = [p.sd.location for p in client.get_partitions_by_names(database, name, names)]
        return spark.read.parquet(*locations).count() if locations else 0

    return through_spark_sql if backend.spark_catalog else through_hms_partitions


def test_two_queries_writing_one_table_with_a_reader_throughout(
    spark, backend_metastore: BackendMetastore, backend_hms: MetastoreClient, tmp_path: Path
) -> None:
    import threading

    hms = backend_hms
    table = events_table("concurrent_db", "events", tmp_path / "table")  # process-time, delay 0
    create_in_hms(hms, table)
    first_free = write_hourly_events(tmp_path / "a", START, hours=4, rows_per_hour=25)
    write_hourly_events(tmp_path / "b", START, hours=4, rows_per_hour=25, first_id=first_free)
    total = 2 * first_free
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=backend_metastore.uri), config=None
    )
    count_rows = _committed_row_count(spark, backend_metastore, "concurrent_db", "events")
    counts: list[int] = []
    stop_reading = threading.Event()

    def read_throughout() -> None:
        while not stop_reading.is_set():
            counts.append(count_rows())

    reader = threading.Thread(target=read_throughout, daemon=True)
    reader.start()
    queries = [
        FileSystemSink(context).start_stream(
            hourly_event_stream(spark, tmp_path / name),
            InsertPlan(f"writer_{name}", (tmp_path / f"cp_{name}").as_uri(), available_now=True),
        )
        for name in ("a", "b")
    ]
    for query in queries:
        running = running_insert(str(query.id))
        assert running is not None and running.wait(300)
    stop_reading.set()
    reader.join(60)

    ids = sorted(
        ds.dataset(tmp_path / "table", format="parquet", partitioning="hive", exclude_invalid_files=True)
        .to_table(columns=["id"])["id"]
        .to_pylist()
    )
    assert ids == list(range(total)), "a row of one writer was lost or doubled"
    names = sorted(hms.get_partition_names("concurrent_db", "events"))
    assert names == [f"dt=2026-11-22/hr={h:02d}" for h in range(4)]
    rows = {
        tuple(p.values): int(p.parameters["numRows"])
        for p in hms.get_partitions_by_names("concurrent_db", "events", names)
    }
    assert sum(rows.values()) == total, f"partition statistics lost a writer's commit: {rows}"
    assert counts and all(0 <= n <= total for n in counts)
    assert count_rows() == total


# -- the metastore is down when the job starts ----------------------------------------------------------------


def _ids(table_dir: Path) -> list[int]:
    dataset = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True)
    return sorted(dataset.to_table(columns=["id"])["id"].to_pylist())


def _sqlext_run(tmp_path: Path, metastore_uri: str, deadline: str, stderr: Path) -> subprocess.Popen[bytes]:
    """``sqlext run`` of a job that creates its tables and inserts the files of tmp_path/input into one."""
    job = tmp_path / "job.sql"
    job.write_text(f"""CREATE DATABASE IF NOT EXISTS down_db;
CREATE TABLE IF NOT EXISTS down_db.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)) WITH (
  'connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'parquet');
CREATE TABLE IF NOT EXISTS down_db.dst (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING
) PARTITIONED BY (dt, hr) WITH (
  'connector' = 'filesystem', 'path' = '{(tmp_path / "dst").as_uri()}', 'format' = 'parquet');
INSERT INTO down_db.dst
SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM down_db.src;
""")
    conf = {
        "spark.sqlext.metastore.uris": metastore_uri,
        "spark.sqlext.metastore.retry.deadline": deadline,
        "spark.sqlext.checkpoint.root": (tmp_path / "cp").as_uri(),
    }
    flags = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
    env = {**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    with stderr.open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "sqlext.cli", "run", str(job), *flags],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def test_a_job_started_while_the_metastore_is_down_fails_at_the_deadline_naming_it(tmp_path: Path) -> None:
    write_hourly_events(tmp_path / "input", START, hours=1, rows_per_hour=10)
    down = f"thrift://127.0.0.1:{free_port()}"
    stderr = tmp_path / "stderr.log"

    process = _sqlext_run(tmp_path, down, "3 s", stderr)
    assert process.wait(timeout=300) == 1

    message = stderr.read_text()
    assert f"{tmp_path / 'job.sql'}:1 (statement 1: CREATE DATABASE IF NOT EXISTS down_db)" in message
    assert f"Hive Metastore at {down} did not answer" in message and "within 3 s" in message
    assert "check that spark.sqlext.metastore.uris names it" in message
    assert "spark.sqlext.metastore.retry.deadline to wait longer" in message
    assert not (tmp_path / "dst").exists() and not (tmp_path / "cp").exists(), "the failed start wrote something"


def test_a_job_started_while_the_metastore_is_down_runs_once_it_is_back(tmp_path: Path) -> None:
    own = MetastoreSettings(port=free_port(), home=tmp_path / "hms")
    write_hourly_events(tmp_path / "input", START, hours=2, rows_per_hour=10)
    stderr = tmp_path / "stderr.log"

    process = _sqlext_run(tmp_path, own.uri, "120 s", stderr)
    try:
        wait_for(
            lambda: f"Hive Metastore at {own.uri} unreachable for" in stderr.read_text(),
            120,
            what="the job to report that it waits for the metastore",
        )
        assert process.poll() is None
        launcher.start(own)
        assert process.wait(timeout=300) == 0, stderr.read_text()[-3000:]
        with MetastoreClient(own.uri) as client:
            names = sorted(client.get_partition_names("down_db", "dst"))
    finally:
        if process.poll() is None:
            process.kill()
        launcher.stop(own)

    assert names == ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
    assert _ids(tmp_path / "dst") == list(range(20))
    assert all((tmp_path / "dst" / "dt=2026-11-22" / f"hr={h:02d}" / "_SUCCESS").is_file() for h in range(2))


def test_format_sqlext_started_while_the_metastore_is_down_fails_at_its_deadline_naming_it(
    spark, tmp_path: Path
) -> None:
    import sqlext

    write_hourly_events(tmp_path / "input", START, hours=1, rows_per_hour=10)
    down = f"thrift://127.0.0.1:{free_port()}"
    sqlext.register(spark)
    started = time.monotonic()
    with pytest.raises(Exception) as failure:  # Spark wraps the data source's error in its own
        query = (
            hourly_event_stream(spark, tmp_path / "input", None)
            .writeStream.format("sqlext")
            .option("table", "down_db.dst")
            .option("metastore.uris", down)
            .option("metastore.retry.deadline", "2 s")
            .option("checkpointLocation", (tmp_path / "cp").as_uri())
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    waited = time.monotonic() - started

    assert f"Hive Metastore at {down} did not answer 'get_table_req' within 2 s" in str(failure.value)
    assert "spark.sqlext.metastore.retry.deadline" in str(failure.value)
    assert 2 <= waited < 60, f"waited {waited:.1f} s, not the 2 s deadline"
    assert not (tmp_path / "dst").exists()
