"""The whole path through spark.sql: Flink DDL -> HMS tables -> INSERT -> files committed ->
partitions in the HMS -> rows read back by Spark SQL."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.spark.session import extend
from tests.support.streams import write_hourly_events
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]


def test_flink_ddl_and_streaming_insert_commit_partitions_that_spark_sql_reads(
    spark, hms: MetastoreClient, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=4, rows_per_hour=25)
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS e2e")
    spark.sql(f"""
        CREATE TABLE e2e.events_src (
          id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
          WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
        ) WITH (
          'connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'parquet',
          'source.max-files-per-trigger' = '1'
        )""")
    spark.sql(f"""
        CREATE TABLE e2e.events_by_hour (
          id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, `hr` STRING
        ) PARTITIONED BY (dt, `hr`) WITH (
          'connector' = 'filesystem', 'path' = '{(tmp_path / "sink").as_uri()}', 'format' = 'parquet',
          'sink.partition-commit.trigger' = 'partition-time',
          'sink.partition-commit.delay' = '1 h',
          'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
          'sink.partition-commit.policy.kind' = 'metastore,success-file'
        )""")

    result = spark.sql("""
        INSERT INTO e2e.events_by_hour
        SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH')
        FROM e2e.events_src""").collect()

    [row] = result
    running = running_insert(row.job_id)  # spark.streams forgets a bounded query that already ended
    assert running is not None and running.query.name == row.job_name == "insert_e2e_events_by_hour"
    assert running.wait(300)
    names = sorted(hms.get_partition_names("e2e", "events_by_hour"))
    assert names == [f"dt=2026-11-22/hr={h:02d}" for h in range(4)]
    counts = spark.sql("SELECT hr, count(*) AS n FROM e2e.events_by_hour GROUP BY hr ORDER BY hr").collect()
    assert [(r.hr, r.n) for r in counts] == [(f"{h:02d}", 25) for h in range(4)]
    assert all((tmp_path / "sink" / "dt=2026-11-22" / f"hr={h:02d}" / "_SUCCESS").is_file() for h in range(4))


def test_show_jobs_lists_a_streaming_insert_and_stop_job_stops_it_after_a_committed_batch(
    spark, hms: MetastoreClient, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=2, rows_per_hour=10)
    row = _start_watching_insert(spark, tmp_path, "watched")
    wait_for(lambda: len(hms.get_partition_names("e2e", "watched")) == 2, 180, what="both hours committed")
    [job] = [r for r in spark.sql("SHOW JOBS").collect() if r.job_id == row.job_id]
    assert (job.job_name, job.status) == (row.job_name, "RUNNING")
    assert job.checkpoint == f"{(tmp_path / 'checkpoints').as_uri()}/{row.job_name}"
    assert "sink e2e.watched (id " in job.identity and "sources e2e.watched_src (id " in job.identity

    assert [tuple(r) for r in spark.sql(f"STOP JOB '{row.job_id}'").collect()] == [("OK",)]

    running = running_insert(row.job_id)
    assert running is not None and running.wait(60) and not running.query.isActive
    assert row.job_id not in [r.job_id for r in spark.sql("SHOW JOBS").collect()]
    assert spark.sql("SELECT count(*) AS n, count(DISTINCT id) AS d FROM e2e.watched").first() == (20, 20)


def test_a_streaming_file_source_reads_a_new_file_however_old_its_modification_time(
    spark, hms: MetastoreClient, tmp_path: Path
) -> None:
    """Flink's source reads every new file; Spark's skips one a week older than the newest it has seen
    (``maxFileAge``), as a copy that keeps its times (``cp -p``, ``distcp -p``) would be."""
    next_id = write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=2, rows_per_hour=10)
    row = _start_watching_insert(spark, tmp_path, "aged")
    try:
        wait_for(lambda: len(hms.get_partition_names("e2e", "aged")) == 2, 180, what="the first two hours")
        write_hourly_events(
            tmp_path / "input",
            datetime(2026, 11, 22, 2),
            hours=1,
            rows_per_hour=10,
            first_id=next_id,
            age=timedelta(days=30),
        )
        wait_for(lambda: len(hms.get_partition_names("e2e", "aged")) == 3, 120, what="the month-old file's hour")
        assert spark.sql("SELECT count(*) AS n, count(DISTINCT id) AS d FROM e2e.aged").first() == (30, 30)
    finally:
        running = running_insert(row.job_id)
        assert running is not None
        running.query.stop()


def _start_watching_insert(spark: Any, tmp_path: Path, name: str) -> Any:
    """A streaming insert from ``e2e.<name>_src`` (``tmp_path/input``, new files looked for every second)
    into ``e2e.<name>`` (``tmp_path/sink``, by hour); the row that INSERT returned."""
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS e2e")
    spark.sql(f"""
        CREATE TABLE e2e.{name}_src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)) WITH (
          'connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'parquet',
          'source.monitor-interval' = '1 s'
        )""")
    spark.sql(f"""
        CREATE TABLE e2e.{name} (id BIGINT, user_id STRING, dt STRING, `hr` STRING) PARTITIONED BY (dt, `hr`)
        WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "sink").as_uri()}', 'format' = 'parquet')""")
    [row] = spark.sql(f"""
        INSERT INTO e2e.{name}
        SELECT id, user_id, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM e2e.{name}_src""").collect()
    return row
