"""sqlext as a new user runs it: `sqlext run` on SQL files, spark-submit with --conf flags, and a
SIGTERM in the middle of a streaming run followed by a restart."""

from __future__ import annotations

import os
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
from sqlext.runtime.paths import pyspark_jars_dir
from tests.support.commands import sqlext_run_command
from tests.support.streams import write_hourly_events
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def _job_sql(input_dir: Path, table_dir: Path, database: str, extra_source_options: str = "") -> str:
    return f"""
-- a job in Flink SQL; comments; two statements on one line: SET and the insert follow
CREATE DATABASE IF NOT EXISTS {database};
CREATE TABLE IF NOT EXISTS {database}.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', 'format' = 'parquet',
      'source.max-files-per-trigger' = '1' {extra_source_options});
CREATE TABLE IF NOT EXISTS {database}.dst (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING
) PARTITIONED BY (dt, hr)
WITH ('connector' = 'filesystem', 'path' = '{table_dir.as_uri()}', 'format' = 'parquet');
INSERT INTO {database}.dst
SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM {database}.src;
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}


def _ids(table_dir: Path) -> list[int]:
    dataset = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True)
    return sorted(dataset.to_table(columns=["id"])["id"].to_pylist())


def test_sqlext_run_executes_a_file_and_waits_for_its_bounded_insert(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=3, rows_per_hour=20)
    job = tmp_path / "job.sql"
    job.write_text(_job_sql(tmp_path / "input", tmp_path / "dst", "run_db"))

    done = subprocess.run(
        sqlext_run_command(job, metastore.uri, tmp_path / "cp"),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "started insert_run_db_dst" in done.stdout
    assert sorted(hms.get_partition_names("run_db", "dst")) == [f"dt=2026-11-22/hr={h:02d}" for h in range(3)]
    assert _ids(tmp_path / "dst") == list(range(60))


def test_sqlext_run_names_the_failing_statement_and_exits_non_zero(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    job = tmp_path / "bad.sql"
    job.write_text(
        "CREATE DATABASE IF NOT EXISTS bad_db;\n\nCREATE TABLE bad_db.t (a INT) WITH (\n"
        "  'connector' = 'filesystem', 'path' = 'file:///tmp/x', 'format' = 'parquet', 'sink.bogus' = '1');\n"
    )

    done = subprocess.run(
        [sys.executable, "-m", "sqlext.cli", "run", str(job), "--conf", f"spark.sqlext.metastore.uris={metastore.uri}"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 1
    assert f"error in {job}:3 (statement 2: CREATE TABLE bad_db.t (a INT) WITH (" in done.stderr
    assert "Unsupported options found for 'filesystem'" in done.stderr and "sink.bogus" in done.stderr
    assert hms.get_table("bad_db", "t") is None


def test_spark_submit_takes_metastore_and_warehouse_from_conf_flags(tmp_path: Path) -> None:
    other = MetastoreSettings(port=free_port(), home=tmp_path / "other-hms")
    launcher.start(other)
    try:
        write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=2, rows_per_hour=10)
        job = tmp_path / "job.sql"
        job.write_text(_job_sql(tmp_path / "input", tmp_path / "dst", "submit_db"))
        warehouse = (tmp_path / "my-warehouse").as_uri()
        driver = subprocess.run(
            [sys.executable, "-m", "sqlext.cli", "driver-path"], capture_output=True, text=True, check=True
        ).stdout.strip()
        spark_submit = pyspark_jars_dir().parent / "bin" / "spark-submit"
        env = {**_env(tmp_path), "SPARK_HOME": str(pyspark_jars_dir().parent), "PYSPARK_PYTHON": sys.executable}
        done = subprocess.run(
            [
                str(spark_submit),
                "--master",
                "local[2]",
                "--conf",
                f"spark.sqlext.metastore.uris={other.uri}",
                "--conf",
                f"spark.sqlext.warehouse={warehouse}",
                "--conf",
                f"spark.sqlext.checkpoint.root={(tmp_path / 'cp').as_uri()}",
                "--conf",
                "spark.sqlext.session.execution.runtime-mode=batch",
                driver,
                str(job),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        with MetastoreClient(other.uri) as client:
            database = client.get_database("submit_db")
            assert database is not None and database.locationUri.rstrip("/").endswith("my-warehouse/submit_db.db")
            assert sorted(client.get_partition_names("submit_db", "dst")) == [
                "dt=2026-11-22/hr=00",
                "dt=2026-11-22/hr=01",
            ]
        assert "job_name | sink | status" in done.stdout and "FINISHED" in done.stdout  # batch mode took effect
        assert _ids(tmp_path / "dst") == list(range(20))
    finally:
        launcher.stop(other)


def test_sigterm_stops_a_streaming_run_cleanly_and_a_rerun_resumes_exactly_once(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir, table_dir = tmp_path / "input", tmp_path / "dst"
    next_id = write_hourly_events(input_dir, datetime(2026, 11, 22), hours=2, rows_per_hour=30)
    job = tmp_path / "stream.sql"
    job.write_text(_job_sql(input_dir, table_dir, "term_db", ", 'source.monitor-interval' = '1 s'"))
    command = [
        sys.executable,
        "-m",
        "sqlext.cli",
        "run",
        str(job),
        "--conf",
        f"spark.sqlext.metastore.uris={metastore.uri}",
        "--conf",
        f"spark.sqlext.checkpoint.root={(tmp_path / 'cp').as_uri()}",
    ]
    log = CommitLog(FileSystem(table_dir.as_uri()), table_dir.as_uri())

    def run_until(rows: int) -> subprocess.CompletedProcess[str]:
        process = subprocess.Popen(
            command, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_for(lambda: sum(e.rows for e in log.entries()) >= rows, 240, what=f"{rows} rows committed")
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
        return subprocess.CompletedProcess(command, process.returncode, out, err)

    first = run_until(60)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "SIGTERM received" in first.stderr
    assert "Traceback" not in first.stderr and "interrupting it" not in first.stderr, first.stderr[-3000:]
    write_hourly_events(input_dir, datetime(2026, 11, 22, 2), hours=1, rows_per_hour=30, first_id=next_id)
    second = run_until(90)
    assert second.returncode == 0, second.stderr[-3000:]

    assert _ids(table_dir) == list(range(90))
    assert sorted(hms.get_partition_names("term_db", "dst")) == [f"dt=2026-11-22/hr={h:02d}" for h in range(3)]


#: What an orderly stop never shows: the session stopped under a running query, the JVM killed under a commit.
UNCLEAN = ("NullPointerException", "RpcEnvStoppedException", "Traceback", "committing the insert's last batch")


def test_a_failing_statement_stops_the_started_insert_after_its_batch_and_a_rerun_completes_it(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=3, rows_per_hour=20)
    insert = _job_sql(tmp_path / "input", tmp_path / "dst", "fail_db")
    job = tmp_path / "job.sql"
    job.write_text(f"{insert}\nSELECT no_such_column FROM fail_db.src;\nSELECT 1;\n")
    failing_line = insert.count("\n") + 2

    failed = subprocess.run(
        sqlext_run_command(job, metastore.uri, tmp_path / "cp"),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert failed.returncode == 1, failed.stderr[-3000:]
    assert f"error in {job}:{failing_line} (statement 5: SELECT no_such_column FROM fail_db.src)" in failed.stderr
    assert "stopping the 1 insert(s) started before the failed statement" in failed.stderr
    assert not [text for text in UNCLEAN if text in failed.stderr], failed.stderr[-5000:]
    assert "1\n" not in failed.stdout.splitlines(keepends=True), "a statement after the failed one ran"
    log = CommitLog(FileSystem((tmp_path / "dst").as_uri()), (tmp_path / "dst").as_uri())
    committed = sum(entry.rows for entry in log.entries())
    if committed:  # what was committed is there, and nothing else (the batch in progress may have been the first)
        assert len(_ids(tmp_path / "dst")) == committed

    job.write_text(insert)
    rerun = subprocess.run(
        sqlext_run_command(job, metastore.uri, tmp_path / "cp"),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert _ids(tmp_path / "dst") == list(range(60))
    assert sorted(hms.get_partition_names("fail_db", "dst")) == [f"dt=2026-11-22/hr={h:02d}" for h in range(3)]


def test_sigterm_to_the_process_group_stops_a_streaming_run_as_cleanly_as_to_the_process(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir, table_dir = tmp_path / "input", tmp_path / "dst"
    write_hourly_events(input_dir, datetime(2026, 11, 22), hours=2, rows_per_hour=30)
    job = tmp_path / "stream.sql"
    job.write_text(_job_sql(input_dir, table_dir, "group_db", ", 'source.monitor-interval' = '1 s'"))
    log = CommitLog(FileSystem(table_dir.as_uri()), table_dir.as_uri())
    # Its own process group, as a supervisor (systemd, a container's init) runs it, so that killpg spares pytest.
    process = subprocess.Popen(
        sqlext_run_command(job, metastore.uri, tmp_path / "cp"),
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(lambda: sum(e.rows for e in log.entries()) >= 60, 240, what="60 rows committed")
        os.killpg(process.pid, signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()

    assert process.returncode == 0, err[-3000:]
    assert "SIGTERM received" in err
    assert not [text for text in UNCLEAN if text in err], err[-5000:]
    assert _ids(table_dir) == list(range(60))
    assert sorted(hms.get_partition_names("group_db", "dst")) == ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
