"""``format("sqlext")``: the Python data source writer commits through the same protocol as INSERT, and a
writer process killed between batches and run again leaves every row exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import ValidationError
from sqlext.io.fs import FileSystem
from sqlext.spark.datasource import SqlextDataSource, SqlextStreamWriter, check_watermark_source
from sqlext.table import TableDefinition, Watermark
from tests.support.services import spark_own_sql
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import assert_partitions_committed, create_in_hms, events_table
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]

REPO = Path(__file__).resolve().parents[2]


PARTITION_TIME = {
    "sink.partition-commit.trigger": "partition-time",
    "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
}


def _register_for(spark: Any, table: TableDefinition, metastore_uri: str, name: str) -> None:
    """A data source bound to ``table`` (the catalog lookup of register() is tested elsewhere)."""
    settings = SinkSettings.from_table(table)

    def stream_writer(self: Any, schema: Any, overwrite: bool) -> SqlextStreamWriter:
        return SqlextStreamWriter(settings, name, metastore_uri)

    source = type("BoundSqlextDataSource", (SqlextDataSource,), {"streamWriter": stream_writer})
    spark.dataSource.register(source)


def _events(spark: Any, input_dir: Path) -> Any:
    return hourly_event_stream(spark, input_dir, None)


def _write(spark: Any, rows: Any, checkpoint: Path) -> None:
    query = (
        rows.writeStream.format("sqlext")
        .option("table", "ignored.by_bound_source")
        .option("checkpointLocation", checkpoint.as_uri())
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None


def test_stream_into_a_table_with_process_time_commits_every_batch(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=3, rows_per_hour=40)
    table = events_table("ds_db", "proc", tmp_path / "table")
    create_in_hms(hms, table)
    _register_for(spark, table, metastore.uri, "ds_proc")

    _write(spark, _events(spark, tmp_path / "input"), tmp_path / "checkpoint")

    names = sorted(hms.get_partition_names("ds_db", "proc"))
    assert names == [f"dt=2026-11-22/hr={h:02d}" for h in range(3)]
    for partition in hms.get_partitions_by_names("ds_db", "proc", names):
        assert partition.parameters["numRows"] == "40"
    assert all((tmp_path / "table" / "dt=2026-11-22" / f"hr={h:02d}" / "_SUCCESS").is_file() for h in range(3))
    rows = spark.sql("SELECT count(*) AS n, count(DISTINCT id) AS d, min(ts) AS first FROM ds_db.proc").collect()[0]
    assert (rows.n, rows.d, rows.first) == (120, 120, datetime(2026, 11, 22))


def test_partition_time_uses_the_event_time_up_to_the_batch_s_own_rows_minus_lateness(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=4, rows_per_hour=40)
    base = events_table(
        "ds_db",
        "evtime",
        tmp_path / "table",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        },
    )
    table = TableDefinition(
        base.identifier,
        base.columns,
        base.options,
        base.partition_keys,
        watermark=Watermark("ts", "ts - INTERVAL '0' SECOND", timedelta(0)),
    )
    create_in_hms(hms, table)
    _register_for(spark, table, metastore.uri, "ds_evtime")

    _write(spark, _events(spark, tmp_path / "input"), tmp_path / "checkpoint")

    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    committed_by = {p: e.batch for e in log.entries("ds_evtime") for p in e.committed_partitions}
    # Batch k sees hour k; it commits with the watermark after its own rows, the last event of hour k (58:30
    # past), as Flink's committer at a checkpoint; hour h needs > (h+1):00, so batch h+1.
    assert committed_by == {"dt=2026-11-22/hr=00": 1, "dt=2026-11-22/hr=01": 2, "dt=2026-11-22/hr=02": 3}
    assert sorted(hms.get_partition_names("ds_db", "evtime")) == [
        "dt=2026-11-22/hr=00",
        "dt=2026-11-22/hr=01",
        "dt=2026-11-22/hr=02",
    ]


def test_register_resolves_the_table_and_refuses_unknown_or_non_sqlext_tables(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    from pyspark.errors import PySparkException

    import sqlext

    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=1, rows_per_hour=10)
    table = events_table("ds_db", "registered", tmp_path / "table")
    create_in_hms(hms, table)
    sqlext.register(spark)
    sqlext.register(spark)  # idempotent

    def start(name: str) -> Any:
        return (
            hourly_event_stream(spark, tmp_path / "input", None)
            .writeStream.format("sqlext")
            .option("table", name)
            .option("checkpointLocation", (tmp_path / f"cp-{name}").as_uri())
            .trigger(availableNow=True)
            .start()
        )

    for missing, reason in (("ds_db.nope", "does not exist"), ("default.plain_hive", "not created by sqlext")):
        if missing == "default.plain_hive":
            spark.sql("CREATE TABLE IF NOT EXISTS default.plain_hive (a INT) STORED AS PARQUET")
        with pytest.raises((PySparkException, Exception)) as failure:
            start(missing).awaitTermination()
        assert missing.split(".")[1] in str(failure.value) and reason in str(failure.value)

    query = start("ds_db.registered")
    query.awaitTermination()
    assert query.exception() is None
    assert hms.get_partition_names("ds_db", "registered") == ["dt=2026-11-22/hr=00"]

    # partition-time on a table without WATERMARK FOR: the writer could never commit; refused at start.
    create_in_hms(hms, events_table("ds_db", "no_mark", tmp_path / "no_mark", **PARTITION_TIME))
    with pytest.raises((PySparkException, Exception)) as failure:
        start("ds_db.no_mark").awaitTermination()
    assert "ds_db.no_mark commits partitions by 'partition-time'" in str(failure.value)
    assert "which it does not declare" in str(failure.value)
    assert not (tmp_path / "no_mark").exists() or not any((tmp_path / "no_mark").rglob("*.parquet"))


def test_partition_time_needs_the_watermark_column_in_the_stream() -> None:
    table = events_table("ds_db", "marked", Path("/tmp/sqlext-marked"), **PARTITION_TIME)
    marked = TableDefinition(
        table.identifier, table.columns, table.options, table.partition_keys, watermark=Watermark("ts", "ts", None)
    )
    with pytest.raises(ValidationError, match="on column 'ts', which the stream does not write"):
        check_watermark_source(SinkSettings.from_table(marked), ["id", "dt", "hr"])
    check_watermark_source(SinkSettings.from_table(marked), ["id", "ts", "dt", "hr"])  # fine


def _input_rows(input_dir: Path) -> list[tuple[Any, ...]]:
    """The input events as the table holds them: (id, user_id, amount, ts, dt, hr), by id."""
    events = ds.dataset(input_dir, format="parquet").to_table().to_pylist()
    rows = [(e["id"], e["user_id"], e["amount"], e["ts"], f"{e['ts']:%Y-%m-%d}", f"{e['ts']:%H}") for e in events]
    return sorted(rows)


def _completed_batches(log: CommitLog, query: str) -> int:
    return sum(1 for entry in log.entries(query) if entry.state is State.COMPLETED)


@pytest.mark.slow
def test_a_writer_killed_between_batches_then_rerun_writes_every_row_exactly_once(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    hours, per_hour = 6, 30
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours, per_hour)
    table = events_table("ds_db", "killed", tmp_path / "table")  # process-time, delay 0
    create_in_hms(hms, table)
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    query = "sqlext_ds_db_killed"  # format('sqlext')'s default pipeline.name for the table
    directories = [str(tmp_path / "input"), str(tmp_path / "checkpoint")]
    command = [sys.executable, "-m", "tests.support.datasource_job", metastore.uri, "ds_db.killed", *directories]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    # Its own session, so that SIGKILL takes the whole job at once: driver, JVM and Python workers.
    first = subprocess.Popen(command, env=env, cwd=REPO, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(
            lambda: _completed_batches(log, query) >= 2 or first.poll() is not None,
            240,
            what="the writer to commit two batches",
        )
        assert first.poll() is None, "the writer ended before it could be killed"
        os.killpg(first.pid, signal.SIGKILL)
    finally:
        first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL
    assert _completed_batches(log, query) < hours, "the kill came after the last batch"

    rerun = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)

    assert rerun.returncode == 0, rerun.stderr[-3000:]
    # One batch per hour, except that a kill after Spark's file source logged a batch's file but before the
    # batch's offsets were written makes the rerun read that file together with the next one.
    completed = sorted(e.batch for e in log.entries(query) if e.state is State.COMPLETED)
    assert completed == list(range(len(completed))) and hours - 1 <= len(completed) <= hours
    spark.catalog.refreshTable("ds_db.killed")
    read_back = spark_own_sql(spark)("SELECT id, user_id, amount, ts, dt, hr FROM ds_db.killed ORDER BY id")
    assert [tuple(row) for row in read_back.collect()] == _input_rows(tmp_path / "input")
    names = [f"dt=2026-11-22/hr={h:02d}" for h in range(hours)]
    assert_partitions_committed(hms, "ds_db", "killed", tmp_path / "table", names, per_hour)
    staged = [p for p in (tmp_path / "table" / "_sqlext" / "staging").rglob("*") if p.is_file()]
    assert staged == [], "files of the killed run or of a replayed batch were left in staging"
