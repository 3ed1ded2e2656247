"""``sqlext commits --html``: the commit timeline page, from the log alone and for a real 20-batch run
rendered in headless Chromium."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from sqlext.cli import main
from sqlext.connectors.filesystem.commit_log import LogEntry, State
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.jobs.timeline import partition_histories, render_html
from sqlext.spark.session import extend
from tests.support.browser import rendered_dom, screenshot
from tests.support.streams import write_hourly_events

HOURS = 20


def _entry(batch: int, start_s: int, written: list[str], committed: list[str], **extra: object) -> LogEntry:
    return LogEntry(
        query="q",
        batch=batch,
        state=State.COMPLETED,
        partitions={p: [p] for p in written},
        batch_time_ms=start_s * 1000,
        completed_ms=(start_s + 1) * 1000,
        committed_partitions=committed,
        **extra,  # type: ignore[arg-type]
    )


def test_partition_histories_from_the_log_alone() -> None:
    entries = [
        _entry(0, 10, ["h=0"], []),
        _entry(1, 20, ["h=0", "h=1"], ["h=0"]),
        _entry(2, 30, ["h=0"], ["h=0"], committed_later={"h=1": 45_000}),
        LogEntry(
            "_compaction",
            40_000_000,
            State.COMPLETED,
            partitions={"h=0": ["0"]},
            batch_time_ms=50_000,
            completed_ms=52_000,
            operation="compact",
        ),
    ]

    histories = partition_histories(entries)

    first, second = histories["h=0"], histories["h=1"]
    assert first.first_written_ms == 10_000 and first.lag_ms == 21_000 - 10_000
    assert [(c.batch, c.time_ms) for c in first.commits] == [(1, 21_000), (2, 31_000)]  # then late data
    assert first.compactions_ms == [52_000]
    assert [(c.batch, c.time_ms) for c in second.commits] == [(None, 45_000)]  # end of input
    page = render_html("db.t", entries)
    assert page.count('class="batch"') == 4 and page.count('data-kind="late"') == 1
    assert page.count('data-kind="compaction"') == 1 and "<script" not in page


@pytest.mark.spark
@pytest.mark.hms
@pytest.mark.slow
def test_timeline_of_a_20_batch_run_renders_in_chromium(spark, metastore, tmp_path: Path) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 3, 1), hours=HOURS, rows_per_hour=6)
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS timeline")
    spark.sql(f"""
        CREATE TABLE timeline.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
          WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'parquet',
              'source.max-files-per-trigger' = '1')""")
    sink = tmp_path / "sink"
    spark.sql(f"""
        CREATE TABLE timeline.events (id BIGINT, ts TIMESTAMP(3), dt STRING, hr STRING) PARTITIONED BY (dt, hr)
        WITH ('connector' = 'filesystem', 'path' = '{sink.as_uri()}', 'format' = 'parquet',
              'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h',
              'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
              'sink.partition-commit.policy.kind' = 'metastore,success-file')""")
    [job] = spark.sql("""
        INSERT INTO timeline.events
        SELECT id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM timeline.src""").collect()
    running = running_insert(job.job_id)
    assert running is not None and running.wait(600)

    page = tmp_path / "timeline.html"
    assert main(["commits", sink.as_uri(), "--html", str(page)]) == 0
    dom = rendered_dom(page, tmp_path / "chromium")

    batches = re.findall(r'<rect class="batch" data-query="insert_timeline_events" data-batch="(\d+)"', dom)
    assert sorted(map(int, batches)) == list(range(HOURS))
    rows = re.findall(r'<g class="partition" data-partition="([^"]+)">(.*?)</g>', dom, re.S)
    assert [name for name, _ in rows] == [f"dt=2026-03-01/hr={h:02d}" for h in range(HOURS)]
    for name, row in rows:
        assert row.count('data-kind="commit"') == 1, name  # each hour committed once, none late
        assert 'data-kind="late"' not in row
    # delay 1 h: batch h + 1's own rows move the watermark past hour h's end + 1 h, so batch h + 1
    # commits hour h; the last hour is committed at the end of the input
    for hour, (name, row) in enumerate(rows):
        expected = f"by insert_timeline_events batch {hour + 1}" if hour < HOURS - 1 else "end of input / tick"
        assert expected in row, (name, row)
    png = screenshot(page, tmp_path / "chromium", tmp_path / "timeline.png")
    assert png.stat().st_size > 10_000
