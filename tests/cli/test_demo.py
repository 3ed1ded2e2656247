"""The README's first command: ``sqlext demo`` as ``make demo`` runs it, and what its closing report says."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.cli.demo import DEMO_QUERY
from sqlext.jobs.audit import commit_log_entries
from tests.support.waiting import free_port

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

#: What sql/demo.sql generates: one event a second from midnight, the last one late (its hour is 01).
GENERATED_ROWS = 21600
HOURS = [f"{hour:02d}" for hour in range(6)]
DELAY = timedelta(hours=1)
_PARTITION_LINE = re.compile(
    r"^  dt=2026-01-01/hr=(?P<hr>\d\d): +(?P<rows>\d+) rows, (?P<files>\d+) files, (?P<success>_SUCCESS|no _SUCCESS); "
    r"(?P<commits>.*)$"
)
_COMMIT = re.compile(r"batch (?P<batch>\d+) \(watermark (?P<watermark>[\d\- :]+)\)")


def _utc(millis: int) -> datetime:
    return datetime.fromtimestamp(millis / 1000, UTC).replace(tzinfo=None)


def _run_demo(home: Path, port: int) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "sqlext.cli", "demo", "--home", str(home), "--port", str(port)],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FutureWarning" not in done.stderr
    return done.stdout


def test_demo_commits_each_hour_once_when_the_watermark_passes_it_and_names_the_late_row(tmp_path: Path) -> None:
    home, port = tmp_path / "demo", free_port()
    try:
        report = _run_demo(home, port)
        with MetastoreClient(f"thrift://127.0.0.1:{port}") as client:
            names = sorted(client.get_partition_names("demo", "events_by_hour"))
            partitions = client.get_partitions_by_names("demo", "events_by_hour", names)
        watermarks = {
            entry.batch: entry.watermark_ms
            for entry in commit_log_entries((home / "data" / "events_by_hour").as_uri(), DEMO_QUERY)
        }
    finally:
        launcher.stop(MetastoreSettings(port=port, home=home / "metastore"))

    lines = {m["hr"]: m for m in (_PARTITION_LINE.match(line) for line in report.splitlines()) if m}
    assert sorted(lines) == HOURS, report
    assert names == [f"dt=2026-01-01/hr={hr}" for hr in HOURS]
    hms_rows = {p.values[1]: int(p.parameters["numRows"]) for p in partitions}
    for hr, line in lines.items():
        assert line["success"] == "_SUCCESS"
        assert int(line["rows"]) == hms_rows[hr]
        commits = [(int(c["batch"]), datetime.fromisoformat(c["watermark"])) for c in _COMMIT.finditer(line["commits"])]
        partition_end = datetime(2026, 1, 1, int(hr)) + DELAY
        # Each hour the watermark passes is committed in a batch whose watermark is past its hour + delay; the
        # last hours, which no watermark passes, at the end of the input.
        if hr in ("05",):
            assert commits == [] and "end of input" in line["commits"], line.string
        else:
            assert commits and commits[0][1] >= partition_end, line.string
            earlier = [ms for batch, ms in watermarks.items() if batch < commits[0][0] and ms is not None]
            assert all(_utc(ms) < partition_end for ms in earlier), (hr, watermarks)
        if hr == "01":
            assert "late data" in line["commits"] and len(commits) == 2, line.string
            assert commits[1][0] > commits[0][0]
        else:
            assert "late data" not in line["commits"] and len(commits) <= 1, line.string
    first_batches = [commits for hr, commits in ((hr, _COMMIT.search(lines[hr]["commits"])) for hr in HOURS) if commits]
    assert [int(c["batch"]) for c in first_batches] == sorted(int(c["batch"]) for c in first_batches)
    assert sum(hms_rows.values()) == GENERATED_ROWS
    assert hms_rows["01"] == 3601 and hms_rows["05"] == 3599  # the late row counted in its own hour
    assert f"total: {GENERATED_ROWS} rows" in report
