"""An insert resumes only its own checkpoint, with the default checkpoint root ($SQLEXT_HOME): a sink table
dropped and created again, the same names on a second metastore, and a changed source each get every row
(or a clear refusal), never a silent resume of a stranger's offsets. One writer per checkpoint: a second
`sqlext run` of a running insert is refused, and a SIGKILLed run's restart takes over within a minute."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.io.fs import FileSystem
from sqlext.jobs.checkpoint import metastore_dir_name
from sqlext.jobs.lease import LEASE_TIMEOUT_S
from tests.support.streams import write_hourly_events
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DAY = datetime(2026, 11, 22)


def _tables(database: str, source: str, input_dir: Path, sink_dir: Path, source_options: str = "") -> str:
    return f"""
CREATE DATABASE IF NOT EXISTS {database};
CREATE TABLE IF NOT EXISTS {database}.{source} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', 'format' = 'parquet',
      'source.max-files-per-trigger' = '1' {source_options});
CREATE TABLE IF NOT EXISTS {database}.events (id BIGINT, ts TIMESTAMP(3), dt STRING, hr STRING)
PARTITIONED BY (dt, hr)
WITH ('connector' = 'filesystem', 'path' = '{sink_dir.as_uri()}', 'format' = 'parquet');
"""


def _insert(database: str, source: str) -> str:
    return (
        f"INSERT INTO {database}.events SELECT id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') "
        f"FROM {database}.{source};\n"
    )


def _command(job: Path, metastore_uri: str, *flags: str) -> list[str]:
    conf = ["--conf", f"spark.sqlext.metastore.uris={metastore_uri}"]
    return [sys.executable, "-m", "sqlext.cli", "run", str(job), *conf, *flags]


def _env(home: Path) -> dict[str, str]:
    """The default checkpoint root: $SQLEXT_HOME/checkpoints/<metastore>."""
    env = {**os.environ, "SQLEXT_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("SQLEXT_FAULT", None)
    return env


def _run(home: Path, job: Path, metastore_uri: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _command(job, metastore_uri, *flags), env=_env(home), capture_output=True, text=True, timeout=300
    )


def _ids(table_dir: Path) -> list[int]:
    if not table_dir.exists():
        return []
    dataset = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True)
    return sorted(dataset.to_table(columns=["id"])["id"].to_pylist())


def _hours(count: int) -> list[str]:
    return [f"dt=2026-11-22/hr={h:02d}" for h in range(count)]


def _checkpoints(home: Path, metastore_uri: str) -> Path:
    return home / "checkpoints" / metastore_dir_name(metastore_uri)


def test_a_recreated_sink_and_the_same_names_on_another_metastore_get_every_row(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    home, input_dir = tmp_path / "home", tmp_path / "input"
    write_hourly_events(input_dir, DAY, hours=3, rows_per_hour=20)
    first = tmp_path / "first.sql"
    first.write_text(_tables("ident_db", "src", input_dir, tmp_path / "events-1") + _insert("ident_db", "src"))
    done = _run(home, first, metastore.uri)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _ids(tmp_path / "events-1") == list(range(60))

    # The same database and table names on a second metastore, sink at another path: a checkpoint of its own.
    other = MetastoreSettings(port=free_port(), home=tmp_path / "hms-2")
    launcher.start(other)
    try:
        on_other = tmp_path / "other.sql"
        on_other.write_text(_tables("ident_db", "src", input_dir, tmp_path / "events-b") + _insert("ident_db", "src"))
        done = _run(home, on_other, other.uri)
        assert done.returncode == 0, done.stderr[-3000:]
        assert _ids(tmp_path / "events-b") == list(range(60))
        with MetastoreClient(other.uri) as client:
            assert sorted(client.get_partition_names("ident_db", "events")) == _hours(3)
    finally:
        launcher.stop(other)
    assert (_checkpoints(home, metastore.uri) / "insert_ident_db_events" / "offsets").is_dir()
    assert (_checkpoints(home, other.uri) / "insert_ident_db_events" / "offsets").is_dir()

    # DROP + CREATE at a new path, then the same INSERT: a new table, so a fresh checkpoint.
    recreate = tmp_path / "recreate.sql"
    recreate.write_text(
        "DROP TABLE ident_db.events;\n"
        + _tables("ident_db", "src", input_dir, tmp_path / "events-2")
        + _insert("ident_db", "src")
    )
    done = _run(home, recreate, metastore.uri)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _ids(tmp_path / "events-2") == list(range(60))
    assert sorted(hms.get_partition_names("ident_db", "events")) == _hours(3)
    [aside] = [p for p in _checkpoints(home, metastore.uri).iterdir() if ".replaced-" in p.name]
    assert aside.name.startswith("insert_ident_db_events.replaced-") and (aside / "offsets").is_dir()
    assert f"moved aside to {aside.as_uri()}" in done.stderr, "the log says where the old checkpoint went"
    assert _ids(tmp_path / "events-1") == list(range(60)), "the old table's files are untouched"


def test_a_different_source_on_the_same_sink_is_refused_and_fresh_starts_over(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    home, sink = tmp_path / "home", tmp_path / "events"
    write_hourly_events(tmp_path / "input", DAY, hours=2, rows_per_hour=20)
    write_hourly_events(tmp_path / "input-2", DAY, hours=2, rows_per_hour=15, first_id=1000)
    first = tmp_path / "first.sql"
    first.write_text(_tables("change_db", "src", tmp_path / "input", sink) + _insert("change_db", "src"))
    done = _run(home, first, metastore.uri)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _ids(sink) == list(range(40))

    changed = tmp_path / "changed.sql"
    changed.write_text(_tables("change_db", "src2", tmp_path / "input-2", sink) + _insert("change_db", "src2"))
    refused = _run(home, changed, metastore.uri)
    checkpoint = (_checkpoints(home, metastore.uri) / "insert_change_db_events").as_uri()
    assert refused.returncode != 0
    assert f"Checkpoint {checkpoint} of insert 'insert_change_db_events' belongs to another insert" in refused.stderr
    assert "change_db.src2" in refused.stderr and "--fresh" in refused.stderr and "pipeline.name" in refused.stderr
    assert _ids(sink) == list(range(40)), "nothing written by the refused run"

    fresh = _run(home, changed, metastore.uri, "--fresh")
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert _ids(sink) == [*range(40), *range(1000, 1030)], "every row of the new source, once"
    commits = subprocess.run(
        [sys.executable, "-m", "sqlext.cli", "commits", "change_db.events", "--metastore-uri", metastore.uri],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert commits.returncode == 0, commits.stderr
    assert f"insert insert_change_db_events: checkpoint {checkpoint}" in commits.stdout
    assert "sources change_db.src2 (id " in commits.stdout and "not running" in commits.stdout
    assert "insert_change_db_events.replaced-" in commits.stdout, "the old batches stay in the audit"


def test_a_second_run_is_refused_while_the_first_runs_and_a_killed_run_is_resumed_within_a_minute(
    metastore: MetastoreSettings, tmp_path: Path
) -> None:
    home, input_dir, sink = tmp_path / "home", tmp_path / "input", tmp_path / "events"
    next_id = write_hourly_events(input_dir, DAY, hours=2, rows_per_hour=20)
    job = tmp_path / "stream.sql"
    job.write_text(
        _tables("lease_db", "src", input_dir, sink, ", 'source.monitor-interval' = '1 s'") + _insert("lease_db", "src")
    )
    log = CommitLog(FileSystem(sink.as_uri()), sink.as_uri())

    def committed() -> int:
        return sum(entry.rows for entry in log.entries())

    command, env = _command(job, metastore.uri), _env(home)
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: committed() >= 40 or first.poll() is not None, 240, what="the first run's rows")
        assert first.poll() is None, "the first run ended by itself"

        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert second.returncode != 0
        assert f"is being written by insert_lease_db_events in process {first.pid}" in second.stderr
        next_id = write_hourly_events(input_dir, DAY.replace(hour=2), hours=1, rows_per_hour=20, first_id=next_id)
        wait_for(lambda: committed() >= 60, 120, what="the first run to go on writing")
        assert first.poll() is None

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    killed_at = datetime.now()
    write_hourly_events(input_dir, DAY.replace(hour=3), hours=1, rows_per_hour=20, first_id=next_id)
    log_file = tmp_path / "rerun.log"
    with log_file.open("w") as err:
        rerun = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        try:
            try:
                reached = wait_for(lambda: committed() >= 80 or rerun.poll() is not None, 240, what="the new hour")
            except AssertionError as timed_out:
                raise AssertionError(f"{timed_out}; the rerun's log:\n{log_file.read_text()[-6000:]}") from None
            assert reached and rerun.poll() is None, f"the rerun ended by itself:\n{log_file.read_text()[-3000:]}"
            rerun.send_signal(signal.SIGTERM)
            rerun.wait(timeout=120)
        finally:
            if rerun.poll() is None:
                rerun.kill()
                rerun.wait()
    stderr = log_file.read_text()
    assert rerun.returncode == 0, stderr[-3000:]
    # The killed run's lease is taken over at once (its process is gone), not waited out: the restart resumes
    # as soon as its Spark session is up and its query planned (the lease is taken before the planning).
    # That start-up, not the lease, is what the wall clock measures here (two cores shared by parallel Spark
    # test runs: up to two minutes seen); waiting the lease out would take LEASE_TIMEOUT_S after the takeover.
    took_over = _logged_at(stderr, r"WARNING sqlext.checkpoint: \S+: taking over the lease of insert_lease_db_events")
    resumed = _logged_at(stderr, r"INFO sqlext.insert: insert_lease_db_events: resuming checkpoint")
    assert (resumed - took_over).total_seconds() < LEASE_TIMEOUT_S
    assert (resumed - killed_at).total_seconds() < 300, f"resumed {(resumed - killed_at).total_seconds():.0f} s after"
    assert _ids(sink) == list(range(80)), "every row once"


def _logged_at(log_text: str, pattern: str) -> datetime:
    """The time of the first log line matching ``pattern`` (after its timestamp)."""
    found = re.search(rf"(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d+) {pattern}", log_text)
    assert found is not None, f"no log line {pattern!r} in:\n{log_text[-3000:]}"
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f")
