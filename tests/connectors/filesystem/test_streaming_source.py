"""Streaming reads of committed partitions (``streaming-source.*``): options, the offset logic, and the
whole path on a real metastore and real files."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.connectors.filesystem.streaming.offsets import batch_progress
from sqlext.errors import OptionError
from sqlext.faults import EXIT_CODE
from sqlext.io.fs import FileSystem
from sqlext.spark.session import extend
from tests.support.read_job import committed_ids, start_insert
from tests.support.services import spark_own_sql
from tests.support.streams import write_hourly_events
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]
REPO = Path(__file__).resolve().parents[3]


def _write_partition(root: Path, dt: str, hr: str, ids: range, name: str = "part-0.parquet") -> None:
    directory = root / f"dt={dt}" / f"hr={hr}"
    directory.mkdir(parents=True, exist_ok=True)
    rows = pa.table({"id": list(ids), "note": [f"n{i}" for i in ids]})
    pq.write_table(rows, directory / name)


def _first_batch_per_partition(path: Path, query: str) -> dict[str, int]:
    """Which batch of the reading insert first wrote each partition of its sink (from the sink's commit log)."""
    log = CommitLog(FileSystem(path.as_uri()), path.as_uri())
    first: dict[str, int] = {}
    for entry in log.entries(query):
        for planned in entry.files:
            first.setdefault(planned.partition, entry.batch)
    return first


def _commit_ms(hms: MetastoreClient, database: str, table: str, name: str) -> int:
    [partition] = hms.get_partitions_by_names(database, table, [name])
    altered = int((partition.parameters or {}).get("transient_lastDdlTime", 0))
    return max(partition.createTime, altered) * 1000


def _source_batches(query: Any) -> list[dict[str, Any]]:
    """The end offsets of the streaming source's batches that read something, from Spark's progress."""
    ends = [json.loads(s["endOffset"]) for p in query.recentProgress for s in p["sources"]]
    return [end for end in ends if isinstance(end, dict) and end.get("batch")]


def test_a_plain_table_fed_by_alter_table_add_partition_streams_each_partition_once(
    spark: Any, hms: MetastoreClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sqlext.streaming_source")
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS sread")
    source, sink = tmp_path / "plain", tmp_path / "copy"
    spark.sql(f"""
        CREATE TABLE sread.plain (id BIGINT, note STRING, dt STRING, `hr` STRING) PARTITIONED BY (dt, `hr`) WITH (
          'connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'parquet',
          'streaming-source.enable' = 'true'
        )""")
    with pytest.raises(OptionError, match=r"streaming-source\.partition-order"):
        spark.sql("ALTER TABLE sread.plain SET ('streaming-source.partition-order' = 'random')")
    spark.sql("ALTER TABLE sread.plain SET ('streaming-source.monitor-interval' = '1 s')")  # default: 1 min
    spark.sql(f"""
        CREATE TABLE sread.plain_copy (id BIGINT, note STRING, dt STRING, `hr` STRING) WITH (
          'connector' = 'filesystem', 'path' = '{sink.as_uri()}', 'format' = 'parquet'
        )""")
    _write_partition(source, "2026-11-22", "00", range(0, 10))
    spark_own_sql(spark)("ALTER TABLE sread.plain ADD PARTITION (dt = '2026-11-22', hr = '00')")
    _write_partition(source, "2026-11-22", "01", range(10, 20))  # on disk, not in the metastore: not read

    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    spark.sql("SET 'pipeline.name' = 'plain_reader'")
    running = start_insert(spark, "INSERT INTO sread.plain_copy SELECT id, note, dt, hr FROM sread.plain")
    try:
        wait_for(lambda: committed_ids(sink) == list(range(10)), 120, what="the first partition copied")
        spark_own_sql(spark)("ALTER TABLE sread.plain ADD PARTITION (dt = '2026-11-22', hr = '01')")
        wait_for(lambda: committed_ids(sink) == list(range(20)), 120, what="the second partition copied")
        # One batch a partition, in Spark's own progress (reported once the batch has finished).
        first, second = wait_for(lambda: _source_batches(running.query)[1:] and _source_batches(running.query), 60)
        hours = ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
        assert [batch_progress(end).partitions for end in (first, second)] == [(hours[0],), (hours[1],)]
        assert [batch_progress(end).files for end in (first, second)] == [1, 1]
        committed = [_commit_ms(hms, "sread", "plain", hour) for hour in hours]
        assert [first["lag_ms"], second["lag_ms"]] == [0, committed[1] - committed[0]]
        report = running.query.lastProgress["sources"][0]["latestOffset"]
        assert json.loads(report) == {
            "partitions": 2,
            "newest_commit_ms": committed[1],
            "lag_ms": 0,
            "unread_commits": 0,
        }
        line = f"read 1 partition(s) [{hours[1]}], 1 file(s); {second['lag_ms'] / 1000:.1f} s behind the newest"
        wait_for(lambda: any(line in record.getMessage() for record in caplog.records), 30, what=f"'{line}' logged")
    finally:
        running.stop()
        running.wait(60)


def _run(spark: Any, sql: str) -> Any:
    [job] = spark.sql(sql).collect()
    running = running_insert(job.job_id)
    assert running is not None
    return running


def test_a_reader_streams_partitions_as_a_writer_commits_them_resumes_and_reads_a_late_recommit_once(
    spark: Any, hms: MetastoreClient, tmp_path: Path
) -> None:
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS sread")
    events, hourly, copy = tmp_path / "events", tmp_path / "hourly", tmp_path / "copy"
    write_hourly_events(events, datetime(2026, 11, 22), hours=4, rows_per_hour=25)
    spark.sql(f"""
        CREATE TABLE sread.events (
          id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
        ) WITH (
          'connector' = 'filesystem', 'path' = '{events.as_uri()}', 'format' = 'parquet',
          'source.max-files-per-trigger' = '1'
        )""")
    spark.sql(f"""
        CREATE TABLE sread.hourly (id BIGINT, user_id STRING, ts TIMESTAMP(3), dt STRING, `hr` STRING)
        PARTITIONED BY (dt, `hr`) WITH (
          'connector' = 'filesystem', 'path' = '{hourly.as_uri()}', 'format' = 'parquet',
          'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h',
          'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00'
        )""")
    spark.sql(f"""
        CREATE TABLE sread.copy (id BIGINT, user_id STRING, dt STRING, `hr` STRING) PARTITIONED BY (dt, `hr`)
        WITH ('connector' = 'filesystem', 'path' = '{copy.as_uri()}', 'format' = 'parquet')""")
    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    reader_sql = """
        INSERT INTO sread.copy SELECT id, user_id, dt, hr FROM sread.hourly
        /*+ OPTIONS('streaming-source.enable' = 'true', 'streaming-source.monitor-interval' = '1 s',
                    'streaming-source.partition-order' = 'partition-time') */"""
    spark.sql("SET 'pipeline.name' = 'reader'")
    reader = start_insert(spark, reader_sql)
    spark.sql("SET 'pipeline.name' = 'writer'")
    writer = _run(
        spark,
        "INSERT INTO sread.hourly SELECT id, user_id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') "
        "FROM sread.events",
    )
    assert writer.wait(300)
    hours = [f"dt=2026-11-22/hr={h:02d}" for h in range(4)]
    assert sorted(hms.get_partition_names("sread", "hourly")) == hours
    wait_for(lambda: committed_ids(copy) == list(range(100)), 180, what="every committed row copied once")
    reader.stop()
    assert reader.wait(60)

    first = _first_batch_per_partition(copy, "reader")
    assert sorted(first) == hours
    assert [first[h] for h in hours] == sorted(first[h] for h in hours), f"not in commit order: {first}"
    committed = {p.values[1]: p.createTime for p in hms.get_partitions_by_names("sread", "hourly", hours)}
    assert [committed[f"{h:02d}"] for h in range(4)] == sorted(committed.values())

    # Late data for hour 00, committed again by another insert while the reader is down.
    late = tmp_path / "late"
    write_hourly_events(late, datetime(2026, 11, 22), hours=1, rows_per_hour=5, first_id=1000)
    spark.sql(f"""
        CREATE TABLE sread.late_events (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
          WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
        ) WITH ('connector' = 'filesystem', 'path' = '{late.as_uri()}', 'format' = 'parquet')""")
    spark.sql("SET 'pipeline.name' = 'late_writer'")
    late_writer = _run(
        spark,
        "INSERT INTO sread.hourly SELECT id, user_id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') "
        "FROM sread.late_events",
    )
    assert late_writer.wait(300)

    spark.sql("SET 'pipeline.name' = 'reader'")
    reader = start_insert(spark, reader_sql)  # resumes its checkpoint
    try:
        expected = [*range(100), *range(1000, 1005)]
        wait_for(lambda: committed_ids(copy) == expected, 180, what="the late rows copied once")
    finally:
        reader.stop()
        reader.wait(60)
    assert committed_ids(copy) == expected


@pytest.mark.slow
def test_a_reader_killed_mid_commit_and_restarted_reads_every_row_once(
    spark: Any, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    extend(spark)
    spark.sql("CREATE DATABASE IF NOT EXISTS sread")
    source, sink = tmp_path / "crash_src", tmp_path / "crash_copy"
    spark.sql(f"""
        CREATE TABLE sread.crash_src (id BIGINT, note STRING, dt STRING, `hr` STRING) PARTITIONED BY (dt, `hr`)
        WITH ('connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'parquet',
              'streaming-source.enable' = 'true', 'streaming-source.monitor-interval' = '1 s')""")
    spark.sql(f"""
        CREATE TABLE sread.crash_copy (id BIGINT, note STRING, dt STRING, `hr` STRING) PARTITIONED BY (dt, `hr`)
        WITH ('connector' = 'filesystem', 'path' = '{sink.as_uri()}', 'format' = 'parquet')""")
    for hour in range(3):
        _write_partition(source, "2026-11-22", f"{hour:02d}", range(hour * 10, hour * 10 + 10), "a.parquet")
        _write_partition(source, "2026-11-22", f"{hour:02d}", range(100 + hour * 10, 110 + hour * 10), "b.parquet")
        spark_own_sql(spark)(f"ALTER TABLE sread.crash_src ADD PARTITION (dt = '2026-11-22', hr = '{hour:02d}')")
    expected = sorted([*range(30), *range(100, 130)])
    sql = "INSERT INTO sread.crash_copy SELECT id, note, dt, hr FROM sread.crash_src"
    command = [sys.executable, "-m", "tests.support.read_job", metastore.uri, (tmp_path / "ck").as_uri(), str(sink)]
    command += [str(len(expected)), sql]
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_FAULT": "mid-move"}

    killed = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert killed.returncode == EXIT_CODE, killed.stderr[-3000:]
    assert committed_ids(sink) != expected  # died with the batch's files half moved

    env.pop("SQLEXT_FAULT")
    restarted = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    assert committed_ids(sink) == expected


def test_compacting_partitions_that_were_read_during_the_read_changes_no_count(
    spark: Any, hms: MetastoreClient, tmp_path: Path
) -> None:
    from sqlext.connectors.filesystem.compaction.command import compact_table
    from sqlext.table import TableIdentifier

    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS sread")
    source, sink = tmp_path / "small", tmp_path / "small_copy"
    spark.sql(f"""
        CREATE TABLE sread.small (id BIGINT, note STRING, dt STRING, `hr` STRING) PARTITIONED BY (dt, `hr`)
        WITH ('connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'parquet',
              'streaming-source.enable' = 'true', 'streaming-source.monitor-interval' = '1 s')""")
    spark.sql(f"""
        CREATE TABLE sread.small_copy (id BIGINT, note STRING, dt STRING, `hr` STRING)
        WITH ('connector' = 'filesystem', 'path' = '{sink.as_uri()}', 'format' = 'parquet')""")

    def add_hour(hour: int) -> None:
        for part in range(3):  # three small files a partition
            first = hour * 100 + part * 10
            _write_partition(source, "2026-11-22", f"{hour:02d}", range(first, first + 10), f"part-{part}.parquet")
        spark_own_sql(spark)(f"ALTER TABLE sread.small ADD PARTITION (dt = '2026-11-22', hr = '{hour:02d}')")

    add_hour(0)
    add_hour(1)
    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    spark.sql("SET 'pipeline.name' = 'small_reader'")
    reader = start_insert(spark, "INSERT INTO sread.small_copy SELECT id, note, dt, hr FROM sread.small")
    try:
        read_before = sorted(h * 100 + i for h in range(2) for i in range(30))
        wait_for(lambda: committed_ids(sink) == read_before, 180, what="both partitions copied")
        table = spark._sqlext_session.catalog.get_table(TableIdentifier("sread", "small"))
        summary = compact_table(table, hms, reader_grace=timedelta(0), show_progress=False)
        assert summary.compacted and all(
            len(list((source / "dt=2026-11-22" / f"hr={h:02d}").glob("*.parquet"))) == 1 for h in range(2)
        )
        add_hour(2)  # read after the compaction's re-commits were polled
        expected = sorted(h * 100 + i for h in range(3) for i in range(30))
        wait_for(lambda: len(committed_ids(sink)) >= len(expected), 180, what="the third partition copied")
        assert committed_ids(sink) == expected
    finally:
        reader.stop()
        reader.wait(60)
