"""The mark-done commit policies (``done-partition``, ``mark-event``, ``http-report``) on a real HMS, with a
real HTTP receiver on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.connectors.filesystem.done_policies import MARK_DONE_POLICIES, HttpReportPolicy, report_id
from sqlext.connectors.filesystem.factory import FileSystemTableFactory
from sqlext.connectors.filesystem.options import POLICY_HTTP_REPORT
from sqlext.connectors.filesystem.policies import PartitionCommitContext
from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
from sqlext.errors import OptionError, PolicyError
from sqlext.faults import EXIT_CODE
from sqlext.io.fs import FileSystem
from sqlext.options import Options
from sqlext.sink import InsertPlan
from tests.support.http_receiver import http_receiver
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[3]
START = datetime(2026, 11, 22)
ALL_KINDS = "metastore,success-file,done-partition,mark-event,http-report"


def _names(hours: range) -> list[str]:
    return [f"dt=2026-11-22/hr={h:02d}" for h in hours]


def _run_insert(spark, metastore: MetastoreSettings, table, input_dir: Path, checkpoint: Path, name: str) -> None:
    """Run a bounded streaming insert of the hourly events into ``table`` in this process, to its end."""
    catalog = SimpleNamespace(metastore_uri=metastore.uri)
    context = SimpleNamespace(spark=spark, table=table, catalog=catalog, config=None)
    plan = InsertPlan(name, checkpoint.as_uri(), available_now=True)
    query = FileSystemSink(context).start_stream(hourly_event_stream(spark, input_dir), plan)
    running = running_insert(str(query.id))
    assert running is not None and running.wait(300) and query.exception() is None


def _marked(hms: MetastoreClient, database: str, name: str, at: datetime) -> bool:
    spec = {"dt": f"{at:%Y-%m-%d}", "hr": f"{at:%H}"}
    return bool(hms.call("isPartitionMarkedForEvent", database, name, spec, ttypes.PartitionEventType.LOAD_DONE))


def _name(at: datetime) -> str:
    return f"dt={at:%Y-%m-%d}/hr={at:%H}"


@pytest.mark.spark
@pytest.mark.hms
def test_a_streaming_insert_marks_commits_done_reports_each_once_and_expires_old_partitions(
    spark, metastore: MetastoreSettings, hms: MetastoreClient, tmp_path: Path
) -> None:
    """One running insert for the policies and for expiration at the check interval (tests/.../test_expiration.py
    has the rest of expiration)."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0, tzinfo=None)
    old, recent = now - timedelta(days=3), [now - timedelta(hours=h) for h in (3, 2, 1)]
    input_dir = tmp_path / "input"
    next_id = write_hourly_events(input_dir, old, hours=1, rows_per_hour=10)  # batch 0
    next_id = write_hourly_events(input_dir, recent[0], hours=3, rows_per_hour=10, first_id=next_id)  # batches 1-3
    write_hourly_events(input_dir, recent[0], hours=1, rows_per_hour=5, first_id=next_id)  # 4: late rows, recent[0]
    # The receiver is down for the first 3 attempts: the first report is retried until it answers.
    with http_receiver(refuse_first=3) as receiver:
        options = {
            "sink.partition-commit.policy.kind": ALL_KINDS,
            "sink.partition-commit.http-report.url": receiver.url,
            "sink.partition-commit.http-report.timeout": "20 s",
            "sink.partition-commit.http-report.params": "owner=data-eng",
            "partition.expiration-time": "2 d",
            "partition.expiration-check-interval": "1 s",
        }
        table = events_table("done_db", "events", tmp_path / "table", **options)
        create_in_hms(hms, table)
        catalog = SimpleNamespace(metastore_uri=metastore.uri)
        context = SimpleNamespace(spark=spark, table=table, catalog=catalog, config=None)
        plan = InsertPlan("insert_done", (tmp_path / "checkpoint").as_uri())
        query = FileSystemSink(context).start_stream(hourly_event_stream(spark, input_dir), plan)
        running = running_insert(str(query.id))
        assert running is not None
        real = [_name(at) for at in recent]
        done = [name + ".done" for name in real]
        try:
            wait_for(lambda: len(receiver.accepted) >= 5, 240, what="5 reports")
            wait_for(lambda: sorted(hms.get_partition_names("done_db", "events")) == sorted(real + done), 120)
            wait_for(lambda: not (tmp_path / "table" / _name(old)).exists(), 120, what="the old partition's files")
        finally:
            running.stop()
            running.wait(120)

    [done_zero] = hms.get_partitions_by_names("done_db", "events", [done[0]])
    assert done_zero.parameters["numRows"] == "0"
    assert not any((tmp_path / "table" / done[0]).glob("[!_.]*")), "a done partition has data"
    assert not (tmp_path / "table" / (_name(old) + ".done")).exists()
    assert all(_marked(hms, "done_db", "events", at) for at in recent)
    assert not _marked(hms, "done_db", "events", now + timedelta(hours=5))
    assert all((tmp_path / "table" / name / "_SUCCESS").is_file() for name in real)

    assert len(receiver.attempts) == len(receiver.accepted) + 3
    [expired] = receiver.reports(_name(old).replace("/", ","))
    assert expired["batch_id"] == 0
    first, late = receiver.reports(real[0].replace("/", ","))
    assert (first["late"], late["late"]) == (False, True)
    assert first["id"] != late["id"]
    assert (first["rows"], late["rows"]) == (10, 15)
    assert (first["batch_id"], late["batch_id"]) == (1, 4)
    for batch, name in enumerate(real[1:], start=2):
        [report] = receiver.reports(name.replace("/", ","))
        assert report["late"] is False and report["rows"] == 10 and report["batch_id"] == batch
    assert len(receiver.accepted) == 5, "one report per commit"
    assert first["table"] == "done_db.events"
    assert first["location"] == f"{(tmp_path / 'table').as_uri()}/{real[0]}"
    assert first["params"] == "owner=data-eng" and first["files"] >= 1 and first["query"] == "insert_done"
    assert datetime.fromisoformat(first["commit_time"]).utcoffset() == timedelta(0)


def _context(tmp_path: Path, **fields: object) -> PartitionCommitContext:
    table = events_table("report_db", "events", tmp_path / "table")
    directory = tmp_path / "table" / "dt=2026-11-22" / "hr=00"
    directory.mkdir(parents=True)
    return PartitionCommitContext(
        table=table,
        keys=["dt", "hr"],
        values=["2026-11-22", "00"],
        path=directory.as_uri(),
        relative_path="dt=2026-11-22/hr=00",
        files=[],
        fs=FileSystem(directory.as_uri()),
        metastore=None,
        hms_table=None,
        row_count=0,
        **fields,  # type: ignore[arg-type]
    )


def test_a_report_sent_again_for_the_same_commit_has_the_same_id_and_a_new_commit_is_late(tmp_path: Path) -> None:
    with http_receiver() as receiver:
        policy = HttpReportPolicy(receiver.url)
        context = _context(tmp_path, query="q", batch=4, first_seen_ms=1_000)
        policy.commit(context)
        policy.commit(context)  # a replay
        context.first_seen_ms, context.batch = 2_000, 9  # late data, committed again
        policy.commit(context)
    ids = [report["id"] for report in receiver.accepted]
    assert ids[0] == ids[1] == report_id("report_db.events", "q", "dt=2026-11-22/hr=00", 1_000, 4)
    assert ids[2] != ids[0]
    assert [report["late"] for report in receiver.accepted] == [False, False, True]


def test_a_receiver_down_past_the_timeout_fails_the_commit_naming_the_url(tmp_path: Path) -> None:
    with http_receiver(refuse_first=10_000) as receiver:
        policy = HttpReportPolicy(receiver.url, timedelta(seconds=0.5))
        with pytest.raises(PolicyError) as raised:
            policy.commit(_context(tmp_path, query="q", batch=0, first_seen_ms=1))
    assert receiver.url in raised.value.message and "HTTP 503" in raised.value.message
    assert raised.value.option == "sink.partition-commit.http-report.url"
    assert len(receiver.attempts) >= 2, "retried before giving up"


@pytest.mark.parametrize(
    ("options", "option", "says"),
    [
        ({"sink.partition-commit.policy.kind": "metastore,http-report"}, "sink.partition-commit.http-report.url", ""),
        (
            {
                "sink.partition-commit.policy.kind": "http-report",
                "sink.partition-commit.http-report.url": "ftp://host/x",
            },
            "sink.partition-commit.http-report.url",
            "http:// or https://",
        ),
        ({"sink.partition-commit.policy.kind": "done"}, "sink.partition-commit.policy.kind", "done-partition"),
        ({"sink.partition-commit.http-report.timeout": "0 s"}, "sink.partition-commit.http-report.timeout", "0"),
    ],
)
def test_bad_report_options_are_refused_naming_the_option(
    tmp_path: Path, options: dict[str, str], option: str, says: str
) -> None:
    with pytest.raises(OptionError) as raised:
        FileSystemTableFactory().validate(events_table("db", "t", tmp_path, **options))
    assert raised.value.option == option
    assert says in raised.value.message


def test_paimons_http_report_option_names_are_read_too(tmp_path: Path) -> None:
    options = {
        "sink.partition-commit.policy.kind": "metastore,http-report",
        "partition.mark-done-action.http.url": "http://127.0.0.1:9/done",
        "partition.mark-done-action.http.params": "team=data",
    }
    table = events_table("db", "t", tmp_path, **options)
    FileSystemTableFactory().validate(table)  # accepted: the url is given, under Paimon's name
    policy = MARK_DONE_POLICIES[POLICY_HTTP_REPORT](Options(table.options))
    assert isinstance(policy, HttpReportPolicy)
    assert (policy.url, policy.params) == ("http://127.0.0.1:9/done", "team=data")


@pytest.mark.spark
@pytest.mark.hms
@pytest.mark.slow
def test_killed_between_the_hms_commit_and_the_report_the_restart_reports_with_the_same_id(
    spark, metastore: MetastoreSettings, hms: MetastoreClient, tmp_path: Path
) -> None:
    """Killed in a process of its own (tests/support/sink_job.py), restarted here from its checkpoint."""
    write_hourly_events(tmp_path / "input", START, hours=2, rows_per_hour=10)
    with http_receiver() as receiver:
        options = {
            "sink.partition-commit.policy.kind": "metastore,http-report",
            "sink.partition-commit.http-report.url": receiver.url,
        }
        table = events_table("report_crash_db", "events", tmp_path / "table", **options)
        create_in_hms(hms, table)
        env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_FAULT": "between-policies@1"}
        directories = [str(tmp_path / name) for name in ("table", "input", "checkpoint")]
        command = [sys.executable, "-m", "tests.support.sink_job", metastore.uri, *directories, json.dumps(options)]
        command.append("report_crash_db")
        crashed = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert crashed.returncode == EXIT_CODE, crashed.stderr[-3000:]
        assert "dt=2026-11-22/hr=01" in hms.get_partition_names("report_crash_db", "events")
        assert [r["partition"] for r in receiver.accepted] == ["dt=2026-11-22,hr=00"], "hr=01 not reported yet"

        _run_insert(spark, metastore, table, tmp_path / "input", tmp_path / "checkpoint", "crash_job")

    assert sorted(hms.get_partition_names("report_crash_db", "events")) == _names(range(2))
    assert [r["partition"] for r in receiver.accepted] == [f"dt=2026-11-22,hr={h:02d}" for h in range(2)]
    path = (tmp_path / "table").as_uri()
    batch_one = CommitLog(FileSystem(path), path).get("crash_job", 1)
    assert batch_one is not None
    expected = report_id("report_crash_db.events", "crash_job", "dt=2026-11-22/hr=01", batch_one.batch_time_ms, 1)
    assert receiver.accepted[1]["id"] == expected, "the id the killed run would have sent"
