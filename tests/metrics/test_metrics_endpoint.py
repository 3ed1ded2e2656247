"""The metrics endpoint, the live status page and ``sqlext status`` of a ``sqlext run`` streaming insert on a
metastore of its own that goes away for a while: one insert, scraped while it runs, with every number checked
against the commit log, the HMS and the files."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.config import SqlextConfig
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.errors import ConfigError
from sqlext.io.fs import FileSystem
from tests.support.browser import rendered_dom, screenshot
from tests.support.streams import write_hourly_events
from tests.support.waiting import free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
DAY = datetime(2026, 11, 22)
HOUR_0, HOUR_1 = "dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"
LABELS = {"table": "metrics_db.events", "query": "metrics_insert"}


@pytest.mark.parametrize("value", ["abc", "-1", "70000", "80 80"])
def test_a_bad_metrics_port_is_refused_naming_key_value_and_what_is_allowed(value: str) -> None:
    with pytest.raises(ConfigError) as error:
        _ = SqlextConfig({"spark.sqlext.metrics.port": value}).metrics_port
    assert "'spark.sqlext.metrics.port'" in str(error.value)
    assert f"'{value}'" in str(error.value)
    assert "port number from 0 to 65535" in str(error.value)


def test_no_metrics_port_no_endpoint() -> None:
    assert SqlextConfig({}).metrics_port is None
    assert SqlextConfig({"spark.sqlext.metrics.port": "0"}).metrics_port == 0


JOB = """SET 'execution.checkpointing.interval' = '1 s';
SET 'pipeline.name' = 'metrics_insert';
CREATE DATABASE IF NOT EXISTS metrics_db;
CREATE TABLE metrics_db.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '0' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{input}', 'format' = 'parquet',
  'source.monitor-interval' = '1 s', 'source.max-files-per-trigger' = '1');
CREATE TABLE metrics_db.events (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING)
PARTITIONED BY (dt, hr) WITH ('connector' = 'filesystem', 'path' = '{table}', 'format' = 'parquet',
  'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h',
  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00');
INSERT INTO metrics_db.events
SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM metrics_db.src;
"""


class Scrape:
    """One scrape of the endpoint: sample values by name and labels."""

    def __init__(self, text: str) -> None:
        self.samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def insert(self, name: str) -> float | None:
        return self.samples.get((name, tuple(sorted(LABELS.items()))))

    def total(self, name: str, **labels: str) -> float:
        return sum(
            value
            for (sample, found), value in self.samples.items()
            if sample == name and all((k, v) in found for k, v in labels.items())
        )


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def _scrape(base: str) -> Scrape:
    return Scrape(_get(base + "/metrics"))


def _partitions(settings: MetastoreSettings) -> list[str]:
    with MetastoreClient(settings.uri) as client:
        return sorted(client.get_partition_names("metrics_db", "events"))


def _status(tmp_path: Path, metastore_uri: str, *target: str) -> dict[str, object]:
    """``sqlext status --json`` of ``target`` (a table; none: every checkpoint under the root), in another process."""
    done = subprocess.run(
        [sys.executable, "-m", "sqlext.cli", "status", *target, "--json", "--metastore-uri", metastore_uri],
        env={**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = done.stdout.strip().splitlines()
    return json.loads(line)


@pytest.mark.spark
@pytest.mark.hms
@pytest.mark.slow
def test_metrics_page_and_status_follow_a_streaming_insert_through_a_metastore_outage(tmp_path: Path) -> None:
    own = MetastoreSettings(port=free_port(), home=tmp_path / "hms")
    launcher.start(own)
    input_dir, table_dir = tmp_path / "input", tmp_path / "table"
    next_id = write_hourly_events(input_dir, DAY, hours=1, rows_per_hour=60)
    job = tmp_path / "job.sql"
    job.write_text(JOB.format(input=input_dir.as_uri(), table=table_dir.as_uri()))
    conf = {
        "spark.sqlext.metastore.uris": own.uri,
        "spark.sqlext.checkpoint.root": (tmp_path / "checkpoints").as_uri(),
        "spark.sqlext.metrics.port": "0",
        "spark.sql.session.timeZone": "UTC",
    }
    flags = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
    env = {**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    stderr = tmp_path / "run.log"
    with stderr.open("wb") as err:
        run = subprocess.Popen([sys.executable, "-m", "sqlext.cli", "run", str(job), *flags], env=env, stderr=err)
    log = CommitLog(FileSystem(table_dir.as_uri()), table_dir.as_uri())
    try:
        found = wait_for(
            lambda: re.search(r"metrics at (http://127\.0\.0\.1:\d+)/metrics", stderr.read_text()) or run.poll(),
            120,
            what="the run to log its metrics endpoint",
        )
        assert not isinstance(found, int), stderr.read_text()[-3000:]
        base = found.group(1)

        # Batch 0 writes hour 00; its watermark (00:59:00) leaves it pending (time 00:00 + delay 1 h).
        first = wait_for(lambda: (s := _scrape(base)).insert("sqlext_batches_total") == 1 and s, 120, what="batch 0")
        assert first.insert("sqlext_partitions_pending") == 1
        assert first.insert("sqlext_rows_written_total") == 60
        assert first.total("sqlext_metastore_calls_total", outcome="error") == 0

        # The metastore goes away; batch 1 writes hour 01, whose watermark makes hour 00 ready, and its
        # commit waits: the metastore calls fail, and two partitions are pending.
        launcher.stop(own)
        next_id = write_hourly_events(input_dir, DAY.replace(hour=1), hours=1, rows_per_hour=60, first_id=next_id)
        during = wait_for(
            lambda: (s := _scrape(base)).insert("sqlext_partitions_pending") == 2 and s,
            120,
            what="two partitions pending while the metastore is down",
        )
        assert during.total("sqlext_metastore_calls_total", call="get_table_req", outcome="error") > 0
        assert during.insert("sqlext_rows_written_total") == 120
        assert during.insert("sqlext_partitions_committed_total") == 0
        assert during.insert("sqlext_oldest_pending_partition_age_seconds") > 0

        # Back. With no new data, the tick between batches commits hour 00 with batch 1's watermark (pending
        # falls to 1); then batches 2 and 3 bring late rows for hour 00, each committing it again: 15 late rows.
        launcher.start(own)
        after = wait_for(
            lambda: (s := _scrape(base)).insert("sqlext_partitions_pending") == 1 and s, 120, what="pending falls"
        )
        assert _partitions(own) == [HOUR_0]
        assert after.insert("sqlext_partitions_committed_total") == 1 and after.insert("sqlext_batches_total") == 2
        next_id = write_hourly_events(input_dir, DAY, hours=1, rows_per_hour=10, first_id=next_id)
        wait_for(lambda: _scrape(base).insert("sqlext_partitions_committed_total") == 2, 120, what="batch 2")
        write_hourly_events(input_dir, DAY, hours=1, rows_per_hour=5, first_id=next_id)
        final = wait_for(
            lambda: (s := _scrape(base)).insert("sqlext_partitions_committed_total") == 3 and s, 120, what="batch 3"
        )
        entries = list(log.entries("metrics_insert"))
        _assert_agree(final, entries, table_dir, own)
        assert final.insert("sqlext_late_rows_total") == 15
        assert final.insert("sqlext_compactions_total") == 0
        assert final.total("sqlext_metastore_calls_total", call="add_partitions_req", outcome="ok") >= 1
        assert final.total("sqlext_commit_duration_seconds_count", **LABELS) == 4
        assert final.total("sqlext_batch_duration_seconds_count", **LABELS) == 4

        status = _status(tmp_path, own.uri, "metrics_db.events")
        assert status["running"] and status["last_batch"] == 3
        assert status["last_commit_ms"] == max(e.completed_ms or 0 for e in entries)
        assert list(status["pending"]) == [HOUR_1]  # type: ignore[call-overload]
        assert status["logged_rows"] == 135 and status["sources"] == ["metrics_db.src"]

        page = _get(base + "/")
        _assert_page(page, tmp_path, entries)
        run.send_signal(signal.SIGTERM)
        assert run.wait(120) == 0, stderr.read_text()[-3000:]
        root = f"spark.sqlext.checkpoint.root={conf['spark.sqlext.checkpoint.root']}"
        stopped = _status(tmp_path, own.uri, "--conf", root)  # found through its checkpoint
        assert not stopped["running"] and stopped["last_commit_ms"] == status["last_commit_ms"]
    finally:
        if run.poll() is None:
            run.kill()
        launcher.stop(own)


def _assert_agree(scrape: Scrape, entries: list[LogEntry], table_dir: Path, own: MetastoreSettings) -> None:
    """Rows, files, bytes, batches, commit time and watermark equal the log's, the files' and the HMS's."""
    assert [e.batch for e in entries] == [0, 1, 2, 3] and all(e.state is State.COMPLETED for e in entries)
    data_files = [f for f in table_dir.rglob("*.parquet") if not any(p.startswith(("_", ".")) for p in f.parts)]
    assert scrape.insert("sqlext_rows_written_total") == sum(e.rows for e in entries) == 135
    assert scrape.insert("sqlext_files_written_total") == len(data_files) == sum(len(e.files) for e in entries)
    assert scrape.insert("sqlext_bytes_written_total") == sum(f.stat().st_size for f in data_files)
    assert scrape.insert("sqlext_batches_total") == 4
    completed = max(e.completed_ms or 0 for e in entries)
    assert scrape.insert("sqlext_last_successful_commit_timestamp_seconds") == completed / 1000
    assert scrape.insert("sqlext_watermark_timestamp_seconds") == entries[-1].watermark_ms / 1000  # type: ignore[operator]
    assert entries[-1].watermark_ms == int(DAY.replace(hour=1, minute=59, tzinfo=UTC).timestamp() * 1000)
    assert _partitions(own) == [HOUR_0]
    with MetastoreClient(own.uri) as client:
        [hour_0] = client.get_partitions_by_names("metrics_db", "events", [HOUR_0])
    assert hour_0.parameters["numRows"] == "75"
    committed = [p for e in entries for p in [*e.committed_partitions, *e.committed_later]]
    assert scrape.insert("sqlext_partitions_committed_total") == len(committed) == 3


def _assert_page(page: str, tmp_path: Path, entries: list[LogEntry]) -> None:
    """The page, as served and as headless Chromium renders it (when installed), has the log's numbers."""
    assert "<script" not in page and 'http-equiv="refresh"' in page
    facts = dict(re.findall(r'<tr data-fact="([^"]+)"><th>[^<]*</th><td>([^<]*)</td>', page))
    assert facts["state"] == "running" and facts["sources"] == "metrics_db.src"
    assert facts["last batch"] == "3" and facts["pending partitions"] == "1"
    assert facts["rows in the retained log"] == str(sum(e.rows for e in entries))
    assert facts["files in the retained log"] == str(sum(len(e.files) for e in entries))
    assert page.count('class="batch"') == 4
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        saved = tmp_path / "status.html"
        saved.write_text(page, encoding="utf-8")
        dom = rendered_dom(saved, tmp_path / "chromium")
        assert 'data-query="metrics_insert"' in dom and HOUR_1 in dom
        png = screenshot(saved, tmp_path / "chromium", tmp_path / "status.png")
        print(f"status page screenshot: {png}")
